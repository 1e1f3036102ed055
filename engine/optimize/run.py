"""One offline optimisation of a skill's sections against a benchmark (``skillsmith optimize``).

The run: choose Feedback / Validation / Holdout, evaluate the active version (the seed) on
Validation, let GEPA search (one section per round, children kept only when they beat their
parent strictly on the same minibatch, survivors measured on all of Validation), pick the best
Validation mean (the seed on a tie), then compare seed and pick on Holdout with the same
conditions. Only a pick that clears the holdout rules — a mean that beats the seed's by at
least ``min_gain``, no critical case worse — is submitted, and then only into the approval queue
(``pending_approval``, through the candidate gates), never published.

Limits: iterations, the reflection minibatch, a metric-call budget that is never exceeded (each
call is one agent run of one case, and the holdout comparison's calls are held in reserve from
the start), the seed of every random draw, and a time limit. Running out of iterations or budget
ends the search normally; running out of time *fails* the run: a half-finished search has not
earned a submission.
"""

from __future__ import annotations

import importlib.metadata
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, cast

from gepa.api import optimize as gepa_optimize
from gepa.core.callbacks import GEPACallback
from gepa.core.result import GEPAResult

from engine.benchmark import Benchmark, load_benchmark
from engine.errors import SkillsmithError, UsageError
from engine.events import Cancelled, CancelToken, Reporter, SessionLog, null_reporter, utc_now
from engine.gates.candidate import Outcome, StaleCandidate, submit_candidate
from engine.gates.result import GateResult
from engine.llm import make_llm
from engine.optimize.adapter import (
    CoverageSelector,
    DistinctMinibatch,
    Evaluator,
    GepaLog,
    Limits,
    Reflector,
    RunClock,
    SkillAdapter,
    StrictAcceptance,
)
from engine.optimize.experiment import Experiment
from engine.optimize.offline import offline_reflection
from engine.optimize.pareto import Promotion, assess_promotion, best_candidate, mean_score
from engine.optimize.sections import SECTIONS, candidate_id, render, sections_of
from engine.optimize.splits import MIN_SUBMIT_CASES, Splits, choose_splits
from engine.store import SkillStore
from engine.workspace import Workspace

Status = Literal["submitted", "not_submitted", "failed"]


@dataclass(frozen=True)
class OptimizeOptions:
    """The limits of one run (the CLI flags); ``seed`` None takes the benchmark's seed."""

    iterations: int = 10
    reflection_batch: int = 3
    max_metric_calls: int = 1000
    seed: int | None = None
    time_limit_s: float | None = None
    min_gain: float = 0.0
    splits: tuple[float, float, float] | None = None
    jobs: int | None = None
    submit: bool = True

    def check(self) -> None:
        if self.iterations < 0:
            raise UsageError(f"--iterations: expected ≥ 0, got {self.iterations}")
        if self.reflection_batch < 1:
            raise UsageError(f"--reflection-batch: expected ≥ 1, got {self.reflection_batch}")
        if self.max_metric_calls < 1:
            raise UsageError(f"--max-metric-calls: expected ≥ 1, got {self.max_metric_calls}")
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise UsageError(f"--time-limit: expected seconds > 0, got {self.time_limit_s}")
        if not (math.isfinite(self.min_gain) and 0 <= self.min_gain <= 1):
            raise UsageError(f"--min-gain: expected a number in [0, 1], got {self.min_gain}")


@dataclass
class OptimizeResult:
    """What the run did; ``result.json`` of the experiment holds the same."""

    experiment_id: str
    experiment_dir: str
    skill: str
    benchmark: str
    status: Status
    reason: str
    stop_reason: str | None = None
    metric_calls: int = 0
    iterations: int = 0
    seed_id: str = ""
    selected_id: str | None = None
    pool: list[dict[str, Any]] = field(default_factory=list)
    holdout: dict[str, Any] | None = None
    candidate: str | None = None
    candidate_status: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class OptimizeFailed(SkillsmithError):
    """The run stopped without a result it could stand by (time limit, model failure)."""

    def __init__(self, result: OptimizeResult) -> None:
        super().__init__(f"{result.experiment_dir}: optimisation failed: {result.reason}")
        self.result = result


