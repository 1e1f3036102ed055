"""Agent text made safe to show on a terminal.

An agent's output, its tool arguments and anything a transcript quotes can hold terminal control
sequences: ``ESC [2J`` clears the screen, ``ESC ]0;…BEL`` retitles the window, ``ESC ]52;…``
writes the clipboard, a carriage return overprints a line with something else. Rich passes ESC
through, so every text that came from an agent is passed through :func:`printable` before it
reaches a terminal (or an event log a terminal renders); the words stay, the sequences go.
"""

from __future__ import annotations

import re

# ESC-introduced sequences (CSI, OSC/DCS/APC/PM/SOS strings up to their terminator, two-byte
# escapes), their 8-bit C1 forms, then every other control character but newline and tab.
_SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]P_^X]|[\x90\x9d\x9e\x9f\x98])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def printable(text: str) -> str:
    """``text`` without terminal control sequences or control characters (``\\n``, ``\\t``
    kept)."""
    return _SEQUENCES.sub("", text)


__all__ = ["printable"]
