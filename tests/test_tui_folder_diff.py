"""A whole-folder patch in the diff view: which files changed, and each file's diff."""

from __future__ import annotations

from pathlib import Path

from engine.core.queue import CandidateQueue
from engine.core.skill_folder import Resource, folder_diff
from engine.core.store import SkillStore
from tests.tui_pilot import SIZE, settle
from tests.tui_workspace import build_workspace, skill_text
from tui.app import make_app
from tui.diff_model import changed_files, parse_patch

OLD = {
    "reference/notes.md": Resource(b"old note\n", 0o644),
    "scripts/run.sh": Resource(b"echo run\n", 0o644),
    "assets/logo.bin": Resource(b"\x00\xff", 0o644),
}
NEW = {
    "reference/notes.md": Resource(b"new note\n", 0o644),
    "scripts/run.sh": Resource(b"echo run\n", 0o755),
    "assets/logo.bin": Resource(b"\xff\x00", 0o644),
    "reference/added.md": Resource(b"added\n", 0o644),
}


def test_changed_files_lists_every_file_of_a_folder_patch_skill_md_first() -> None:
    text = skill_text()
    patch = folder_diff(text, OLD, text + "- one more line\n", NEW)
    assert changed_files(parse_patch(patch)) == [
        "SKILL.md",
        "assets/logo.bin",
        "reference/added.md",
        "reference/notes.md",
        "scripts/run.sh",
    ]
    assert changed_files(parse_patch(folder_diff(text, OLD, text + "x\n", OLD))) == ["SKILL.md"]


# What a candidate's patch may do to the folder (engine.core.folder_patch): edit a text file the
# parent has, create one; binary files and mode changes only ever come from a folder publish.
EDITED = {
    **OLD,
    "reference/notes.md": Resource(b"new note\n", 0o644),
    "reference/added.md": Resource(b"added\n", 0o644),
}


async def test_the_diff_header_names_the_files_a_candidate_changes(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws", candidates=0)
    text = skill_text()
    SkillStore(ws, "folder-skill").publish(text, why="a folder skill", resources=OLD)
    new = text + "- one more line\n"
    CandidateQueue(ws).submit(
        "folder-skill",
        new,
        folder_diff(text, OLD, new, EDITED),
        source="manual",
        operation="update",
        status="pending_approval",
        parent_version="v0",
        summary="a folder edit",
    )
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("1", "g")
        for _ in range(10):  # past the workspace's own candidates
            selected = app.queue_pane.selected
            if selected is None or selected.candidate.skill == "folder-skill":
                break
            await pilot.press("j")
        await settle(pilot)
        header = str(app.query_one("#diff-header").render())
        assert "3 files: SKILL.md, reference/added.md, reference/notes.md" in header
        rows = app.diff_pane.view.rows
        assert [r.text for r in rows if r.kind in ("file", "note")] == [
            "--- a/SKILL.md",
            "+++ b/SKILL.md",
            "--- /dev/null",
            "+++ b/reference/added.md",
            "--- a/reference/notes.md",
            "+++ b/reference/notes.md",
        ]
        assert any(r.kind == "added" and r.text == "new note" for r in rows)
