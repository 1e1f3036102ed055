"""Skillsmith engine: everything that is not drawing.

The engine never imports the TUI; it is usable as a library and from the headless CLI.
"""

__version__ = "0.1.0"
