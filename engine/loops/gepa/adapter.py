"""The GEPA optimizer's side of the ``gepa`` library: evaluation, reflection, decisions, limits.

``gepa.optimize`` runs the loop (minibatches from Feedback, every section offered each round,
children evaluated on the parent's minibatch, survivors on all of Validation, the pool and its
fronts); everything that touches the workspace or decides is ours and plugs in here:

- :class:`SkillAdapter` — the ``GEPAAdapter``: one metric call is one agent run of one case
  through :func:`engine.evaluation.runner.run_evaluation`; its own ``propose_new_texts`` asks the
  model
  client for the rewrite (so a missing proposer can never make gepa silently propose nothing),
  and as a gepa callback it writes every decision to the experiment.
- :class:`CoverageSelector` and :class:`StrictAcceptance` — the parent draw and the keep rule,
  thin shells over the pure functions of :mod:`engine.loops.gepa.pareto`.
- GEPA's merge: ``propose_new_texts`` proposes a merged child (:mod:`engine.loops.gepa.merge`)
  instead of a rewrite once a reflective child was kept, as the reference schedules it; gepa's
  own merge (``use_merge``) swaps whole components, and ours are sections both lineages edit.
- :class:`Limits` — the stopper. gepa checks stoppers only between iterations, so a plain call
  budget overshoots by up to a whole round; this one stops *before* a round that could exceed
  the budget, keeping the holdout evaluation's calls in reserve.
- :class:`RunClock` — the time limit and the session's budget of agent runs, tokens and dollars
  (:mod:`engine.core.budget`), as a cancel token: either interrupts a running evaluation, and
  the run then fails instead of submitting.

gepa's exceptions-as-log-lines habit (a failing proposer or callback is logged and skipped) is
turned back into failures: the first fatal error is kept and stops the search, and the run
raises it.
"""

from __future__ import annotations

import functools
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gepa.core.adapter import EvaluationBatch, GEPAAdapter
from gepa.core.data_loader import DataLoader
from gepa.core.state import GEPAState
from gepa.proposer.base import CandidateProposal

from engine.core.benchmark import Benchmark
from engine.core.budget import Budget, BudgetMeter, Spent
from engine.core.events import Cancelled, CancelToken, SessionLog
from engine.core.workspace import Workspace
from engine.evaluation.llm import LLM
from engine.evaluation.runner import RunResult, run_evaluation
from engine.loops.gepa.experiment import Experiment
from engine.loops.gepa.merge import MAX_MERGES, plan_merge
from engine.loops.gepa.pareto import (
    EpochBatches,
    merge_keeps,
    minibatch_keeps,
    minibatch_screen,
    score_row,
    select_parent,
)
from engine.loops.gepa.reflection import (
    SYSTEM,
    ReflectionRejected,
    Rewrite,
    build_prompt,
    field,
    final_answer,
    grader_note,
    parse_rewrite,
    session_lines,
    statement_text,
    trace_summary,
)
from engine.loops.gepa.sections import candidate_id, check_section, render

Sections = dict[str, str]
Callback = Callable[["SkillAdapter", Mapping[str, Any]], None]


def _guarded(method: Callback) -> Callback:
    """gepa logs and ignores a failing callback; a lost record must stop the run instead."""

    @functools.wraps(method)
    def wrapper(self: SkillAdapter, event: Mapping[str, Any]) -> None:
        try:
            method(self, event)
        except Exception as exc:
            self.fatal = self.fatal or exc

    return wrapper


