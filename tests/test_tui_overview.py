"""The first screen (overview), the activity log, the confirmations in front of long jobs, and
the figures the panes format."""

from __future__ import annotations

import json
from pathlib import Path

from engine.core.queue import CandidateQueue
from engine.core.runs import run_folders
from engine.core.scoreboard import RecordHead, Runtime
from engine.core.workspace import Workspace
from engine.loops.evolve.checkpoint import RoundRecord
from engine.views.overview import evaluation_size, load_overview
from engine.views.rows import compact_count, record_versions
from tests.tui_pilot import SIZE, confirm, settle, toasts, user_config_home
from tests.tui_workspace import BENCH, CASES, SKILL, build_workspace
from tui.activity import ActivityPane, Link
from tui.app import make_app
from tui.gates_pane import GatesPane
from tui.loop_form import LoopForm
from tui.outcomes import evolve_outcome

__all__ = ["user_config_home"]


def without_candidates(ws: Workspace) -> Workspace:
    queue = CandidateQueue(ws)
    for candidate in queue.list():
        queue.reject(candidate.id, why="not part of this test")
    return ws


def text_of(app: object, selector: str) -> str:
    return str(app.query_one(selector).render())  # type: ignore[attr-defined]


def test_the_next_action_follows_the_state_of_the_work(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    view = load_overview(ws)
    assert [(s.name, s.version) for s in view.skills] == [(SKILL, "v1")]
    assert [b.name for b in view.benchmarks] == [BENCH]
    assert view.next_action().text.startswith("2 candidates await your decision — press 1")
    without_candidates(ws)
    action = load_overview(ws).next_action()
    assert (action.text, action.key) == (f"{BENCH}: no evaluation yet — press e", "e")


def test_an_evaluation_says_its_size_before_it_starts(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    size = evaluation_size(ws, BENCH)
    assert (size.units, size.cases, size.runs, size.resume_run) == (len(CASES), len(CASES), 1, None)
    first, plan = size.describe().splitlines()
    assert first == f"2 units (2 cases × 1 run(s)) on {SKILL} v1."
    # the plan's estimate follows (no runs recorded yet: the agent kind's stated default)
    assert plan.startswith("plan: 2 agent runs; estimate ") and "default per run" in plan


def test_large_counts_are_shortened_never_cut() -> None:
    shown = [compact_count(n) for n in (0, 999, 1000, 12345, 268_912, 2_689_124, 999_999)]
    assert shown == ["0", "999", "1k", "12.3k", "269k", "2.69M", "1M"]


def test_every_scoreboard_row_names_its_versions() -> None:
    def record(variant: str, skills: dict[str, str]) -> RecordHead:
        return RecordHead(
            "2026-01-01", Runtime("demo", "demo"), "t", "s", 50.0, None, 1, "run-1", variant, skills
        )  # fmt: skip

    assert record_versions(record("skill", {SKILL: "v2"})) == f"{SKILL}@v2"
    assert record_versions(record("baseline", {})) == "no skill (baseline)"


def test_a_rejected_round_names_its_gate_and_keeps_its_verdicts(tmp_path: Path) -> None:
    from engine.loops.evolve import EvolveResult

    folder = tmp_path / "experiments" / "evolve-1" / "round-01"
    folder.mkdir(parents=True)
    gates = [{"gate": "guardrail", "verdict": "fail", "reasons": ["2 cases regressed"]}]
    (folder / "gates.json").write_text(json.dumps(gates))
    reason = "gate rejected: guardrail: 2 cases regressed"
    rejected = RoundRecord(
        1, "v0", "rejected", reason, 1.0, 1.0, folder=str(folder.relative_to(tmp_path))
    )
    result = EvolveResult(
        "evolve-1", SKILL, BENCH, 7, "offline", False, "max_rounds", [rejected],
        [], "v0", "v0", None, None, "",
    )  # fmt: skip
    outcome = evolve_outcome(tmp_path, result)
    assert outcome.kind == "rejected" and outcome.gates == gates
    assert outcome.link == Link("session", "evolve-1")
    assert f"Evolve round 1 on {SKILL} v0: rejected — {reason}. Nothing was queued" in (
        outcome.summary
    )


async def test_first_screen_e_confirms_and_the_outcome_stays(tmp_path: Path) -> None:
    ws = without_candidates(build_workspace(tmp_path / "ws"))
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = text_of(app, "#overview-body")
        assert SKILL in first and BENCH in first
        assert f"Next: {BENCH}: no evaluation yet — press e" in first
        assert f"{SKILL} v1" in text_of(app, "#status")

        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, LoopForm)
        assert "2 units (2 cases × 1 run(s))" in text_of(app.screen, ".dialog-body")
        await pilot.press("escape")
        await settle(pilot)
        assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())  # no: nothing ran

        await confirm(pilot, "e")
        await settle(pilot, timeout=120)
        (run,) = run_folders(ws.runs_dir)
        body = text_of(app, "#overview-body")
        assert f"Last outcome: Evaluated {BENCH}: run {run.name}" in body
        assert "press v for an evolve round" in body  # evaluated: the next step moves on

        await pilot.press("7")
        await settle(pilot)
        pane = app.query_one(ActivityPane)
        (result,) = [e for e in pane.shown if e.kind == "result"]
        assert result.link == Link("run", run.name)
        await pilot.press("slash")
        await pilot.press(*"no-such-thing")
        await settle(pilot)
        assert pane.shown == []
        await pilot.press("escape")
        await settle(pilot)
        assert any(e.link == Link("run", run.name) for e in pane.shown)
        await pilot.press("enter")  # follows the link: the run's session events
        await settle(pilot)
        assert app.sessions_pane is not None and app.sessions_pane.shown_session == run.name


