"""The stages of one evolution round, each resumable from ``.pending_round.json``.

evaluate → diagnose → audit → propose → filter → evaluate_candidate → gate → decide.

Every stage reads what earlier stages left (the checkpoint, or the artifact files of the round
folder ``experiments/<session>/round-NN/``) and leaves its own result the same way, so a stage
can be rerun after a kill and do exactly what the uninterrupted run did. Side effects that must
not happen twice — starting an evaluation, queueing a candidate, publishing it — first record an
id in the checkpoint and look for their own earlier effect when they start again.

Evolution sees only the selection split: diagnosis, the ground-truth audit and the proposer get
selection rows and a benchmark reduced to its selection cases. Holdout cases are looked at by
the Holdout gate only, golden cases only to calibrate the Verify score.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.benchmark import Benchmark
from engine.core.budget import Budget, BudgetMeter, Spent
from engine.core.config import Config
from engine.core.errors import SkillsmithError
from engine.core.events import CancelToken, Event, Reporter, SessionLog
from engine.core.fsutil import atomic_write_json, atomic_write_text, read_jsonl
from engine.core.results import read_results
from engine.core.stamps import new_id
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation.diagnosis import Diagnosis, Registry
from engine.evaluation.diagnosis.run import LoadedRun, diagnose_run, load_run
from engine.evaluation.gates.outcome import OutcomeGates, quality
from engine.evaluation.gates.result import GateResult, first_failure, gates_json
from engine.evaluation.gt_audit import audit_runs
from engine.evaluation.metrics import metrics
from engine.evaluation.patches import ProposalContext, Proposer, load_text_rules, run_filters
from engine.evaluation.reuse import Purpose, Reuse
from engine.evaluation.runner import RunResult, run_evaluation
from engine.evaluation.verify import verify_score
from engine.loops.evolve import accept, checkpoint
from engine.loops.evolve.checkpoint import (
    CandidateDraft,
    Evaluation,
    PendingRound,
    RoundRecord,
    text_sha,
)
from engine.loops.evolve.convergence import Convergence, RoundSignal

Rows = list[dict[str, Any]]
PREVIOUS_VERSIONS_AUDITED = 2  # older versions whose runs join the GT audit's cross-version signal
# the roles whose rows diagnosis picks targets on: their runs are reused only to pick targets
# again, never as a side of a gate's comparison (engine.evaluation.reuse)
TARGET_ROLES = frozenset({"selection"})


@dataclass
class Evolution:
    """One evolution session: its workspace, settings, checkpoint and live event log."""

    ws: Workspace
    cfg: Config
    bench: Benchmark
    store: SkillStore
    pending: PendingRound
    log: SessionLog
    make_proposer: Callable[[int], Proposer]  # round number → that round's proposer
    reporter: Reporter
    cancel: CancelToken | None = None
    jobs: int | None = None
    # counts the agent runs of every evaluation (``reporter``/``cancel`` should be its own)
    meter: BudgetMeter = field(default_factory=lambda: BudgetMeter(Budget(), Spent()))
    fresh: bool = False  # --fresh: no recorded run of an earlier session stands in for a new one
    _diagnosed: dict[str, tuple[LoadedRun, Diagnosis]] = field(default_factory=dict)
    _reruns: int = 0  # reruns the current gate stage asked for (their roles are numbered)

    # -- shared helpers --------------------------------------------------------------------------
    @property
    def gates(self) -> OutcomeGates:
        return OutcomeGates.from_config(self.cfg.gates)

    @property
    def convergence(self) -> Convergence:
        return Convergence.from_limits(self.cfg.limits, self.pending.max_rounds)

    @property
    def selection_bench(self) -> Benchmark:
        """The benchmark as evolution may see it: the selection cases only."""
        return dataclasses.replace(self.bench, cases=self.bench.cases_in("selection"))

    @property
    def session_dir(self) -> Path:
        return self.ws.experiments_dir / self.pending.session_id

    @property
    def round_dir(self) -> Path:
        return self.session_dir / f"round-{self.pending.round:02d}"

    def save(self) -> None:
        spent = self.meter.spent
        self.pending.spent_runs, self.pending.spent_tokens = spent.runs, spent.tokens
        self.pending.spent_usd = spent.usd
        checkpoint.save(self.ws, self.pending)

    def write(self, stage: str, name: str, data: Any) -> None:
        """A stage's artifact in the round folder; its path goes into the checkpoint."""
        path = self.round_dir / name
        with self.ws.lock("evolve artifact"):
            if isinstance(data, str):
                atomic_write_text(path, data)
            else:
                atomic_write_json(path, data)
        self.pending.artifacts[stage if name.endswith(".json") else name] = str(
            path.relative_to(self.ws.root)
        )

    def read(self, key: str) -> Any:
        path = self.ws.root / self.pending.artifacts[key]
        text = path.read_bytes().decode("utf-8")
        return text if not path.name.endswith(".json") else json.loads(text)

    def parent_text(self) -> str:
        assert self.pending.parent_version is not None
        return self.store.read(self.pending.parent_version)

    def adopted_bytes(self) -> int | None:
        """The size of the skill's first version: slim mode is measured from it."""
        versions = self.store.versions()
        return len(self.store.read(versions[0].version).encode("utf-8")) if versions else None

    def slim_limit(self) -> int:
        return self.convergence.slim_limit(self.adopted_bytes())

    def candidate_text(self) -> str:
        assert self.pending.candidate is not None
        return (self.ws.root / self.pending.candidate.text_path).read_bytes().decode("utf-8")

    def evaluation_seed(self) -> int:
        """The seed of this round's evaluations, fixed by the session seed and the round: a
        session repeated with the same seed measures with the same luck, and the parent and the
        candidate of one round are run on the same unit seeds, so their rows pair on them."""
        digest = hashlib.sha256(f"{self.pending.seed}:evaluate:{self.pending.round}".encode())
        return int.from_bytes(digest.digest()[:4], "big") >> 1

    def reuse(self, role: str) -> Reuse:
        """How a finished run of an earlier session may stand in for this role's evaluation."""
        purpose: Purpose = "targets" if role in TARGET_ROLES else "measure"
        return Reuse(purpose, fresh=self.fresh)

    def counting(self, role: str, run_id: str) -> Reporter:
        """The reporter of one evaluation: each agent run it finishes (a ``case_finished``
        event, what the budget meter counts too) is added to the session's and the round's
        ``agent_runs`` under the role's kind (a gate's reruns, ``rerun-<side>-<n>``: ``rerun``).
        A recorded run that stands in finishes none, so it counts none."""

        def report(event: Event) -> None:
            if event.kind == "case_finished":
                self._counted(role, run_id)
            self.reporter(event)

        return report

    def _counted(self, role: str, run_id: str) -> None:
        kind = "rerun" if role.startswith("rerun-") else role
        for tally in (self.pending.agent_runs, self.pending.round_runs):
            tally[kind] = tally.get(kind, 0) + 1
        self.pending.run_rows[run_id] = self.pending.run_rows.get(run_id, 0) + 1

    def recount(self, role: str, run_id: str) -> None:
        """Before resuming ``run_id``: count the rows a killed process wrote after its last
        checkpoint.

        Every row is an agent run this session launched; a process killed outright loses the
        count of those it finished since it last saved (the budget meter's too), while their
        rows stay and the resumed evaluation does not run them again. Rows are appended in the
        order they were counted, so the uncounted ones are those past ``run_rows``; a line the
        kill tore is no finished run (the runner runs its unit again).
        """
        rows = read_jsonl(self.ws.runs_dir / run_id / "results.jsonl")
        for row in rows[self.pending.run_rows.get(run_id, 0) :]:
            self._counted(role, run_id)
            self.meter.count(row)

    def measured(self, role: str, result: RunResult) -> str:
        """The run whose rows a role got (a recorded one, when reused: said in the log)."""
        if result.reused is not None:
            self.log.emit("message", text=f"{role}: {result.reused}", run_id=result.run_id)
        return result.run_id

    def evaluate(self, text: str, splits: Sequence[str], role: str) -> dict[str, Rows]:
        """Rows of ``text`` on each split; an evaluation already made of the same text is reused,
        in this session or, by its identity, in an earlier one (engine.evaluation.reuse).

        The run id is written down before the runner starts, so a killed evaluation is resumed
        (only its missing units run) instead of started over.
        """
        digest = text_sha(text)
        empty = self.empty_splits()
        missing = [
            s for s in splits if s not in empty and self.pending.evaluation(digest, s) is None
        ]
        if missing:
            run_id = self.pending.run_ids.get(role)
            if run_id is None:
                run_id = new_id("run")
                self.pending.run_ids[role] = run_id
                self.save()
            self.log.emit(
                "message", text=f"evaluating {role} on {', '.join(missing)}", run_id=run_id
            )
            self.recount(role, run_id)
            result = run_evaluation(
                self.ws,
                self.bench.id,
                jobs=self.jobs,
                skills={self.pending.skill: text},
                case_ids=[c.id for c in self.bench.cases if c.split in missing],
                run_id=run_id,
                reporter=self.counting(role, run_id),
                cancel=self.cancel,
                seed=self.evaluation_seed(),
                reuse=self.reuse(role),
            )
            used = self.measured(role, result)
            positive = self.bench.positive_label
            for split in missing:
                rows = [r for r in result.rows if r.get("split") == split]
                figures = metrics(rows, positive)
                self.pending.remember(
                    digest, Evaluation(used, split, figures.f1, figures.pass_rate)
                )
            self.save()
        return {s: [] if s in empty else self.rows_of(digest, s) for s in splits}

    def empty_splits(self) -> tuple[str, ...]:
        """The splits the benchmark has no case in: a small benchmark runs without them, and
        the gates that need them say so (see :meth:`not_run`)."""
        return tuple(s for s in ("holdout", "golden") if not self.bench.cases_in(s))

    def not_run(self) -> list[str]:
        """What this session cannot judge, one line per missing split, naming the gate."""
        why = {
            "holdout": "the Holdout gate and the rollback to the best holdout version",
            "golden": "the Verify calibration against golden cases",
        }
        total = len(self.bench.cases)
        return [
            f"{why[s]} cannot run: the benchmark has no {s} case ({total} cases in all)"
            for s in self.empty_splits()
        ]

    def rows_of(self, digest: str, split: str) -> Rows:
        found = self.pending.evaluation(digest, split)
        if found is None:
            raise SkillsmithError(f"{self.ws.pending_round_path}: no {split} evaluation recorded")
        rows = read_results(self.ws.runs_dir / found.run_id / "results.jsonl")
        return [r for r in rows if r.get("split") == split and r.get("variant") == "skill"]

    def diagnosed(self, run_id: str) -> tuple[LoadedRun, Diagnosis]:
        if run_id not in self._diagnosed:
            run = load_run(run_id, self.ws)
            diagnosis = diagnose_run(
                run,
                config=self.cfg.diagnosis,
                registry=Registry.for_folder(self.ws.root / self.cfg.diagnosis.checkers_dir),
                min_share=self.cfg.limits.root_cause_min_share,
                skill=self.pending.skill,
                bench=self.selection_bench,
                splits=("selection",),
            )
            self._diagnosed[run_id] = (run, diagnosis)
        return self._diagnosed[run_id]

    def selection_run(self, text: str) -> str:
        found = self.pending.evaluation(text_sha(text), "selection")
        assert found is not None
        return found.run_id

    def end_round(
        self, outcome: str, reason: str, signal: RoundSignal | None, **extra: Any
    ) -> None:
        """Close the round: its record, and the stagnation it adds (an acceptance resets it)."""
        if signal is None:
            self.pending.stagnation = 0.0
            increment = 0.0
        else:
            increment = signal.increment
            self.pending.stagnation = round(self.pending.stagnation + increment, 6)
        cand = self.pending.candidate
        record = RoundRecord(
            round=self.pending.round,
            parent=self.pending.parent_version or "",
            outcome=outcome,
            reason=reason,
            increment=increment,
            stagnation=self.pending.stagnation,
            rule_id=cand.taboo_rule if cand is not None else None,
            folder=str(self.round_dir.relative_to(self.ws.root)),
            agent_runs=dict(self.pending.round_runs),
            **extra,
        )
        self.pending.rounds.append(record)
        self.log.emit(
            "message",
            text=f"round {record.round}: {outcome} — {reason}",
            round=record.round,
            outcome=outcome,
            stagnation=record.stagnation,
            agent_runs=record.agent_runs,
        )

    def round_closed(self) -> bool:
        return self.pending.stop_reason is not None or any(
            r.round == self.pending.round for r in self.pending.rounds
        )

    # -- the stages ------------------------------------------------------------------------------
    def baseline(self) -> None:
        """Where the session starts: the current version, its holdout and golden quality."""
        current = self.store.ensure_adopted()
        if current is None:
            raise SkillsmithError(f"{self.ws.skill_path(self.pending.skill)}: no such skill")
        text = self.store.read(current)
        self.pending.parent_version = current
        rows = self.evaluate(text, ("holdout", "golden"), "baseline")
        positive = self.bench.positive_label
        if current not in [v.version for v in self.pending.versions]:
            self.pending.versions.append(
                checkpoint.VersionRecord(
                    version=current,
                    sha=text_sha(text),
                    round=0,
                    verify=verify_score(text).score,
                    holdout_f1=quality(rows["holdout"], positive)[1] if rows["holdout"] else None,
                    golden_f1=quality(rows["golden"], positive)[1] if rows["golden"] else None,
                )
            )

    def evaluate_parent(self) -> None:
        current = self.store.current()
        assert current is not None
        self.pending.parent_version = current
        text = self.store.read(current)
        rows = self.evaluate(text, ("selection",), "selection")["selection"]
        measure, value = quality(rows, self.bench.positive_label)
        record = self.pending.version_record(current)
        if record is not None:
            record.selection_f1 = value
        self.pending.slim = self.convergence.slim(text, self.adopted_bytes())
        self.log.emit(
            "message",
            text=f"round {self.pending.round}: {current} selection {measure} {value:.3f}"
            + (" (slim mode)" if self.pending.slim else ""),
            round=self.pending.round,
            version=current,
            selection=value,
        )
        if self.convergence.converged(value):
            self.pending.stop_reason = "converged"

    def diagnose(self) -> None:
        _, diagnosis = self.diagnosed(self.selection_run(self.parent_text()))
        self.write("diagnose", "diagnosis.json", diagnosis.to_dict())
        if not diagnosis.triggers_evolution:
            self.pending.stop_reason = "no_root_cause"
            self.log.emit(
                "message",
                text=f"no root cause covers {self.cfg.limits.root_cause_min_share:.0%} of the "
                f"{len(diagnosis.failing_case_ids)} failing selection cases; nothing to patch",
            )

    def audit(self) -> None:
        current = self.diagnosed(self.selection_run(self.parent_text()))
        others: list[tuple[LoadedRun, Diagnosis]] = []
        for record in reversed(self.pending.versions):
            found = self.pending.evaluation(record.sha, "selection")
            if found is None or found.run_id == current[0].run_id:
                continue
            if len(others) == PREVIOUS_VERSIONS_AUDITED:
                break
            others.append(self.diagnosed(found.run_id))
        gt = audit_runs(
            [current, *others], bench=self.selection_bench, config=self.cfg.diagnosis.gt_audit
        )
        self.write("audit", "gt_audit.json", gt.to_dict())

    def propose(self) -> None:
        parent = self.parent_text()
        gt = self.read("audit")
        ctx = ProposalContext(
            skill_name=self.pending.skill,
            skill_text=parent,
            diagnosis=self.read("diagnose"),
            gt_flags=[s for s in gt["suspicions"] if s.get("flagged")],
            taboo_entries=self.store.taboo().entries(),
            feedback_rows=self.rows_of(text_sha(parent), "selection"),
            bench=self.selection_bench,
            slim=self.pending.slim,
            slim_limit=self.slim_limit(),
        )
        proposal = self.make_proposer(self.pending.round).propose(ctx)
        self.write("propose", "proposal.json", proposal.to_dict())
        if proposal.diff is None:
            self.end_round("no_patch", proposal.reason, RoundSignal.stall())
            return
        text = proposal.skill_text
        if text is None:
            raise SkillsmithError(f"proposer {self.pending.proposer}: a diff without its text")
        self.write("propose", "SKILL.md", text)
        self.write("propose", "patch.diff", proposal.diff)
        self.pending.candidate = CandidateDraft(
            rule_id=proposal.rule_id,
            direction=proposal.direction,
            taboo_rule=proposal.taboo_rule,
            diff=proposal.diff,
            sha=text_sha(text),
            text_path=self.pending.artifacts["SKILL.md"],
            summary=proposal.summary or proposal.reason,
            case_ids=list(proposal.case_ids),
        )
        self.log.emit(
            "message",
            text=f"round {self.pending.round}: proposed {proposal.summary or proposal.reason}",
            signature=proposal.signature,
        )

    def filter(self) -> None:
        cand = self.pending.candidate
        assert cand is not None
        report = run_filters(
            cand.diff,
            self.parent_text(),
            taboo=self.store.taboo(),
            rule_id=cand.rule_id,
            direction=cand.direction,
            limits=self.cfg.limits,
            slim=self.pending.slim,
            slim_limit=self.slim_limit(),
            rules=load_text_rules(self.ws),
        )
        self.write("filter", "filters.json", report.to_dict())
        if not report.passed:
            reason = f"filters rejected: {report.reason()}"
            self.store.taboo().add(cand.taboo_rule, cand.diff, reason)
            self.end_round("rejected", reason, RoundSignal.stall())

    def holdout_round(self) -> bool:
        return "holdout" not in self.empty_splits() and self.gates.holdout.due(self.pending.round)

    def evaluate_candidate(self) -> None:
        """The candidate, then a fresh evaluation of the parent on the same cases.

        The gates compare these two, never the parent's rows diagnosis picked the targets from:
        cases chosen because they failed once tend to pass on a rerun whatever the patch does
        (regression to the mean), which would make noise look like a fix. The fresh parent run
        draws its own seed (:meth:`role_seed`): the round's evaluation seed would replay the
        diagnosis rows exactly.

        A parent that stayed current (its last candidate was rejected) keeps the fresh
        evaluation an earlier round made of it: those rows are still independent of the rows
        diagnosis reads and of the new candidate's, so measuring the same text again would only
        spend a selection split's worth of runs on a second draw of the same comparison.
        """
        splits = self.judged_splits()
        self.evaluate(self.candidate_text(), splits, "candidate")
        parent = self.parent_text()
        have = self.pending.paired.get(text_sha(parent), {})
        missing = [s for s in splits if s not in have]
        if missing:
            seed = self.role_seed("gate")
            result = self.evaluate_fresh(parent, missing, "parent_paired", seed=seed)
            run_id = self.measured("parent_paired", result)
            made = self.pending.paired.setdefault(text_sha(parent), {})
            made.update(dict.fromkeys(missing, run_id))
            self.save()

    def role_seed(self, role: str) -> int:
        """A gate evaluation's seed, fixed by the session seed, the round and the role: unlike
        diagnosis' rows, and the same again when a killed round resumes before its manifest."""
        digest = hashlib.sha256(f"{self.pending.seed}:{role}:{self.pending.round}".encode())
        return int.from_bytes(digest.digest()[:4], "big") >> 1

    def judged_splits(self) -> tuple[str, ...]:
        return ("selection", "holdout") if self.holdout_round() else ("selection",)

    def evaluate_fresh(
        self,
        text: str,
        splits: Sequence[str],
        role: str,
        *,
        seed: int | None = None,
        case_ids: Sequence[str] | None = None,
        runs: int | None = None,
    ) -> RunResult:
        """A new evaluation of ``text`` under ``role``: resumed, never reused from another role
        of this session; a finished identical one of an earlier session (same seed) stands in."""
        run_id = self.pending.run_ids.get(role)
        if run_id is None:
            run_id = new_id("run")
            self.pending.run_ids[role] = run_id
            self.save()
        wanted = set(case_ids) if case_ids is not None else None
        self.log.emit("message", text=f"evaluating {role} on {', '.join(splits)}", run_id=run_id)
        self.recount(role, run_id)
        result = run_evaluation(
            self.ws,
            self.bench.id,
            jobs=self.jobs,
            runs=runs,
            skills={self.pending.skill: text},
            case_ids=[
                c.id
                for c in self.bench.cases
                if c.split in splits and (wanted is None or c.id in wanted)
            ],
            run_id=run_id,
            seed=seed,
            reporter=self.counting(role, run_id),
            cancel=self.cancel,
            reuse=self.reuse(role),
        )
        return result

    def paired_rows(self, split: str) -> tuple[Rows, Rows]:
        """(fresh parent, candidate) rows of one split, from the parent's paired evaluation."""
        run_id = self.pending.paired[text_sha(self.parent_text())][split]
        parent = read_results(self.ws.runs_dir / run_id / "results.jsonl")
        before = [r for r in parent if r.get("split") == split and r.get("variant") == "skill"]
        return before, self.rows_of(text_sha(self.candidate_text()), split)

    def rerun(self, case_ids: Sequence[str], runs: int) -> tuple[Rows, Rows]:
        """More runs of some cases on parent and candidate, both with one fresh seed.

        Each call of one gate stage is a numbered role, so a gate killed mid-way resumes the
        same reruns in the same order instead of starting new ones.
        """
        number = self._reruns
        self._reruns += 1
        splits = tuple(sorted({c.split for c in self.bench.cases if c.id in set(case_ids)}))
        seed = self.role_seed(f"rerun-{number}")
        rows: list[Rows] = []
        for side, text in (("candidate", self.candidate_text()), ("parent", self.parent_text())):
            role = f"rerun-{side}-{number}"
            result = self.evaluate_fresh(
                text, splits, role, seed=seed, case_ids=case_ids, runs=runs
            )
            self.measured(role, result)
            rows.append([r for r in result.rows if r.get("variant") == "skill"])
        after, before = rows
        return before, after

    def gate(self) -> None:
        cand = self.pending.candidate
        assert cand is not None
        parent, text = self.parent_text(), self.candidate_text()
        due = self.holdout_round()
        targeted = cand.case_ids or self._root_cause_cases(cand)
        self._reruns = 0
        selection_before, selection_after = self.paired_rows("selection")
        holdout_before, holdout_after = self.paired_rows("holdout") if due else (None, None)
        start = self.pending.versions[0] if self.pending.versions else None
        results = self.gates.judge(
            round_no=self.pending.round,
            targeted=targeted,
            selection_before=selection_before,
            selection_after=selection_after,
            holdout_before=holdout_before,
            holdout_after=holdout_after,
            holdout_start=self.rows_of(start.sha, "holdout") if due and start else None,
            positive_label=self.bench.positive_label,
            text=text,
            parent_text=parent,
            rerun=self.rerun,
        )
        if "holdout" in self.empty_splits():
            reason = self.not_run()[0]
            results = [
                self.gates.holdout.not_run(reason) if r.gate == "holdout" else r for r in results
            ]
        self.write("gate", "gates.json", gates_json(results))
        for result in results:
            self.log.emit("gate_verdict", round=self.pending.round, **result.to_json())

    def _root_cause_cases(self, cand: CandidateDraft) -> list[str]:
        causes = self.read("diagnose")["root_causes"]
        return next(
            (
                list(rc["case_ids"])
                for rc in causes
                if rc["rule_id"] == cand.rule_id and rc["direction"] == cand.direction
            ),
            [],
        )

    def decide(self) -> None:
        cand = self.pending.candidate
        assert cand is not None
        results = [GateResult.from_json(e) for e in self.read("gate")]
        verdicts = {r.gate: r.verdict for r in results}
        failure = first_failure(results)
        if failure is not None:
            reason = f"gate rejected: {failure.gate}: {'; '.join(failure.reasons)}"
            self.store.taboo().add(cand.taboo_rule, cand.diff, reason, gate=failure.gate)
            self.end_round("rejected", reason, RoundSignal.from_gates(results), gates=verdicts)
            return
        # holdout too, for the summary's per-version figures (no gate reads it off-round)
        rows = self.evaluate(self.candidate_text(), ("golden", "holdout"), "candidate_golden")
        golden = rows["golden"]
        queued = accept.submit(self, results, golden)
        if queued.status == "rejected":  # the door's own gates (Spec, Safety) refused it
            reason = f"gate rejected: {queued.reason}"
            self.store.taboo().add(cand.taboo_rule, cand.diff, reason)
            self.end_round(
                "rejected", reason, RoundSignal.stall(), gates=verdicts, candidate=queued.id
            )
            return
        if not self.pending.auto_approve:
            self.log.emit("candidate_queued", candidate=queued.id, skill=self.pending.skill)
            self.end_round(
                "queued",
                f"all gates passed; {queued.id} awaits approval",
                None,
                gates=verdicts,
                candidate=queued.id,
            )
            self.pending.stop_reason = "awaiting_approval"
            return
        version = accept.publish(self, queued)
        self.end_round(
            "accepted",
            f"all gates passed; published {version}",
            None,
            gates=verdicts,
            candidate=queued.id,
            version=version,
        )


__all__ = ["Evolution", "Rows"]