class RunClock(CancelToken):
    """Cancelled when the caller cancels, the deadline passes or the budget is spent; knows which
    of the three it was. Its :attr:`meter` counts the agent runs of every evaluation."""

    def __init__(
        self,
        time_limit_s: float | None,
        outer: CancelToken | None = None,
        meter: BudgetMeter | None = None,
    ) -> None:
        super().__init__()
        self.started = time.monotonic()
        self.deadline = None if time_limit_s is None else self.started + time_limit_s
        self.outer = outer
        self.meter = meter or BudgetMeter(Budget(), Spent())

    @property
    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    @property
    def over_budget(self) -> bool:
        return self.meter.exhausted is not None

    @property
    def cancelled(self) -> bool:
        outer = self.outer is not None and self.outer.cancelled
        return super().cancelled or outer or self.expired or self.over_budget

    def check(self, *, budget: bool = True) -> None:
        """Raise Cancelled if the run must stop; ``budget`` False: the budget alone does not
        stop it (a decision its last runs completed stands)."""
        outer = self.outer is not None and self.outer.cancelled
        if super().cancelled or outer or self.expired or (budget and self.over_budget):
            raise Cancelled()

    def elapsed(self) -> float:
        return time.monotonic() - self.started


@dataclass(frozen=True)
class CaseRun:
    """One metric call: one case run once with one candidate, as graded."""

    case_id: str
    score: float
    pass_fail: str
    verdict: str | None
    expected: str | None
    failure_kind: str | None
    critical: bool
    run_id: str
    session_file: str | None
    invalid_reason: str | None


class Evaluator:
    """Runs a candidate on cases and records the evaluation; counts every metric call."""

    def __init__(
        self,
        ws: Workspace,
        bench: Benchmark,
        skill: str,
        seed_text: str,
        experiment: Experiment,
        clock: RunClock,
        log: SessionLog,
        jobs: int | None,
        budget: int,
        seed: int,
    ) -> None:
        self.ws = ws
        self.bench = bench
        self.skill = skill
        self.seed_text = seed_text
        self.experiment = experiment
        self.clock = clock
        self.log = log
        self.jobs = jobs
        self.budget = budget
        self.seed = seed
        self.calls = 0

    def run(
        self, sections: Mapping[str, str], case_ids: Sequence[str], phase: str, *, traces: bool
    ) -> tuple[list[CaseRun], list[dict[str, Any]] | None]:
        """Each case once with the candidate; trajectories (for reflection) when ``traces``.

        Every evaluation of the run uses the run's seed, so a case gets the same unit seed
        whichever candidate runs it: the seed and a candidate pair on it, and the same
        ``--seed`` repeats the whole optimization.
        """
        result = self._evaluate(sections, case_ids, 1, self.seed)
        rows = {r["case_id"]: r for r in result.rows if r["variant"] == "skill"}
        runs = [_case_run(rows[c], result.run_id) for c in case_ids]
        trajectories = (
            [self._trajectory(result.run_dir, rows[c]) for c in case_ids] if traces else None
        )
        cand = candidate_id(sections)
        results = [asdict(r) for r in runs]
        for result_row, trajectory in zip(results, trajectories or (), strict=False):
            result_row["feedback"] = trajectory["feedback"]
        mean = sum(r.score for r in runs) / len(runs) if runs else 0.0
        self.experiment.evaluation(
            phase, cand, {"run_id": result.run_id, "mean": mean, "results": results}
        )
        self.log.emit(
            "progress",
            done=self.calls,
            total=self.budget,
            label=self.clock.meter.label(f"metric calls · {phase}"),
            phase=phase,
            candidate=cand,
            run_id=result.run_id,
        )
        return runs, trajectories

    def rerun(
        self,
        sections: Mapping[str, str],
        case_ids: Sequence[str],
        phase: str,
        *,
        runs: int,
        seed: int,
    ) -> list[dict[str, Any]]:
        """``runs`` more runs of each case, as score rows for a paired verdict.

        Adaptive sampling's reruns: the caller passes the same ``seed`` for both variants of a
        look (so they pair on the same noise) and a new one for each look (so a rerun is not a
        replay of a run already counted). An invalid run scores 0, as in :meth:`run`.
        """
        result = self._evaluate(sections, case_ids, runs, seed)
        found = [
            score_row(str(r["case_id"]), int(r.get("run_index", 0)), _case_run(r, "").score)
            for r in result.rows
            if r["variant"] == "skill"
        ]
        cand = candidate_id(sections)
        mean = math.fsum(float(r["score"]) for r in found) / len(found) if found else 0.0
        self.experiment.evaluation(
            phase, cand, {"run_id": result.run_id, "mean": mean, "runs": runs, "results": found}
        )
        return found

    def _evaluate(
        self, sections: Mapping[str, str], case_ids: Sequence[str], runs: int, seed: int
    ) -> RunResult:
        self.clock.check()
        result = run_evaluation(
            self.ws,
            self.bench.id,
            runs=runs,
            jobs=self.jobs,
            skills={self.skill: render(self.seed_text, sections)},
            case_ids=list(case_ids),
            cancel=self.clock,
            reporter=self.clock.meter.report,
            scoreboard=False,
            seed=seed,
        )
        self.calls += len(case_ids) * runs
        return result

    def _trajectory(self, run_dir: Any, row: Mapping[str, Any]) -> dict[str, Any]:
        case = self.bench.case(str(row["case_id"]))
        lines = session_lines(run_dir, row)
        return {
            "case_id": case.id,
            "input": statement_text(case.statement_dir, case.prompt()),
            "expected": str(row.get("ground_truth") or ""),
            "score": float(row.get("score") or 0.0),
            "verdict": row.get("judge_verdict"),
            "output": final_answer(lines),
            "feedback": grader_note(row),
            "trace": trace_summary(lines),
        }