async def test_the_gates_pane_shows_a_rejected_round(tmp_path: Path) -> None:
    """The job outcome of a rejected round reaches the Gates pane and the activity log."""
    from tui.jobs import JobEnded, JobOutcome

    ws = without_candidates(build_workspace(tmp_path / "ws"))
    app = make_app(ws, watch=False)
    gates = [{"gate": "guardrail", "verdict": "fail", "reasons": ["2 cases regressed"]}]
    outcome = JobOutcome(
        "Evolve round 1: rejected — gate rejected: guardrail", "rejected",
        Link("session", "evolve-1"), gates, "evolve round 1 · rejected (no candidate)",
    )  # fmt: skip
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.queue_pane.start_filter()
        await pilot.press(*"zzz", "enter")  # nothing matches: no candidate is selected
        await settle(pilot)
        app.post_message(JobEnded("Evolve", outcome.summary, outcome=outcome))
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        shown = text_of(app.query_one(GatesPane), "#gates-body")
        assert "guardrail" in shown and "2 cases regressed" in shown
        assert any("rejected — gate rejected: guardrail" in t for t in toasts(pilot))
        assert app.activity.entries[-1].kind == "rejected"


def test_session_events_read_as_lines_per_kind() -> None:
    from tui.sessions_pane import describe_event

    lines = [
        describe_event(e)
        for e in (
            {"kind": "started", "benchmark": BENCH, "total": 324, "todo": 283, "resumed": True},
            {"kind": "case_finished", "case_id": "xss-1", "run_index": 1, "pass_fail": "fail",
             "failure_kind": "FN"},
            {"kind": "gate_verdict", "round": 2, "gate": "guardrail", "verdict": "fail",
             "reasons": ["2 cases regressed"], "figures": {"regressions": 2}},
            {"kind": "message", "text": "round 2: rejected — gate rejected: guardrail"},
            {"kind": "finished", "status": "finished", "counts": {"pass": 3, "fail": 1}},
            {"kind": "odd", "ids": ["a", "b", "c", "d", "e"]},
        )
    ]  # fmt: skip
    assert lines == [
        f"{BENCH}: 324 units, resuming at 41/324",
        "xss-1.1 fail (FN)",
        "round 2: guardrail fail — 2 cases regressed",
        "round 2: rejected — gate rejected: guardrail",
        "finished · pass 3, fail 1",
        "ids: a, b, c (+2)",
    ]


async def test_the_overview_lists_the_first_open_candidates_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    """A thousand open candidates were a thousand overview lines, wrapped again on every
    refresh; the overview shows the first few (awaiting a decision first) and the queue all."""
    from tui.overview_pane import SHOWN_CANDIDATES

    awaiting = SHOWN_CANDIDATES + 2
    ws = build_workspace(tmp_path / "ws", candidates=awaiting)  # and one pending_eval, newest
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        body = text_of(app, "#overview-body")
        assert f"Open candidates ({awaiting + 1})" in body
        listed = [line for line in body.splitlines() if line.startswith("  cand-")]
        assert len(listed) == SHOWN_CANDIDATES
        assert all("pending_approval" in line for line in listed)  # the newest waits for evidence
        assert "unproven: waits for evidence" not in body
        assert "  … 3 more" in body
        assert app.queue_pane.table.row_count == awaiting + 1
