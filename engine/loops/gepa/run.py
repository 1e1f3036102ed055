"""One offline optimization of a skill's sections against a benchmark (``skillsmith optimize``).

The run: choose Feedback / Validation / Holdout, evaluate the active version (the seed) on
Validation, let GEPA search (each round rewrites every section the minibatch's records call
for, or — after a kept child — merges the lessons of another Pareto-front lineage into the
parent; children kept only when they beat their parent on the same minibatch, a merge when it
is no worse; survivors measured on all of Validation), run the ``RECHECK`` leaders on
Validation once more where the budget allows, pick the best Validation mean among them (the
seed on a tie), then compare seed and pick on Holdout with the same conditions. Only a pick that
clears the holdout rules — a gain whose lower bound is above ``min_gain``, no critical case
worse — is submitted, and then only into the approval queue (``pending_approval``, through
the candidate gates), never published.
The holdout comparison decides as every loop does (``Sampling.decide``): an inconclusive one
reruns the cases that can still decide it, seed and pick on the same seeds. Validation only
selects: its comparison of the pick with the seed is recorded, never tested, because the pick
was chosen for those scores; the holdout cases took no part in the search.

Limits: iterations, the reflection minibatch, a metric-call budget that is never exceeded (each
call is one agent run of one case, and the holdout comparison's calls and its reruns
are held in reserve from the start), the seed of every random draw, a time limit, and the
session budget of agent runs, tokens and dollars (``--budget-*`` or skillsmith.yaml's
``budget:``). Running out of iterations or metric calls ends the search normally; running out
of time or budget *fails* the run: a half-finished search has not earned a submission (only a
holdout decision that its last runs completed still stands).
"""

from __future__ import annotations

import importlib.metadata
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, cast

from gepa.api import optimize as gepa_optimize
from gepa.core.callbacks import GEPACallback
from gepa.core.result import GEPAResult