def _case_run(row: Mapping[str, Any], run_id: str) -> CaseRun:
    valid = row.get("pass_fail") != "invalid"
    return CaseRun(
        case_id=str(row["case_id"]),
        score=float(row.get("score") or 0.0) if valid else 0.0,
        pass_fail=str(row.get("pass_fail")),
        verdict=row.get("judge_verdict"),
        expected=row.get("ground_truth"),
        failure_kind=row.get("failure_kind"),
        critical=bool(row.get("critical")),
        run_id=run_id,
        session_file=row.get("session_file"),
        invalid_reason=row.get("invalid_reason"),
    )


class Reflector:
    """Asks the reflection model (the workspace's ``models.reflection`` client) for a rewrite."""

    def __init__(self, llm: LLM, max_tokens: int) -> None:
        self.llm = llm
        self.max_tokens = max_tokens

    def ask(
        self, section: str, sections: Mapping[str, str], records: Sequence[Mapping[str, Any]]
    ) -> tuple[str, str]:
        """(prompt, answer); model-client failures propagate."""
        prompt = build_prompt(section, sections, records)
        messages = [{"role": "user", "content": prompt}]
        completion = self.llm.complete(SYSTEM, messages, max_tokens=self.max_tokens)
        return prompt, completion.text


class SkillAdapter(GEPAAdapter[str, dict[str, Any], CaseRun]):
    """The skill under optimization as a gepa program, and the recorder of gepa's decisions."""

    def __init__(
        self,
        evaluator: Evaluator,
        reflector: Reflector,
        experiment: Experiment,
        feedback: Sequence[str],
        validation: Sequence[str],
        log: SessionLog,
    ) -> None:
        self.evaluator = evaluator
        self.reflector = reflector
        self.experiment = experiment
        self.feedback = list(feedback)
        self.validation = list(validation)
        self.validation_set = set(validation)
        self.log = log
        self.pool: list[str] = []  # candidate ids in pool order (index = gepa program index)
        # per pool member: its sections, its parent's pool index, its validation scores
        self.members: list[dict[str, str]] = []
        self.parents: list[int | None] = []
        self.table: list[dict[str, float]] = []
        self.merge_due = False  # the last round kept a reflective child: try a merge next
        self.merges_tried: set[tuple[int, int]] = set()
        self.iteration = 0
        self.phase = "feedback-parent"
        self.child: dict[str, Any] | None = None  # the proposal awaiting the keep decision
        self.fatal: BaseException | None = None

    # -- GEPAAdapter ---------------------------------------------------------------------------

    def evaluate(
        self, batch: list[str], candidate: dict[str, str], capture_traces: bool = False
    ) -> EvaluationBatch[dict[str, Any], CaseRun]:
        # gepa evaluates a survivor on Validation with traces on too; the cases tell them apart.
        phase = "validation" if set(batch) <= self.validation_set else self.phase
        runs, traces = self.evaluator.run(candidate, batch, phase, traces=capture_traces)
        return EvaluationBatch(outputs=runs, scores=[r.score for r in runs], trajectories=traces)

    def make_reflective_dataset(
        self,
        candidate: dict[str, str],
        eval_batch: EvaluationBatch[dict[str, Any], CaseRun],
        components_to_update: list[str],
    ) -> dict[str, list[dict[str, Any]]]:
        """The records the model sees: case ids hidden, every text redacted and bounded."""
        records = [
            {
                "case": f"case-{i}",
                "input": field(t["input"]),
                "expected": field(t["expected"]),
                "score": t["score"],
                "verdict": t["verdict"],
                "output": field(t["output"]),
                "feedback": field(t["feedback"]),
                "trace": field(t["trace"]),
            }
            for i, t in enumerate(eval_batch.trajectories or [], start=1)
        ]
        return {name: records for name in components_to_update}

    def propose_new_texts(
        self,
        candidate: dict[str, str],
        reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
        components_to_update: list[str],
    ) -> dict[str, str]:
        """Each section in turn rewritten by the model, each on the child as rewritten so far;
        {} (no child this round) when no rewrite was usable.

        A rewrite that is unusable is recorded and skipped, and the other sections still get
        theirs: the records of one minibatch often call for an edit of one section only, and a
        round that had to stop at the first section with nothing to change would waste the
        minibatch it paid for.
        """
        parent = candidate_id(candidate)
        merged = self._merge(candidate)
        if merged is not None:
            return merged
        child, changed, rationales = dict(candidate), [], []
        for section in components_to_update:
            where = {"iteration": self.iteration, "parent_id": parent, "section": section}
            try:
                records = reflective_dataset[section]
                prompt, answer = self.reflector.ask(section, child, records)
            except Exception as exc:  # gepa would log and swallow it: keep it, stop, re-raise
                self.fatal = exc
                self.experiment.event("reflection_failed", **where, error=str(exc))
                return {}
            self.experiment.event("reflection", **where, prompt=prompt, answer=answer)
            try:
                rewrite = self._usable(child, section, answer)
            except ReflectionRejected as exc:
                self.experiment.event("reflection_rejected", **where, error=str(exc))
                continue
            child[section] = rewrite.text
            changed.append(section)
            rationales.append(f"{section}: {rewrite.rationale}")
        where = {"iteration": self.iteration, "parent_id": parent, "section": ", ".join(changed)}
        if not changed:
            return {}
        child_id = candidate_id(child)
        if child_id in self.pool:
            self.experiment.event("candidate_duplicate", **where, candidate_id=child_id)
            return {}
        self.experiment.candidate(
            child_id,
            {
                "parent_id": parent,
                "section": where["section"],
                "rationale": "\n".join(rationales),
                "sections": child,
                "skill_md": render(self.evaluator.seed_text, child),
            },
        )
        self.child = {**where, "candidate_id": child_id}
        return {section: child[section] for section in changed}

    def _merge(self, candidate: dict[str, str]) -> dict[str, str] | None:
        """GEPA's merge, once a reflective child was kept (engine.loops.gepa.merge): the parent
        with the changes of a Pareto-front member from another lineage; None when no merge is
        due, ``MAX_MERGES`` were tried, or no partner changes this parent (the merge stays due
        for the next round's parent)."""
        parent_id = candidate_id(candidate)
        if not self.merge_due or len(self.merges_tried) >= MAX_MERGES:
            return None
        if parent_id not in self.pool:
            return None
        parent = self.pool.index(parent_id)
        plan = plan_merge(
            parent, self.members, self.parents, self.table, self.validation, self.merges_tried
        )
        if plan is None:
            return None  # still due: a later parent may have a partner from another lineage
        self.merge_due = False
        self.merges_tried.add((parent, plan.partner))
        child, partner = plan.sections, self.pool[plan.partner]
        changed = [name for name in candidate if child[name] != candidate[name]]
        where = {"iteration": self.iteration, "parent_id": parent_id, "section": ", ".join(changed)}
        child_id = candidate_id(child)
        merge = {"partner_id": partner, "ancestor_id": self.pool[plan.ancestor]}
        self.experiment.event("merge", **where, **merge, candidate_id=child_id)
        if child_id in self.pool:
            self.experiment.event("candidate_duplicate", **where, candidate_id=child_id)
            return {}
        self.experiment.candidate(
            child_id,
            {
                "parent_id": parent_id,
                "section": where["section"],
                "rationale": f"merge: the changes {partner} made since {merge['ancestor_id']}",
                **merge,
                "sections": child,
                "skill_md": render(self.evaluator.seed_text, child),
            },
        )
        self.child = {**where, "candidate_id": child_id, "merge": True}
        return {name: child[name] for name in changed}

    def _usable(self, child: Mapping[str, str], section: str, answer: str) -> Rewrite:
        """The model's rewrite of ``section`` of ``child``, or ReflectionRejected saying why not."""
        rewrite = parse_rewrite(answer, section)
        if rewrite.text.strip() == child[section].strip():
            raise ReflectionRejected(f"the rewrite did not change the {section} section")
        problem = check_section(
            self.evaluator.seed_text, child, {**child, section: rewrite.text}, section
        )
        if problem is not None:
            raise ReflectionRejected(problem)
        return rewrite

    # -- gepa callbacks (recording) ------------------------------------------------------------

    @_guarded
    def on_iteration_start(self, event: Mapping[str, Any]) -> None:
        self.iteration = int(event["iteration"])
        self.child = None

    @_guarded
    def on_candidate_selected(self, event: Mapping[str, Any]) -> None:
        index = int(event["candidate_idx"])
        self.experiment.event(
            "parent_selected", iteration=self.iteration, parent_id=self.pool[index]
        )

    @_guarded
    def on_minibatch_sampled(self, event: Mapping[str, Any]) -> None:
        cases = [self.feedback[int(i)] for i in event["minibatch_ids"]]
        self.experiment.event("minibatch", iteration=self.iteration, case_ids=cases)

    @_guarded
    def on_evaluation_start(self, event: Mapping[str, Any]) -> None:
        child = event["candidate_idx"] is None
        self.phase = "feedback-child" if child else "feedback-parent"

    @_guarded
    def on_evaluation_skipped(self, event: Mapping[str, Any]) -> None:
        self.experiment.event(
            "round_skipped",
            iteration=self.iteration,
            parent_id=self.pool[int(event["candidate_idx"])],
            reason=str(event["reason"]),
        )

    @_guarded
    def on_candidate_rejected(self, event: Mapping[str, Any]) -> None:
        self.experiment.event(
            "candidate_rejected",
            **(self.child or {"iteration": self.iteration}),
            parent_score=event["old_score"],
            child_score=event["new_score"],
            reason="strict_minibatch_improvement",
        )

    @_guarded
    def on_valset_evaluated(self, event: Mapping[str, Any]) -> None:
        cand = candidate_id(event["candidate"])
        scores = {self.validation[int(k)]: v for k, v in event["scores_by_val_id"].items()}
        parent = None if self.child is None else self.child["parent_id"]
        self.parents.append(self.pool.index(parent) if parent in self.pool else None)
        self.pool.append(cand)
        self.members.append(dict(event["candidate"]))
        self.table.append(scores)
        if len(self.pool) > 1:
            self.merge_due = not (self.child or {}).get("merge", False)
            self.experiment.event(
                "candidate_accepted",
                **(self.child or {"iteration": self.iteration}),
                validation_mean=event["average_score"],
                validation_scores=scores,
            )
            self.log.emit(
                "message",
                text=f"candidate {cand} kept: validation mean {event['average_score']:.3f}",
            )


