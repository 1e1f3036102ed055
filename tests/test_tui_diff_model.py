"""The diff viewer's parser: line numbers from hunk headers, pairing for side by side, and
forgiveness for patches the viewer must still show."""

from __future__ import annotations

from engine.core.store import unified_diff
from tui.diff_model import parse_patch, split_rows, stats

OLD = "line 1\nline 2\nline 3\nline 4\n"
NEW = "line 1\nline two\nline 3\nline 4\nline 5\n"


def test_rows_carry_old_and_new_line_numbers() -> None:
    rows = parse_patch(unified_diff(OLD, NEW))
    assert [r.kind for r in rows] == [
        "file",
        "file",
        "hunk",
        "context",
        "removed",
        "added",
        "context",
        "context",
        "added",
    ]
    removed = next(r for r in rows if r.kind == "removed")
    assert (removed.text, removed.old_no, removed.new_no) == ("line 2", 2, None)
    added = [r for r in rows if r.kind == "added"]
    assert [(r.text, r.new_no) for r in added] == [("line two", 2), ("line 5", 5)]
    assert stats(rows) == stats(rows).__class__(added=2, removed=1, hunks=1)


def test_a_removed_line_that_looks_like_a_file_header_stays_a_removal() -> None:
    patch = "--- a/SKILL.md\n+++ b/SKILL.md\n@@ -1,2 +1,1 @@\n--- a rule\n keep\n"
    rows = parse_patch(patch)
    assert [(r.kind, r.text) for r in rows[2:]] == [
        ("hunk", "@@ -1,2 +1,1 @@"),
        ("removed", "-- a rule"),
        ("context", "keep"),
    ]


def test_two_files_and_a_no_newline_marker() -> None:
    patch = unified_diff("a\n", "b") + "--- a/other\n+++ b/other\n@@ -1 +1 @@\n-x\n+y\n"
    kinds = [r.kind for r in parse_patch(patch)]
    assert kinds == [
        "file",
        "file",
        "hunk",
        "removed",
        "added",
        "note",
        "file",
        "file",
        "hunk",
        "removed",
        "added",
    ]


def test_garbage_is_shown_as_notes_not_refused() -> None:
    rows = parse_patch("this is not a diff\n+ nor this\n")
    assert [(r.kind, r.text) for r in rows] == [
        ("note", "this is not a diff"),
        ("note", "+ nor this"),
    ]


def test_side_by_side_pairs_removals_with_their_replacements() -> None:
    pairs = split_rows(parse_patch(unified_diff(OLD, NEW)))
    texts = [(left.text if left else None, right.text if right else None) for left, right in pairs]
    assert ("line 2", "line two") in texts
    assert (None, "line 5") in texts
    assert ("line 1", "line 1") in texts
    assert len(pairs) == 8  # 2 file headers, hunk, 4 context-or-pair rows, 1 addition
