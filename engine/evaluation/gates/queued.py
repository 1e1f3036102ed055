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
  "better", and can show it two ways, each at half of ``gates.alpha`` (either accepts, so the
  two error rates add up to ``alpha``):

  - a broad change: better on the whole benchmark's paired runs (rerunning the cases whose runs
    disagree while it is inconclusive);
  - a narrow fix, which changes a few cases only and is lost in the noise of the others: the
    whole benchmark is not worse (the Guardrail gate, on runs nothing was selected from; cases
    that broke are rerun to see whether the break repeats), and the cases that did better are
    screened on fresh runs and the few that did best confirmed on runs of their own
    (``engine.evaluation.gates.screening``) — the runs that picked them are not the runs that
    prove them.

Inconclusive comparisons rerun the cases that can still change them (``gates.max_extra_runs``);
with no extra runs allowed there are no fresh runs to confirm on, and a candidate naming no targets
is judged on the whole benchmark's runs alone.
Better with confidence moves the candidate to ``pending_approval`` (a person still decides);
anything else rejects it with the figures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.core.benchmark import benchmark_ids, load_benchmark
from engine.core.budget import Budget, BudgetMeter, BudgetReached, Spent, session_budget
from engine.core.errors import FormatError, UsageError
from engine.core.events import Cancelled, CancelToken, Reporter, null_reporter
from engine.core.queue import Candidate, CandidateQueue
from engine.core.sessions import start_session
from engine.core.workspace import Workspace
from engine.evaluation.agents import make_agent
from engine.evaluation.costplan import JobPlan, per_run, workers
from engine.evaluation.gates.candidate import Effectiveness
from engine.evaluation.gates.cost import Cost
from engine.evaluation.gates.counted import VARIANTS, CountedRuns
from engine.evaluation.gates.outcome import (
    Guardrail,
    Sampling,
    Target,
    judge_aimed,
    most_confirmation_runs,
)
from engine.evaluation.gates.result import GateResult
from engine.evaluation.gates.screening import Screened, screen_and_confirm
from engine.evaluation.runner import BASELINE, SKILL, derived_seed, run_evaluation
from engine.evaluation.verdict import Rerun, Rows, Verdict, compare_paired

GATE = Effectiveness.name
# The share of gates.alpha a candidate naming no targets may spend on being better on the whole
# benchmark at once (a broad change, trades of cases included); the rest goes to the screened
# confirmation of a narrow one. Either route accepts, so their error rates add up to alpha.
BROAD_SHARE = 0.5


@dataclass(frozen=True)
class QueuedEvaluation:
    candidate: Candidate
    bench: str
    run_ids: list[str]
    verdict: Verdict  # on the targets, or the screened cases' confirmation, or every case
    status: str
    targets: list[str] = dataclasses.field(default_factory=list)
    guardrail: Verdict | None = None  # on the other cases, or the whole benchmark
    screening: Screened | None = None  # how the confirmed cases were found (no targets named)
    broad: Verdict | None = None  # better on the whole benchmark? (no targets named)
    extra_runs: int = 0  # every case-run (per variant) the decision added
    cost: GateResult | None = None  # the Cost gate on the first paired evaluation

    def line(self) -> str:
        """The verdict as a person reads it, the guardrail's and the cost change beside it."""
        line = _line(self.verdict, self.targets, self.guardrail, self.screening)
        if self.cost is not None:
            line += f"; cost: {self.cost.figures.get('line', 'no cost recorded')}"
        return line


def _line(
    verdict: Verdict, targets: Sequence[str], guardrail: Verdict | None, screening: Screened | None
) -> str:
    if guardrail is None:
        return verdict.line()
    if targets:
        return f"{len(targets)} targeted: {verdict.line()}; others: {guardrail.line()}"
    if screening is None:  # worse on the whole benchmark: nothing was screened
        return f"whole benchmark: {guardrail.line()}"
    confirmed = len(screening.confirmed)
    return f"{confirmed} screened: {verdict.line()}; whole benchmark: {guardrail.line()}"


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
    verdict: Verdict  # on the targets, or the screened cases' confirmation, or every case
    guardrail: Verdict | None
    reasons: list[str]
    screening: Screened | None = None
    broad: Verdict | None = None  # better on the whole benchmark? (no targets named)
    extra_runs: int = 0  # every case-run (per variant) any gate added to the first evaluation
    cost: GateResult | None = None  # the Cost gate (None: cost not judged)
    agent_runs: dict[str, int] = dataclasses.field(default_factory=dict)  # by step, both sides


