"""Each of the eight loops started from the workbench: its key opens its form, the job reports
typed progress on the job bar, its result is the outcome, and the Sessions pane lists the session
with its kind, state and headline. Everything runs for real: the demo agent, the offline models,
the engine's loops.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Label, ProgressBar

from engine.core.events import (
    AnyLoopEvent,
    Finished,
    ItemFinished,
    Progress,
    Started,
    read_event,
)
from engine.core.runs import run_folders
from engine.core.sessions import KINDS
from engine.core.workspace import Workspace
from engine.evaluation.demo import copy_demo
from tests.builder_helpers import PICK
from tests.online_helpers import CLAUDE, add_weather_skill, copy_session
from tests.tui_pilot import SIZE, confirm, settle, user_config_home
from tests.tui_workspace import BENCH, SKILL, build_workspace, demo_cases
from tui.app import SkillsmithApp, make_app
from tui.jobs import JobBar, JobEvent
from tui.loop_form import LoopForm
from tui.navigation import VimTable

__all__ = ["user_config_home"]


def quiet_demo(ws: Workspace) -> Workspace:
    # The loops' outcomes are not what these tests assert, but a run that lands on no round or
    # no candidate must still be the same run every time: the demo agent slips no verdict.
    cfg = ws.load_config()
    cfg.agent.noise = 0.0
    ws.save_config(cfg)
    return ws


class Watch:
    """Every job event the app handles, typed, and what the job bar showed as each arrived."""

    def __init__(self) -> None:
        self.events: list[AnyLoopEvent] = []
        self.bars: list[tuple[float, str]] = []  # (units done, status) before each event
        self.app: SkillsmithApp | None = None

    def __call__(self, message: Message) -> None:
        if isinstance(message, JobEvent):
            self.events.append(read_event(message.event))
            if self.app is not None:
                bar = self.app.query_one(JobBar)
                status = str(bar.query_one("#job-status", Label).render())
                self.bars.append((bar.query_one(ProgressBar).progress, status))

    def check_bar(self, mark: int) -> None:
        """Since the job started (event ``mark``): the bar moved with the first units done (not
        only at the loop's own steps, minutes apart) and showed an ETA once a tenth of them
        were done."""
        events, bars = self.events[mark:], self.bars[mark:]
        units = [
            i
            for i, e in enumerate(events)
            if isinstance(e, ItemFinished) or (isinstance(e, Progress) and e.done > 0)
        ]
        assert units, [type(e).__name__ for e in events]
        first = units[0]
        assert any(done > 0 for done, _ in bars[first + 1 : first + 3]), bars[:6]
        assert any(" · ETA " in status for _, status in bars), bars[-3:]

    def of(self, kind: str) -> list[AnyLoopEvent]:
        """The events of the job's own session (the first that started with this kind)."""
        own = next(
            e.session_id for e in self.events if isinstance(e, Started) and e.session_kind == kind
        )
        return [e for e in self.events if e.session_id == own]


async def start(pilot: Pilot[None], key: str, timeout: float, **fields: str) -> None:
    await confirm(pilot, key, **fields)
    assert not isinstance(pilot.app.screen, LoopForm), f"{key}: the form refused its values"
    await settle(pilot, timeout=timeout)
    assert not pilot.app.query_one(JobBar).running


async def session_row(pilot: Pilot[None], session_id: str) -> list[str]:
    """The Sessions pane's row of a session: id, kind, state, events, result."""
    await pilot.press("4")
    await settle(pilot)
    table = pilot.app.query_one("#session-list", VimTable)
    row = [str(cell) for cell in table.get_row(session_id)]
    await pilot.press("0")
    await settle(pilot)
    return row


def check_session(
    watch: Watch, kind: str, row: list[str], state: str, progressed: Callable[[Any], bool]
) -> str:
    """The job's own events: started, progress it reported, finished with the headline the
    Sessions pane shows; returns that headline."""
    own = watch.of(kind)
    assert isinstance(own[0], Started)
    assert any(progressed(e) for e in own), [type(e).__name__ for e in own]
    (finished,) = [e for e in own if isinstance(e, Finished)]
    assert row[1:3] == [KINDS[kind], state]
    assert row[4] == finished.headline and finished.headline
    return finished.headline


def outcomes(pilot: Pilot[None]) -> list[str]:
    """What the activity log says (a toast expires after 10 s; the log keeps every outcome)."""
    return [entry.text for entry in pilot.app.activity.entries]  # type: ignore[attr-defined]


def is_progress(event: Any) -> bool:
    return isinstance(event, Progress) and 0 < event.done <= event.total


async def test_evaluate_then_curate(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    watch = Watch()
    app = watch.app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE, message_hook=watch) as pilot:
        await settle(pilot)
        mark = len(watch.events)
        await start(pilot, "e", 120)
        watch.check_bar(mark)
        (run,) = [p.name for p in run_folders(ws.runs_dir)]
        row = await session_row(pilot, run)
        headline = check_session(watch, "eval", row, "finished", is_progress)
        assert headline.startswith(f"run {run}: pass rate")
        assert f"Evaluated {BENCH}: {headline}" in outcomes(pilot)

        mark = len(watch.events)
        await start(pilot, "C", 60, propose="no")  # curate: reads the run's transcripts
        watch.check_bar(mark)
        (curate,) = [p.stem for p in ws.sessions_dir.glob("curate-*.jsonl")]
        row = await session_row(pilot, curate)
        headline = check_session(watch, "curate", row, "finished", lambda e: True)
        assert headline.startswith("2 transcript(s), 1 skill(s)")
        assert f"Curate: {headline}" in outcomes(pilot)


async def test_evolve_one_round(tmp_path: Path) -> None:
    ws = quiet_demo(build_workspace(tmp_path / "ws", candidates=0, cases=demo_cases(16)))
    watch = Watch()
    app = watch.app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE, message_hook=watch) as pilot:
        await settle(pilot)
        mark = len(watch.events)
        await start(pilot, "v", 300, rounds="1")
        watch.check_bar(mark)
        (session,) = [p.stem for p in ws.sessions_dir.glob("evolve-*.jsonl")]
        row = await session_row(pilot, session)
        stages = [e for e in watch.of("evolve") if isinstance(e, Progress)]
        assert stages[0].label == "round 0: baseline" and stages[-1].label.endswith(": final")
        headline = check_session(watch, "evolve", row, "finished", is_progress)
        assert headline.startswith(f"{SKILL} v1 → ") and "1 round(s)" in headline
        assert any(t.startswith(f"Evolve round 1 on {SKILL}") for t in outcomes(pilot))


