"""The four outcome gates of the evolution loop: Target, Guardrail, Holdout, Verify.

Each looks at a different way a patch can be wrong (the outcome-driven article's four layers):
it fixes nothing it aimed at (Target), it breaks a case that used to pass (Guardrail), it does
not generalise to cases evolution never saw (Holdout), or it makes SKILL.md itself worse written
(Verify). Any failed gate rejects the patch — preventing harm beats chasing gains — and every
verdict carries its figures and the case ids behind them, so a rejection can be checked by hand
from the run folders it names.

A case counts as *passing* only when every valid run of it passed (``engine.metrics.case_status``):
a case that now passes on one run and fails on the other is not fixed, and a previously passing
case that now fails on any run is broken.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.config import GatesConfig
from engine.gates.result import GateResult
from engine.metrics import CaseStatus, case_status, metrics
from engine.verify import verify_score

Rows = Sequence[Mapping[str, Any]]
# Float noise must not turn "dropped exactly one point" into a rejection.
_EPSILON = 1e-9


def case_statuses(rows: Rows) -> dict[str, CaseStatus]:
    """Each case's status over its runs, from the rows of the skill variant."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if (row.get("variant") or "skill") == "skill":
            grouped.setdefault(str(row["case_id"]), []).append(dict(row))
    return {case_id: case_status(group)[0] for case_id, group in sorted(grouped.items())}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass(frozen=True)
class Target:
    """At least ``min_fixed`` of the failing cases the patch aimed at pass now ("it helped")."""

    min_fixed: int = 1
    name: str = "target"

    def judge(self, before: Rows, after: Rows, targeted: Iterable[str]) -> GateResult:
        aimed = sorted(set(targeted))
        was, now = case_statuses(before), case_statuses(after)
        fixed = [c for c in aimed if was.get(c) != "pass" and now.get(c) == "pass"]
        still = [c for c in aimed if c not in fixed]
        figures = {
            "targeted": len(aimed),
            "fixed": len(fixed),
            "still_failing": len(still),
            "min_fixed": self.min_fixed,
        }
        if not aimed:
            reason = "the patch targeted no failing case"
        elif len(fixed) >= self.min_fixed:
            reason = f"fixed {len(fixed)} of {_plural(len(aimed), 'targeted failing case')}"
        else:
            reason = (
                f"fixed {len(fixed)} of {_plural(len(aimed), 'targeted failing case')}, "
                f"{self.min_fixed} wanted"
            )
        ok = bool(aimed) and len(fixed) >= self.min_fixed
        return GateResult(
            gate=self.name,
            verdict="pass" if ok else "fail",
            figures=figures,
            reasons=[reason],
            case_ids=aimed,
            fixed=fixed,
        )


@dataclass(frozen=True)
class Guardrail:
    """No case that passed before the patch fails after it ("nothing old broke").

    A previously passing case whose runs are all invalid now could not be checked; that is not
    proof of no harm, so it fails the gate too (listed apart from the broken ones).
    """

    name: str = "guardrail"

    def judge(self, before: Rows, after: Rows) -> GateResult:
        was, now = case_statuses(before), case_statuses(after)
        guarded = [c for c, status in was.items() if status == "pass"]
        broken = [c for c in guarded if now.get(c) in ("fail", "flaky")]
        unmeasured = [c for c in guarded if now.get(c, "unmeasured") == "unmeasured"]
        fixed = [c for c, status in now.items() if status == "pass" and was.get(c) != "pass"]
        reasons: list[str] = []
        if broken:
            reasons.append(
                f"{_plural(len(broken), 'previously passing case')} now "
                f"{'fails' if len(broken) == 1 else 'fail'}: " + ", ".join(broken)
            )
        if unmeasured:
            reasons.append(
                f"{_plural(len(unmeasured), 'previously passing case')} could not be measured "
                "(only invalid runs): " + ", ".join(unmeasured)
            )
        if not reasons:
            reasons.append(f"{len(guarded)} of {len(guarded)} previously passing cases still pass")
        return GateResult(
            gate=self.name,
            verdict="fail" if broken or unmeasured else "pass",
            figures={
                "guarded": len(guarded),
                "still_passing": len(guarded) - len(broken) - len(unmeasured),
                "newly_broken": len(broken),
                "unmeasured": len(unmeasured),
                "fixed": len(fixed),
            },
            reasons=reasons,
            case_ids=guarded,
            fixed=fixed,
            newly_broken=broken,
        )


