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


def check_counts(*counts: tuple[str, int | None]) -> None:
    """Refuse a count below 1 that a person gave (``None``: not given, the default applies).

    One check, so every command and loop words the refusal the same way.
    """
    for flag, value in counts:
        if value is not None and value < 1:
            raise UsageError(f"{flag}: expected a number ≥ 1, got {value}")


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
