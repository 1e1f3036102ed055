"""The outcome-driven evolution loop: rounds until converged, stagnant, or out of budget.

``evolve`` starts a session or, when ``.pending_round.json`` holds an interrupted one for the
same skill and benchmark, resumes it at the stage that was running. A session is:

    baseline (holdout + golden of the starting version)
    round 1..N: evaluate → diagnose → audit → propose → filter → evaluate_candidate → gate → decide
    final (roll back to the best holdout version if stagnation tripped; holdout of the result)

Rules decide everything here; the proposer only writes a diff. The proposer is made afresh for
every round from the session seed and the round number, so a resumed session asks it exactly what
an uninterrupted one would.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.core.benchmark import load_benchmark
from engine.core.budget import Budget, BudgetMeter, Spent, session_budget
from engine.core.config import Config
from engine.core.errors import SkillsmithError, UsageError, check_counts
from engine.core.events import Cancelled, CancelToken, Reporter, null_reporter
from engine.core.fsutil import atomic_write_json
from engine.core.schema import to_mapping
from engine.core.sessions import start_session
from engine.core.stamps import new_id, utc_now
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation.agents import make_agent
from engine.evaluation.costplan import JobPlan, per_run, workers
from engine.evaluation.gates.counted import VARIANTS
from engine.evaluation.gates.outcome import holdout_change, most_confirmation_runs
from engine.evaluation.patches import make_proposer
from engine.evaluation.patches.proposer import PROPOSER_KINDS
from engine.loops.evolve import checkpoint
from engine.loops.evolve.checkpoint import (
    ROUND_STAGES,
    PendingRound,
    RoundRecord,
    VersionRecord,
    text_sha,
)
from engine.loops.evolve.convergence import VersionHoldout, best_standing, standings
from engine.loops.evolve.stages import Evolution

REQUIRED_SPLITS = ("selection", "holdout", "golden")


@dataclass(frozen=True)
class EvolveOptions:
    skill: str
    bench: str
    rounds: int | None = None  # default: limits.max_rounds
    proposer: str | None = None  # default: models.proposer.provider
    auto_approve: bool = False
    seed: int | None = None  # default: the benchmark's seed
    jobs: int | None = None
    budget: Budget = field(
        default_factory=Budget
    )  # outranks the session's and skillsmith.yaml's where it sets one
    fresh: bool = False  # run every evaluation, even one an earlier session has on record


@dataclass(frozen=True)
class EvolveResult:
    session_id: str
    skill: str
    bench: str
    seed: int
    proposer: str
    resumed: bool
    stop_reason: str
    rounds: list[RoundRecord]
    versions: list[VersionRecord]
    start_version: str
    final_version: str
    holdout_start: float | None
    holdout_final: float | None
    summary_path: str
    spent: dict[str, Any] | None = None  # agent runs, tokens and dollars the session spent
    budget: dict[str, Any] | None = None
    not_run: list[str] = field(default_factory=list)  # gates a small benchmark could not run
    # the agent runs the session launched, by kind (engine.loops.evolve.stages.Evolution.counting)
    agent_runs: dict[str, int] = field(default_factory=dict)

    @property
    def headline(self) -> str:
        """The session in one line: where the skill ended and why the rounds stopped."""

        def f1(value: float | None) -> str:
            return "—" if value is None else f"{value:.3f}"

        return (
            f"{self.skill} {self.start_version} → {self.final_version}, holdout "
            f"{f1(self.holdout_start)} → {f1(self.holdout_final)} ({self.stop_reason}, "
            f"{len(self.rounds)} round(s))"
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = to_mapping(self)
        return data


def round_seed(seed: int, round_no: int) -> int:
    """The proposer's seed for one round: fixed by the session seed and the round alone."""
    digest = hashlib.sha256(f"{seed}:{round_no}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def run(
    ws: Workspace,
    options: EvolveOptions,
    *,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> EvolveResult:
    """Run (or resume) an evolution session of ``options.skill`` on ``options.bench``."""
    cfg = ws.load_config()
    with checkpoint.exclusive(ws):
        pending = checkpoint.load(ws)
        resumed = pending is not None
        if pending is None:
            pending = _new_session(ws, cfg, options)
            checkpoint.save(ws, pending)
        else:
            _refuse_other(ws, pending, options)
        bench = load_benchmark(ws.benchmarks_dir / pending.bench)
        budget = _session_budget(cfg, pending, options.budget)
        spent = Spent(pending.spent_runs, pending.spent_tokens, pending.spent_usd)
        meter = BudgetMeter(budget, spent, forward=reporter, cancel=cancel)
        log = start_session(ws, "evolve", forward=reporter, session_id=pending.session_id)
        log.emit(
            "started",
            skill=pending.skill,
            bench=pending.bench,
            resumed=resumed,
            round=pending.round,
            stage=pending.stage,
            max_rounds=pending.max_rounds,
            proposer=pending.proposer,
            auto_approve=pending.auto_approve,
            seed=pending.seed,
        )
        evo = Evolution(
            ws=ws,
            cfg=cfg,
            bench=bench,
            store=SkillStore(ws, pending.skill),
            pending=pending,
            log=log,
            make_proposer=lambda round_no: make_proposer(
                pending.proposer, ws, cfg, seed=round_seed(pending.seed, round_no)
            ),
            reporter=meter.report,
            cancel=meter.token,
            jobs=options.jobs,
            meter=meter,
            fresh=options.fresh,
        )
        for line in evo.not_run():  # a small benchmark runs with what it has, and says so
            log.emit("message", text=f"warning: {line}", level="warning")
        try:
            result = _run(evo, resumed)
        except Cancelled:
            if meter.exhausted is None or (cancel is not None and cancel.cancelled):
                raise
            result = _stopped_by_budget(evo, resumed)
        log.emit(
            "finished",
            stop_reason=result.stop_reason,
            start_version=result.start_version,
            final_version=result.final_version,
            holdout_start=result.holdout_start,
            holdout_final=result.holdout_final,
            rounds=len(result.rounds),
            headline=result.headline,
            agent_runs=sum(result.agent_runs.values()),
            agent_runs_by_kind=result.agent_runs,
        )
        return result


def plan(ws: Workspace, options: EvolveOptions) -> JobPlan:
    """The most agent runs a session may make, and their estimated cost, without running any.

    A session evaluates holdout and golden once at the start; each round the parent and the
    candidate on the selection cases (a parent that stays current is measured once, so this is
    the most), both on holdout every ``gates.holdout_every`` rounds; the holdout once more at
    the end. Each gate (Target, Guardrail, Holdout) may add up to ``gates.max_extra_runs``
    case-runs per side, and the Guardrail its confirmation of the cases that broke
    (:func:`~engine.evaluation.gates.outcome.most_confirmation_runs`: as many again, or two
    runs of each selection case when more than half ``max_extra_runs`` of them broke).
    """
    _check_skill(ws, options)  # a refusal says so before any plan is shown
    cfg = ws.load_config()
    bench = load_benchmark(ws.benchmarks_dir / options.bench)
    rounds = cfg.limits.max_rounds if options.rounds is None else options.rounds
    check_counts(("--rounds", rounds))
    runs = bench.runs_per_case

    def units(*splits: str) -> int:
        return sum(len(bench.cases_in(s)) for s in splits) * runs

    every = cfg.gates.holdout_every
    holdout_rounds = rounds // every if every > 0 else 0
    base = (
        units("holdout", "golden")
        + rounds * 2 * units("selection")
        + holdout_rounds * 2 * units("holdout")
        + units("holdout")
    )
    most = cfg.gates.max_extra_runs
    confirm = most_confirmation_runs(most, len(bench.cases_in("selection")))
    extra = VARIANTS * (rounds * (2 * most + confirm) + holdout_rounds * most)
    agent = make_agent(ws, cfg.agent)
    return JobPlan(
        job=f"evolve {options.skill}",
        base=base,
        extra=extra,
        workers=workers(ws, options.jobs),
        per_run=per_run(ws, bench.id, agent.describe()),
        detail=f"at most, {rounds} rounds",
    )


def _session_budget(cfg: Config, pending: PendingRound, asked: Budget) -> Budget:
    """skillsmith.yaml's budget, then the session's own (set when it started or resumed), then
    the command line's: a resumed session keeps its budget unless it is given a new one."""
    kept = Budget(pending.budget_runs, pending.budget_usd, pending.budget_tokens)
    budget = session_budget(cfg.budget, kept, asked)
    pending.budget_runs, pending.budget_usd, pending.budget_tokens = (
        budget.runs,
        budget.usd,
        budget.tokens,
    )
    return budget


def _check_skill(ws: Workspace, options: EvolveOptions) -> None:
    if options.skill not in ws.skill_names():
        have = ", ".join(ws.skill_names()) or "none"
        raise SkillsmithError(f"{ws.skills_dir}: no skill {options.skill!r} (have: {have})")
    if not (ws.benchmarks_dir / options.bench).is_dir():
        raise SkillsmithError(f"{ws.benchmarks_dir / options.bench}: no such benchmark")


def _new_session(ws: Workspace, cfg: Config, options: EvolveOptions) -> PendingRound:
    _check_skill(ws, options)
    bench = load_benchmark(ws.benchmarks_dir / options.bench)
    if set(bench.splits) != set(REQUIRED_SPLITS):
        raise SkillsmithError(
            f"{bench.source}: field 'splits': evolve needs selection/holdout/golden splits, "
            f"got {'/'.join(bench.splits)}"
        )
    if not bench.cases_in("selection"):  # nothing to diagnose or target: no round can run
        raise SkillsmithError(
            f"{bench.source}: field 'splits': the selection split has no case "
            f"({len(bench.cases)} cases in all)"
        )
    _refuse_hand_edits(ws, options.skill)
    proposer = options.proposer or cfg.models.proposer.provider
    if proposer not in PROPOSER_KINDS:
        raise UsageError(f"--proposer {proposer}: expected one of {', '.join(PROPOSER_KINDS)}")
    rounds = cfg.limits.max_rounds if options.rounds is None else options.rounds
    check_counts(("--rounds", rounds))
    return PendingRound(
        session_id=new_id("evolve"),
        skill=options.skill,
        bench=options.bench,
        seed=bench.seed if options.seed is None else options.seed,
        proposer=proposer,
        auto_approve=options.auto_approve,
        max_rounds=rounds,
        started_at=utc_now(),
    )


def _refuse_hand_edits(ws: Workspace, skill: str) -> None:
    """Evolution starts from a stored version; a hand edit would be silently replaced."""
    store = SkillStore(ws, skill)
    current = store.ensure_adopted()
    live = ws.skill_path(skill)
    if current is not None and live.read_bytes().decode("utf-8") != store.read(current):
        raise SkillsmithError(
            f"{live}: edited by hand since {current}; publish it first "
            f"(skillsmith publish {skill} {live} --why …)"
        )


def _refuse_other(ws: Workspace, pending: PendingRound, options: EvolveOptions) -> None:
    """A pending session resumes only with what it was started with."""
    path = ws.pending_round_path
    asked = {
        "skill": options.skill,
        "bench": options.bench,
        "seed": options.seed,
        "proposer": options.proposer,
        "max_rounds": options.rounds,
    }
    for key, value in asked.items():
        have = getattr(pending, key)
        if value is not None and value != have:
            raise SkillsmithError(
                f"{path}: field '{key}': an interrupted evolution ({pending.session_id}, round "
                f"{pending.round}, stage {pending.stage}) was started with {key} {have!r}, not "
                f"{value!r}; resume it with the same arguments or delete {path.name}"
            )


# -- the driver ----------------------------------------------------------------------------------


def _stage(evo: Evolution, name: str, action: Callable[[], None]) -> None:
    """Run one stage unless it already finished; checkpoint before and after."""
    pending = evo.pending
    if pending.finished(name):
        return
    if evo.meter.exhausted is not None:  # a clean point past the budget: stop before the stage
        raise Cancelled()
    if evo.cancel is not None:
        evo.cancel.check()
    pending.stage = name
    evo.save()
    done = pending.max_rounds if name == "final" else max(pending.round - 1, 0)
    evo.log.emit(
        "progress",
        done=done,
        total=pending.max_rounds,
        label=evo.meter.label(f"round {pending.round}: {name}"),
        round=pending.round,
        stage=name,
    )
    action()
    pending.done.append(name)
    evo.save()


def _run(evo: Evolution, resumed: bool) -> EvolveResult:
    pending = evo.pending
    if pending.round == 0:
        _stage(evo, "baseline", evo.baseline)
        _next_round(evo)
    while pending.stage != "final":
        actions: dict[str, Callable[[], None]] = {
            "evaluate": evo.evaluate_parent,
            "diagnose": evo.diagnose,
            "audit": evo.audit,
            "propose": evo.propose,
            "filter": evo.filter,
            "evaluate_candidate": evo.evaluate_candidate,
            "gate": evo.gate,
            "decide": evo.decide,
        }
        for name in ROUND_STAGES:
            if evo.round_closed():
                break
            _stage(evo, name, actions[name])
        _next_round(evo)
    _stage(evo, "final", lambda: _final(evo))
    return _finish(evo, resumed)


def _next_round(evo: Evolution) -> None:
    """After a round: stop (→ final) or open the next round."""
    pending = evo.pending
    conv = evo.convergence
    if pending.stop_reason is None and pending.round > 0:
        if conv.stagnated(pending.stagnation):
            pending.stop_reason = "stagnation"
        elif conv.out_of_rounds(pending.round):
            pending.stop_reason = "max_rounds"
    if pending.stop_reason is not None:
        pending.stage = "final"
        pending.done = []
    else:
        pending.round += 1
        pending.stage = "evaluate"
        pending.done = []
        pending.run_ids = {}
        pending.round_runs = {}
        pending.artifacts = {}
        pending.candidate = None
        pending.candidate_id = None
        pending.version = None
    evo.save()


def _final(evo: Evolution) -> None:
    """Roll back to the best holdout version when stagnation tripped and we are worse."""
    pending = evo.pending
    current = evo.store.current()
    assert current is not None
    if "holdout" in evo.empty_splits():
        return
    if pending.stop_reason == "stagnation":
        value = evo.evaluate(evo.store.read(current), ("holdout",), "final_holdout")
        now = _holdout(evo, current, value["holdout"])
        session = {v.version: v.holdout_f1 for v in pending.versions if v.holdout_f1 is not None}
        best = best_standing(standings(evo.store, session), current)
        if best is not None and best.holdout > now:
            current = _roll_back(evo, current, now, best)
    rows = evo.evaluate(evo.store.read(current), ("holdout",), "final_holdout")
    _holdout(evo, current, rows["holdout"])


def _roll_back(evo: Evolution, current: str, now: float, best: VersionHoldout) -> str:
    """Go back to ``best`` if, measured again on this session's holdout beside ``current`` (same
    cases, same unit seeds), the paired change favours it; returns the version now current.

    A figure recorded by another session was measured with other luck (and maybe other splits),
    so it only nominates the version. Both versions passed their gates when they were
    published, so this is a choice between two vetted versions, not an acceptance: the paired
    change's sign decides and its verdict is recorded with the decision. Asking for confidence
    here would keep a session on the version its own measurement puts lower whenever the
    holdout split is small.
    """
    pending = evo.pending
    before = evo.rows_of(text_sha(evo.store.read(current)), "holdout")
    after = evo.evaluate(evo.store.read(best.version), ("holdout",), "rollback_holdout")
    again = _holdout(evo, best.version, after["holdout"])
    verdict = holdout_change(
        before,
        after["holdout"],
        positive_label=evo.bench.positive_label,
        alpha=evo.cfg.gates.alpha,
        threshold=0.0,
    )
    recorded = f"recorded {best.holdout:.3f} in {best.source}"
    if not verdict.delta > 0:
        evo.log.emit(
            "message",
            text=f"stagnation: kept {current}; {best.version} ({recorded}) measured {again:.3f} "
            f"against {now:.3f}: {verdict.line()}",
        )
        return current
    why = (
        f"evolve {pending.session_id}: stagnation {pending.stagnation:.1f} ≥ "
        f"{evo.cfg.limits.stagnation_limit:.1f} and {current} holdout {now:.3f} < "
        f"{best.version} {again:.3f} ({recorded}): {verdict.line()}"
    )
    evo.store.rollback(best.version, why=why)
    evo.log.emit("rolled_back", skill=pending.skill, frm=current, to=best.version, why=why)
    return best.version


def _holdout(evo: Evolution, version: str, rows: list[dict[str, Any]]) -> float:
    """The holdout figure of ``version`` (recorded on its version record, if it has one in this
    session)."""
    found = evo.pending.evaluation(text_sha(evo.store.read(version)), "holdout")
    assert found is not None
    record = evo.pending.version_record(version)
    if record is not None:
        record.holdout_f1 = found.value
    return found.value


def _stopped_by_budget(evo: Evolution, resumed: bool) -> EvolveResult:
    """The session stopped at a clean point past its budget: the checkpoint is kept (with what
    was spent) so the same command with a larger budget resumes where it stopped."""
    evo.save()
    why = f"budget reached: {evo.meter.exhausted}"
    evo.log.emit("message", text=f"stopped: budget ({why}; {evo.meter.line()})")
    return _result(evo, resumed, "budget")


def _finish(evo: Evolution, resumed: bool) -> EvolveResult:
    result = _result(evo, resumed, evo.pending.stop_reason or "max_rounds")
    with evo.ws.lock("evolve summary"):
        atomic_write_json(evo.ws.root / result.summary_path, result.to_dict())
    checkpoint.clear(evo.ws)
    return result


def _result(evo: Evolution, resumed: bool, stop_reason: str) -> EvolveResult:
    pending = evo.pending
    final = evo.store.current() or ""
    start = pending.versions[0].version if pending.versions else final
    start_eval = (
        pending.evaluation(pending.versions[0].sha, "holdout") if pending.versions else None
    )
    final_eval = pending.evaluation(text_sha(evo.store.read(final)), "holdout") if final else None
    summary_path = evo.session_dir / "summary.json"
    return EvolveResult(
        session_id=pending.session_id,
        skill=pending.skill,
        bench=pending.bench,
        seed=pending.seed,
        proposer=pending.proposer,
        resumed=resumed,
        stop_reason=stop_reason,
        rounds=list(pending.rounds),
        versions=list(pending.versions),
        start_version=start,
        final_version=final,
        holdout_start=None if start_eval is None else start_eval.value,
        holdout_final=None if final_eval is None else final_eval.value,
        summary_path=str(summary_path.relative_to(evo.ws.root)),
        spent=evo.meter.spent.to_dict(),
        budget=evo.meter.budget.to_dict() if evo.meter.budget.limited else None,
        not_run=evo.not_run(),
        agent_runs=dict(pending.agent_runs),
    )


__all__ = ["EvolveOptions", "EvolveResult", "plan", "round_seed", "run"]