async def test_gepa_with_a_small_budget(tmp_path: Path) -> None:
    ws = quiet_demo(build_workspace(tmp_path / "ws", candidates=0, cases=demo_cases(16)))
    watch = Watch()
    app = watch.app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE, message_hook=watch) as pilot:
        await settle(pilot)
        fields = {"iterations": "1", "max_metric_calls": "40", "submit": "no"}
        mark = len(watch.events)
        await start(pilot, "o", 300, **fields)
        watch.check_bar(mark)
        (experiment,) = [p.name for p in ws.experiments_dir.iterdir()]
        row = await session_row(pilot, experiment)
        calls = [e for e in watch.of("gepa") if isinstance(e, Progress)]
        assert calls[-1].total == 40 and calls[-1].label.startswith("metric calls")
        headline = check_session(watch, "gepa", row, "not_submitted", is_progress)
        assert headline.startswith(f"{SKILL}: not_submitted")
        result = json.loads((ws.experiments_dir / experiment / "result.json").read_text())
        assert any(
            t.startswith(f"Optimization of {SKILL}: {result['status']}") for t in outcomes(pilot)
        )


async def test_build_then_optimize_the_agent(tmp_path: Path) -> None:
    ws = quiet_demo(Workspace.at(copy_demo(tmp_path / "demo")))
    watch = Watch()
    app = watch.app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE, message_hook=watch) as pilot:
        await settle(pilot)
        build = {"bench": "mini", "source": "vuln-detect", "pick": ",".join(PICK)}
        mark = len(watch.events)
        await start(pilot, "B", 600, **build, cases="6", pilot_iterations="1")
        watch.check_bar(mark)
        (session,) = [p.stem for p in ws.sessions_dir.glob("build-*.jsonl")]
        row = await session_row(pilot, session)
        headline = check_session(watch, "build", row, "frozen", is_progress)
        assert headline.startswith("mini frozen at pilot 1: Formal Baseline")
        assert f"Build: {headline}" in outcomes(pilot)

        mark = len(watch.events)
        await start(pilot, "O", 600, bench="mini", rounds="1")
        watch.check_bar(mark)
        (session,) = [p.stem for p in ws.sessions_dir.glob("agent-optimizer-*.jsonl")]
        row = await session_row(pilot, session)
        evaluations = [e for e in watch.events if isinstance(e, Started) and e.total]
        assert evaluations  # the round's candidate was evaluated, and the bar showed it
        headline = check_session(watch, "agent-optimizer", row, "finished", lambda e: True)
        assert headline.startswith("mini: ") and "1 valid round(s)" in headline
        assert f"Agent Optimizer: {headline}" in outcomes(pilot)