def optimize(
    ws: Workspace,
    skill: str,
    bench_id: str,
    options: OptimizeOptions | None = None,
    *,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> OptimizeResult:
    """Optimise ``skill`` on ``bench_id``; raises OptimizeFailed (with the result) on failure."""
    opts = options or OptimizeOptions()
    opts.check()
    cfg = ws.load_config()
    store = SkillStore(ws, skill)
    parent = store.ensure_adopted()
    if parent is None:
        raise SkillsmithError(f"{ws.skills_dir / skill}: no such skill to optimise")
    seed_text = store.read(parent)
    bench = load_benchmark(ws.benchmarks_dir / bench_id)
    seed = bench.seed if opts.seed is None else opts.seed
    splits = choose_splits(bench, opts.splits, seed)
    _check_plan(bench, splits, opts)
    llm = make_llm(cfg.models.reflection, ws, offline=offline_reflection)
    experiment = Experiment(ws)
    log = SessionLog(ws.sessions_dir, "optimize", session_id=experiment.id, forward=reporter)
    clock = RunClock(opts.time_limit_s, cancel)
    seed_sections = sections_of(seed_text)
    evaluator = Evaluator(
        ws, bench, skill, seed_text, experiment, clock, log, opts.jobs, opts.max_metric_calls
    )
    adapter = SkillAdapter(
        evaluator,
        Reflector(llm, cfg.models.reflection.max_tokens),
        experiment,
        splits.feedback,
        splits.validation,
        log,
    )
    batch = min(opts.reflection_batch, len(splits.feedback))
    limits = Limits(
        adapter,
        iterations=opts.iterations,
        max_calls=opts.max_metric_calls,
        round_cost=2 * batch + len(splits.validation),
        reserve=2 * len(splits.holdout),
        clock=clock,
    )
    result = OptimizeResult(
        experiment_id=experiment.id,
        experiment_dir=str(experiment.dir),
        skill=skill,
        benchmark=bench.id,
        status="failed",
        reason="started",
        seed_id=candidate_id(seed_sections),
    )
    _record_start(experiment, skill, parent, bench, splits, opts, seed, llm.model, seed_sections)
    experiment.candidate(
        result.seed_id,
        {"parent_id": None, "section": None, "sections": seed_sections, "skill_md": seed_text},
    )
    log.emit("started", experiment=experiment.id, skill=skill, benchmark=bench.id)
    try:
        found: GEPAResult[Any, Any] = gepa_optimize(
            seed_candidate=dict(seed_sections),
            trainset=list(splits.feedback),
            valset=list(splits.validation),
            adapter=adapter,
            candidate_selection_strategy=CoverageSelector(splits.validation, seed),
            acceptance_criterion=StrictAcceptance(),
            frontier_type="instance",
            module_selector="round_robin",
            batch_sampler=DistinctMinibatch(batch, seed),
            perfect_score=1.0,
            skip_perfect_score=True,
            use_merge=False,
            stop_callbacks=[limits],
            logger=GepaLog(log),
            callbacks=[cast(GEPACallback, adapter)],
            seed=seed,
            raise_on_exception=True,
        )
        result.metric_calls = evaluator.calls
        if adapter.fatal is not None:
            raise SkillsmithError(f"reflection failed: {adapter.fatal}")
        result.stop_reason = limits.reason
        result.iterations = adapter.iteration
        table = [
            {splits.validation[int(k)]: v for k, v in scores.items()}
            for scores in found.val_subscores
        ]
        best = best_candidate(table, splits.validation)
        result.pool = [
            {"id": candidate_id(c), "validation_mean": mean_score(t, splits.validation)}
            for c, t in zip(found.candidates, table, strict=True)
        ]
        chosen: dict[str, str] = dict(found.candidates[best])
        result.selected_id = candidate_id(chosen)
        experiment.event("selected", candidate_id=result.selected_id, pool=result.pool)
        promotion = _holdout(result, evaluator, seed_sections, chosen, best == 0, splits, opts)
        result.metric_calls = evaluator.calls
        clock.check()
        _submit(ws, result, promotion, skill, parent, render(seed_text, chosen), opts, splits)
    except Cancelled:
        result.metric_calls = evaluator.calls
        if not clock.expired:
            _finish(experiment, log, result, "failed", "cancelled")
            raise
        limit = f"time limit of {opts.time_limit_s:g}s reached after {clock.elapsed():.1f}s"
        _finish(experiment, log, result, "failed", limit + "; nothing was submitted")
        raise OptimizeFailed(result) from None
    except SkillsmithError as exc:
        result.metric_calls = evaluator.calls
        _finish(experiment, log, result, "failed", str(exc))
        raise OptimizeFailed(result) from None
    except KeyboardInterrupt:
        result.metric_calls = evaluator.calls
        _finish(experiment, log, result, "failed", "interrupted")
        raise
    _finish(experiment, log, result, result.status, result.reason)
    return result


def _check_plan(bench: Benchmark, splits: Splits, opts: OptimizeOptions) -> None:
    """Refuse a run that cannot work before a single agent runs."""
    sizes = splits.sizes()
    shown = ", ".join(f"{k} {v}" for k, v in sizes.items())
    if not splits.feedback or not splits.validation:
        raise UsageError(f"{bench.source}: feedback and validation need cases ({shown})")
    if opts.submit and splits.too_small():
        raise UsageError(
            f"{bench.source}: submitting needs at least {MIN_SUBMIT_CASES} cases per split "
            f"({shown}); choose other --splits or pass --no-submit"
        )
    floor = len(splits.validation) + 2 * len(splits.holdout)
    if opts.max_metric_calls < floor:
        raise UsageError(
            f"--max-metric-calls {opts.max_metric_calls} cannot cover the seed's validation "
            f"({len(splits.validation)}) and the holdout comparison ({2 * len(splits.holdout)})"
        )


def _record_start(
    experiment: Experiment,
    skill: str,
    parent: str,
    bench: Benchmark,
    splits: Splits,
    opts: OptimizeOptions,
    seed: int,
    model: str,
    seed_sections: dict[str, str],
) -> None:
    experiment.write(
        "experiment.json",
        {
            "id": experiment.id,
            "algorithm": "gepa",
            "gepa_version": importlib.metadata.version("gepa"),
            "skill": skill,
            "parent_version": parent,
            "benchmark": bench.id,
            "splits": {
                "source": splits.source,
                "feedback": splits.feedback,
                "validation": splits.validation,
                "holdout": splits.holdout,
                "critical": [c.id for c in bench.cases if c.rubric.critical],
            },
            "options": {**asdict(opts), "seed": seed},
            "sections": list(SECTIONS),
            "reflection_model": model,
            "seed_candidate": candidate_id(seed_sections),
            "started_at": utc_now(),
        },
    )


def _holdout(
    result: OptimizeResult,
    evaluator: Evaluator,
    seed_sections: dict[str, str],
    chosen: dict[str, str],
    seed_won: bool,
    splits: Splits,
    opts: OptimizeOptions,
) -> Promotion:
    """Seed and pick on Holdout under the same conditions, then the promotion rules."""
    critical = [c.id for c in evaluator.bench.cases if c.rubric.critical]
    seed_scores: dict[str, float] = {}
    pick_scores: dict[str, float] = {}
    if not seed_won and splits.holdout:
        base, _ = evaluator.run(seed_sections, splits.holdout, "holdout-baseline", traces=False)
        pick, _ = evaluator.run(chosen, splits.holdout, "holdout-candidate", traces=False)
        seed_scores = {r.case_id: r.score for r in base}
        pick_scores = {r.case_id: r.score for r in pick}
    promotion = assess_promotion(
        selected_is_seed=seed_won,
        seed=seed_scores,
        candidate=pick_scores,
        cases=splits.holdout if seed_scores else [],
        critical=critical,
        min_gain=opts.min_gain,
    )
    if seed_scores:
        result.holdout = {
            "cases": len(splits.holdout),
            "seed_mean": promotion.seed_mean,
            "candidate_mean": promotion.candidate_mean,
            "delta": promotion.delta,
            "min_gain": opts.min_gain,
            "critical": [c for c in splits.holdout if c in set(critical)],
            "critical_regressed": list(promotion.regressed),
            "improved": [c for c in splits.holdout if pick_scores[c] > seed_scores[c]],
            "worsened": [c for c in splits.holdout if pick_scores[c] < seed_scores[c]],
        }
    evaluator.experiment.event(
        "promotion", eligible=promotion.eligible, reason=promotion.reason, holdout=result.holdout
    )
    return promotion


def _submit(
    ws: Workspace,
    result: OptimizeResult,
    promotion: Promotion,
    skill: str,
    parent: str,
    text: str,
    opts: OptimizeOptions,
    splits: Splits,
) -> None:
    """Queue the pick as pending_approval with its evidence, or say why not."""
    result.status, result.reason = "not_submitted", promotion.reason
    if not promotion.eligible:
        return
    if not opts.submit:
        result.reason = f"{promotion.reason}; not submitted (--no-submit)"
        return
    holdout = result.holdout or {}
    seed_mean, pick_mean = float(holdout["seed_mean"]), float(holdout["candidate_mean"])
    evidence = GateResult(
        gate="holdout_promotion",
        verdict="pass",
        figures={
            "experiment": result.experiment_id,
            "seed_mean": seed_mean,
            "candidate_mean": pick_mean,
            "delta": holdout["delta"],
            "min_gain": opts.min_gain,
            "cases": len(splits.holdout),
            "critical": holdout["critical"],
        },
        reasons=[promotion.reason],
        case_ids=list(splits.holdout),
        fixed=list(holdout["improved"]),
        newly_broken=list(holdout["worsened"]),
    )
    notes = (
        f"paired holdout mean {seed_mean:.3f} → {pick_mean:.3f} over {len(splits.holdout)} cases"
    )
    try:
        cand, decision = submit_candidate(
            ws,
            skill,
            text,
            source="optimize",
            operation="update",
            parent_version=parent,
            summary=f"optimize {result.experiment_id}: {notes}",
            outcome=Outcome(
                status="success", notes=notes, evaluator=f"optimize/gepa:{result.experiment_id}"
            ),
            evidence=[evidence],
            approval_required="offline-optimised candidates wait for a person",
            shadow=False,
            delta_score=float(holdout["delta"]),
            metrics={"experiment": result.experiment_id, "holdout": holdout},
            provenance={"experiment": result.experiment_id, "benchmark": result.benchmark},
        )
    except StaleCandidate as exc:
        result.reason = f"{promotion.reason}; not submitted: {exc}"
        return
    result.candidate, result.candidate_status = cand.id, cand.status
    if cand.status == "pending_approval":
        result.status = "submitted"
        result.reason = f"{promotion.reason}; queued {cand.id} for approval"
    else:
        result.reason = (
            f"{promotion.reason}; the candidate gates said {cand.status}: {decision.reason}"
        )


def _finish(
    experiment: Experiment, log: SessionLog, result: OptimizeResult, status: Status, reason: str
) -> None:
    result.status, result.reason = status, reason
    experiment.write("result.json", {**result.to_json(), "finished_at": utc_now()})
    experiment.event("finished", status=status, reason=reason, metric_calls=result.metric_calls)
    if result.candidate is not None:
        log.emit("candidate_queued", candidate=result.candidate, status=result.candidate_status)
    log.emit("finished" if status != "failed" else "error", status=status, reason=reason)


__all__ = ["OptimizeFailed", "OptimizeOptions", "OptimizeResult", "optimize"]
