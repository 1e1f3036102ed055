"""Messages that used to mislead or leave the user at a dead end: each shows the corrected text."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from engine.cli import main
from engine.cli.evolve_cmd import next_step
from engine.cli.optimize_cmd import NO_IMPROVEMENT_ADVICE, _summary
from engine.cli.progress import resume_line
from engine.cli.review_cmd import review_line
from engine.core.events import Event, read_event
from engine.core.queue import CandidateQueue
from engine.core.store import SkillStore, unified_diff
from engine.core.workspace import Workspace
from engine.evaluation.patches.proposer import PatchTarget, summary_of
from engine.loops.evolve import EvolveResult
from engine.loops.evolve.checkpoint import RoundRecord
from engine.loops.gepa import GepaResult
from tests.runner_helpers import command_workspace, mode_benchmark
from tests.store_helpers import make_skill, run


def _evolve_result(stop: str, rounds: list[RoundRecord]) -> EvolveResult:
    return EvolveResult(
        "evolve-1", "s", "b", 7, "offline", False, stop, rounds, [], "v0", "v0", None, None, ""
    )


def test_evolve_stopping_at_a_queued_candidate_names_the_approve_command() -> None:
    queued = RoundRecord(1, "v0", "queued", "all gates passed", 0.0, 0.0, candidate="cand-1")
    hint = next_step(_evolve_result("awaiting_approval", [queued]))
    assert hint is not None
    assert 'skillsmith queue approve cand-1 --why "<your reason>"' in hint
    assert "run this command again" in hint
    assert next_step(_evolve_result("max_rounds", [])) is None


def test_a_rejected_candidate_is_not_counted_as_queued() -> None:
    line = review_line(
        1, [{"id": "c1", "status": "rejected"}], {"inline": 0}, 0, "sessions/r.jsonl"
    )
    assert line == (
        "1 review job: 0 candidates queued for approval, 1 rejected by the gates; "
        "log sessions/r.jsonl"
    )
    busy = review_line(2, [{"id": "c2", "status": "pending_approval"}], {"inline": 1}, 0, "l")
    assert "1 candidate queued for approval" in busy
    assert "1 ran in this process (the worker queue was full or stopping)" in busy


def test_a_candidate_held_for_evaluation_is_not_called_queued_for_approval() -> None:
    """`review --outcome fail` holds its change as pending_eval: it needs `queue eval` first."""
    line = review_line(1, [{"id": "c1", "status": "pending_eval"}], {"inline": 0}, 0, "l")
    assert line == (
        "1 review job: 0 candidates queued for approval, 1 waiting for an evaluation "
        "(skillsmith queue eval ID); log l"
    )


def test_optimize_without_an_improvement_gives_advice() -> None:
    # the reason quotes a skill section: rich must print "[evidence]", not take it for a style
    reason = "no accepted candidate improved validation ([evidence] section unchanged)"
    result = GepaResult("opt-1", "experiments/opt-1", "s", "b", "not_submitted", reason)
    console = Console(record=True, width=300)
    console.print(_summary(result))
    text = console.export_text()
    assert reason in text and NO_IMPROVEMENT_ADVICE in text
    assert "skillsmith evolve" in NO_IMPROVEMENT_ADVICE


def test_eval_table_at_80_columns_keeps_ids_whole_and_names_failed_checks(
    tmp_path: Path,
    count_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    ws = command_workspace(tmp_path / "ws")
    long_a, long_b = "xss-js-innerhtml-template-literal", "xss-js-innerhtml-sanitized-dompurify"
    mode_benchmark(
        ws,
        {
            long_a: ("answer", "q = eval(x)\n", "vulnerable"),
            long_b: ("answer", "q = int(x)\n", "vulnerable"),
        },
        runs=1,
    )
    assert main(["eval", "b", "-w", str(ws.root), "-j", "2"]) == 0
    out = capsys.readouterr().out
    table = out.split("metrics")[0]
    rows = [line.split("│") for line in table.splitlines() if line.startswith("│")]
    ids = "".join(cells[1].strip() for cells in rows)
    assert long_a in ids and long_b in ids  # folded over lines, never "xss-js-innerh…"
    assert "…" not in table
    verdicts = " ".join(cells[5].strip() for cells in rows)
    assert "failed:" in verdicts and "verdict is" in verdicts


def test_evolve_says_where_it_resumes_the_session_and_its_runs() -> None:
    session = {"session_kind": "evolve", "resumed": True, "round": 2, "stage": "gates"}

    def resume_of(event: Event) -> str | None:
        return resume_line(read_event(event))

    assert resume_of(Event("started", "evolve-7", session)) == (
        "resuming evolve-7 at round 2, stage gates"
    )
    run = {"session_kind": "eval", "resumed": True, "run_id": "r-3", "total": 324, "todo": 283}
    assert resume_of(Event("started", "r-3", run)) == "resuming run r-3 at 41/324"
    assert resume_of(Event("started", "evolve-8", {**session, "resumed": False})) is None
    assert resume_of(Event("progress", "r-3", run)) is None


def test_a_candidate_summary_is_stored_whole_and_cut_only_on_a_list_line(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    step = "Before a verdict, follow every tainted value to the sink it reaches: " + "calls " * 12
    base = "---\nname: audit\ndescription: Audits.\n---\n## Steps\n1. read\n"
    patched = base + f"2. {step.strip()}\n"
    target = PatchTarget("premature_conclusion", "FN", ("c1",), 0.5, "stops early", ())
    summary = summary_of(target, unified_diff(base, patched))
    assert summary == f"FN + premature_conclusion: 2. {step.strip()}"  # whole, no "…"
    make_skill(workspace, "audit", base)
    SkillStore(workspace, "audit").ensure_adopted()
    cid = CandidateQueue(workspace).submit(
        "audit", patched, unified_diff(base, patched), source="evolve", operation="update",
        status="pending_approval", parent_version="v0", summary=summary,
    ).id  # fmt: skip
    shown = run(workspace, capsys, "queue", "show", cid).stdout
    assert f"summary: {summary}\n" in shown
    (line,) = [ln for ln in run(workspace, capsys, "queue").stdout.splitlines() if cid in ln]
    assert line.endswith(" …") and summary not in line
    assert line.split("  ")[-1].removesuffix(" …") in summary