async def test_review_a_transcript(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws", candidates=0)
    add_weather_skill(ws)
    folder = tmp_path / "exports"
    copy_session(CLAUDE, folder)
    watch = Watch()
    app = watch.app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE, message_hook=watch) as pilot:
        await settle(pilot)
        await pilot.press("W")
        await settle(pilot)
        assert isinstance(pilot.app.screen, LoopForm)
        await pilot.press("ctrl+s")  # nothing named: the form says so and stays open
        await pilot.pause()
        assert isinstance(pilot.app.screen, LoopForm)
        assert "transcripts: name a file or folder" in str(
            pilot.app.screen.query_one("#form-error").render()
        )
        await pilot.press("tab")  # a dialog's tab moves between its fields, not the panes
        assert pilot.app.focused is not None and pilot.app.focused.id == "f-watch"
        await pilot.press("escape")
        mark = len(watch.events)
        await start(pilot, "W", 120, sessions=str(folder))
        watch.check_bar(mark)
        (session,) = [p.stem for p in ws.sessions_dir.glob("review-*.jsonl")]
        row = await session_row(pilot, session)
        own = watch.of("review")
        assert [e.item for e in own if isinstance(e, ItemFinished)] == [str(folder / CLAUDE.name)]
        headline = check_session(watch, "review", row, "finished", lambda e: True)
        assert headline.startswith("1 review job: ")
        assert f"Review: {headline}" in outcomes(pilot)


def _weather_tuning(tmp_path: Path) -> tuple[Workspace, Path]:
    """A workspace with the weather skill, and three should / three should-not queries."""
    ws = build_workspace(tmp_path / "ws", candidates=0)
    add_weather_skill(ws)
    queries = tmp_path / "queries.json"
    rows = [
        ("Get the forecast for Oslo and Bergen", True),
        ("Show the rain forecast for Tokyo and Osaka", True),
        ("Compare the forecast of Berlin and Munich", True),
        ("Summarise this recipe for dinner", False),
        ("Sort these invoices by amount", False),
        ("Rename the photos by date", False),
    ]
    queries.write_text(json.dumps([{"query": q, "should_trigger": t} for q, t in rows]))
    return ws, queries


async def test_tune_a_description(tmp_path: Path) -> None:
    ws, queries = _weather_tuning(tmp_path)
    watch = Watch()
    app = watch.app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE, message_hook=watch) as pilot:
        await settle(pilot)
        fields = {"skill": "weather-multi-city", "queries": str(queries), "iterations": "2"}
        mark = len(watch.events)
        await start(pilot, "T", 240, **fields)
        watch.check_bar(mark)
        (session,) = [p.stem for p in ws.sessions_dir.glob("triggers-*.jsonl")]
        row = await session_row(pilot, session)
        headline = check_session(watch, "triggers", row, "finished", is_progress)
        (folder,) = [p for p in ws.experiments_dir.iterdir() if p.name.startswith("triggers-")]
        reason = json.loads((folder / "result.json").read_text())["reason"]
        assert headline.startswith(f"weather-multi-city: {reason}")  # the tuner's own verdict
        assert f"Tune description: {headline}" in outcomes(pilot)