def with_cost(
    found: Judgement, cost: Cost, before: Rows, after: Rows, sampling: Sampling
) -> Judgement:
    """The judgement with the Cost gate read beside the pass rate.

    A candidate that costs more with confidence (beyond ``gates.max_cost_increase``) and is not
    better is refused by it; one that is not better but cheaper with confidence is accepted on
    that alone when the whole benchmark is not worse (the Guardrail gate on every case) — on
    the first rows and on every verdict the judgement reached with its reruns: a saving never
    buys back a loss the reruns showed.
    """
    judged = cost.judge(before, after, better=found.passed)
    reasons = list(found.reasons)
    passed = found.passed
    if judged.failed:
        passed, reasons = False, [f"Cost gate: {judged.reasons[0]}", *reasons]
    elif not passed and judged.figures.get("cheaper"):
        whole = Guardrail(dataclasses.replace(sampling, max_extra_runs=0)).judge(before, after)
        # the guardrail spends its error rate over looks; a cost-only accept also needs the
        # data in hand, tested once at the full rate, to show no loss
        loss = compare_paired(before, after, alpha=sampling.alpha, test="runs", alternative="less")
        shown_worse = any(
            v is not None and v.worse for v in (found.verdict, found.guardrail, found.broad)
        )
        if whole.passed and loss.decision != "worse" and not shown_worse:
            passed = True
            reasons = [f"Cost gate: cheaper with confidence and not worse: {whole.reasons[0]}"]
            reasons += [f"Cost gate: {judged.reasons[0]}"]
    if judged.verdict != "held" and not judged.failed and passed == found.passed:
        reasons.append(judged.reasons[0])
    return dataclasses.replace(found, passed=passed, reasons=reasons, cost=judged)


def judge_queued(
    before: Rows,
    after: Rows,
    targets: Sequence[str],
    sampling: Sampling,
    rerun: Rerun | None,
    cost: Cost | None = None,
) -> Judgement:
    """The paired judgement of a queued candidate: on its targets and the rest when it names
    targets (Target and Guardrail, as evolve judges its own), else screened and confirmed;
    with ``cost``, the Cost gate read beside it (:func:`with_cost`)."""
    counted = CountedRuns(rerun)
    found = _judged(before, after, targets, sampling, counted)
    found = dataclasses.replace(
        found, extra_runs=counted.per_variant, agent_runs=dict(counted.runs)
    )
    return found if cost is None else with_cost(found, cost, before, after, sampling)


def _judged(
    before: Rows, after: Rows, targets: Sequence[str], sampling: Sampling, runs: CountedRuns
) -> Judgement:
    """The judgement; every rerun goes through ``runs``, counted under the step that asked
    (``gates``: Target and Guardrail; ``broad``, ``guardrail``, ``screening``: no targets)."""
    if targets:
        aimed, guarded, _ = judge_aimed(
            Target(sampling), Guardrail(sampling), before, after, targets, runs.kind("gates")
        )
        return Judgement(
            aimed.passed and guarded.passed,
            Verdict.from_dict(aimed.figures),
            Verdict.from_dict(guarded.figures),
            aimed.reasons + guarded.reasons,
        )
    if runs.rerun is None or sampling.max_extra_runs <= 0:
        verdict = compare_paired(
            before, after, alpha=sampling.alpha, test="runs", alternative="greater"
        )
        return Judgement(verdict.better, verdict, None, [_wanted(verdict, sampling.alpha)])
    broad_alpha = sampling.alpha * BROAD_SHARE

    def judge(b: Rows, a: Rows, alpha: float) -> Verdict:
        return compare_paired(b, a, alpha=alpha, test="runs", alternative="greater")

    broad, before_all, after_all = dataclasses.replace(sampling, alpha=broad_alpha).decide(
        before, after, judge, lambda v: not v.better, runs.kind("broad")
    )
    if broad.better:
        return Judgement(True, broad, None, [f"whole benchmark: {broad.line()}"], broad=broad)
    reasons = [f"whole benchmark: {_wanted(broad, broad_alpha)}"]
    # the reruns picked the cases whose runs disagree, whichever side they favoured: the
    # guardrail may read them, and screening may start from them
    whole = Guardrail(sampling).judge(before_all, after_all, rerun=runs.kind("guardrail"))
    kept = Verdict.from_dict(whole.figures)
    reasons += [f"whole benchmark not worse: {r}" for r in whole.reasons]
    if not whole.passed:
        return Judgement(False, kept, kept, reasons, broad=broad)
    narrow = dataclasses.replace(sampling, alpha=sampling.alpha - broad_alpha)
    screening = runs.kind("screening")
    assert screening is not None  # a rerun was given (checked above)
    screened = screen_and_confirm(before_all, after_all, narrow, screening)
    if screened.confirmed:
        found = f"{len(screened.confirmed)} screened cases ({', '.join(screened.confirmed)})"
    else:
        found = "screened cases: none did better than the parent"
    reasons.insert(0, f"{found}: {_wanted(screened.verdict, narrow.alpha)}")
    return Judgement(
        screened.verdict.better, screened.verdict, kept, reasons, screened, broad=broad
    )


