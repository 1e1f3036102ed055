"""Evaluating a queued candidate: a ``pending_eval`` candidate earns its way out by experiment.

This is the Effectiveness gate judged again, on proof instead of the task's word.

A candidate lands in ``pending_eval`` when the task behind it gave no proof (it failed, or scored
low). The only proof that counts is the one every other decision uses: a paired evaluation of the
candidate against its parent on a benchmark — one run of the matrix with the candidate as the
skill variant and the parent version as the baseline variant, so both share every case and seed —
judged by ``engine.evaluation.verdict`` at the workspace's ``gates.alpha``. What is asked depends
on what the candidate claims:

* a candidate that names the cases it aims at (``targeted_cases`` in its provenance.json, as
  evolve's candidates do) is judged as evolve judges it: better on those cases with confidence
  (the Target gate) and not worse on the others (the Guardrail gate). A fix of five cases is a
  few points on a whole benchmark — lost in the noise of a hundred others — but a clear change
  on the five;
* a candidate that names no targets (or none the benchmark has) claims nothing narrower than
  "better", so it is judged on the whole benchmark's cases (the exact run-level test).

Inconclusive comparisons rerun the cases that can still change them (``gates.max_extra_runs``).
Better with confidence moves the candidate to ``pending_approval`` (a person still decides);
anything else rejects it with the figures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.core.benchmark import benchmark_ids
from engine.core.errors import FormatError, UsageError
from engine.core.events import CancelToken, Reporter, null_reporter
from engine.core.queue import Candidate, CandidateQueue
from engine.core.workspace import Workspace
from engine.evaluation.gates.candidate import Effectiveness
from engine.evaluation.gates.outcome import Guardrail, Sampling, Target
from engine.evaluation.gates.result import GateResult
from engine.evaluation.runner import BASELINE, SKILL, run_evaluation
from engine.evaluation.verdict import Rerun, Rows, Verdict, compare_paired

GATE = Effectiveness.name


@dataclass(frozen=True)
class QueuedEvaluation:
    candidate: Candidate
    bench: str
    run_ids: list[str]
    verdict: Verdict  # on the targets when the candidate names them, else on every case
    status: str
    targets: list[str] = dataclasses.field(default_factory=list)
    guardrail: Verdict | None = None  # on the other cases, when there are targets

    def line(self) -> str:
        """The verdict as a person reads it, the guardrail's beside it when there is one."""
        if self.guardrail is None:
            return self.verdict.line()
        return (
            f"{len(self.targets)} targeted: {self.verdict.line()}; others: {self.guardrail.line()}"
        )


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


def recorded_targets(cand: Candidate) -> list[str]:
    """The case ids the candidate says it aims at (provenance.json ``targeted_cases``)."""
    named = cand.evidence("provenance.json").get("targeted_cases")
    if named is None:
        return []
    if not isinstance(named, list) or not all(isinstance(c, str) for c in named):
        raise FormatError(cand.dir / "provenance.json", "targeted_cases", "a list of case ids")
    return sorted(set(named))


@dataclass(frozen=True)
class Judgement:
    passed: bool
    verdict: Verdict  # on the targets, or on every case without them
    guardrail: Verdict | None
    reasons: list[str]


def judge_queued(
    before: Rows, after: Rows, targets: Sequence[str], sampling: Sampling, rerun: Rerun | None
) -> Judgement:
    """The paired judgement of a queued candidate: on its targets and the rest when it names
    targets (Target and Guardrail, as evolve judges its own), else on every case."""
    if targets:
        aimed = Target(sampling).judge(before, after, targets, rerun=rerun)
        guarded = Guardrail(sampling).judge(before, after, targeted=targets, rerun=rerun)
        return Judgement(
            aimed.passed and guarded.passed,
            Verdict.from_dict(aimed.figures),
            Verdict.from_dict(guarded.figures),
            aimed.reasons + guarded.reasons,
        )

    def judge(b: Rows, a: Rows, alpha: float) -> Verdict:
        return compare_paired(b, a, alpha=alpha, test="runs", alternative="greater")

    verdict, _, _ = sampling.decide(before, after, judge, lambda v: not v.better, rerun)
    reason = verdict.line()
    if not verdict.better:
        reason += f"; better at one-sided p<{sampling.alpha:g} wanted"
    return Judgement(verdict.better, verdict, None, [reason])


def _split(rows: Rows) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(parent's rows, candidate's rows), both as the skill under test — as evolve's two
    evaluations are, so the outcome gates read them alike."""
    before = [{**r, "variant": SKILL} for r in rows if r.get("variant") == BASELINE]
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

    before, after = evaluate(None, runs)
    measured = {str(r["case_id"]) for r in [*before, *after]}
    targets = [c for c in recorded_targets(cand) if c in measured]
    found = judge_queued(before, after, targets, sampling, evaluate)
    against = f"parent {baseline}" if cand.parent_version else "no skill"
    why = f"paired evaluation on {bench_id} against {against}: " + "; ".join(found.reasons)
    if targets:
        judged = GateResult(
            gate=GATE,
            verdict="pass" if found.passed else "fail",
            figures={
                "unproven": False,
                "targets": targets,
                **found.verdict.to_dict(),
                "guardrail": None if found.guardrail is None else found.guardrail.to_dict(),
            },
            reasons=[why],
        )
    else:
        judged = Effectiveness().judge(None, operation=cand.operation, verdict=found.verdict)
    result = dataclasses.replace(
        judged,
        figures={"bench": bench_id, "against": baseline, "runs": run_ids, **judged.figures},
        reasons=[why],
    )
    queue.record_evaluation(candidate_id, result.to_json(), passed=found.passed, why=why)
    moved = queue.get(candidate_id)
    return QueuedEvaluation(
        moved, bench_id, run_ids, found.verdict, moved.status, targets, found.guardrail
    )


__all__ = [
    "GATE",
    "Judgement",
    "QueuedEvaluation",
    "default_bench",
    "evaluate_queued",
    "judge_queued",
    "recorded_targets",
]
