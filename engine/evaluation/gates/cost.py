"""The Cost gate: pass rate, and what it costs, read together.

Tokens and dollars are recorded for every run, but a verdict on the pass rate alone accepts a
candidate that keeps the pass rate and doubles the tokens like any other. tRPC's own study
rejected a candidate for +3.3 % tokens in operational replay after it saved 8.5 % in isolation:
"pass rate, quality and cost must be read together". So every comparison also states the
change in tokens, dollars and duration per case with its interval, and this gate:

* refuses a candidate whose tokens or dollars rise *with confidence* by more than
  ``gates.max_cost_increase`` (the lower bound of the increase is above it) unless its pass
  rate is better with confidence — a fix may cost more, a change that fixes nothing may not;
* says when a candidate is cheaper with confidence (the upper bound of the change is below
  zero): a skill whose only gain is lower cost can be accepted on that alone, when nothing
  else got worse.

The change is a ratio, so it is measured per case as log(after / before) of the case's mean
over its runs — a case that costs ten times another weighs the same — and the mean log ratio
gets a paired t-interval over cases (each bound at one-sided ``alpha``); the figures shown are
the interval turned back into a percentage. A case with nothing recorded on either side (an
agent that reports no tokens) is left out; with no case left the gate is held.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from engine.evaluation.failures import invalid_cause
from engine.evaluation.gates.result import GateResult

Rows = Sequence[Mapping[str, Any]]
MEASURES = ("tokens", "cost_usd", "duration_ms")
DECIDING = ("tokens", "cost_usd")  # what a run costs; its duration is shown, not judged
_LABEL = {"tokens": "tokens", "cost_usd": "cost", "duration_ms": "duration"}


@dataclass(frozen=True)
class CostChange:
    """The change of one cost measure per case: ``change`` = after / before − 1 (geometric
    mean over cases), ``low``/``high`` its interval, ``before``/``after`` the means a run."""

    measure: str
    change: float
    low: float
    high: float
    before: float
    after: float
    n_cases: int

    def line(self) -> str:
        """``tokens +100% [+96%, +104%] a case (1.2k → 2.4k a run)``."""
        return (
            f"{_LABEL[self.measure]} {_pct(self.change)} [{_pct(self.low)}, {_pct(self.high)}] "
            f"a case ({_amount(self.measure, self.before)} → "
            f"{_amount(self.measure, self.after)} a run)"
        )

    def to_dict(self) -> dict[str, Any]:
        data = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}
        return {**data, "line": self.line()}


def _pct(value: float) -> str:
    if not math.isfinite(value):
        return "+∞"
    return f"{100 * value:+.0f}%"


def _amount(measure: str, value: float) -> str:
    if measure == "cost_usd":
        return f"${value:.4f}"
    if measure == "duration_ms":
        return f"{value / 1000:.1f}s"
    return f"{value / 1000:.1f}k" if value >= 1000 else f"{value:.0f}"


def run_cost(row: Mapping[str, Any], measure: str) -> float | None:
    """One run's figure of ``measure`` (tokens: input + output), None when unrecorded."""
    value = row.get(measure)
    if measure == "tokens":
        if not isinstance(value, Mapping):
            return None
        counts = [v for v in value.values() if isinstance(v, (int, float))]
        return float(sum(counts)) if counts else None
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _means(rows: Rows, measure: str, cases: set[str] | None) -> dict[str, float]:
    """Each case's mean over the runs the agent finished or ended itself (an external failure
    measured the world, not the agent)."""
    grouped: dict[str, list[float]] = {}
    for row in rows:
        case = str(row["case_id"])
        if (cases is not None and case not in cases) or invalid_cause(row) == "external":
            continue
        value = run_cost(row, measure)
        if value is not None:
            grouped.setdefault(case, []).append(value)
    return {c: float(np.mean(v)) for c, v in grouped.items()}


def cost_change(
    before: Rows,
    after: Rows,
    measure: str,
    *,
    cases: Iterable[str] | None = None,
    alpha: float = 0.05,
) -> CostChange | None:
    """The per-case change of ``measure`` from ``before`` to ``after`` with its interval; None
    when no case has it recorded (above zero) on both sides."""
    wanted = None if cases is None else {str(c) for c in cases}
    b, a = _means(before, measure, wanted), _means(after, measure, wanted)
    common = sorted(c for c in set(b) & set(a) if b[c] > 0 and a[c] > 0)
    if not common:
        return None
    logs = np.array([math.log(a[c] / b[c]) for c in common])
    mean = float(logs.mean())
    if len(logs) < 2:
        low, high = -math.inf, math.inf  # one case: no spread to bound the change with
    elif float(np.ptp(logs)) == 0.0:
        low = high = mean  # every case changed by the same ratio: nothing uncertain
    else:
        ci = stats.ttest_1samp(logs, 0.0).confidence_interval(confidence_level=1 - 2 * alpha)
        low, high = float(ci.low), float(ci.high)
    return CostChange(
        measure=measure,
        change=math.exp(mean) - 1,
        low=math.exp(low) - 1,
        high=math.exp(high) - 1 if math.isfinite(high) else math.inf,
        before=float(np.mean([b[c] for c in common])),
        after=float(np.mean([a[c] for c in common])),
        n_cases=len(common),
    )


def cost_changes(
    before: Rows, after: Rows, *, cases: Iterable[str] | None = None, alpha: float = 0.05
) -> list[CostChange]:
    """The change of every cost measure both sides recorded."""
    wanted = None if cases is None else list(cases)
    found = (cost_change(before, after, m, cases=wanted, alpha=alpha) for m in MEASURES)
    return [c for c in found if c is not None]


def cost_line(changes: Sequence[CostChange]) -> str:
    """Every measured change in one line (what a candidate's line shows)."""
    return "; ".join(c.line() for c in changes) if changes else "no cost recorded"


@dataclass(frozen=True)
class Cost:
    """Refuses a candidate that costs more with confidence by more than ``max_increase``
    without a better pass rate; marks one that costs less with confidence (``cheaper``)."""

    max_increase: float = 0.25
    alpha: float = 0.05
    name: str = "cost"

    def judge(
        self, before: Rows, after: Rows, *, better: bool, cases: Iterable[str] | None = None
    ) -> GateResult:
        """``better``: the pass rate is better with confidence (the gates that judge it said so)."""
        changes = cost_changes(before, after, cases=cases, alpha=self.alpha)
        deciding = [c for c in changes if c.measure in DECIDING]
        figures: dict[str, Any] = {
            "max_increase": self.max_increase,
            "changes": {c.measure: c.to_dict() for c in changes},
            "cheaper": False,
            "line": cost_line(changes),
        }
        if not deciding:
            return GateResult(self.name, "held", figures, ["no tokens or cost recorded"])
        risen = [c for c in deciding if c.low > self.max_increase]
        cheaper = not risen and any(c.high < 0 for c in deciding)
        figures["cheaper"] = cheaper
        line = cost_line(changes)
        if risen and not better:
            names = " and ".join(_LABEL[c.measure] for c in risen)
            return GateResult(
                self.name,
                "fail",
                figures,
                [
                    f"{names} rose by more than {_pct(self.max_increase)} with confidence "
                    f"and the pass rate is not better: {line}"
                ],
            )
        note = " (cheaper with confidence)" if cheaper else ""
        return GateResult(self.name, "pass", figures, [f"cost: {line}{note}"])


__all__ = ["Cost", "CostChange", "cost_change", "cost_changes", "cost_line", "run_cost"]
