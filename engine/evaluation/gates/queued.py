"""Evaluating a queued candidate: a ``pending_eval`` candidate earns its way out by experiment.

This is the Effectiveness gate judged again, on proof instead of the task's word.

A candidate lands in ``pending_eval`` when the task behind it gave no proof (it failed, or scored
low). The only proof that counts is the one every other decision uses: a paired evaluation of the
candidate against its parent on a benchmark — one run of the matrix with the candidate as the
skill variant and the parent version as the baseline variant, so both share every case and seed —
judged by ``engine.evaluation.verdict`` at the workspace's ``gates.alpha``. The question is about
the
benchmark's own cases ("is it better on these?"), so the exact run-level test decides, and
inconclusive comparisons rerun the cases that can still change it. Better with confidence moves
it to ``pending_approval`` (a person still decides); anything else rejects it with the figures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.core.benchmark import benchmark_ids
from engine.core.errors import UsageError
from engine.core.events import CancelToken, Reporter, null_reporter
from engine.core.queue import Candidate, CandidateQueue
from engine.core.workspace import Workspace
from engine.evaluation.gates.candidate import Effectiveness
from engine.evaluation.gates.outcome import Sampling
from engine.evaluation.runner import BASELINE, SKILL, run_evaluation
from engine.evaluation.verdict import Rows, Verdict, compare_paired

GATE = Effectiveness.name


@dataclass(frozen=True)
class QueuedEvaluation:
    candidate: Candidate
    bench: str
    run_ids: list[str]
    verdict: Verdict
    status: str


def default_bench(ws: Workspace, cand: Candidate) -> str:
    """The benchmark the candidate's own evidence names, else the workspace's only one."""
    named = cand.evidence("provenance.json").get("benchmark")
    found = benchmark_ids(ws)
    if isinstance(named, str) and named in found:
        return named
    if len(found) == 1:
        return found[0]
    listed = ", ".join(found) or "none"
    raise UsageError(f"{ws.benchmarks_dir}: pick a benchmark with --bench (found: {listed})")


def _split(rows: Rows) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    before = [dict(r) for r in rows if r.get("variant") == BASELINE]
    after = [dict(r) for r in rows if r.get("variant") == SKILL]
    return before, after


def evaluate_queued(
    ws: Workspace,
    candidate_id: str,
    *,
    bench: str | None = None,
    runs: int | None = None,
    jobs: int | None = None,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> QueuedEvaluation:
    """Run the paired comparison of a pending_eval candidate and move it on by its verdict."""
    queue = CandidateQueue(ws)
    cand = queue.get(candidate_id)
    if cand.status != "pending_eval":
        raise UsageError(
            f"{cand.dir}: is {cand.status}; only pending_eval candidates are evaluated"
        )
    if cand.operation == "delete":
        raise UsageError(f"{cand.dir}: a delete has no text to evaluate")
    bench_id = bench or default_bench(ws, cand)
    cfg = ws.load_config().gates
    sampling = Sampling(alpha=cfg.alpha, max_extra_runs=cfg.max_extra_runs, looks=cfg.looks)
    baseline = cand.parent_version or "none"
    text = cand.skill_text()
    files = queue.folder_of(cand)  # the parent's files with the patch's edits, if it has any
    run_ids: list[str] = []

    def evaluate(case_ids: Sequence[str] | None, n: int | None) -> tuple[Rows, Rows]:
        result = run_evaluation(
            ws,
            bench_id,
            runs=n,
            jobs=jobs,
            skills={cand.skill: text},
            folders=None if files is None else {cand.skill: files},
            baseline=baseline,
            case_ids=None if case_ids is None else list(case_ids),
            reporter=reporter,
            cancel=cancel,
        )
        run_ids.append(result.run_id)
        return _split(result.rows)

    def judge(before: Rows, after: Rows, alpha: float) -> Verdict:
        return compare_paired(before, after, alpha=alpha, test="runs", alternative="greater")

    before, after = evaluate(None, runs)
    verdict, _, _ = sampling.decide(before, after, judge, lambda v: not v.better, evaluate)
    passed = verdict.better
    against = f"parent {baseline}" if cand.parent_version else "no skill"
    why = f"paired evaluation on {bench_id} against {against}: {verdict.line()}"
    judged = Effectiveness().judge(None, operation=cand.operation, verdict=verdict)
    result = dataclasses.replace(
        judged,
        figures={"bench": bench_id, "against": baseline, "runs": run_ids, **judged.figures},
        reasons=[why if passed else f"{why}; better at one-sided p<{cfg.alpha:g} wanted"],
    )
    queue.record_evaluation(candidate_id, result.to_json(), passed=passed, why=why)
    moved = queue.get(candidate_id)
    return QueuedEvaluation(moved, bench_id, run_ids, verdict, moved.status)


__all__ = ["GATE", "QueuedEvaluation", "default_bench", "evaluate_queued"]
