"""Start-up and refresh order: the first frame goes out before the workspace is read, the panes
fill after it, and a candidate changed on disk updates its own row (the queue paints before the
patch and the overview are re-read)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from engine.core.queue import CandidateQueue
from tests.tui_pilot import SIZE, settle, user_config_home, wait_until
from tests.tui_workspace import build_workspace
from tui.app import SkillsmithApp, make_app

__all__ = ["user_config_home"]

ROOT = Path(__file__).resolve().parents[1]
READERS = {"queue-load", "overview-load", "watch"}


def spy_on_frames(app: SkillsmithApp, on_frame: Any) -> None:
    """Call ``on_frame()`` as each frame is handed to the terminal (headless runs hand it too)."""
    display = app._display

    def spied(screen: Any, renderable: Any) -> None:
        if renderable is not None and not app._batch_count:
            on_frame()
        display(screen, renderable)

    app._display = spied  # type: ignore[method-assign]


async def test_the_first_frame_goes_out_before_the_workspace_is_read(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    app = make_app(ws, watch=True)
    first: dict[str, object] = {}

    def frame() -> None:
        if not first:
            first["queue loaded"] = app.queue_pane.loaded
            first["overview loaded"] = app.overview_pane.loaded
            first["readers"] = sorted({w.group for w in app.workers} & READERS)

    spy_on_frames(app, frame)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert first == {"queue loaded": False, "overview loaded": False, "readers": []}
        # ...and after it the panes fill and the watcher runs.
        assert app.queue_pane.table.row_count == 3
        assert app.overview_pane.loaded
        assert "Open candidates (3)" in str(app.query_one("#overview-body").render())
        assert any(w.group == "watch" for w in app.workers)


def test_the_workbench_module_leaves_hidden_panes_and_engine_writers_unloaded() -> None:
    """What the first screen does not show is imported when first used, not at start."""
    lazy = [
        "engine.core.queue",
        "engine.core.store",
        "engine.core.scoreboard",
        "engine.views.overview",
        "engine.evaluation.gates.stale",
        "tui.sessions_pane",
        "tui.scoreboard_pane",
        "tui.skills_pane",
        "tui.snapshots_screen",
        "tui.loops",
        "watchfiles",
    ]
    code = f"import sys, tui.app; print([m for m in {lazy!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True
    )
    assert out.stdout.strip() == "[]"


async def test_a_candidate_decided_elsewhere_updates_its_row_before_the_overview(
    tmp_path: Path,
) -> None:
    ws = build_workspace(tmp_path / "ws")
    app = make_app(ws, watch=True)
    frames: list[tuple[str, bool]] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        target = next(e for e in app.queue_pane.entries if e.candidate.status == "pending_eval")
        others = [e for e in app.queue_pane.entries if e.id != target.id]
        table = app.queue_pane.table
        row_keys = [row.key.value for row in table.ordered_rows]

        def frame() -> None:
            status = str(table.get_cell(target.id, "status"))
            frames.append((status, app._overview_waits))

        spy_on_frames(app, frame)
        CandidateQueue(ws).reject(target.id, why="not convincing")
        await wait_until(
            pilot,
            lambda: str(table.get_cell(target.id, "status")) == "rejected",
            what="the rejected candidate's row",
        )
        await settle(pilot)
        assert table.row_count == 3
        # The decided row moved below the open ones; the others kept their cells.
        assert [row.key.value for row in table.ordered_rows] == [
            k for k in row_keys if k != target.id
        ] + [target.id]
        for entry in others:
            assert app.queue_pane.entry(entry.id) == entry
        # The frame showing the new status went out while the overview still waited to reload.
        assert ("rejected", True) in frames
        assert "Open candidates (2)" in str(app.query_one("#overview-body").render())


async def test_the_painted_workbench_is_frozen_out_of_the_collector_until_it_exits(
    tmp_path: Path,
) -> None:
    """Full collections over the workbench's long-lived heap stalled refreshes; a frozen heap
    must not outlive the app (every test here runs one in the same process)."""
    import gc

    ws = build_workspace(tmp_path / "ws")
    app = make_app(ws, watch=False)
    assert gc.get_freeze_count() == 0
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.queue_pane.table.row_count == 3
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


async def test_the_queue_sizes_its_columns_as_datatable_would(tmp_path: Path) -> None:
    """The queue table widens its columns from its cells' lengths instead of a Rich measure
    of each cell (seconds for thousands of rows); the widths and the scrollable size are the
    ones DataTable's own measuring gives, wide characters and a stale flag included."""
    from textual.widgets import DataTable

    from tests.tui_workspace import SKILL, edited, skill_text, submit_candidate

    ws = build_workspace(tmp_path / "ws")
    queue = CandidateQueue(ws)
    text = edited(skill_text(), "wide")
    submit_candidate(queue, text, "検査の手順 — a summary in wide characters " * 3, "v0")
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.queue_pane.table
        assert table.row_count == 4
        assert any(e.behind for e in app.queue_pane.entries)  # the v0 one is stale
        assert type(table)._update_dimensions is not DataTable._update_dimensions
        ours = ([c.content_width for c in table.ordered_columns], table.virtual_size)
        for column in table.ordered_columns:
            column.content_width = len(column.label.plain)
        DataTable._update_dimensions(table, list(table.rows))
        assert ours == ([c.content_width for c in table.ordered_columns], table.virtual_size)
        assert SKILL in str(table.get_row_at(0))


async def test_a_long_queue_shows_its_first_screen_of_rows_before_the_rest(
    tmp_path: Path,
) -> None:
    """Filling thousands of rows holds the UI: the first fill adds the rows a screen shows at
    once, in the queue's order, and the rest after the frame that paints them; a reload that
    comes before then finds the table whole (no row twice, none missing)."""
    import dataclasses

    from tui.queue_pane import FIRST_ROWS, QueueEntry

    ws = build_workspace(tmp_path / "ws")
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pane = app.queue_pane
        (model, *_) = pane.entries
        many = [
            QueueEntry(
                dataclasses.replace(
                    model.candidate,
                    id=f"cand-20260301-0000{n:04d}-long",
                    created_at=f"2026-03-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
                ),
                model.gates,
            )
            for n in range(FIRST_ROWS * 3)
        ]
        pane.set_entries([])  # an empty queue, as before a first load
        pane.set_entries(many)
        assert pane.table.row_count == FIRST_ROWS
        newest = sorted((e.id for e in many), reverse=True)
        assert [str(pane.table.get_row_at(i)[1]) for i in range(3)] == newest[:3]
        pane.set_entries(many[1:])  # a reload before the rest was added
        assert pane.table.row_count == len(many) - 1
        await settle(pilot)
        assert sorted(str(key.value) for key in pane.table.rows) == sorted(newest[:-1])
        pane.set_entries([])
        pane.set_entries(many)
        await settle(pilot)
        assert pane.table.row_count == len(many)
