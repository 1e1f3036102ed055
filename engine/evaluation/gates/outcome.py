"""The four outcome gates of the evolution loop: Target, Guardrail, Holdout, Verify.

Each looks at a different way a patch can be wrong (the outcome-driven article's four layers):
it fixes nothing it aimed at (Target), it breaks cases that used to work (Guardrail), it does
not generalise to cases evolution never saw (Holdout), or it makes SKILL.md itself worse written
than its parent (Verify). Any failed gate rejects the patch — preventing harm beats chasing
gains — and every verdict carries its figures and the case ids behind them, so a rejection can
be checked by hand from the run folders it names.

The agent is noisy, so the three outcome gates are experiments (``engine.evaluation.verdict``),
judged on a
fresh evaluation of the parent paired with the candidate's on the same cases — never on the
rows diagnosis picked the targets from, where chance failures look fixable:

* Target: the targeted cases are better with confidence (exact run-level test, one-sided
  ``alpha``): a case that passes on one lucky run proves nothing.
* Guardrail: the other cases are not worse with confidence — it fails only when they are worse
  at one-sided ``alpha``, so one chance flip of a passing case is no regression.
* Holdout: the lower bound of the holdout change (F1, its run-level interval) stays above
  ``−max_f1_drop``; the change since the session's first version is recorded beside it.

Each may rerun the cases that can still decide it (``gates.max_extra_runs``; see
``engine.evaluation.verdict.decide``) and records how many extra runs it took; its
``agent_runs`` figure counts every agent run its reruns asked for, by kind and both variants
(the Guardrail's confirmation of broken cases included: ``engine.evaluation.gates.counted``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine.core.config import GatesConfig
from engine.evaluation.failures import counted
from engine.evaluation.gates.counted import CountedRuns
from engine.evaluation.gates.result import GateResult
from engine.evaluation.metrics import CaseStatus, case_status, metrics
from engine.evaluation.verdict import (
    Pick,
    Rerun,
    Verdict,
    compare_f1,
    compare_paired,
    decide,
    futile_for_better,
    reindex,
)
from engine.evaluation.verify import verify_score

Rows = Sequence[Mapping[str, Any]]
# Float noise must not turn "dropped exactly one point" into a rejection.
_EPSILON = 1e-9


def case_statuses(rows: Rows) -> dict[str, CaseStatus]:
    """Each case's status over its runs, from the rows of the skill variant; a run the agent
    ended badly is a failure, one that failed outside the agent is not counted."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        kept = counted(row)
        if (row.get("variant") or "skill") == "skill":
            grouped.setdefault(str(row["case_id"]), [])
            if kept is not None:
                grouped[str(row["case_id"])].append(dict(kept))
    return {case_id: case_status(group)[0] for case_id, group in sorted(grouped.items())}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def verdict_figures(verdict: Verdict) -> dict[str, Any]:
    """A verdict's figures as a gate records them (flat, so every reader shows each one)."""
    return verdict.to_dict()


PLAIN_LOOKS = 3


@dataclass(frozen=True)
class Sampling:
    """How a gate may look again: the error rate, the extra-run budget and the number of looks.

    ``futility`` stops a decision's reruns as soon as they can no longer inform it: a "better"
    question whose data sit on the wrong side of its threshold stops rerunning
    (:func:`~engine.evaluation.verdict.futile_for_better`), and a candidate whose Target gate
    refused it spends no reruns on its other gates (:func:`judge_aimed`). Off, it is the rule
    before futility stopping (``benchmarks/bench_verdicts.py`` measures both).
    """

    alpha: float = 0.05
    max_extra_runs: int = 0
    looks: int = 3
    futility: bool = True

    def without_futility(self) -> Sampling:
        """The sampling of a question that may not stop for futility, with at most
        ``PLAIN_LOOKS`` looks: "is it worse?" (the Guardrail) and "not worse than −1 point?"
        (the Holdout gate, where a change that does nothing should pass).

        The Guardrail has no futility boundary to gain from more looks: they would only split
        its error rate into thinner slices — the last look, which settles the close calls, kept
        0.4 % of a 5 % ``alpha`` with five looks on a 100-case benchmark, and planted
        regressions passed it more often. On the Holdout gate the futility boundary cost a
        real fix 9 points of power (92 % → 83 %, ``bench_verdicts.py``), more than its saved
        runs are worth on a gate judged every fifth round.
        """
        return replace(self, looks=min(self.looks, PLAIN_LOOKS), futility=False)

    def decide(
        self,
        before: Rows,
        after: Rows,
        judge: Callable[[Rows, Rows, float], Verdict],
        wants_more: Callable[[Verdict], bool],
        rerun: Rerun | None,
        cases: Iterable[str] | None = None,
        pick: Pick | None = None,
    ) -> tuple[Verdict, list[dict[str, Any]], list[dict[str, Any]]]:
        return decide(
            before,
            after,
            judge=judge,
            wants_more=wants_more,
            rerun=rerun,
            alpha=self.alpha,
            max_extra_runs=self.max_extra_runs,
            looks=self.looks,
            cases=cases,
            pick=pick,
            futile=futile_for_better if self.futility else None,
        )