class CoverageSelector:
    """gepa's parent selector, drawing by per-case Pareto coverage (pareto.select_parent)."""

    def __init__(self, validation: Sequence[str], seed: int) -> None:
        self.validation = list(validation)
        self.rng = random.Random(seed)

    def select_candidate_idx(self, state: GEPAState[Any, Any]) -> int:
        table = [
            {self.validation[int(k)]: v for k, v in scores.items()}
            for scores in state.prog_candidate_val_subscores
        ]
        return select_parent(table, self.validation, self.rng)


class DistinctMinibatch:
    """gepa's batch sampler: every Feedback case once per epoch, distinct within a minibatch
    (pareto.EpochBatches).

    gepa's default pads the last minibatch of an epoch with repeated cases; a case counted
    twice in one minibatch would double its weight in the keep decision.
    """

    def __init__(self, size: int, seed: int) -> None:
        self.size = size
        self.rng = random.Random(f"{seed}:minibatch")
        self.batches: EpochBatches | None = None

    def next_minibatch_ids(
        self, loader: DataLoader[int, str], state: GEPAState[Any, Any]
    ) -> list[int]:
        ids = list(loader.all_ids())
        if self.batches is None or self.batches.population != len(ids):
            self.batches = EpochBatches(self.size, len(ids), self.rng)
        return [ids[i] for i in self.batches.next()]