from engine.core.benchmark import Benchmark, load_benchmark
from engine.core.budget import Budget, BudgetMeter, Spent, session_budget
from engine.core.errors import SkillsmithError, UsageError, check_counts
from engine.core.events import Cancelled, CancelToken, Reporter, null_reporter
from engine.core.sessions import hold, start_session
from engine.core.stamps import utc_now
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation.agents import make_agent
from engine.evaluation.costplan import JobPlan, per_run, workers
from engine.evaluation.gates.candidate import StaleCandidate, TaskOutcome
from engine.evaluation.gates.outcome import Sampling
from engine.evaluation.gates.result import GateResult
from engine.evaluation.gates.submission import submit_candidate
from engine.evaluation.llm import make_llm
from engine.evaluation.verdict import Rerun, Rows, Verdict
from engine.loops.gepa.adapter import (
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
from engine.loops.gepa.experiment import Experiment
from engine.loops.gepa.offline import offline_reflection
from engine.loops.gepa.pareto import (
    Promotion,
    assess_promotion,
    mean_score,
    pool_standings,
    promotion_floor,
    score_judge,
    score_rows,
    validated_pick,
)
from engine.loops.gepa.sections import SECTIONS, candidate_id, render, sections_of
from engine.loops.gepa.splits import MIN_SUBMIT_CASES, Splits, choose_splits

Status = Literal["submitted", "not_submitted", "failed"]
RECHECK = 3  # the leading candidates run a second time on Validation before the pick


@dataclass(frozen=True)
class OptimizeOptions:
    """The limits of one run (the CLI flags); ``seed`` None takes the benchmark's seed."""

    iterations: int = 10
    # Eight Feedback cases a round, where GEPA's paper draws three: on a noisy agent a
    # three-case minibatch often holds no failure to learn from (the round is skipped) or one
    # chance failure, and the screen cannot tell a fix from a flip. It costs 2 × 8 agent runs a
    # round instead of 2 × 3 (the default run's ~500 of its 1000 metric calls instead of ~300).
    reflection_batch: int = 8
    max_metric_calls: int = 1000
    seed: int | None = None
    time_limit_s: float | None = None
    min_gain: float = 0.0
    splits: tuple[float, float, float] | None = None
    jobs: int | None = None
    submit: bool = True
    budget: Budget = field(default_factory=Budget)  # outranks skillsmith.yaml's where it sets one

    def check(self) -> None:
        if self.iterations < 0:
            raise UsageError(f"--iterations: expected ≥ 0, got {self.iterations}")
        check_counts(
            ("--reflection-batch", self.reflection_batch),
            ("--max-metric-calls", self.max_metric_calls),
        )
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise UsageError(f"--time-limit: expected seconds > 0, got {self.time_limit_s}")
        if not (math.isfinite(self.min_gain) and 0 <= self.min_gain <= 1):
            raise UsageError(f"--min-gain: expected a number in [0, 1], got {self.min_gain}")


@dataclass
class GepaResult:
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
    validation: dict[str, Any] | None = None  # the pick's paired verdict against the seed
    holdout: dict[str, Any] | None = None
    candidate: str | None = None
    candidate_status: str | None = None
    spent: dict[str, Any] | None = None  # agent runs, tokens and dollars the run spent
    budget: dict[str, Any] | None = None

    @property
    def headline(self) -> str:
        """The experiment in one line: what became of it, and the candidate it queued."""
        queued = f"; queued {self.candidate}" if self.candidate else ""
        return f"{self.skill}: {self.status} ({self.reason}){queued}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class OptimizeFailed(SkillsmithError):
    """The run stopped without a result it could stand by (time limit, model failure)."""

    def __init__(self, result: GepaResult) -> None:
        super().__init__(f"{result.experiment_dir}: optimization failed: {result.reason}")
        self.result = result


@dataclass(frozen=True)
class GepaOptions:
    """What a GEPA run optimizes (``skill`` on ``bench``) and the limits of its search."""

    skill: str
    bench: str
    search: OptimizeOptions = field(default_factory=OptimizeOptions)


def run(
    ws: Workspace,
    options: GepaOptions,
    *,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> GepaResult:
    """The GEPA loop in the shape of every loop (see :func:`optimize`)."""
    return optimize(
        ws, options.skill, options.bench, options.search, reporter=reporter, cancel=cancel
    )


def optimize(
    ws: Workspace,
    skill: str,
    bench_id: str,
    options: OptimizeOptions | None = None,
    *,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> GepaResult:
    """Optimize ``skill`` on ``bench_id``; raises OptimizeFailed (with the result) on failure.

    Everything that can be refused is refused before the first agent runs (UsageError).
    """
    opts = options or OptimizeOptions()
    opts.check()
    store = SkillStore(ws, skill)
    parent = store.ensure_adopted()
    if parent is None:
        raise SkillsmithError(f"{ws.skills_dir / skill}: no such skill to optimize")
    bench = load_benchmark(ws.benchmarks_dir / bench_id)
    seed = bench.seed if opts.seed is None else opts.seed
    splits = choose_splits(bench, opts.splits, seed)
    _check_plan(bench, splits, opts)
    run = _Run(ws, skill, parent, store.read(parent), bench, splits, opts, seed, reporter, cancel)
    with hold(run.experiment.dir):
        return run.execute()


def plan(ws: Workspace, options: GepaOptions) -> JobPlan:
    """The most agent runs an optimization may make, and their estimated cost, without running
    any: its metric-call budget, never exceeded (each call is one agent run of one case), of
    which the seed's validation is spent for sure; the search, the leaders' recheck and the
    holdout comparison with its reruns spend the rest, as far as they go."""
    opts = options.search
    opts.check()
    if not (ws.skills_dir / options.skill).is_dir():
        raise SkillsmithError(f"{ws.skills_dir / options.skill}: no such skill to optimize")
    bench = load_benchmark(ws.benchmarks_dir / options.bench)
    splits = choose_splits(bench, opts.splits, bench.seed if opts.seed is None else opts.seed)
    _check_plan(bench, splits, opts)
    cfg = ws.load_config()
    seed_validation = len(splits.validation)
    return JobPlan(
        job=f"optimize {options.skill}",
        base=seed_validation,
        extra=opts.max_metric_calls - seed_validation,
        workers=workers(ws, opts.jobs),
        per_run=per_run(ws, bench.id, make_agent(ws, cfg.agent).describe()),
        detail="the seed on validation",
        extra_from="the search and the holdout comparison (--max-metric-calls)",
    )


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


class _Run:
    """One optimization's moving parts, wired once; :meth:`execute` runs and records it."""

    def __init__(
        self,
        ws: Workspace,
        skill: str,
        parent: str,
        seed_text: str,
        bench: Benchmark,
        splits: Splits,
        opts: OptimizeOptions,
        seed: int,
        reporter: Reporter,
        cancel: CancelToken | None,
    ) -> None:
        cfg = ws.load_config()
        self.ws, self.skill, self.parent, self.seed_text = ws, skill, parent, seed_text
        self.bench, self.splits, self.opts, self.seed = bench, splits, opts, seed
        self.llm = make_llm(cfg.models.reflection, ws, offline=offline_reflection)
        self.experiment = Experiment(ws)
        self.log = start_session(ws, "gepa", forward=reporter, session_id=self.experiment.id)
        meter = BudgetMeter(session_budget(cfg.budget, opts.budget), Spent())
        self.clock = RunClock(opts.time_limit_s, cancel, meter)
        self.seed_sections = sections_of(seed_text)
        self.evaluator = Evaluator(
            ws,
            bench,
            skill,
            seed_text,
            self.experiment,
            self.clock,
            self.log,
            opts.jobs,
            opts.max_metric_calls,
            seed,
        )
        self.adapter = SkillAdapter(
            self.evaluator,
            Reflector(self.llm, cfg.models.reflection.max_tokens),
            self.experiment,
            splits.feedback,
            splits.validation,
            self.log,
        )
        self.batch = min(opts.reflection_batch, len(splits.feedback))
        self.limits = Limits(
            self.adapter,
            iterations=opts.iterations,
            max_calls=opts.max_metric_calls,
            round_cost=2 * self.batch + len(splits.validation),
            reserve=2 * len(splits.holdout) + 2 * cfg.gates.max_extra_runs,
            clock=self.clock,
        )
        self.result = GepaResult(
            experiment_id=self.experiment.id,
            experiment_dir=str(self.experiment.dir),
            skill=skill,
            benchmark=bench.id,
            status="failed",
            reason="started",
            seed_id=candidate_id(self.seed_sections),
        )
        self.picked = 0  # the pool index of the pick, once the search has made one
        self.looks = 0  # the rerun looks taken so far; each draws its own evaluation seed

    def execute(self) -> GepaResult:
        result, clock, cancel = self.result, self.clock, self.clock.outer
        self._record_start()
        try:
            found = self._search()
            clock.check()  # a search cut short by time or budget has not earned a pick
            chosen, seed_won = self._select(found)
            promotion = self._holdout(chosen, seed_won)
            clock.check(budget=False)  # the holdout's last runs completed its decision
            self._submit(promotion, chosen)
        except Cancelled:
            meter = clock.meter
            if clock.expired:
                limit = f"time limit of {self.opts.time_limit_s:g}s reached"
                why = f"{limit} after {clock.elapsed():.1f}s"
            elif clock.over_budget and not (cancel is not None and cancel.cancelled):
                why = f"budget reached: {meter.exhausted}; {meter.line()}"
                result.stop_reason = "budget"
                self.log.emit("message", text=f"stopped: budget ({why})")
            else:
                self._finish("failed", "cancelled")
                raise
            self._finish("failed", f"{why}; nothing was submitted")
            raise OptimizeFailed(result) from None
        except SkillsmithError as exc:
            self._finish("failed", str(exc))
            raise OptimizeFailed(result) from None
        except KeyboardInterrupt:
            self._finish("failed", "interrupted")
            raise
        self._finish(result.status, result.reason)
        return result

    def _search(self) -> GEPAResult[Any, Any]:
        """gepa's loop with our evaluation, reflection, selection, acceptance and limits."""
        found: GEPAResult[Any, Any] = gepa_optimize(
            seed_candidate=dict(self.seed_sections),
            trainset=list(self.splits.feedback),
            valset=list(self.splits.validation),
            adapter=self.adapter,
            candidate_selection_strategy=CoverageSelector(self.splits.validation, self.seed),
            acceptance_criterion=StrictAcceptance(self.adapter),
            frontier_type="instance",
            module_selector="all",
            batch_sampler=DistinctMinibatch(self.batch, self.seed),
            perfect_score=1.0,
            skip_perfect_score=True,
            use_merge=False,
            stop_callbacks=[self.limits],
            logger=GepaLog(self.log),
            callbacks=[cast(GEPACallback, self.adapter)],
            seed=self.seed,
            raise_on_exception=True,
        )
        if self.adapter.fatal is not None:
            raise SkillsmithError(f"reflection failed: {self.adapter.fatal}")
        self.result.stop_reason = self.limits.reason
        self.result.iterations = self.adapter.iteration
        return found

    def _select(self, found: GEPAResult[Any, Any]) -> tuple[dict[str, str], bool]:
        """The best Validation mean of the pool (the seed on a tie); True when it is the seed."""
        validation = self.splits.validation
        table = [
            {validation[int(k)]: v for k, v in scores.items()} for scores in found.val_subscores
        ]
        rechecked = self._recheck(found.candidates, table)
        alpha = self.ws.load_config().gates.alpha
        best, verdict = validated_pick(table, validation, alpha=alpha, leaders=rechecked)
        standings = pool_standings(table, validation, best, rechecked)
        self.result.pool = [
            {
                "id": candidate_id(c),
                "validation_mean": mean_score(t, validation),
                "validation_runs": 2 if i in rechecked else 1,
                "wins": list(s.wins),
                "why": s.why,
            }
            for i, (c, t, s) in enumerate(zip(found.candidates, table, standings, strict=True))
        ]
        self.picked = best
        chosen: dict[str, str] = dict(found.candidates[best])
        self.result.selected_id = candidate_id(chosen)
        self.result.validation = None if verdict is None else verdict.to_dict()
        self.experiment.event(
            "selected",
            candidate_id=self.result.selected_id,
            pool=self.result.pool,
            validation=self.result.validation,
        )
        return chosen, best == 0

    def _recheck(
        self, candidates: Sequence[Mapping[str, str]], table: list[dict[str, float]]
    ) -> set[int]:
        """A second Validation run of the ``RECHECK`` candidates with the best means, as far as
        the budget left after the holdout's reserve allows; their scores in ``table`` become
        the mean of both runs. Returns the pool indices rechecked.

        Each mean is one noisy run of every Validation case, and the pick is the largest of
        about ten of them: the winner is as often the luckiest as the best (a candidate ten
        points better on a noise-free agent can sit eight points lower after one run). A second
        run of the leaders, on a fresh seed, halves their noise where the choice is made; the
        pick is still only selected, never tested, there — Holdout decides.
        """
        validation = self.splits.validation
        left = self.opts.max_metric_calls - self.evaluator.calls - self.limits.reserve
        count = min(RECHECK, len(table), left // max(1, len(validation)))
        if count < 2 or len(table) < 3:
            return set()  # one child against the seed: no contest to be lucky in
        order = sorted(range(len(table)), key=lambda i: (-mean_score(table[i], validation), i))
        leaders = order[:count]
        seed = self._look_seed()  # shared by every leader
        for index in leaders:
            rows = self.evaluator.rerun(
                candidates[index], validation, "validation-recheck", runs=1, seed=seed
            )
            again = {str(r["case_id"]): float(r["score"]) for r in rows}
            table[index] = {c: (table[index][c] + again[c]) / 2 for c in validation}
        self.experiment.event(
            "validation_recheck",
            candidate_ids=[candidate_id(candidates[i]) for i in leaders],
            means=[mean_score(table[i], validation) for i in leaders],
        )
        return set(leaders)

    def _holdout(self, chosen: dict[str, str], seed_won: bool) -> Promotion:
        """Seed and pick on Holdout under the same conditions, then the promotion rules."""
        holdout, result = self.splits.holdout, self.result
        critical = [c.id for c in self.bench.cases if c.rubric.critical]
        seed_scores: dict[str, float] = {}
        pick_scores: dict[str, float] = {}
        verdict: Verdict | None = None
        if not seed_won and holdout:
            run = self.evaluator.run
            base, _ = run(self.seed_sections, holdout, "holdout-baseline", traces=False)
            pick, _ = run(chosen, holdout, "holdout-candidate", traces=False)
            verdict, base_rows, pick_rows = self._decide(
                score_rows({r.case_id: r.score for r in base}, holdout),
                score_rows({r.case_id: r.score for r in pick}, holdout),
                holdout,
                promotion_floor(self.opts.min_gain),
                (self.seed_sections, chosen),
                "holdout-rerun",
                reserve=0,
            )
            seed_scores, pick_scores = _case_means(base_rows), _case_means(pick_rows)
        promotion = assess_promotion(
            selected_is_seed=seed_won,
            seed=seed_scores,
            candidate=pick_scores,
            cases=holdout if seed_scores else [],
            critical=critical,
            min_gain=self.opts.min_gain,
            alpha=self.ws.load_config().gates.alpha,
            verdict=verdict,
        )
        if seed_scores:
            result.holdout = {
                "cases": len(holdout),
                "seed_mean": promotion.seed_mean,
                "candidate_mean": promotion.candidate_mean,
                "delta": promotion.delta,
                "min_gain": self.opts.min_gain,
                "critical": [c for c in holdout if c in set(critical)],
                "critical_regressed": list(promotion.regressed),
                "improved": [c for c in holdout if pick_scores[c] > seed_scores[c]],
                "worsened": [c for c in holdout if pick_scores[c] < seed_scores[c]],
                "verdict": None if promotion.verdict is None else promotion.verdict.to_dict(),
            }
        if not seed_won:
            self.result.pool[self.picked]["why"] += f"; holdout: {promotion.reason}"
        self.experiment.event(
            "promotion",
            eligible=promotion.eligible,
            reason=promotion.reason,
            holdout=result.holdout,
        )
        return promotion

    def _decide(
        self,
        before: Rows,
        after: Rows,
        cases: list[str],
        threshold: float,
        variants: tuple[dict[str, str], dict[str, str]],
        phase: str,
        *,
        reserve: int,
    ) -> tuple[Verdict, list[dict[str, Any]], list[dict[str, Any]]]:
        """Seed against pick as every loop decides: rerun only the cases that can still move an
        inconclusive verdict, both variants on the same seeds, up to ``gates.max_extra_runs`` —
        and never past the metric-call budget (``reserve`` calls are kept for what follows)."""
        gates = self.ws.load_config().gates
        left = self.opts.max_metric_calls - self.evaluator.calls - reserve
        # like the Holdout gate: at most three looks and no futility stop (on the demo, five
        # looks spent twice the reruns and left its default run's real gain inconclusive)
        sampling = Sampling(
            alpha=gates.alpha,
            max_extra_runs=max(0, min(gates.max_extra_runs, left // 2)),
            looks=gates.looks,
        ).without_futility()
        return sampling.decide(
            before,
            after,
            score_judge(cases, threshold),
            lambda v: not v.better,
            self._rerun(variants, phase),
            cases,
        )

    def _look_seed(self) -> int:
        """The evaluation seed of the next look at data already measured (a recheck, a rerun):
        it differs from the search's seed and from every earlier look's, so it is a new draw,
        not a replay."""
        self.looks += 1
        return self.seed + self.looks

    def _rerun(self, variants: tuple[dict[str, str], dict[str, str]], phase: str) -> Rerun:
        def rerun(cases: Sequence[str], runs: int) -> tuple[Rows, Rows]:
            seed = self._look_seed()  # both variants share it: they pair on the same noise
            sides = [
                self.evaluator.rerun(v, cases, f"{phase}-{side}", runs=runs, seed=seed)
                for v, side in zip(variants, ("baseline", "candidate"), strict=True)
            ]
            self.log.emit("message", stage=phase, cases=list(cases), runs=runs, look=self.looks)
            return sides[0], sides[1]

        return rerun

    def _submit(self, promotion: Promotion, chosen: dict[str, str]) -> None:
        """Queue the pick as pending_approval with its evidence, or say why not."""
        result, opts = self.result, self.opts
        result.status, result.reason = "not_submitted", promotion.reason
        if not promotion.eligible:
            return
        if not opts.submit:
            result.reason = f"{promotion.reason}; not submitted (--no-submit)"
            return
        holdout = result.holdout or {}
        cases = self.splits.holdout
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
                "cases": len(cases),
                "critical": holdout["critical"],
                **(holdout.get("verdict") or {}),
            },
            reasons=[promotion.reason],
            case_ids=list(cases),
            fixed=list(holdout["improved"]),
            newly_broken=list(holdout["worsened"]),
        )
        notes = f"paired holdout mean {seed_mean:.3f} → {pick_mean:.3f} over {len(cases)} cases"
        try:
            cand, decision = submit_candidate(
                self.ws,
                self.skill,
                render(self.seed_text, chosen),
                source="optimize",
                operation="update",
                parent_version=self.parent,
                summary=f"optimize {result.experiment_id}: {notes}",
                outcome=TaskOutcome(
                    status="success",
                    notes=notes,
                    evaluator=f"optimize/gepa:{result.experiment_id}",
                ),
                evidence=[evidence],
                approval_required="offline-optimized candidates wait for a person",
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

    def _record_start(self) -> None:
        experiment, splits = self.experiment, self.splits
        experiment.write(
            "experiment.json",
            {
                "id": experiment.id,
                "algorithm": "gepa",
                "gepa_version": importlib.metadata.version("gepa"),
                "skill": self.skill,
                "parent_version": self.parent,
                "benchmark": self.bench.id,
                "splits": {
                    "source": splits.source,
                    "feedback": splits.feedback,
                    "validation": splits.validation,
                    "holdout": splits.holdout,
                    "critical": [c.id for c in self.bench.cases if c.rubric.critical],
                },
                "options": {**asdict(self.opts), "seed": self.seed},
                "sections": list(SECTIONS),
                "reflection_model": self.llm.model,
                "seed_candidate": self.result.seed_id,
                "started_at": utc_now(),
            },
        )
        experiment.candidate(
            self.result.seed_id,
            {
                "parent_id": None,
                "section": None,
                "sections": self.seed_sections,
                "skill_md": self.seed_text,
            },
        )
        self.log.emit(
            "started", experiment=experiment.id, skill=self.skill, benchmark=self.bench.id
        )

    def _finish(self, status: Status, reason: str) -> None:
        result = self.result
        result.metric_calls = self.evaluator.calls
        result.status, result.reason = status, reason
        meter = self.clock.meter
        result.spent = meter.spent.to_dict()
        result.budget = meter.budget.to_dict() if meter.budget.limited else None
        self.experiment.write("result.json", {**result.to_json(), "finished_at": utc_now()})
        self.experiment.event(
            "finished", status=status, reason=reason, metric_calls=result.metric_calls
        )
        if result.candidate is not None:
            self.log.emit(
                "candidate_queued", candidate=result.candidate, status=result.candidate_status
            )
        if status == "failed":
            self.log.emit("error", status=status, reason=reason)
        else:
            self.log.emit("finished", status=status, reason=reason, headline=result.headline)


def _case_means(rows: Rows) -> dict[str, float]:
    """Each case's mean score over all its runs (the first look's and the reruns')."""
    grouped: dict[str, list[float]] = {}
    for row in rows:
        grouped.setdefault(str(row["case_id"]), []).append(float(row["score"]))
    return {case: math.fsum(v) / len(v) for case, v in grouped.items()}


__all__ = ["GepaOptions", "GepaResult", "OptimizeFailed", "OptimizeOptions", "optimize", "run"]