def _fixed(before: Rows, after: Rows, cases: Iterable[str]) -> list[str]:
    """Cases failing some run before that pass every run now (shown; the verdict decides)."""
    was, now = case_statuses(before), case_statuses(after)
    return [c for c in sorted(set(cases)) if was.get(c) != "pass" and now.get(c) == "pass"]


def _broken(before: Rows, after: Rows, cases: Iterable[str]) -> list[str]:
    was, now = case_statuses(before), case_statuses(after)
    return [
        c for c in sorted(set(cases)) if was.get(c) == "pass" and now.get(c) in ("fail", "flaky")
    ]


@dataclass(frozen=True)
class Target:
    """The failing cases the patch aimed at are better with confidence ("it helped")."""

    sampling: Sampling = Sampling()
    name: str = "target"

    def judge(
        self, before: Rows, after: Rows, targeted: Iterable[str], *, rerun: Rerun | None = None
    ) -> GateResult:
        aimed = sorted(set(targeted))
        if not aimed:
            return GateResult(
                gate=self.name,
                verdict="fail",
                figures={"targeted": 0},
                reasons=["the patch targeted no failing case"],
            )

        def judge(b: Rows, a: Rows, alpha: float) -> Verdict:
            return compare_paired(
                b, a, cases=aimed, alpha=alpha, test="runs", alternative="greater"
            )

        runs = CountedRuns(rerun)
        verdict, before_all, after_all = self.sampling.decide(
            before, after, judge, lambda v: not v.better, runs.kind("rerun"), aimed
        )
        fixed = _fixed(before_all, after_all, aimed)
        ok = verdict.better
        reason = f"{_plural(len(aimed), 'targeted case')}: {verdict.line()}" + (
            "" if ok else f"; better at one-sided p<{self.sampling.alpha:g} wanted"
        )
        return GateResult(
            gate=self.name,
            verdict="pass" if ok else "fail",
            figures={
                "targeted": len(aimed),
                "fixed": len(fixed),
                **verdict_figures(verdict),
                "agent_runs": runs.by_kind("rerun"),
            },
            reasons=[reason],
            case_ids=aimed,
            fixed=fixed,
        )


CONFIRM_RUNS = (2, 6)  # the fewest and the most fresh runs a broken case gets to confirm it


