"""Applying a unified diff to one text file of a skill (SKILL.md or a reference), exactly.

A candidate is stored as a diff because a diff can be undone and compared byte for byte; a
description of an edit cannot. So applying one must be exact: every context and removed line has
to match the text character for character (only the line ending may differ, so a CRLF skill takes
an LF diff), lines the diff does not touch keep their own endings, and added lines get the text's
ending. A hunk may sit at another line than its header says (as with ``patch``), never with fuzz.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from engine.core.errors import SkillsmithError
from engine.core.skill import split_lines

_ADDED, _REMOVED, _CONTEXT, _NO_EOL = "+", "-", " ", "\\"


class PatchError(SkillsmithError):
    """The diff cannot be parsed or does not apply to the text; the message names the hunk."""


@dataclass(frozen=True)
class HunkLine:
    kind: str  # "+", "-" or " "
    text: str  # without its line ending
    no_eol: bool = False  # a "\ No newline at end of file" marker follows it


@dataclass(frozen=True)
class Hunk:
    header: str
    source_start: int
    source_length: int
    lines: tuple[HunkLine, ...]

    @property
    def source(self) -> list[HunkLine]:
        return [ln for ln in self.lines if ln.kind != _ADDED]

    @property
    def target(self) -> list[HunkLine]:
        return [ln for ln in self.lines if ln.kind != _REMOVED]


@dataclass(frozen=True)
class ParsedDiff:
    """One file's hunks plus the header names, as the structure filter needs them."""

    source_file: str
    target_file: str
    hunks: tuple[Hunk, ...]
    files: int

    @property
    def added(self) -> list[str]:
        return [ln.text for h in self.hunks for ln in h.lines if ln.kind == _ADDED]

    @property
    def removed(self) -> list[str]:
        return [ln.text for h in self.hunks for ln in h.lines if ln.kind == _REMOVED]


@dataclass(frozen=True)
class Applied:
    """The patched text and where the added lines landed (0-based line indexes in it)."""

    text: str
    added_at: list[int] = field(default_factory=list)


def _strip_eol(value: str) -> str:
    if value.endswith("\r\n"):
        return value[:-2]
    return value[:-1] if value.endswith(("\n", "\r")) else value


def parse_diff(diff: str) -> ParsedDiff:
    """Parse ``diff`` with unidiff; anything unparseable is a one-line :class:`PatchError`."""
    try:
        patch = PatchSet(diff)
    except UnidiffParseError as exc:
        raise PatchError(f"diff: cannot parse: {exc}") from None
    if len(patch) == 0:
        raise PatchError("diff: no '--- a/SKILL.md' / '+++ b/SKILL.md' header with a hunk found")
    first = patch[0]
    hunks: list[Hunk] = []
    for hunk in first:
        lines: list[HunkLine] = []
        for line in hunk:
            if line.line_type == _NO_EOL:
                if lines:
                    last = lines[-1]
                    lines[-1] = HunkLine(last.kind, last.text, no_eol=True)
                continue
            lines.append(HunkLine(line.line_type, _strip_eol(line.value)))
        header = (
            f"@@ -{hunk.source_start},{hunk.source_length} "
            f"+{hunk.target_start},{hunk.target_length} @@"
        )
        hunks.append(Hunk(header, hunk.source_start, hunk.source_length, tuple(lines)))
    source, target = first.source_file.rstrip("\r"), first.target_file.rstrip("\r")
    return ParsedDiff(source, target, tuple(hunks), len(patch))


def _matches(have: list[tuple[str, str]], at: int, want: list[HunkLine]) -> bool:
    if at < 0 or at + len(want) > len(have):
        return False
    return all(have[at + i][0] == w.text for i, w in enumerate(want))


def _locate(have: list[tuple[str, str]], hunk: Hunk, floor: int, shift: int) -> int | None:
    """Where the hunk's old lines are: at its header's line (plus the drift so far), else the
    nearest exact match below ``floor``-free ground."""
    want = hunk.source
    expected = hunk.source_start - (1 if hunk.source_length else 0) + shift
    if _matches(have, expected, want) and expected >= floor:
        return expected
    top = len(have) - len(want)
    for distance in range(1, max(top - floor, expected - floor, 0) + 1):
        for at in (expected - distance, expected + distance):
            if floor <= at <= top and _matches(have, at, want):
                return at
    return None


def _mismatch(have: list[tuple[str, str]], index: int, hunk: Hunk, shift: int) -> PatchError:
    at = max(hunk.source_start - (1 if hunk.source_length else 0) + shift, 0)
    for offset, want in enumerate(hunk.source):
        where = at + offset
        found = have[where][0] if where < len(have) else None
        if found != want.text:
            seen = "end of text" if found is None else repr(found)
            return PatchError(
                f"diff: hunk {index} ({hunk.header}) does not apply: line {where + 1} should be "
                f"{want.text!r}, the text has {seen}"
            )
    return PatchError(f"diff: hunk {index} ({hunk.header}) does not apply")


def apply_diff(text: str, diff: str) -> Applied:
    """Apply ``diff`` and report where its added lines landed."""
    parsed = parse_diff(diff)
    if parsed.files != 1:
        raise PatchError(f"diff: touches {parsed.files} files, expected only SKILL.md")
    have = split_lines(text)
    newline = next((eol for _, eol in have if eol), "\n")
    out: list[tuple[str, str]] = []
    added_at: list[int] = []
    done = 0  # lines of ``have`` already copied or consumed
    shift = 0
    for index, hunk in enumerate(parsed.hunks, start=1):
        at = _locate(have, hunk, done, shift)
        if at is None:
            raise _mismatch(have, index, hunk, shift)
        shift = at - (hunk.source_start - (1 if hunk.source_length else 0))
        out.extend(have[done:at])
        cursor = at
        for line in hunk.lines:
            if line.kind == _REMOVED:
                cursor += 1
                continue
            if line.kind == _CONTEXT:
                _, eol = have[cursor]
                cursor += 1
                out.append((line.text, "" if line.no_eol else (eol or newline)))
                continue
            added_at.append(len(out))
            out.append((line.text, "" if line.no_eol else newline))
        done = cursor
    out.extend(have[done:])
    return Applied("".join(t + e for t, e in out), added_at)


def apply_patch(text: str, diff: str) -> str:
    """``text`` with ``diff`` applied; raises :class:`PatchError` when it does not apply."""
    return apply_diff(text, diff).text
