"""The one error type users see.

Every refusal the engine makes is a ``SkillsmithError`` whose message is a single line naming the
file and the field at fault, so the CLI and the TUI can show it verbatim instead of a traceback.
"""

from __future__ import annotations

from pathlib import Path


class SkillsmithError(Exception):
    """A refused or failed operation, explained in one line."""

    exit_code = 1


class UsageError(SkillsmithError):
    """The caller asked for something malformed (CLI exit code 2)."""

    exit_code = 2


class FormatError(SkillsmithError):
    """A file breaks its format; the message names file, line or field, and what was wanted."""

    def __init__(
        self, path: Path | str, field: str | None, expected: str, line: int | None = None
    ) -> None:
        where = str(path)
        if line is not None:
            where += f":{line}"
        what = f" field '{field}':" if field else ""
        super().__init__(f"{where}:{what} {expected}")
        self.path = Path(path)
        self.field = field
        self.line = line


class LockError(SkillsmithError):
    """Another writer holds the workspace lock."""
