"""e runs an evaluation in a worker with progress; c cancels it; q stops it; a failing job shows
an error dialog. The results are asserted in the run folder, the scoreboard and the panes."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from textual.message import Message

from engine.core.config import AgentConfig
from engine.core.events import Event
from engine.core.runs import run_folders
from engine.core.scoreboard import read_records
from engine.core.workspace import Workspace
from tests.tui_pilot import SIZE, confirm, settle, toasts, user_config_home, wait_until
from tests.tui_workspace import BENCH, CASES, build_workspace, demo_cases
from tui.app import make_app
from tui.dialogs import ErrorScreen
from tui.jobs import JobBar, JobEvent
from tui.navigation import VimTable
from tui.score_chart import ScoreChart
from tui.transcript_screen import TranscriptScreen

__all__ = ["user_config_home"]


def run_dirs(ws: Workspace) -> list[Path]:
    return run_folders(ws.runs_dir)


def manifest_status(ws: Workspace) -> str | None:
    runs = run_dirs(ws) if ws.runs_dir.is_dir() else []
    if not runs:
        return None
    return str(json.loads((runs[0] / "manifest.json").read_text()).get("status"))


def sleeping_agent(ws: Workspace, marker: str = "sleeping-agent") -> None:
    """An agent that would run for a minute: only cancellation can end the job quickly."""
    config = ws.load_config()
    code = f"import time; time.sleep(60)  # {marker}"
    config.agent = AgentConfig(kind="command", command=[sys.executable, "-c", code])
    ws.save_config(config)


async def test_e_evaluates_with_progress_and_the_panes_show_the_run(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    events: list[Event] = []

    def hook(message: Message) -> None:
        if isinstance(message, JobEvent):
            events.append(message.event)

    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await settle(pilot)
        await confirm(pilot, "e")
        assert app.query_one(JobBar).running or events
        await settle(pilot, timeout=120)
        assert not app.query_one(JobBar).running
        (run,) = run_dirs(ws)
        rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
        assert sorted(r["case_id"] for r in rows) == sorted(CASES)
        assert len(read_records(ws.benchmarks_dir / BENCH)) == 1
        progress = [e.data for e in events if e.kind == "progress"]
        assert progress[-1] == {**progress[-1], "done": 2, "total": 2}
        assert any(t.startswith(f"Evaluated {BENCH}: run {run.name}") for t in toasts(pilot))

        await pilot.press("5")
        await settle(pilot)
        assert app.query_one("#score-records", VimTable).row_count == 1
        await pilot.press("m")  # pass rate, read from the run's results on demand
        await settle(pilot)
        (rate,) = app.query_one(ScoreChart).values
        passed = sum(r["pass_fail"] == "pass" for r in rows)
        assert rate == passed / len(rows)

        await pilot.press("4")
        await settle(pilot)
        assert app.query_one("#session-list", VimTable).highlighted_key == run.name
        kinds = [e.get("kind") for e in app.query_one("#sessions-pane").events]  # type: ignore[attr-defined]
        assert kinds[0] == "started" and kinds[-1] == "finished"
        assert kinds.count("case_finished") == 2
        await pilot.press("l", "g", "j", "enter")  # the first case_finished event
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen)
        log = app.screen.query_one("#transcript")
        text = "\n".join(str(line) for line in log.lines)  # type: ignore[attr-defined]
        assert "TOOL CALLS" in text and "FINAL ANSWER" in text and "VERDICT" in text


async def test_v_runs_one_evolution_round(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws", cases=demo_cases(16))
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await confirm(pilot, "v")  # the form's defaults: one round
        await settle(pilot, timeout=240)
        (log,) = ws.sessions_dir.glob("evolve-*.jsonl")
        kinds = [json.loads(line)["kind"] for line in log.read_text().splitlines()]
        assert kinds[0] == "started" and kinds[-1] == "finished"
        assert (ws.experiments_dir / log.stem / "summary.json").is_file()
        assert any(t.startswith("Evolve round 1 on security-audit") for t in toasts(pilot))


async def test_o_runs_the_optimizer_which_refuses_a_small_benchmark(tmp_path: Path) -> None:
    """A full GEPA run takes minutes (the engine's tests run one); here the key reaches the
    engine, which refuses two cases before any agent runs, and the refusal is a dialog."""
    ws = build_workspace(tmp_path / "ws")
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await confirm(pilot, "o")
        await settle(pilot, timeout=120)
        assert isinstance(app.screen, ErrorScreen)
        body = str(app.screen.query_one(".dialog-body").render())
        assert "benchmark.yaml: feedback and validation need cases" in body
        assert not any(ws.experiments_dir.iterdir())
        assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())


async def test_c_cancels_a_running_evaluation(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    sleeping_agent(ws)
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await confirm(pilot, "e")
        await wait_until(pilot, lambda: manifest_status(ws) is not None, what="the run to start")
        assert app.check_action("cancel_job", ()) is True
        assert app.check_action("evaluate", ()) is None  # one job at a time
        await pilot.press("c")
        await settle(pilot, timeout=30)
        assert manifest_status(ws) == "interrupted"
        assert any("cancelled; finished work is kept" in t for t in toasts(pilot))
        assert app.check_action("cancel_job", ()) is False


def agent_processes(marker: str) -> list[int]:
    """Pids of the sleeping agents of one test (their command line carries ``marker``)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if proc.name.isdigit() and marker.encode() in cmdline:
            pids.append(int(proc.name))
    return pids


async def test_q_during_a_job_stops_it_promptly(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    marker = f"agent-of-{tmp_path.name}"
    sleeping_agent(ws, marker)
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await confirm(pilot, "e")
        await wait_until(pilot, lambda: bool(agent_processes(marker)), what="the agents")
        await pilot.press("q")
    # The agents sleep for a minute: only the cancel token can end the job well before that.
    deadline = time.monotonic() + 20
    while manifest_status(ws) != "interrupted" or agent_processes(marker):
        assert time.monotonic() < deadline, (manifest_status(ws), agent_processes(marker))
        time.sleep(0.1)


async def test_a_failing_job_shows_an_error_dialog(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    (ws.benchmarks_dir / BENCH / "benchmark.yaml").write_text("id: [unclosed\n")
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot, timeout=60)
        assert isinstance(app.screen, ErrorScreen)
        body = str(app.screen.query_one(".dialog-body").render())
        assert "benchmark.yaml" in body and "\n" not in body.strip()
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ErrorScreen)
        assert app.check_action("evaluate", ()) is True  # the workbench carries on