def confirmation_runs(max_extra_runs: int, broken: int) -> int:
    """Runs each broken case gets to confirm its break (0: no confirmation).

    The budget shared among the broken cases, each held between 2 (one fresh pair proves
    nothing) and 6 runs: so a confirmation costs at most ``max_extra_runs`` case-runs a side
    unless more than half that many cases broke — then 2 runs each, which is more.
    """
    if broken <= 0 or max_extra_runs <= 0:
        return 0
    low, high = CONFIRM_RUNS
    return max(low, min(high, max_extra_runs // broken))


def most_confirmation_runs(max_extra_runs: int, cases: int) -> int:
    """The exact most case-runs a side the Guardrail's confirmation may spend when up to
    ``cases`` cases can break; never above ``max(max_extra_runs, 2 × cases)`` (the plans of
    evolve and queue eval add it to their gates' ``max_extra_runs``)."""
    return max((b * confirmation_runs(max_extra_runs, b) for b in range(1, cases + 1)), default=0)


@dataclass(frozen=True)
class Guardrail:
    """The cases the patch did not aim at are not worse with confidence ("nothing old broke").

    It fails when they are worse at one-sided ``alpha`` — a single chance failure of a case
    that used to pass is what a noisy agent does, not a regression. Cases that broke are then
    rerun on their own (``_confirm``): a break that repeats fails the gate even when fixes
    elsewhere hide it in the pooled figure. A case measured before
    whose runs are all invalid now could not be checked; that is no proof of no harm, so it
    fails the gate too (listed apart).
    """

    sampling: Sampling = Sampling()
    name: str = "guardrail"

    def judge(
        self,
        before: Rows,
        after: Rows,
        *,
        targeted: Iterable[str] = (),
        rerun: Rerun | None = None,
    ) -> GateResult:
        aimed = set(targeted)
        was, now = case_statuses(before), case_statuses(after)
        guarded = [c for c, s in was.items() if c not in aimed and s != "unmeasured"]
        unmeasured = [c for c in guarded if now.get(c, "unmeasured") == "unmeasured"]

        def judge(b: Rows, a: Rows, alpha: float) -> Verdict:
            return compare_paired(b, a, cases=guarded, alpha=alpha, test="runs", alternative="less")

        runs = CountedRuns(rerun)
        verdict, before_all, after_all = self.sampling.without_futility().decide(
            before,
            after,
            judge,
            lambda v: v.decision == "inconclusive" and v.delta < 0,
            runs.kind("rerun"),
            guarded,
        )
        broken = _broken(before_all, after_all, guarded)
        fixed = _fixed(before_all, after_all, guarded)
        reasons = [f"{_plural(len(guarded), 'other case')}: {verdict.line()}"]
        if verdict.worse:
            reasons[0] += f" (worse at one-sided p<{self.sampling.alpha:g})"
        confirmed = (
            None
            if verdict.worse
            else self._confirm(broken, before_all, after_all, runs.kind("confirm"))
        )
        if confirmed is not None and confirmed.worse:
            reasons.append(
                f"{_plural(len(broken), 'case')} that passed before broke again on fresh runs: "
                f"{confirmed.line()} ({', '.join(broken)})"
            )
        if unmeasured:
            reasons.append(
                f"{_plural(len(unmeasured), 'case')} could not be measured "
                "(only invalid runs): " + ", ".join(unmeasured)
            )
        confirmed_worse = confirmed is not None and confirmed.worse
        return GateResult(
            gate=self.name,
            verdict="fail" if verdict.worse or unmeasured or confirmed_worse else "pass",
            figures={
                "guarded": len(guarded),
                "newly_broken": len(broken),
                "unmeasured": len(unmeasured),
                "fixed": len(fixed),
                **verdict_figures(verdict),
                "agent_runs": runs.by_kind("rerun", "confirm"),
            },
            reasons=reasons,
            case_ids=guarded,
            fixed=fixed,
            newly_broken=broken,
        )

    def _confirm(
        self, broken: Sequence[str], before: Rows, after: Rows, rerun: Rerun | None
    ) -> Verdict | None:
        """Rerun the cases that broke and judge the fresh runs alone.

        Pooled over every other case, a few real breaks hide behind fixes and passes; judged per
        case on the runs that showed them, chance looks like harm (the cases were picked for
        failing). Fresh runs of just those cases, both variants on the same seeds, are an
        independent experiment: a break that repeats is a regression, one chance flip is not.
        This can only turn a pass into a fail, so the false-accept rate stays within ``alpha``.
        """
        runs_each = confirmation_runs(self.sampling.max_extra_runs, len(broken))
        if rerun is None or not runs_each:
            return None
        new_before, new_after = rerun(list(broken), runs_each)
        existing = [*before, *after]
        return compare_paired(
            reindex(existing, new_before),
            reindex(existing, new_after),
            cases=broken,
            alpha=self.sampling.alpha,
            test="runs",
            alternative="less",
        )


def judge_aimed(
    target: Target,
    guardrail: Guardrail,
    before: Rows,
    after: Rows,
    aimed: Sequence[str],
    rerun: Rerun | None,
) -> tuple[GateResult, GateResult, Rerun | None]:
    """Target then Guardrail on the same paired rows, and the rerun the later gates may use.

    A refused Target rejects the candidate whatever the other gates find, so with
    ``futility`` on their reruns would inform no decision: they are judged on the runs
    already made (every figure is still recorded) and spend none.
    """
    aimed_result = target.judge(before, after, aimed, rerun=rerun)
    spare = rerun if aimed_result.passed or not target.sampling.futility else None
    guarded = guardrail.judge(before, after, targeted=aimed, rerun=spare)
    return aimed_result, guarded, spare


def quality(rows: Rows, positive_label: str | None) -> tuple[str, float]:
    """The headline figure of a set of rows: F1 for a labelled benchmark, else the pass rate."""
    skill_rows = [dict(r) for r in rows if (r.get("variant") or "skill") == "skill"]
    figures = metrics(skill_rows, positive_label)
    if positive_label is not None and figures.f1 is not None:
        return "f1", figures.f1
    return "pass_rate", figures.pass_rate or 0.0


def holdout_change(
    before: Rows,
    after: Rows,
    *,
    positive_label: str | None,
    alpha: float,
    threshold: float,
) -> Verdict:
    """The holdout change as a one-sided question about ``threshold`` (F1 when labelled)."""
    if positive_label is not None and quality(after, positive_label)[0] == "f1":
        return compare_f1(
            before,
            after,
            positive_label=positive_label,
            alpha=alpha,
            alternative="greater",
            threshold=threshold,
            test="runs",
        )
    return compare_paired(before, after, alpha=alpha, alternative="greater", threshold=threshold)


@dataclass(frozen=True)
class Holdout:
    """Every ``every``-th round, the holdout change's lower bound stays above ``−max_f1_drop``.

    The holdout cases never reach diagnosis or the proposer; looking at them only every few
    rounds keeps evolution from tuning itself to them through the gate.

    The question is whether F1 on *these* unseen cases dropped, so the interval is the run
    noise's (``compare_f1(test="runs")``). A bootstrap over cases also counts which cases a
    change happened to land on: a real fix of five of 27 holdout cases then reads as a possible
    loss however many runs are added (its lower bound sat below −1 point in a quarter of the
    planted improvements on the noisy demo), while reruns of the varying cases do shrink the
    run-level interval.
    """

    every: int = 5
    max_f1_drop: float = 0.01
    sampling: Sampling = Sampling()
    name: str = "holdout"

    def due(self, round_no: int) -> bool:
        return self.every > 0 and round_no % self.every == 0

    def not_run(self, reason: str) -> GateResult:
        """The gate could not run (a benchmark with no holdout case): held, never a pass."""
        return GateResult(gate=self.name, verdict="held", figures={"ran": False}, reasons=[reason])

    def off_round(self, round_no: int) -> GateResult:
        return GateResult(
            gate=self.name,
            verdict="held",
            figures={"round": round_no, "every": self.every},
            reasons=[f"round {round_no} is not a holdout round (every {self.every})"],
        )

    def judge(
        self,
        before: Rows,
        after: Rows,
        *,
        positive_label: str | None,
        start: Rows | None = None,
        rerun: Rerun | None = None,
    ) -> GateResult:
        """``start``: holdout rows of the session's first version, to track the change since."""
        floor = -self.max_f1_drop - _EPSILON

        def judge(b: Rows, a: Rows, alpha: float) -> Verdict:
            return holdout_change(b, a, positive_label=positive_label, alpha=alpha, threshold=floor)

        runs = CountedRuns(rerun)
        verdict, before_all, after_all = self.sampling.without_futility().decide(
            before, after, judge, lambda v: v.decision == "inconclusive", runs.kind("rerun")
        )
        ok = verdict.better
        cases = sorted(set(case_statuses(before_all)) | set(case_statuses(after_all)))
        measure = verdict.measure
        reason = (
            f"holdout {measure} {verdict.before or 0:.3f} → {verdict.after or 0:.3f}: "
            f"{verdict.line()}; lower bound above −{100 * self.max_f1_drop:.1f} points "
            + ("holds" if ok else "not shown")
        )
        figures: dict[str, Any] = {
            "measure": measure,
            "max_drop": self.max_f1_drop,
            "cases": len(cases),
            **verdict_figures(verdict),
            "agent_runs": runs.by_kind("rerun"),
        }
        reasons = [reason]
        if start is not None:
            since = holdout_change(
                start,
                after_all,
                positive_label=positive_label,
                alpha=self.sampling.alpha,
                threshold=0.0,
            )
            figures["since_start"] = since.line()
            figures["since_start_delta"] = round(since.delta, 6)
            reasons.append(f"since the session's first version: {since.line()}")
        return GateResult(
            gate=self.name,
            verdict="pass" if ok else "fail",
            figures=figures,
            reasons=reasons,
            case_ids=cases,
            fixed=_fixed(before_all, after_all, cases),
            newly_broken=_broken(before_all, after_all, cases),
        )


@dataclass(frozen=True)
class Verify:
    """SKILL.md's own quality score fell at most ``max_drop`` points below its parent's.

    The score measures one house style (numbered steps early, a Pitfalls section …); most real
    skills are written otherwise, and a candidate must not be refused for what its parent already
    lacked. So only a drop rejects; a score under ``min_score`` is advice, shown with the checks
    it misses, for a person to weigh.
    """

    min_score: float = 75.0
    max_drop: float = 5.0
    name: str = "verify"

    def judge(self, text: str, parent_text: str | None) -> GateResult:
        report = verify_score(text)
        parent = verify_score(parent_text).score if parent_text is not None else None
        drop = 0.0 if parent is None else parent - report.score
        reasons: list[str] = []
        if drop > self.max_drop + _EPSILON:
            reasons.append(
                f"verify score fell {drop:.0f} points ({parent:.0f} → {report.score:.0f}), "
                f"at most {self.max_drop:.0f} points allowed"
            )
        advice = None
        if report.score < self.min_score:
            advice = (
                f"advice: house-style score {report.score:.0f} is below {self.min_score:.0f} "
                f"(missing: {', '.join(report.failed) or 'none'})"
            )
        if not reasons:
            was = "" if parent is None else f" (parent {parent:.0f})"
            reasons.append(f"verify score {report.score:.0f}{was}")
        if advice is not None:
            reasons.append(advice)
        return GateResult(
            gate=self.name,
            verdict="fail" if drop > self.max_drop + _EPSILON else "pass",
            figures={
                "score": report.score,
                "parent_score": parent,
                "drop": drop,
                "min_score": self.min_score,
                "max_drop": self.max_drop,
                "below_min": report.score < self.min_score,
                "failed_checks": report.failed,
            },
            reasons=reasons,
        )


@dataclass(frozen=True)
class OutcomeGates:
    """The four gates with the workspace's thresholds (``skillsmith.yaml`` ``gates:``)."""

    target: Target
    guardrail: Guardrail
    holdout: Holdout
    verify: Verify

    @classmethod
    def from_config(cls, cfg: GatesConfig) -> OutcomeGates:
        sampling = Sampling(alpha=cfg.alpha, max_extra_runs=cfg.max_extra_runs, looks=cfg.looks)
        return cls(
            target=Target(sampling),
            guardrail=Guardrail(sampling),
            holdout=Holdout(
                every=cfg.holdout_every, max_f1_drop=cfg.holdout_max_f1_drop, sampling=sampling
            ),
            verify=Verify(min_score=cfg.verify_min_score, max_drop=cfg.verify_max_drop),
        )

    def judge(
        self,
        *,
        round_no: int,
        targeted: Iterable[str],
        selection_before: Rows,
        selection_after: Rows,
        holdout_before: Rows | None,
        holdout_after: Rows | None,
        positive_label: str | None,
        text: str,
        parent_text: str | None,
        holdout_start: Rows | None = None,
        rerun: Rerun | None = None,
    ) -> list[GateResult]:
        """All four verdicts, in gate order; every gate is judged so every figure is recorded.

        ``selection_before``/``holdout_before`` must be a fresh evaluation of the parent on the
        candidate's cases (runs pair on seeds where both have them). Holdout is judged when both
        holdout evaluations are given (a holdout round), else held; ``holdout_start`` (the session's
        first version) adds the change since then. ``rerun`` lets a gate run more of its cases
        on both texts when its comparison is inconclusive.
        """
        aimed = sorted(set(targeted))
        target, guardrail, spare = judge_aimed(
            self.target, self.guardrail, selection_before, selection_after, aimed, rerun
        )
        if holdout_before is not None and holdout_after is not None:
            holdout = self.holdout.judge(
                holdout_before,
                holdout_after,
                positive_label=positive_label,
                start=holdout_start,
                rerun=spare,
            )
        else:
            holdout = self.holdout.off_round(round_no)
        return [target, guardrail, holdout, self.verify.judge(text, parent_text)]


def verify_calibration(points: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """How well the Verify score tracks golden-set quality across versions (Pearson r).

    The golden split exists only for this: evolution never sees it, so the correlation says
    whether a higher Verify score means a better skill on cases nobody tuned for. r is None
    until there are three versions and both figures vary.
    """
    pairs = [(float(v), float(g)) for v, g in points]
    r: float | None = None
    if len(pairs) >= 3:
        xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
        if statistics.pstdev(xs) > 0 and statistics.pstdev(ys) > 0:
            r = statistics.correlation(xs, ys)
            r = None if math.isnan(r) else round(r, 4)
    return {"versions": len(pairs), "pearson_r": r, "points": [list(p) for p in pairs]}


__all__ = [
    "Guardrail",
    "Holdout",
    "OutcomeGates",
    "Sampling",
    "Target",
    "Verify",
    "case_statuses",
    "confirmation_runs",
    "holdout_change",
    "judge_aimed",
    "most_confirmation_runs",
    "quality",
    "verdict_figures",
    "verify_calibration",
]
