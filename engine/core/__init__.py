"""The bottom floor: the workspace's file formats and the stores that keep them crash-safe."""
