"""The Textual workbench: a thin view over engine/."""
