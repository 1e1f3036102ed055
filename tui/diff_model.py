"""Unified diff → display rows, for the unified and the side-by-side diff views.

The parser is deliberately forgiving: a candidate's patch.diff may come from a model or from
another tool, and the viewer must still show every line of it (unknown lines become notes)
rather than refuse to display what the user is about to approve.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

RowKind = Literal["file", "hunk", "context", "added", "removed", "note"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FILE_HEADERS = ("--- ", "+++ ", "diff ", "index ")
_CHANGED = re.compile(r"^(?:\+\+\+ b/|--- a/|Binary files a/(?=\S+ and b/)|mode of )([^\s:]+)")


@dataclass(frozen=True)
class DiffRow:
    kind: RowKind
    text: str
    old_no: int | None = None
    new_no: int | None = None


@dataclass(frozen=True)
class DiffStats:
    added: int
    removed: int
    hunks: int


def parse_patch(patch: str) -> list[DiffRow]:
    """Rows of a unified diff, with old/new line numbers taken from the hunk headers.

    The hunk header's line counts decide whether ``--- x`` is a removed line or the next file's
    header; past the counts, +/- lines are still shown as changes (miscounted hunks happen).
    """
    rows: list[DiffRow] = []
    old_no = new_no = old_left = new_left = 0
    in_hunk = False
    for line in patch.splitlines():
        counted = old_left > 0 or new_left > 0
        match = _HUNK.match(line)
        if match:
            old_no, new_no = int(match[1]), int(match[3])
            old_left = int(match[2]) if match[2] is not None else 1
            new_left = int(match[4]) if match[4] is not None else 1
            in_hunk = True
            rows.append(DiffRow("hunk", line))
        elif not counted and line.startswith(_FILE_HEADERS):
            in_hunk = False
            rows.append(DiffRow("file", line))
        elif in_hunk and line.startswith("+"):
            rows.append(DiffRow("added", line[1:], None, new_no))
            new_no += 1
            new_left -= 1
        elif in_hunk and line.startswith("-"):
            rows.append(DiffRow("removed", line[1:], old_no, None))
            old_no += 1
            old_left -= 1
        elif in_hunk and (line.startswith(" ") or (line == "" and counted)):
            rows.append(DiffRow("context", line[1:], old_no, new_no))
            old_no += 1
            new_no += 1
            old_left -= 1
            new_left -= 1
        else:
            in_hunk = in_hunk and line.startswith("\\")
            rows.append(DiffRow("note", line))
    return rows


def stats(rows: list[DiffRow]) -> DiffStats:
    return DiffStats(
        added=sum(r.kind == "added" for r in rows),
        removed=sum(r.kind == "removed" for r in rows),
        hunks=sum(r.kind == "hunk" for r in rows),
    )


SplitRow = tuple[DiffRow | None, DiffRow | None]


def split_rows(rows: list[DiffRow]) -> list[SplitRow]:
    """Pair rows for the side-by-side view: removals face the additions that replace them."""
    pairs: list[SplitRow] = []
    removed: list[DiffRow] = []
    added: list[DiffRow] = []

    def flush() -> None:
        for index in range(max(len(removed), len(added))):
            left = removed[index] if index < len(removed) else None
            right = added[index] if index < len(added) else None
            pairs.append((left, right))
        removed.clear()
        added.clear()

    for row in rows:
        if row.kind == "removed":
            if added:
                flush()
            removed.append(row)
        elif row.kind == "added":
            added.append(row)
        else:
            flush()
            pairs.append((row, row))
    flush()
    return pairs


def changed_files(rows: list[DiffRow]) -> list[str]:
    """The files a whole-folder patch touches, in patch order (SKILL.md comes first)."""
    found: list[str] = []
    for row in rows:
        match = _CHANGED.match(row.text) if row.kind in ("file", "note") else None
        if match and match[1] not in found:
            found.append(match[1])
    return found