def test_a_budget_is_written_as_a_person_says_it() -> None:
    """The forms' budget field: runs, dollars and tokens in any order, with k and M; anything
    else is refused naming the field and the text."""
    import pytest

    from engine.core.budget import Budget
    from tui.loops import _budget

    def read(text: str) -> Budget:
        return _budget({"budget": text})

    assert read("") == Budget()
    assert read("200 runs") == Budget(runs=200)
    assert read("$5, 2M tokens, 1 run") == Budget(runs=1, usd=5.0, tokens=2_000_000)
    assert read("2.5 usd") == read("$2.5") == read("2.5 dollars") == Budget(usd=2.5)
    assert read("1.5k tokens") == Budget(tokens=1500)
    for bad, says in [
        ("lots", "budget: expected runs, dollars or tokens"),
        ("200", "budget: expected runs, dollars or tokens"),
        ("2.5 runs", "budget: runs come whole"),
        ("-3 runs", "budget: expected runs, dollars or tokens"),
    ]:
        with pytest.raises(ValueError, match=says):
            read(bad)


async def test_a_tuning_stopped_at_its_budget_resumes_from_the_same_form(tmp_path: Path) -> None:
    """The tune form's budget stops the tuning after the current description's six runs; the
    same form with a larger budget goes on in the same experiment and says what it reused."""
    ws, queries = _weather_tuning(tmp_path)
    fields = {"skill": "weather-multi-city", "queries": str(queries), "iterations": "2"}
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await start(pilot, "T", 240, **fields, budget="6 runs")
        (said,) = [t for t in outcomes(pilot) if t.startswith("Tune description")]
        assert "budget reached: 6 of 6 agent runs" in said
        (folder,) = list(ws.experiments_dir.glob("triggers-*"))
        await start(pilot, "T", 240, **fields, budget="500 runs")
        assert list(ws.experiments_dir.glob("triggers-*")) == [folder]
        result = json.loads((folder / "result.json").read_text())
        assert result["resumed"] and result["reused_runs"] >= 6
        assert any(
            t.startswith("Tune description")
            and t.endswith(f"resumed, {result['reused_runs']} agent runs reused")
            for t in outcomes(pilot)
        )


async def test_evolve_stops_at_the_budget_written_in_its_form(tmp_path: Path) -> None:
    """The workbench's evolve job takes a budget as the CLI does: the session stops at a clean
    point past it (no more agent runs than the budget and one batch in flight), says what it
    spent and how to resume, and the same form with a larger budget resumes that session; a
    budget the form cannot read keeps the form open, saying why."""
    from textual.widgets import Static

    ws = quiet_demo(build_workspace(tmp_path / "ws", candidates=0, cases=demo_cases(16)))
    watch = Watch()
    app = watch.app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE, message_hook=watch) as pilot:
        await settle(pilot)
        await confirm(pilot, "v", rounds="1", budget="a few runs")
        assert isinstance(app.screen, LoopForm)
        error = str(app.screen.query_one("#form-error", Static).render())
        assert error.startswith("budget: expected runs, dollars or tokens")
        await pilot.press("escape")
        await settle(pilot)
        await start(pilot, "v", 300, rounds="1", budget="12 runs")
        ran = sum(
            len(path.read_text(encoding="utf-8").splitlines())
            for path in ws.runs_dir.glob("*/results.jsonl")
        )
        assert 12 <= ran <= 12 + (os.cpu_count() or 1)
        (said,) = [t for t in outcomes(pilot) if t.startswith(f"Evolve on {SKILL}")]
        assert f"stopped at its budget (spent {ran}/12 agent runs" in said
        assert "start it again with a larger budget to resume" in said
        assert ws.pending_round_path.is_file()  # what the resume starts from
        (session,) = [p.stem for p in ws.sessions_dir.glob("evolve-*.jsonl")]
        await start(pilot, "v", 300, rounds="1", budget="5000 runs")
        assert [p.stem for p in ws.sessions_dir.glob("evolve-*.jsonl")] == [session]
        assert not ws.pending_round_path.exists()
        assert any(t.startswith(f"Evolve round 1 on {SKILL}") for t in outcomes(pilot))
