"""Moving around: panes 1–6, tab, j/k/g/G, h/l, the `/` filter, d and J/K on the diff, help,
the command palette, the user keymap from skillsmith.yaml, and q."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.command import CommandPalette
from textual.geometry import Region
from textual.widgets import Input

from engine.core.queue import CandidateQueue
from engine.core.snapshots import list_snapshots
from engine.core.store import SkillStore, unified_diff
from tests.tui_pilot import SIZE, settle, toasts, user_config_home
from tests.tui_workspace import (
    GATES_PASS,
    SKILL,
    build_workspace,
    edited,
    skill_text,
    submit_candidate,
)
from tui.app import SkillsmithApp, make_app
from tui.diff_pane import DiffView
from tui.help_screen import HelpScreen
from tui.keys import APP_BINDINGS
from tui.navigation import VimTable
from tui.queue_pane import QueueTable

__all__ = ["user_config_home"]


def focused_id(app: SkillsmithApp) -> str | None:
    return app.focused.id if app.focused is not None else None


async def test_number_keys_and_tab_move_between_the_eight_panes(tmp_path: Path) -> None:
    app = make_app(build_workspace(tmp_path / "ws"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        expected = {
            "0": "overview-pane",
            "1": "queue",
            "2": "diff-view",
            "3": "gates-pane",
            "4": "session-list",
            "5": "score-records",
            "6": "skill-list",
            "7": "activity-list",
        }
        for key, widget_id in expected.items():
            await pilot.press(key)
            await settle(pilot)
            assert focused_id(app) == widget_id, key
        await pilot.press("tab")  # from 7 wraps to 0, the overview
        await settle(pilot)
        assert focused_id(app) == "overview-pane"
        await pilot.press("tab", "tab", "tab")
        await settle(pilot)
        assert focused_id(app) == "gates-pane"
        await pilot.press("shift+tab")
        await settle(pilot)
        assert focused_id(app) == "diff-view"


async def test_jkgG_move_the_queue_and_the_diff_follows(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws", candidates=3)
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.queue_pane.table
        assert table.cursor_row == 0
        await pilot.press("j", "j")
        await settle(pilot)
        assert table.cursor_row == 2
        await pilot.press("k")
        await settle(pilot)
        assert table.cursor_row == 1
        await pilot.press("G")
        await settle(pilot)
        assert table.cursor_row == table.row_count - 1
        selected = app.queue_pane.selected
        assert selected is not None
        patch = selected.candidate.patch_text()
        shown = "\n".join(
            ("+" if r.kind == "added" else "-" if r.kind == "removed" else " ") + r.text
            for r in app.diff_pane.view.rows
            if r.kind in ("added", "removed")
        )
        assert shown and all(line in patch for line in shown.splitlines())
        await pilot.press("g")
        await settle(pilot)
        assert table.cursor_row == 0


async def test_slash_filters_the_queue_and_escape_clears_it(tmp_path: Path) -> None:
    app = make_app(build_workspace(tmp_path / "ws"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.queue_pane.table.row_count == 3
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"optimize unproven")  # letters go to the filter, not to actions
        await settle(pilot)
        assert app.queue_pane.table.row_count == 1
        assert app.queue_pane.border_subtitle == "filter: optimize unproven"
        await pilot.press("enter")  # back to the list, filter kept
        assert focused_id(app) == "queue"
        assert app.queue_pane.table.row_count == 1
        await pilot.press("slash", "escape")
        await settle(pilot)
        assert app.queue_pane.table.row_count == 3
        assert focused_id(app) == "queue"
        await pilot.press("slash", *"no such thing")
        await settle(pilot)
        assert app.diff_pane.view.rows == []


async def test_d_switches_the_diff_and_J_K_scroll_it_from_the_queue(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws", candidates=0)
    text = skill_text()
    new = text.replace("# Security audit", "# Security audit (checked)")
    CandidateQueue(ws).submit(
        "new-skill",
        new,
        unified_diff("", new),
        source="manual",
        operation="create",
        status="pending_approval",
        parent_version=None,
        summary="a whole new skill",
    )
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("1", "g")
        while app.queue_pane.selected and app.queue_pane.selected.candidate.skill != "new-skill":
            await pilot.press("j")
        await settle(pilot)
        view = app.query_one(DiffView)

        def mode() -> str:
            return view.mode

        assert mode() == "unified"
        assert len(view.rows) > 30
        await pilot.press("J", "J")
        await settle(pilot)
        assert view.scroll_y == 8
        assert focused_id(app) == "queue"  # the queue kept the focus
        await pilot.press("K")
        await settle(pilot)
        assert view.scroll_y == 4
        await pilot.press("d")
        await settle(pilot)
        assert mode() == "split"
        assert "side by side" in str(app.query_one("#diff-header").render())
        await pilot.press("d")
        await settle(pilot)
        assert mode() == "unified"


async def test_question_mark_lists_every_key_with_the_user_keymap(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    config = ws.load_config()
    config.keymap = {"approve": "y", "snapshot": "ctrl+s"}
    ws.save_config(config)
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-body").render())
        for binding in APP_BINDINGS:
            assert binding.description in text  # type: ignore[union-attr]
        for line in ("y                     Approve", "ctrl+s                Snapshot"):
            assert line in text
        for extra in ("Command palette", "Down", "Chart metric", "Restore", "Next list"):
            assert extra in text
        for keys in ("down, j", "up, k", "home, g", "end, G"):  # how to move in a list
            assert keys in text, keys
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_keymap_from_the_workspace_config_remaps_approve(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    config = ws.load_config()
    config.keymap = {"approve": "y", "not_a_binding": "x"}
    ws.save_config(config)
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert any("not_a_binding" in t for t in toasts(pilot))
        while app.queue_pane.selected and app.queue_pane.selected.candidate.status != (
            "pending_approval"
        ):
            await pilot.press("j")
        await pilot.press("a")  # no longer approve
        await settle(pilot)
        assert SkillStore(ws, SKILL).current() == "v1"
        await pilot.press("y")
        await settle(pilot)
        assert SkillStore(ws, SKILL).current() == "v2"


async def test_ctrl_p_offers_every_action_and_runs_it(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for binding in APP_BINDINGS:
            if binding.action not in ("help", "quit"):  # type: ignore[union-attr]
                assert binding.description in titles  # type: ignore[union-attr]
        assert {"Theme: skillsmith-dark", "Theme: skillsmith-light", "Quit"} <= set(titles)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"Snapshot")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert len(list_snapshots(ws)) == 1


async def test_q_quits(tmp_path: Path) -> None:
    app = make_app(build_workspace(tmp_path / "ws"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_R_reloads_what_changed_while_not_watching(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.queue_pane.table.row_count == 3
        text = ws.skill_path(SKILL).read_text()
        submit_candidate(CandidateQueue(ws), text, "Arrived later", "v1")
        await pilot.pause(0.3)
        assert app.queue_pane.table.row_count == 3  # no watcher: nothing moves by itself
        await pilot.press("R")
        await settle(pilot)
        assert app.queue_pane.table.row_count == 4


async def test_a_summary_that_looks_like_markup_shows_as_written(tmp_path: Path) -> None:
    """Engine data in a row is text: a closing tag alone used to break the table's render."""
    ws = build_workspace(tmp_path / "ws", candidates=0)
    summary = "drop hits under [/tmp] and [bold]vendored[/bold] code"
    text = ws.skill_path(SKILL).read_text()
    new = edited(text, "Markup")
    CandidateQueue(ws).submit(
        SKILL,
        new,
        unified_diff(text, new),
        source="evolve",
        operation="update",
        status="pending_approval",
        parent_version="v1",
        summary=summary,
        gates=GATES_PASS,
    )
    app = make_app(ws, watch=False)
    async with app.run_test(size=(200, 40)) as pilot:  # wide enough for the whole summary
        await settle(pilot)
        table = app.queue_pane.table
        shown = table.render_lines(Region(0, 0, table.size.width, table.size.height))
        assert any(summary in line.text for line in shown)


class OneTable(App[None]):
    CSS = "VimTable { height: 4; }"

    def __init__(self, kind: type[VimTable]) -> None:
        super().__init__()
        self.kind = kind

    def compose(self) -> ComposeResult:
        yield self.kind()


@pytest.mark.parametrize("kind", [VimTable, QueueTable])
async def test_a_table_drawn_before_it_measured_its_rows_redraws_them_at_full_width(
    kind: type[VimTable],
) -> None:
    """DataTable measures new rows when idle; a frame drawn before that cuts cells to the
    labels' width, and the next frame must not reuse those cells (the queue's first screen:
    the queue table measures in its own way and must keep this; a fresh-clone CI once showed
    its columns at the labels' width)."""
    app = OneTable(kind)
    async with app.run_test(size=(60, 6)) as pilot:
        table = app.query_one(VimTable)
        table.add_column("id", key="id")
        await pilot.pause()
        table.add_row(Text("candidate-0001"), key="c1")  # the queue's cells are Text
        region = Region(0, 0, table.size.width, table.size.height)
        early = [line.text for line in table.render_lines(region)]
        assert " ca " in early[1]  # drawn before the table was idle: the label's width
        await pilot.pause()
        assert "candidate-0001" in table.render_lines(region)[1].text