def _wanted(verdict: Verdict, alpha: float) -> str:
    if verdict.better:
        return verdict.line()
    return f"{verdict.line()}; better at one-sided p<{alpha:g} wanted"


def _split(rows: Rows) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(parent's rows, candidate's rows), both as the skill under test — as evolve's two
    evaluations are, so the outcome gates read them alike."""
    before = [{**r, "variant": SKILL} for r in rows if r.get("variant") == BASELINE]
    after = [dict(r) for r in rows if r.get("variant") == SKILL]
    return before, after


def _evaluable(queue: CandidateQueue, candidate_id: str) -> Candidate:
    """The candidate, when it is one a paired evaluation can settle."""
    cand = queue.get(candidate_id)
    if cand.status != "pending_eval":
        raise UsageError(
            f"{cand.dir}: is {cand.status}; only pending_eval candidates are evaluated"
        )
    if cand.operation == "delete":
        raise UsageError(f"{cand.dir}: a delete has no text to evaluate")
    return cand


def most_extra_runs(max_extra_runs: int, cases: int) -> int:
    """The most case-runs a side a queued decision's reruns may add on ``cases`` cases.

    Naming no targets (the costlier route): the whole-benchmark comparison, the Guardrail's
    reruns, screening and confirmation each up to ``max_extra_runs``, and the Guardrail's
    confirmation of broken cases (:func:`~engine.evaluation.gates.outcome.most_confirmation_runs`).
    Naming targets: Target and Guardrail, each up to ``max_extra_runs``, and that confirmation.
    """
    return 4 * max_extra_runs + most_confirmation_runs(max_extra_runs, cases)


def plan_queued(
    ws: Workspace,
    candidate_id: str,
    *,
    bench: str | None = None,
    runs: int | None = None,
    jobs: int | None = None,
) -> JobPlan:
    """The agent runs a queued candidate's evaluation makes, and their estimated cost.

    The paired evaluation runs every case on both variants; its reruns may add
    :func:`most_extra_runs` case-runs a side.
    """
    cand = _evaluable(CandidateQueue(ws), candidate_id)
    bench_id = bench or default_bench(ws, cand)
    cfg = ws.load_config()
    loaded = load_benchmark(ws.benchmarks_dir / bench_id)
    n = runs or loaded.runs_per_case
    agent = make_agent(ws, cfg.agent)
    return JobPlan(
        job=f"queue eval {candidate_id}",
        base=2 * len(loaded.cases) * n,
        extra=VARIANTS * most_extra_runs(cfg.gates.max_extra_runs, len(loaded.cases)),
        workers=workers(ws, jobs),
        per_run=per_run(ws, bench_id, agent.describe()),
        detail=f"{len(loaded.cases)} cases × {n} runs × 2 variants",
    )


def evaluate_queued(
    ws: Workspace,
    candidate_id: str,
    *,
    bench: str | None = None,
    runs: int | None = None,
    jobs: int | None = None,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
    budget: Budget | None = None,
    seed: int | None = None,
) -> QueuedEvaluation:
    """Run the paired comparison of a pending_eval candidate and move it on by its verdict.

    ``seed`` fixes every evaluation's seed (the first one's and each rerun's follow from it, so
    the same command repeats draw for draw); by default each draws a fresh one.

    Past ``budget`` (over skillsmith.yaml's) no further run starts and BudgetReached is raised
    before any verdict: the candidate stays pending_eval, its finished units kept for the next
    ``queue eval`` to resume from."""
    queue = CandidateQueue(ws)
    cand = _evaluable(queue, candidate_id)
    bench_id = bench or default_bench(ws, cand)
    config = ws.load_config()
    cfg = config.gates
    limit = session_budget(config.budget, budget or Budget())
    meter = BudgetMeter(limit, Spent(), forward=reporter, cancel=cancel)
    sampling = Sampling(alpha=cfg.alpha, max_extra_runs=cfg.max_extra_runs, looks=cfg.looks)
    baseline = cand.parent_version or "none"
    text = cand.skill_text()
    files = queue.folder_of(cand)  # the parent's files with the patch's edits, if it has any
    run_ids: list[str] = []

    def evaluate(case_ids: Sequence[str] | None, n: int | None) -> tuple[Rows, Rows]:
        if meter.exhausted is not None:  # a clean point past the budget: no rerun starts
            raise Cancelled()
        nth = len(run_ids)  # this evaluation's place: the first, then each rerun in order
        result = run_evaluation(
            ws,
            bench_id,
            runs=n,
            jobs=jobs,
            skills={cand.skill: text},
            folders=None if files is None else {cand.skill: files},
            baseline=baseline,
            case_ids=None if case_ids is None else list(case_ids),
            reporter=meter.report,
            cancel=meter.token,
            seed=None if seed is None else derived_seed(seed, "queue-eval", nth),
        )
        run_ids.append(result.run_id)
        return _split(result.rows)

    try:
        before, after = evaluate(None, runs)
        measured = {str(r["case_id"]) for r in [*before, *after]}
        targets = [c for c in recorded_targets(cand) if c in measured]
        cost = Cost(max_increase=cfg.max_cost_increase, alpha=cfg.alpha)
        found = judge_queued(before, after, targets, sampling, evaluate, cost)
    except Cancelled:
        if meter.exhausted is None or (cancel is not None and cancel.cancelled):
            raise
        stopped = BudgetReached(meter)
        start_session(ws, "eval").emit(
            "message",
            text=f"queue eval {candidate_id}: stopped: budget ({stopped.reason}); nothing "
            "was decided",
            candidate=candidate_id,
            run_ids=run_ids,
            spent=stopped.spent,
        )
        raise stopped from None
    against = f"parent {baseline}" if cand.parent_version else "no skill"
    why = f"paired evaluation on {bench_id} against {against}: " + "; ".join(found.reasons)
    if found.guardrail is not None:
        judged = GateResult(
            gate=GATE,
            verdict="pass" if found.passed else "fail",
            figures={
                "unproven": False,
                "targets": targets,
                **found.verdict.to_dict(),
                "guardrail": found.guardrail.to_dict(),
                "screening": None if found.screening is None else found.screening.to_dict(),
                "broad": None if found.broad is None else found.broad.to_dict(),
            },
            reasons=[why],
        )
    else:
        judged = Effectiveness().judge(None, operation=cand.operation, verdict=found.verdict)
    result = dataclasses.replace(
        judged,
        verdict="pass" if found.passed else "fail",
        figures={
            "bench": bench_id,
            "against": baseline,
            "runs": run_ids,
            "extra_runs_total": found.extra_runs,
            "agent_runs": found.agent_runs,
            **judged.figures,
            "cost": None if found.cost is None else found.cost.to_json(),
        },
        reasons=[why],
    )
    queue.record_evaluation(candidate_id, result.to_json(), passed=found.passed, why=why)
    moved = queue.get(candidate_id)
    return QueuedEvaluation(
        moved,
        bench_id,
        run_ids,
        found.verdict,
        moved.status,
        targets,
        found.guardrail,
        found.screening,
        found.broad,
        found.extra_runs,
        found.cost,
    )


__all__ = [
    "GATE",
    "Judgement",
    "QueuedEvaluation",
    "default_bench",
    "evaluate_queued",
    "judge_queued",
    "most_extra_runs",
    "plan_queued",
    "recorded_targets",
    "with_cost",
]