def quality(rows: Rows, positive_label: str | None) -> tuple[str, float]:
    """The headline figure of a set of rows: F1 for a labelled benchmark, else the pass rate."""
    skill_rows = [dict(r) for r in rows if (r.get("variant") or "skill") == "skill"]
    figures = metrics(skill_rows, positive_label)
    if positive_label is not None and figures.f1 is not None:
        return "f1", figures.f1
    return "pass_rate", figures.pass_rate or 0.0


@dataclass(frozen=True)
class Holdout:
    """Every ``every``-th round, F1 on the holdout split may not drop more than ``max_f1_drop``.

    The holdout cases never reach diagnosis or the proposer; looking at them only every few
    rounds keeps evolution from tuning itself to them through the gate.
    """

    every: int = 5
    max_f1_drop: float = 0.01
    name: str = "holdout"

    def due(self, round_no: int) -> bool:
        return self.every > 0 and round_no % self.every == 0

    def off_round(self, round_no: int) -> GateResult:
        return GateResult(
            gate=self.name,
            verdict="held",
            figures={"round": round_no, "every": self.every},
            reasons=[f"round {round_no} is not a holdout round (every {self.every})"],
        )

    def judge(self, before: Rows, after: Rows, *, positive_label: str | None) -> GateResult:
        measure, was = quality(before, positive_label)
        _, now = quality(after, positive_label)
        drop = was - now
        ok = drop <= self.max_f1_drop + _EPSILON
        prev, cur = case_statuses(before), case_statuses(after)
        fixed = [c for c, s in cur.items() if s == "pass" and prev.get(c) != "pass"]
        broken = [c for c, s in cur.items() if s in ("fail", "flaky") and prev.get(c) == "pass"]
        points = f"{100 * drop:.1f}" if drop > 0 else "0"
        reason = (
            f"holdout {measure} {was:.3f} → {now:.3f}"
            f" ({'dropped ' + points + ' points' if drop > 0 else 'no drop'};"
            f" at most {100 * self.max_f1_drop:.1f} allowed)"
        )
        return GateResult(
            gate=self.name,
            verdict="pass" if ok else "fail",
            figures={
                "measure": measure,
                "before": round(was, 6),
                "after": round(now, 6),
                "drop": round(drop, 6),
                "max_drop": self.max_f1_drop,
                "cases": len(cur),
            },
            reasons=[reason],
            case_ids=sorted(set(prev) | set(cur)),
            fixed=fixed,
            newly_broken=broken,
        )


@dataclass(frozen=True)
class Verify:
    """SKILL.md's own quality score is at least ``min_score`` and fell at most ``max_drop``."""

    min_score: float = 75.0
    max_drop: float = 5.0
    name: str = "verify"

    def judge(self, text: str, parent_text: str | None) -> GateResult:
        report = verify_score(text)
        parent = verify_score(parent_text).score if parent_text is not None else None
        drop = 0.0 if parent is None else parent - report.score
        reasons: list[str] = []
        if report.score < self.min_score:
            reasons.append(
                f"verify score {report.score:.0f} is below {self.min_score:.0f} "
                f"(failed: {', '.join(report.failed) or 'none'})"
            )
        if drop > self.max_drop + _EPSILON:
            reasons.append(
                f"verify score fell {drop:.0f} points ({parent:.0f} → {report.score:.0f}), "
                f"at most {self.max_drop:.0f} allowed"
            )
        ok = not reasons
        if ok:
            was = "" if parent is None else f" (parent {parent:.0f})"
            reasons.append(f"verify score {report.score:.0f}{was}")
        return GateResult(
            gate=self.name,
            verdict="pass" if ok else "fail",
            figures={
                "score": report.score,
                "parent_score": parent,
                "drop": drop,
                "min_score": self.min_score,
                "max_drop": self.max_drop,
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
        return cls(
            target=Target(),
            guardrail=Guardrail(),
            holdout=Holdout(every=cfg.holdout_every, max_f1_drop=cfg.holdout_max_f1_drop),
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
    ) -> list[GateResult]:
        """All four verdicts, in gate order; every gate is judged so every figure is recorded.

        Holdout is judged when both holdout evaluations are given (a holdout round), else held.
        """
        if holdout_before is not None and holdout_after is not None:
            holdout = self.holdout.judge(
                holdout_before, holdout_after, positive_label=positive_label
            )
        else:
            holdout = self.holdout.off_round(round_no)
        return [
            self.target.judge(selection_before, selection_after, targeted),
            self.guardrail.judge(selection_before, selection_after),
            holdout,
            self.verify.judge(text, parent_text),
        ]


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
    "Target",
    "Verify",
    "case_statuses",
    "quality",
    "verify_calibration",
]