class StrictAcceptance:
    """Keep a reflective child only if the paired minibatch screen says it beat its parent, a
    merged one if it scored no lower (pareto.merge_keeps)."""

    def __init__(self, adapter: SkillAdapter) -> None:
        self.adapter = adapter

    def _merged(self) -> bool:
        return bool((self.adapter.child or {}).get("merge"))

    def should_accept(self, proposal: CandidateProposal[Any], state: GEPAState[Any, Any]) -> bool:
        keeps = merge_keeps if self._merged() else minibatch_keeps
        return keeps(proposal.subsample_scores_before or [], proposal.subsample_scores_after or [])

    def reject_reason(self, proposal: CandidateProposal[Any], state: GEPAState[Any, Any]) -> str:
        before = sum(proposal.subsample_scores_before or [])
        after = sum(proposal.subsample_scores_after or [])
        if self._merged():
            return f"merged child scored {after:g}, below its parent's {before:g}, on the minibatch"
        screen = minibatch_screen(
            proposal.subsample_scores_before or [], proposal.subsample_scores_after or []
        )
        return (
            f"child scored {after:g} against its parent's {before:g} on the same minibatch: "
            f"{screen.line()}"
        )


class Limits:
    """Stops before a round that could break a limit; ``reason`` says which one stopped it."""

    def __init__(
        self,
        adapter: SkillAdapter,
        *,
        iterations: int,
        max_calls: int,
        round_cost: int,
        reserve: int,
        clock: RunClock,
    ) -> None:
        self.adapter = adapter
        self.iterations = iterations
        self.max_calls = max_calls
        self.round_cost = round_cost
        self.reserve = reserve
        self.clock = clock
        self.reason: str | None = None

    def __call__(self, gepa_state: GEPAState[Any, Any]) -> bool:
        self.reason = self._reason(gepa_state)
        return self.reason is not None

    def _reason(self, state: GEPAState[Any, Any]) -> str | None:
        if self.adapter.fatal is not None:
            return "error"
        if self.clock.cancelled:
            if self.clock.expired:
                return "time_limit"
            return "budget" if self.clock.over_budget else "cancelled"
        if state.i + 1 >= self.iterations:
            return "max_iterations"
        used = self.adapter.evaluator.calls
        if used + self.round_cost + self.reserve > self.max_calls:
            return "metric_budget"
        return None


class GepaLog:
    """gepa's log lines go to the GEPA optimizer's session log (redacted), never to stdout."""

    def __init__(self, log: SessionLog) -> None:
        self.session = log

    def log(self, message: str) -> None:
        self.session.emit("message", text=field(message), source="gepa")


__all__ = [
    "CaseRun",
    "CoverageSelector",
    "DistinctMinibatch",
    "Evaluator",
    "GepaLog",
    "Limits",
    "Reflector",
    "RunClock",
    "SkillAdapter",
    "StrictAcceptance",
]
