"""The Optimizer session: rounds over the agent's editable state, each kept by a paired verdict.

PenguinHarness' agent-optimization, round by round:

1. It starts only from a complete, unchanged **Formal Baseline** (engine.loops.builder.baseline).
2. From the reference evaluation's scores and its diagnosed traces the model proposes **one
   bounded candidate** (engine.loops.agent_optimizer.candidate).
3. The agent state is **snapshotted** (``snapshots/v<N>-<time>.tar.gz``) and evaluated afresh
   (the parent), then the candidate is applied and the Case × runs matrix evaluated again with
   the same seed, so every (case, run) of the two evaluations shares its unit seed.
4. Units that failed to execute are **repaired**: the same candidate, only the failed units rerun.
   An evaluation still incomplete is **invalid**: it is rolled back and does not count as a round.
5. The candidate is **kept only when the paired verdict says "better"**
   (engine.evaluation.verdict, the exact run-level test at ``gates.alpha``, one-sided): a target
   agent does not answer the same twice, and "a higher mean than the last record" keeps a change
   that does nothing about half the time. An inconclusive verdict reruns the cases that can
   still decide it (engine.evaluation.verdict.can_improve: those whose runs disagree and those
   both states failed on every run, where a fix that slipped on its one run hides), on both
   states with shared seeds, within ``gates.max_extra_runs``. Kept: the change goes through the
   **human gate** — a skill edit is queued through the door every loop uses (an AGENTS.md or
   settings edit is kept as a patch file), the live file is put back and the session stops
   awaiting approval, as evolve's does; with ``--auto-approve`` (or ``gates.human: none``) the
   skill is published or the workspace version bumped to N+1, and the record is written to the
   scoreboard and checked against its run at once. Otherwise the snapshot is **restored** (and a
   skill diff goes on the skill's taboo list). The verdict's figures go into the state file, the
   session events and the record's summary.
6. Whether the **hypothesis held** on the cases it targeted is reported apart from the verdict,
   so noise elsewhere is not read as the candidate's effect.
7. It stops early at the **target score**, else after the configured number of valid rounds; the
   agent is left at the best (the last kept) version.

Every stage is written to ``experiments/<session>/state.json`` before the next begins, so a killed
Optimizer resumes the same round with the same candidate, seeds and run ids, and reruns only the
missing units.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.core.benchmark import load_benchmark
from engine.core.budget import Budget, BudgetMeter, session_budget
from engine.core.errors import SkillsmithError, UsageError, check_counts
from engine.core.events import Cancelled, CancelToken, Reporter, SessionLog, null_reporter
from engine.core.fsutil import atomic_write_text
from engine.core.queue import CandidateQueue
from engine.core.runs import RunFolder
from engine.core.scoreboard import (
    ScoreRecord,
    append_record,
    count_records,
    read_heads,
    read_record,
    record_from_rows,
)
from engine.core.sessions import ends_logged, hold, is_held, start_session, verify_record
from engine.core.snapshots import create_snapshot, restore
from engine.core.stamps import new_id
from engine.core.store import SkillStore, read_text
from engine.core.workspace import Workspace
from engine.evaluation.agents import make_agent
from engine.evaluation.costplan import JobPlan, per_run, workers
from engine.evaluation.diagnosis.run import diagnose_run, load_run
from engine.evaluation.gates.candidate import TaskOutcome
from engine.evaluation.gates.counted import VARIANTS
from engine.evaluation.gates.outcome import Sampling
from engine.evaluation.gates.submission import submit_candidate
from engine.evaluation.judge import ProtocolJudge, session_judge
from engine.evaluation.llm import LLM, make_llm
from engine.evaluation.patches import taboo_rule
from engine.evaluation.protocol import ProtocolExhausted, ask, data_message
from engine.evaluation.runner import (
    SKILL,
    RunResult,
    agent_runtime,
    derived_seed,
    fresh_seed,
    run_evaluation,
)
from engine.evaluation.verdict import Rerun, Rows, Verdict, can_improve, compare_paired
from engine.loops.agent_optimizer.candidate import (
    CANDIDATE_SYSTEM,
    AgentCandidate,
    NoneLeft,
    editable_files,
    parse_candidate,
    target_path,
)
from engine.loops.agent_optimizer.offline import optimizer_offline
from engine.loops.agent_optimizer.state import Attempt, OptimizerState, Reference, find_unfinished
from engine.loops.builder.baseline import (
    ACCEPTED,
    FormalBaseline,
    figures,
    formal_baseline,
    skills_of_run,
)

MAX_REPAIRS = 2  # reruns of failed units before an evaluation is judged invalid
EVIDENCE_PER_CAUSE = 3


@dataclass
class AgentOptimizerResult:
    session_id: str
    benchmark: str
    resumed: bool
    baseline_score: float
    final_score: float
    version: int
    valid_rounds: int
    stop_reason: str
    attempts: list[dict[str, Any]]
    spent: dict[str, Any] | None = None  # agent runs, tokens and dollars the session spent
    budget: dict[str, Any] | None = None

    @property
    def headline(self) -> str:
        """The session in one line: the score it reached from the Formal Baseline's."""
        return (
            f"{self.benchmark}: {self.baseline_score:.2f} → {self.final_score:.2f} in "
            f"{self.valid_rounds} valid round(s), v{self.version} ({self.stop_reason})"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AgentOptimizerOptions:
    """The settings of one agent Optimizer session (``model`` / ``judge`` replace the
    configured ones; a resumed session keeps its own)."""

    bench: str
    rounds: int = 3
    runs: int | None = None  # runs per case of every candidate evaluation
    target_score: float | None = None
    jobs: int | None = None
    auto_approve: bool = False  # apply a kept round without a person (else it waits in the queue)
    seed: int | None = None  # every evaluation's seed follows from it (default: fresh ones)
    model: LLM | None = None
    judge: ProtocolJudge | None = None
    budget: Budget = field(default_factory=Budget)  # outranks the session's and skillsmith.yaml's


def _reference(record: ScoreRecord, index: int, version: int, source: str) -> Reference:
    return Reference(
        score=record.score,
        run_id=str(record.run_id),
        version=version,
        record_index=index,
        cases={c.case_id: c.score for c in record.cases},
        source=source,
    )


def hypothesis_check(
    targeted: list[str], before: Mapping[str, float], after: Mapping[str, float]
) -> dict[str, Any]:
    """Did the targeted cases improve (mean, strictly)? Kept apart from the overall delta."""
    scored = [c for c in targeted if c in before and c in after]
    held: bool | None = None
    if scored:
        held = statistics.fmean(after[c] for c in scored) > statistics.fmean(
            before[c] for c in scored
        )
    return {
        "held": held,
        "cases": {c: {"before": before.get(c), "after": after.get(c)} for c in targeted},
        "improved": [c for c in scored if after[c] > before[c]],
        "worsened": [c for c in scored if after[c] < before[c]],
    }


def _skill_rows(rows: Any) -> list[dict[str, Any]]:
    return [dict(r) for r in rows if r.get("variant", SKILL) == SKILL]


def better_on_these_cases(before: Rows, after: Rows, alpha: float) -> Verdict:
    """Is the candidate better on these very cases? The exact run-level test, one-sided, on the
    graded score the scoreboard shows."""
    return compare_paired(
        before, after, alpha=alpha, test="runs", alternative="greater", measure="score"
    )


class _Optimizer:
    def __init__(
        self,
        ws: Workspace,
        state: OptimizerState,
        log: SessionLog,
        model: LLM,
        judge: ProtocolJudge,
        meter: BudgetMeter,
        cancel: CancelToken | None,
    ) -> None:
        self.ws = ws
        self.state = state
        self.log = log
        self.model = model
        self.judge = judge
        self.meter = meter  # counts every evaluation's agent runs into ``state.spent``
        self.outer = cancel
        self.folder = ws.experiments_dir / state.session_id

    def save(self) -> None:
        with self.ws.lock(f"optimize-agent {self.state.benchmark}"):
            self.state.save(self.folder)

    # -- proposing -------------------------------------------------------------------------------
    def _proposal_rerequested(self, problem: str, number: int) -> None:
        self.log.emit("message", stage="proposal_rerequest", problem=problem, request=number)

    def propose(self) -> AgentCandidate | NoneLeft:
        ref = self.state.reference
        cfg = self.ws.load_config()
        bench_root = self.ws.benchmarks_dir / self.state.benchmark
        run = load_run(self.ws.runs_dir / ref.run_id, self.ws)
        bench = load_benchmark(bench_root)
        diagnosis = diagnose_run(
            run, config=cfg.diagnosis, min_share=cfg.limits.root_cause_min_share, bench=bench
        )
        causes = []
        for cause in diagnosis.root_causes:
            item = cause.to_dict()
            item["evidence"] = item["evidence"][:EVIDENCE_PER_CAUSE]
            causes.append(item)
        files = editable_files(self.ws)
        case_ids = [c.id for c in bench.cases]
        data = {
            "benchmark": self.state.benchmark,
            "reference": {"score": ref.score, "run_id": ref.run_id, "source": ref.source},
            "cases": [
                {"id": c.id, "expected": c.rubric.expected, "score": ref.cases.get(c.id)}
                for c in bench.cases
            ],
            "root_causes": causes,
            "attribution": diagnosis.attribution_summary(),
            "files": files,
            "tried": self.state.tried(),
            "limits": {
                "max_patch_lines": cfg.limits.max_patch_lines,
                "agent_max_turns": cfg.limits.agent_max_turns,
                "agent_max_timeout_s": cfg.limits.agent_max_timeout_s,
            },
        }
        exchange = ask(
            self.model,
            CANDIDATE_SYSTEM,
            [data_message("Propose the next candidate.", data)],
            lambda text: parse_candidate(
                text, ws=self.ws, files=files, case_ids=case_ids, tried=self.state.tried()
            ),
            on_rerequest=self._proposal_rerequested,
        )
        proposal: AgentCandidate | NoneLeft = exchange.value
        return proposal

    # -- the stages of one attempt ---------------------------------------------------------------
    def snapshot(self, attempt: Attempt, candidate: AgentCandidate) -> None:
        if candidate.skill is not None:
            SkillStore(self.ws, candidate.skill).ensure_adopted()  # v0 = the text before
        note = (
            f"optimizer {self.state.session_id} round {attempt.round} "
            f"(attempt {attempt.number}): before {candidate.summary}"
        )
        path = create_snapshot(self.ws, note=note)
        attempt.snapshot = path.relative_to(self.ws.root).as_posix()
        attempt.stage = "snapshotted"
        self.save()
        self.log.emit("message", stage="snapshot", attempt=attempt.number, file=attempt.snapshot)

    def apply(self, attempt: Attempt, candidate: AgentCandidate) -> None:
        self._put(attempt, candidate, candidate.after)
        attempt.run_id = attempt.run_id or new_id("run")
        attempt.stage = "applied"
        self.save()
        self.log.emit(
            "message",
            stage="applied",
            attempt=attempt.number,
            target=candidate.target,
            run_id=attempt.run_id,
        )

    def _evaluate_once(
        self,
        run_id: str,
        seed: int,
        case_ids: Sequence[str] | None = None,
        runs: int | None = None,
    ) -> RunResult:
        return run_evaluation(
            self.ws,
            self.state.benchmark,
            runs=runs or self.state.runs,
            jobs=self.state.jobs,
            case_ids=None if case_ids is None else list(case_ids),
            run_id=run_id,
            reporter=self.meter.report,
            cancel=self.meter.token,
            judge=self.judge,
            scoreboard=False,
            seed=seed,
        )

    def _complete(self, attempt: Attempt, run_id: str) -> RunResult:
        """One evaluation of the live state, its failed units repaired up to MAX_REPAIRS times."""
        assert attempt.seed is not None
        result = self._evaluate_once(run_id, attempt.seed)
        attempt.launched += result.launched
        self.save()
        self.log.emit(
            "message",
            stage="evaluated",
            attempt=attempt.number,
            run_id=result.run_id,
            status=result.status,
            launched=result.launched,
        )
        while result.status != "finished" and attempt.repairs < MAX_REPAIRS:
            attempt.repairs += 1
            failed = [
                f"{r['case_id']}#{r['run_index']}"
                for r in result.rows
                if r["pass_fail"] == "invalid"
            ]
            self.log.emit(
                "message",
                stage="repair",
                attempt=attempt.number,
                run_id=result.run_id,
                units=failed,
            )
            result = self._evaluate_once(run_id, attempt.seed)
            attempt.launched += result.launched
            self.save()
        return result

    def _put(self, attempt: Attempt, candidate: AgentCandidate, text: str) -> None:
        """Make ``text`` the live content of the candidate's file (the parent's or the
        candidate's), so the next evaluation measures that state; refuse when someone else
        changed the file meanwhile."""
        path = target_path(self.ws, candidate.target)
        with self.ws.lock(f"optimize-agent {self.state.benchmark}"):
            live = read_text(path) if path.is_file() else ""
            if live not in (candidate.before, candidate.after):
                raise SkillsmithError(
                    f"{path}: changed since the candidate was proposed; restore "
                    f"{attempt.snapshot} or start a new optimizer session"
                )
            if live != text:
                atomic_write_text(path, text)

    def measure_parent(self, attempt: Attempt, candidate: AgentCandidate) -> bool:
        """The fresh evaluation of the state before the candidate; False when it stayed invalid.

        The candidate is compared with this run, not with the reference record: that record
        was drawn with other seeds (and, for the first round, with other runs per case)."""
        self._put(attempt, candidate, candidate.before)
        if attempt.seed is None or attempt.parent_run_id is None:
            attempt.seed = (
                self._seed("round", attempt.number) if attempt.seed is None else attempt.seed
            )
            attempt.parent_run_id = attempt.parent_run_id or new_id("run")
            self.save()
        result = self._complete(attempt, attempt.parent_run_id)
        if result.status != "finished":
            why = "units of the parent's evaluation still failed to run after repairs"
            self.roll_back(attempt, candidate, "invalid", why)
            return False
        attempt.parent_score = figures(_skill_rows(result.rows)).score
        self.save()
        return True

    def _seed(self, *parts: object) -> int:
        """An evaluation's seed: fixed by the session's ``--seed`` and ``parts`` (so a session
        repeated with it draws the same runs), else a fresh one."""
        session = self.state.seed
        return fresh_seed() if session is None else derived_seed(session, *parts)

    def _rerun(self, attempt: Attempt, candidate: AgentCandidate) -> Rerun:
        """Reruns for adaptive sampling: both states, the chosen cases, one fresh shared seed.

        The k-th rerun of a round is recorded (cases, runs, seed, run ids) before it runs, so a
        resumed round repeats the same reruns and the runner keeps their finished units."""
        done = [0]

        def rerun(case_ids: Sequence[str], runs: int) -> tuple[Rows, Rows]:
            index = done[0]
            done[0] += 1
            if index >= len(attempt.reruns):
                attempt.reruns.append(
                    {
                        "cases": list(case_ids),
                        "runs": runs,
                        "seed": self._seed("rerun", attempt.number, index),
                        "before": new_id("run"),
                        "after": new_id("run"),
                    }
                )
                self.save()
            plan = attempt.reruns[index]
            sides: list[Rows] = []
            for side in ("before", "after"):
                self._put(
                    attempt, candidate, candidate.before if side == "before" else candidate.after
                )
                result = self._evaluate_once(
                    plan[side], int(plan["seed"]), plan["cases"], plan["runs"]
                )
                attempt.launched += result.launched
                self.save()
                self.log.emit(
                    "message",
                    stage="rerun",
                    attempt=attempt.number,
                    side=side,
                    cases=plan["cases"],
                    runs=plan["runs"],
                    run_id=result.run_id,
                    launched=result.launched,
                )
                sides.append(_skill_rows(result.rows))
            return sides[0], sides[1]

        return rerun

    def evaluate(self, attempt: Attempt, candidate: AgentCandidate) -> None:
        assert attempt.run_id is not None and attempt.parent_run_id is not None
        self._put(attempt, candidate, candidate.after)
        result = self._complete(attempt, attempt.run_id)
        if result.status != "finished":
            self.roll_back(attempt, candidate, "invalid", "units still failed to run after repairs")
            return
        parent = _skill_rows(
            RunFolder(self.ws.runs_dir / attempt.parent_run_id).latest_rows().values()
        )
        rows = _skill_rows(result.rows)
        gates = self.ws.load_config().gates
        sampling = Sampling(
            alpha=gates.alpha, max_extra_runs=gates.max_extra_runs, looks=gates.looks
        )
        verdict, _, _ = sampling.decide(
            parent,
            rows,
            better_on_these_cases,
            lambda v: not v.better,
            self._rerun(attempt, candidate),
            pick=can_improve,
        )
        self._put(attempt, candidate, candidate.after)
        record = figures(rows)
        attempt.score = record.score
        attempt.delta = round(record.score - float(attempt.parent_score or 0.0), 2)
        attempt.verdict = verdict.to_dict()
        attempt.hypothesis = hypothesis_check(
            list(candidate.targeted_cases),
            {c.case_id: c.score for c in figures(parent).cases},
            {c.case_id: c.score for c in record.cases},
        )
        attempt.decision = "accepted" if verdict.better else "rolled_back"
        attempt.stage = "deciding"
        self.save()

    def decide(self, attempt: Attempt, candidate: AgentCandidate) -> None:
        if attempt.decision == "accepted":
            if not self.held_for_a_person(attempt, candidate):
                self.accept(attempt, candidate)
        else:
            verdict = Verdict.from_dict(attempt.verdict or {})
            why = (
                f"paired verdict against the parent: {verdict.line()}; better at one-sided "
                f"p<{verdict.alpha:g} wanted"
            )
            self.roll_back(attempt, candidate, "rolled_back", why)

    def held_for_a_person(self, attempt: Attempt, candidate: AgentCandidate) -> bool:
        """Send a kept round through the human gate; True when it now waits for a person.

        A skill edit enters the queue through the door every loop uses (Spec, Safety, Human):
        ``gates.human: none`` publishes it there, ``--auto-approve`` approves it here, otherwise it
        waits as ``pending_approval``. The queue holds skill versions only, so a kept AGENTS.md or
        settings edit waits as a patch file in the experiment folder. Either way the live file is
        put back to the state before the round and the session stops, as evolve's does: later
        rounds would build on a change nobody accepted.
        """
        verdict = Verdict.from_dict(attempt.verdict or {})
        why = f"optimize-agent {self.state.session_id} round {attempt.round}: {candidate.summary}"
        if candidate.skill is None:
            policy = self.ws.load_config().gates.human
            if self.state.auto_approve or policy == "none":
                return False
            patch = self.folder / f"round-{attempt.round}.diff"
            atomic_write_text(patch, candidate.diff)
            where = patch.relative_to(self.ws.root).as_posix()
            reason = (
                f"kept ({verdict.line()}); the queue holds skill edits only, so {where} waits "
                "for a person: apply it by hand, or rerun with --auto-approve"
            )
            return self._hold(attempt, candidate, "held", reason)
        queue = CandidateQueue(self.ws)
        if attempt.candidate_id is None:
            store = SkillStore(self.ws, candidate.skill)
            queued, _ = submit_candidate(
                self.ws,
                candidate.skill,
                candidate.after,
                source="optimize-agent",
                operation="update",
                parent_version=store.current(),
                summary=candidate.summary,
                patch=candidate.diff,
                outcome=TaskOutcome(
                    status="success",
                    notes=f"against a fresh evaluation of the parent: {verdict.line()}",
                    evaluator=f"optimize-agent:{self.state.session_id} round {attempt.round}",
                ),
                delta_score=attempt.delta,
                root_causes=[candidate.rule],
                metrics={"score": attempt.score, "run_id": attempt.run_id},
                provenance={"source": "optimize-agent", "session": self.state.session_id},
            )
            attempt.candidate_id = queued.id
            self.save()
        queued = queue.get(attempt.candidate_id)
        if queued.status == "rejected":
            self.roll_back(attempt, candidate, "rolled_back", f"gate rejected: {queued.reason}")
            return True
        if queued.status == "pending_approval" and self.state.auto_approve:
            queue.approve(queued.id, why=f"{why} (--auto-approve)")
            return False
        if queued.status != "pending_approval":
            return False  # published by the door (gates.human: none) or approved meanwhile
        reason = f"kept ({verdict.line()}); candidate {queued.id} awaits approval"
        return self._hold(attempt, candidate, "queued", reason)

    def _hold(self, attempt: Attempt, candidate: AgentCandidate, decision: str, why: str) -> bool:
        self._put(attempt, candidate, candidate.before)
        attempt.decision = decision
        attempt.stage = decision
        attempt.reason = why
        self.state.valid_rounds += 1
        self.save()
        self.log.emit("candidate_queued", **self._outcome(attempt, candidate))
        return True

    def accept(self, attempt: Attempt, candidate: AgentCandidate) -> None:
        assert attempt.run_id is not None and attempt.score is not None
        bench_root = self.ws.benchmarks_dir / self.state.benchmark
        why = f"optimize-agent {self.state.session_id} round {attempt.round}: {candidate.summary}"
        with self.ws.lock(f"optimize-agent {self.state.benchmark}"):
            if candidate.skill is not None:
                store = SkillStore(self.ws, candidate.skill)
                current = store.current()
                if current is None or store.read(current) != candidate.after:
                    store.publish(
                        candidate.after,
                        why=why,
                        metrics={"score": attempt.score, "run_id": attempt.run_id},
                        patch=candidate.diff,
                        provenance={"source": "optimize-agent", "session": self.state.session_id},
                    )
            if self.ws.version() < attempt.version_before + 1:
                self.ws.set_version(attempt.version_before + 1)
            attempt.version_after = self.ws.version()
        done = [
            i
            for i, r in enumerate(read_heads(bench_root))
            if r.kind == ACCEPTED and r.run_id == attempt.run_id
        ]
        if done:
            index, record = done[0], read_record(bench_root, done[0])
        else:
            record = self._record(attempt, candidate)
            append_record(bench_root, record)
            index = count_records(bench_root) - 1
        mismatches = verify_record(self.ws, record)
        if mismatches:
            raise SkillsmithError(
                f"{bench_root}: scoreboard record [{index}] does not match run "
                f"{attempt.run_id}: {mismatches[0]}"
            )
        attempt.record_index = index
        attempt.stage = "accepted"
        self.state.valid_rounds += 1
        self.state.reference = _reference(
            record, index, attempt.version_after, f"round {attempt.round}"
        )
        self.save()
        self.log.emit("published", **self._outcome(attempt, candidate))

    def _record(self, attempt: Attempt, candidate: AgentCandidate) -> ScoreRecord:
        assert attempt.run_id is not None and attempt.score is not None
        folder = RunFolder(self.ws.runs_dir / attempt.run_id)
        manifest = folder.read_manifest()
        rows = [r for r in folder.latest_rows().values() if r.get("variant", "skill") == "skill"]
        skills = skills_of_run(manifest)
        if candidate.skill is not None:
            current = SkillStore(self.ws, candidate.skill).current()
            skills[candidate.skill] = str(current)
        hypothesis = attempt.hypothesis or {}
        held = {True: "held", False: "did not hold", None: "could not be checked"}[
            hypothesis.get("held")
        ]
        improved = ", ".join(hypothesis.get("improved") or []) or "none"
        ranked = sorted(figures(rows).cases, key=lambda c: (c.score, c.case_id))
        below = [c.case_id for c in ranked if c.score < 100][:3]
        verdict = Verdict.from_dict(attempt.verdict or {})
        summary = (
            f"{candidate.hypothesis} — the hypothesis {held} on its targeted cases "
            f"(improved: {improved}); against a fresh evaluation of the parent with the same "
            f"seeds: {verdict.line()}. "
            f"Next hypothesis: the lowest cases ({', '.join(below) or 'none'}) share a root cause "
            "a further bounded edit can fix."
        )
        cfg = self.ws.load_config()
        return record_from_rows(
            rows,
            runtime=agent_runtime(make_agent(self.ws, cfg.agent)),
            summary_title=(
                f"Round {attempt.round} accepted (v{attempt.version_after}): {candidate.summary}"
            ),
            summary=summary,
            run_id=attempt.run_id,
            variant="skill",
            skills=skills,
            kind=ACCEPTED,
            session_id=self.state.session_id,
            version=attempt.version_after,
        )

    def roll_back(
        self, attempt: Attempt, candidate: AgentCandidate, decision: str, why: str
    ) -> None:
        assert attempt.snapshot is not None
        path = target_path(self.ws, candidate.target)
        live = read_text(path) if path.is_file() else ""
        changed = live != candidate.before or self.ws.version() != attempt.version_before
        if changed:
            # its own snapshot of the state before its own edit: the agent settings in it are
            # the ones the user had, so they need no second confirmation
            restore(self.ws, self.ws.root / attempt.snapshot, yes=True, trust_agent_config=True)
        if decision == "rolled_back" and candidate.skill is not None:
            SkillStore(self.ws, candidate.skill).taboo().add(
                taboo_rule(candidate.rule, "optimize"), candidate.diff, why
            )
        attempt.decision = decision
        attempt.reason = why
        attempt.stage = decision
        if decision == "rolled_back":
            self.state.valid_rounds += 1
        self.save()
        self.log.emit("rolled_back", **self._outcome(attempt, candidate))

    def _outcome(self, attempt: Attempt, candidate: AgentCandidate) -> dict[str, Any]:
        hypothesis = attempt.hypothesis or {}
        return {
            "attempt": attempt.number,
            "round": attempt.round if attempt.decision != "invalid" else None,
            "decision": attempt.decision,
            "target": candidate.target,
            "summary": candidate.summary,
            "run_id": attempt.run_id,
            "score": attempt.score,
            "reference_score": attempt.reference_score,
            "parent_score": attempt.parent_score,
            "delta": attempt.delta,
            "verdict": attempt.verdict,
            "hypothesis_held": hypothesis.get("held"),
            "targeted_cases": list(candidate.targeted_cases),
            "version": self.ws.version(),
            "snapshot": attempt.snapshot,
            "reason": attempt.reason,
            "launched": attempt.launched,
        }

    def advance(self, attempt: Attempt) -> None:
        candidate = AgentCandidate.from_dict(attempt.candidate)
        if attempt.stage == "proposed":
            self.snapshot(attempt, candidate)
        if attempt.stage == "snapshotted":
            if not self.measure_parent(attempt, candidate):
                return
            self.apply(attempt, candidate)
        if attempt.stage == "applied":
            self.evaluate(attempt, candidate)
        if attempt.stage == "deciding":
            self.decide(attempt, candidate)

    # -- the loop --------------------------------------------------------------------------------
    def _stop(self) -> str | None:
        state = self.state
        if state.awaiting() is not None:
            return "awaiting_approval"
        if state.target_score is not None and state.reference.score >= state.target_score:
            return "target"
        if state.valid_rounds >= state.rounds:
            return "rounds"
        if len(state.attempts) >= 2 * state.rounds + 2:
            return "too many invalid evaluations"
        return None

    def run(self) -> str:
        """Rounds until a stop; "budget" when the budget ran out, the open attempt parked."""
        try:
            return self._rounds()
        except Cancelled:
            if self.meter.exhausted is None or (self.outer is not None and self.outer.cancelled):
                raise
        self._park()
        why = f"budget reached: {self.meter.exhausted}; {self.meter.line()}"
        self.log.emit("message", text=f"stopped: budget ({why})")
        return "budget"

    def _park(self) -> None:
        """A budget stop leaves the parent state live: the open attempt (never past its
        evaluations, so nothing of it is decided or queued) resumes from its stage when the
        session is started again, putting its candidate back where it measures it."""
        attempt = self.state.open_attempt()
        if attempt is not None and attempt.stage in ("snapshotted", "applied"):
            candidate = AgentCandidate.from_dict(attempt.candidate)
            self._put(attempt, candidate, candidate.before)
        self.save()

    def _rounds(self) -> str:
        while True:
            self.meter.token.check()  # the caller's cancel, or the budget spent
            if self.meter.exhausted is not None:  # spent before this start: no run begins
                raise Cancelled()
            attempt = self.state.open_attempt()
            if attempt is None:
                reason = self._stop()
                if reason is not None:
                    return reason
                try:
                    proposal = self.propose()
                except ProtocolExhausted as exc:
                    return f"no valid candidate: {exc}"
                if isinstance(proposal, NoneLeft):
                    return f"no different safe candidate left ({proposal.reason})"
                attempt = Attempt(
                    number=len(self.state.attempts) + 1,
                    round=self.state.valid_rounds + 1,
                    candidate=proposal.to_dict(),
                    stage="proposed",
                    version_before=self.ws.version(),
                    reference_score=self.state.reference.score,
                )
                self.state.attempts.append(attempt)
                self.save()
                self.log.emit(
                    "candidate_queued",
                    attempt=attempt.number,
                    round=attempt.round,
                    target=proposal.target,
                    summary=proposal.summary,
                    hypothesis=proposal.hypothesis,
                    targeted_cases=list(proposal.targeted_cases),
                    diff_lines=proposal.diff.count("\n"),
                )
            self.advance(attempt)


def _start_reference(ws: Workspace, baseline: FormalBaseline, version: int) -> Reference:
    """What a new session must beat: the newest kept record of the current agent version.

    A later session continues from the best state earlier sessions kept, so it compares with
    that state's record; without one (the state changed by hand) it compares with the baseline.
    """
    heads = read_heads(baseline.bench.root)
    for index in range(len(heads) - 1, -1, -1):
        head = heads[index]
        if head.kind == ACCEPTED and head.version == version:
            record = read_record(baseline.bench.root, index)
            return _reference(record, index, version, f"record [{index}]")
    base = baseline.record
    return _reference(
        base,
        baseline.index,
        base.version if base.version is not None else version,
        "formal_baseline",
    )


def plan(ws: Workspace, options: AgentOptimizerOptions) -> JobPlan:
    """The most agent runs a session may make, and their estimated cost, without running any.

    Each valid round evaluates the parent afresh and the candidate on every case, ``runs``
    times, and its verdict may rerun up to ``gates.max_extra_runs`` case-runs a side. An
    attempt whose evaluations stay incomplete reruns its failed units (at most ``MAX_REPAIRS``
    times) and then does not count, so a session makes at most ``2 × rounds + 2`` attempts: the
    most counts every one of them at its full repairs. An unfinished session of the benchmark is
    planned on its own settings, for the rounds it has left.
    """
    check_counts(("--rounds", options.rounds), ("--runs", options.runs))
    baseline = formal_baseline(ws, options.bench)  # no Formal Baseline: refused as the run is
    cfg = ws.load_config()
    found = find_unfinished(ws, options.bench)
    rounds, runs = options.rounds, options.runs or baseline.bench.runs_per_case
    attempts, resumed = 2 * rounds + 2, ""
    if found is not None:
        state = found[1]
        rounds, runs = max(0, state.rounds - state.valid_rounds), state.runs
        attempts = max(0, 2 * state.rounds + 2 - len(state.attempts))
        resumed = f", resuming session {state.session_id}"
    units = len(baseline.bench.cases) * runs
    most = attempts * (2 + MAX_REPAIRS) * units + rounds * VARIANTS * cfg.gates.max_extra_runs
    base = rounds * 2 * units
    return JobPlan(
        job=f"optimize-agent {options.bench}",
        base=base,
        extra=max(0, most - base),
        workers=workers(ws, options.jobs),
        per_run=per_run(ws, options.bench, make_agent(ws, cfg.agent).describe()),
        detail=f"at most, {rounds} rounds × 2 evaluations of {units} units{resumed}",
        extra_from="adaptive reruns, repairs of failed units and retried invalid rounds",
    )


def run(
    ws: Workspace,
    options: AgentOptimizerOptions,
    *,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> AgentOptimizerResult:
    """Run (or resume) an agent Optimizer session on benchmark ``options.bench``.

    ``runs`` is the runs per case of every candidate evaluation (default: the benchmark's);
    ``model`` answers the candidate protocol (default: the configured proposer model, offline
    :func:`engine.loops.agent_optimizer.offline.optimizer_offline`); ``judge`` grades llm_judge
    checks. An unfinished session of the same benchmark is resumed with its own settings.
    """
    bench_id, rounds, runs = options.bench, options.rounds, options.runs
    target_score, jobs = options.target_score, options.jobs
    check_counts(("--rounds", rounds), ("--runs", runs))
    if target_score is not None and not 0 <= target_score <= 100:
        raise UsageError(f"--target-score: expected a score from 0 to 100, got {target_score}")
    baseline = formal_baseline(ws, bench_id)
    cfg = ws.load_config()
    offline = functools.partial(optimizer_offline, ws=ws)
    llm = options.model or make_llm(cfg.models.proposer, ws, offline=offline)
    found = find_unfinished(ws, bench_id)
    if found is not None:
        folder, state = found
        if is_held(folder):
            raise SkillsmithError(
                f"{folder}: optimizer session {state.session_id} is running on {bench_id}"
            )
        log = start_session(ws, "agent-optimizer", forward=reporter, session_id=state.session_id)
    else:
        log = start_session(ws, "agent-optimizer", forward=reporter)
        start = _start_reference(ws, baseline, ws.version())
        state = OptimizerState(
            session_id=log.session_id,
            benchmark=bench_id,
            runs=runs or baseline.bench.runs_per_case,
            rounds=rounds,
            target_score=target_score,
            jobs=jobs,
            auto_approve=options.auto_approve,
            seed=options.seed,
            baseline=_reference(
                baseline.record,
                baseline.index,
                baseline.record.version if baseline.record.version is not None else ws.version(),
                "formal_baseline",
            ),
            reference=start,
        )
    grader = options.judge or session_judge(ws, cfg.models.judge, log)
    state.budget = session_budget(cfg.budget, state.budget, options.budget)
    meter = BudgetMeter(state.budget, state.spent, forward=reporter, cancel=cancel)
    optimizer = _Optimizer(ws, state, log, llm, grader, meter, cancel)
    with hold(optimizer.folder):
        if found is None:
            optimizer.save()
            log.emit(
                "started",
                benchmark=bench_id,
                baseline_score=state.baseline.score,
                baseline_run=state.baseline.run_id,
                reference_score=state.reference.score,
                reference=state.reference.source,
                runs=state.runs,
                rounds=state.rounds,
                target_score=state.target_score,
            )
        else:
            open_attempt = state.open_attempt()
            log.emit(
                "message",
                stage="resumed",
                benchmark=bench_id,
                valid_rounds=state.valid_rounds,
                attempt=None if open_attempt is None else open_attempt.number,
                at=None if open_attempt is None else open_attempt.stage,
                run_id=None if open_attempt is None else open_attempt.run_id,
            )
        with ends_logged(log, benchmark=bench_id):
            reason = optimizer.run()
        if reason != "budget":  # a session stopped by its budget resumes with a larger one
            state.status, state.stop_reason = "finished", reason
        optimizer.save()
    version = ws.version()
    result = AgentOptimizerResult(
        session_id=state.session_id,
        benchmark=bench_id,
        resumed=found is not None,
        baseline_score=state.baseline.score,
        final_score=state.reference.score,
        version=version,
        valid_rounds=state.valid_rounds,
        stop_reason=reason,
        attempts=[asdict(a) for a in state.attempts],
        spent=meter.spent.to_dict(),
        budget=meter.budget.to_dict() if meter.budget.limited else None,
    )
    log.emit(
        "finished",
        benchmark=bench_id,
        status="finished",
        reason=reason,
        score=state.reference.score,
        baseline_score=state.baseline.score,
        version=version,
        valid_rounds=state.valid_rounds,
        headline=result.headline,
    )
    return result


__all__ = [
    "AgentOptimizerOptions",
    "AgentOptimizerResult",
    "hypothesis_check",
    "run",
]
