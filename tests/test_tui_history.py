"""s snapshot, S restore (confirmed, "No" focused), b roll back, and the Skills & history pane."""

from __future__ import annotations

from pathlib import Path

from engine.core.snapshots import create_snapshot, list_snapshots
from engine.core.store import SkillStore
from tests.tui_pilot import SIZE, settle, toasts, user_config_home
from tests.tui_workspace import SKILL, build_workspace
from tui.app import make_app
from tui.dialogs import ConfirmScreen
from tui.skills_pane import SkillsPane, load_history, render_details
from tui.snapshots_screen import SnapshotsScreen

__all__ = ["user_config_home"]


async def test_s_writes_a_snapshot(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        (snapshot,) = list_snapshots(ws)
        assert snapshot.path.name.startswith("v1-20")  # the workspace version, then the time
        assert snapshot.note == "taken in the workbench"
        assert any(f"snapshots/{snapshot.path.name}" in t for t in toasts(pilot))


async def test_S_restores_an_older_snapshot_only_after_confirming(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    create_snapshot(ws, note="at v1")  # workspace version 1, skill at v1
    store = SkillStore(ws, SKILL)
    store.publish(ws.skill_path(SKILL).read_text() + "\nextra line\n", why="later edit")
    assert ws.version() == 2
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SnapshotsScreen)
        assert screen.selected is not None and screen.selected.note == "at v1"
        await pilot.press("enter")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert app.focused is not None and app.focused.id == "no"
        body = str(dialog.query_one(".dialog-body").render())
        assert "OLDER than the current workspace version v2" in body
        await pilot.press("enter")  # "No"
        await settle(pilot)
        assert store.current() == "v2"
        assert len(list_snapshots(ws)) == 1
        await pilot.press("enter", "y")
        await settle(pilot)
        assert store.current() == "v1"
        assert ws.version() == 1
        notes = [s.note for s in list_snapshots(ws)]
        assert len(notes) == 2  # the pre-restore snapshot makes the restore undoable
        assert any(t.startswith("Restored v1-20") for t in toasts(pilot))
        # The snapshots screen shows the new file without a key.
        assert len(screen.snapshots) == 2


async def test_b_rolls_the_selected_skill_back_to_the_selected_version(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    store = SkillStore(ws, SKILL)
    v0 = store.read("v0")
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.check_action("rollback", ()) is None  # nothing selected yet
        await pilot.press("6")
        await settle(pilot)
        pane = app.query_one(SkillsPane)
        assert pane.selected_skill is not None and pane.selected_skill.name == SKILL
        # the cursor starts on the version before the current one, the usual rollback target
        assert pane.selected_version == "v0"
        await pilot.press("l", "b")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)  # b asks first, and says what it does
        title = str(app.screen.query_one(".dialog-title").render())
        assert title == f"Roll {SKILL} back from v1 to v0?"
        assert "z undoes this (back to v1)" in str(app.screen.query_one(".dialog-body").render())
        await pilot.press("n")
        await settle(pilot)
        assert store.current() == "v1"  # no: nothing happened
        await pilot.press("b")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert store.current() == "v0"
        assert ws.skill_path(SKILL).read_text() == v0
        assert [a["to"] for a in store.audit()][-1] == "v0"
        assert any("Rolled security-audit back to v0" in t for t in toasts(pilot))
        # The pane reloaded: v0 is now the current one and b no longer applies to it.
        assert pane.selected_skill is not None and pane.selected_skill.current == "v0"
        assert app.check_action("rollback", ()) is None
        # z takes the rollback back, not some older decision
        await pilot.press("z")
        await settle(pilot)
        assert store.current() == "v1"
        assert any(f"Undid the rollback: {SKILL} is back at v1" in t for t in toasts(pilot))


async def test_history_pane_shows_timeline_taboo_and_snapshots(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    store = SkillStore(ws, SKILL)
    store.taboo().add("tool_loop", "--- a\n+++ b\n+x\n", "loops on grep")
    create_snapshot(ws, note="nightly")
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        text = str(app.query_one("#skill-detail-body").render())
        assert "publish v0→v1" in text and "tighten the pitfalls" in text
        assert "Taboo (1)" in text and "tool_loop" in text and "loops on grep" in text
        assert "nightly" in text and "Snapshots (workspace v1)" in text


def test_the_timeline_names_a_branch_version_by_its_branch(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    store = SkillStore(ws, SKILL)
    branch = store.fork("exp1")
    branch.publish(ws.skill_path(SKILL).read_text() + "\nan experiment\n", why="try it")
    history = load_history(ws)
    (skill,) = [s for s in history.skills if s.name == SKILL]
    text = render_details(skill, history).plain
    assert "publish exp1/v1→exp1/v2  try it" in text  # not "v1→v2": main's v2 is another text
    assert "publish v0→v1  tighten the pitfalls" in text


async def test_b_offers_the_version_before_the_new_one_after_a_publish(tmp_path: Path) -> None:
    """A job publishes while the skills pane is open: the cursor starts again on the version
    before the new current one (not where it stood for the old one), so b offers v2 → v1."""
    ws = build_workspace(tmp_path / "ws")
    store = SkillStore(ws, SKILL)
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        pane = app.query_one(SkillsPane)
        assert pane.selected_version == "v0"
        store.publish(store.read("v1") + "\nOne more line.\n", why="a job kept a round")
        app.reload_areas({"skills"})
        await settle(pilot)
        assert pane.selected_version == "v1"
        await pilot.press("l", "b")
        await settle(pilot)
        title = str(app.screen.query_one(".dialog-title").render())
        assert title == f"Roll {SKILL} back from v2 to v1?"
