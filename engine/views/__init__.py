"""Read models the faces (CLI and TUI) show; they read every floor and write nothing."""
