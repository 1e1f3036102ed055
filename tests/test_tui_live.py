"""Live: files written by other processes show up in the right pane without a key press."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from engine.core.queue import CandidateQueue
from engine.core.workspace import Workspace
from tests.tui_pilot import SIZE, settle, user_config_home, wait_until
from tests.tui_workspace import SKILL, build_workspace, submit_candidate
from tui.app import make_app
from tui.sessions_pane import SessionsPane

__all__ = ["user_config_home"]

ROOT = Path(__file__).resolve().parents[1]


def run_python(ws: Workspace, code: str) -> None:
    """Run ``code`` in a separate Python process (another writer, like a CLI command)."""
    script = "import sys\nfrom pathlib import Path\nfrom engine.core.workspace import Workspace\n"
    script += f"ws = Workspace.at({str(ws.root)!r})\n" + textwrap.dedent(code)
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, timeout=60)


async def test_a_candidate_written_by_another_process_appears(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    app = make_app(ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.queue_pane.table.row_count == 3
        run_python(
            ws,
            """
            from engine.core.queue import CandidateQueue
            from tests.tui_workspace import submit_candidate
            text = ws.skill_path("security-audit").read_text()
            submit_candidate(CandidateQueue(ws), text, "From the CLI", "v1")
            """,
        )
        await wait_until(
            pilot, lambda: app.queue_pane.table.row_count == 4, what="the new candidate row"
        )
        summaries = [e.candidate.summary for e in app.queue_pane.entries]
        assert any(s.startswith("From the CLI") for s in summaries)
        assert "4 open candidates" in str(app.query_one("#status").render())


async def test_a_publish_from_the_cli_updates_history_and_status(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    app = make_app(ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        new = tmp_path / "SKILL.md"
        new.write_text(ws.skill_path(SKILL).read_text() + "\nOne more line.\n")
        argv = ["publish", SKILL, str(new), "--why", "by hand", "-w", str(ws.root)]
        subprocess.run(
            [sys.executable, "-m", "engine.cli", *argv],
            cwd=ROOT,
            check=True,
            timeout=60,
        )
        pane = app.skills_pane
        await wait_until(
            pilot,
            lambda: pane.selected_skill is not None and pane.selected_skill.current == "v2",
            what="the skills pane to show v2",
        )
        await wait_until(
            pilot,
            lambda: f"{SKILL} v2 · workspace state v2" in str(app.query_one("#status").render()),
            what="the status line to show the skill's new version",
        )


async def test_a_session_log_is_tailed_while_it_grows(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    run_python(
        ws,
        """
        from engine.core.events import SessionLog
        log = SessionLog(ws.sessions_dir, "optimize", session_id="optimize-20260301-090000-abc123")
        log.emit("started", message="round 1")
        """,
    )
    app = make_app(ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        pane = app.query_one(SessionsPane)
        assert pane.shown_session == "optimize-20260301-090000-abc123"
        assert [e["kind"] for e in pane.events] == ["started"]
        run_python(
            ws,
            """
            from engine.core.events import SessionLog
            log = SessionLog(
                ws.sessions_dir, "optimize", session_id="optimize-20260301-090000-abc123"
            )
            log.emit("progress", done=1, total=3)
            log.emit("gate_verdict", gate="holdout", verdict="pass")
            """,
        )
        await wait_until(pilot, lambda: len(pane.events) == 3, what="the new events")
        assert [e["kind"] for e in pane.events] == ["started", "progress", "gate_verdict"]


async def test_a_click_after_a_new_candidate_moved_the_rows_selects_the_row_shown(
    tmp_path: Path,
) -> None:
    """The rows below a new candidate keep their drawing (see QueueTable): a click on one must
    still select the candidate drawn there, not the one that was there before."""
    ws = build_workspace(tmp_path / "ws")
    app = make_app(ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.queue_pane.table
        text = ws.skill_path(SKILL).read_text()
        # Two, one after the other: the rows below move by two, onto the same zebra stripe.
        for rows, marker in ((4, "Newer"), (5, "Newest")):
            submit_candidate(CandidateQueue(ws), text, marker, "v1")
            await wait_until(pilot, lambda n=rows: table.row_count == n, what=f"the {marker} row")
            await settle(pilot)
        shown = [row.key.value for row in table.ordered_rows]
        for index in (4, 2, 3, 0, 1):
            await pilot.click("#queue", offset=(4, 1 + index))  # below the header line
            selected = app.queue_pane.selected
            assert selected is not None and selected.id == shown[index]
