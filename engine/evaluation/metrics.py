"""The numbers computed from result rows.

Every figure a gate or a scoreboard shows comes from ``results.jsonl`` rows, so the rows are
validated on read (one line naming file and line) and the arithmetic lives in one place: pass rate,
the confusion matrix with precision/recall/F1 for the positive label, mean ± sample stddev over
runs (skill-creator's convention, n−1), and the per-case comparison of two evaluations. Invalid
units are excluded from every quality figure and counted on their own — a crashed agent is not a
wrong answer.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from engine.core.benchmark import normalise_label
from engine.core.schema import to_mapping

CaseStatus = Literal["pass", "fail", "flaky", "unmeasured"]


# -- per run and aggregated --------------------------------------------------------------------


@dataclass
class Spread:
    """mean ± stddev (sample, n−1; 0 for a single run), min and max of a per-run figure."""

    mean: float
    stddev: float
    min: float
    max: float

    @classmethod
    def of(cls, values: list[float]) -> Spread | None:
        if not values:
            return None
        stddev = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(statistics.fmean(values), stddev, min(values), max(values))


@dataclass
class Confusion:
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        """0 when nothing was predicted positive (the zero_division=0 convention)."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def outcome(row: dict[str, Any], positive: str) -> Literal["tp", "fp", "tn", "fn"] | None:
    """A row's cell of the confusion matrix (None without a ground truth).

    The grader's ``failure_kind`` wins when present; otherwise a verdict that differs from the
    ground truth — including no verdict at all — counts as the wrong class, exactly as
    :func:`engine.evaluation.grading.failure_kind` decides.
    """
    truth = row.get("ground_truth")
    if truth is None:
        return None
    kind = row.get("failure_kind")
    if kind in ("FN", "FP"):
        return "fn" if kind == "FN" else "fp"
    is_positive = normalise_label(str(truth)) == normalise_label(positive)
    verdict = row.get("judge_verdict")
    correct = verdict is not None and normalise_label(str(verdict)) == normalise_label(str(truth))
    if correct:
        return "tp" if is_positive else "tn"
    return "fn" if is_positive else "fp"


def confusion(rows: Iterable[dict[str, Any]], positive: str) -> Confusion:
    counts = Confusion()
    for row in rows:
        cell = outcome(row, positive)
        if cell is not None:
            setattr(counts, cell, getattr(counts, cell) + 1)
    return counts


@dataclass
class Usage:
    """What units cost, counted over every unit (a crashed run was still paid for)."""

    tokens_input: int
    tokens_output: int
    cost_usd: float | None
    cost_mean_usd: float | None
    duration_ms: int
    duration_mean_ms: float | None

    @classmethod
    def of(cls, rows: list[dict[str, Any]]) -> Usage:
        costs = [float(r["cost_usd"]) for r in rows if r.get("cost_usd") is not None]
        durations = [int(r.get("duration_ms") or 0) for r in rows]

        def tokens(key: str) -> int:
            return sum(int((r.get("tokens") or {}).get(key) or 0) for r in rows)

        return cls(
            tokens_input=tokens("input"),
            tokens_output=tokens("output"),
            cost_usd=math.fsum(costs) if costs else None,
            cost_mean_usd=math.fsum(costs) / len(costs) if costs else None,
            duration_ms=sum(durations),
            duration_mean_ms=statistics.fmean(durations) if durations else None,
        )


@dataclass
class RunMetrics:
    """One run index across all cases (run 0 of every case, run 1 of every case, …)."""

    run_index: int
    valid: int
    invalid: int
    passed: int
    pass_rate: float | None
    mean_score: float | None
    confusion: Confusion | None
    precision: float | None
    recall: float | None
    f1: float | None
    usage: Usage


@dataclass
class Metrics:
    units: int
    valid: int
    invalid: int
    passed: int
    failed: int
    pass_rate: float | None
    mean_score: float | None
    positive_label: str | None
    tp: int
    fp: int
    tn: int
    fn: int
    precision: float | None
    recall: float | None
    f1: float | None
    runs: list[RunMetrics]
    pass_rate_spread: Spread | None
    score_spread: Spread | None
    f1_spread: Spread | None
    tokens_input: int
    tokens_output: int
    cost_usd: float | None
    cost_mean_usd: float | None
    duration_ms: int
    duration_mean_ms: float | None
    invalid_reasons: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = to_mapping(self)
        return data


def _valid(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("pass_fail") != "invalid"]


def _mean_score(rows: list[dict[str, Any]]) -> float:
    return statistics.fmean(float(r.get("score") or 0.0) for r in rows)


def _run_metrics(run_index: int, rows: list[dict[str, Any]], positive: str | None) -> RunMetrics:
    valid = _valid(rows)
    passed = sum(1 for r in valid if r["pass_fail"] == "pass")
    conf = confusion(valid, positive) if positive and valid else None
    return RunMetrics(
        run_index=run_index,
        valid=len(valid),
        invalid=len(rows) - len(valid),
        passed=passed,
        pass_rate=passed / len(valid) if valid else None,
        mean_score=_mean_score(valid) if valid else None,
        confusion=conf,
        precision=conf.precision if conf else None,
        recall=conf.recall if conf else None,
        f1=conf.f1 if conf else None,
        usage=Usage.of(rows),
    )


def metrics(rows: list[dict[str, Any]], positive_label: str | None = None) -> Metrics:
    """Figures of one variant's rows.

    Quality figures use valid rows only; tokens, cost and duration count every unit, because a
    crashed run was still paid for. Cost ignores nulls and is null only when all are unknown.
    """
    valid = _valid(rows)
    by_run: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_run.setdefault(int(row.get("run_index") or 0), []).append(row)
    runs = [_run_metrics(i, by_run[i], positive_label) for i in sorted(by_run)]
    conf = confusion(valid, positive_label) if positive_label else None
    passed = sum(1 for r in valid if r["pass_fail"] == "pass")
    usage = Usage.of(rows)
    reasons: dict[str, int] = {}
    for row in rows:
        if row.get("pass_fail") == "invalid":
            reason = str(row.get("invalid_reason") or "unknown")
            reasons[reason] = reasons.get(reason, 0) + 1

    def spread(values: list[float | None]) -> Spread | None:
        return Spread.of([v for v in values if v is not None])

    return Metrics(
        units=len(rows),
        valid=len(valid),
        invalid=len(rows) - len(valid),
        passed=passed,
        failed=len(valid) - passed,
        pass_rate=passed / len(valid) if valid else None,
        mean_score=_mean_score(valid) if valid else None,
        positive_label=positive_label,
        tp=conf.tp if conf else 0,
        fp=conf.fp if conf else 0,
        tn=conf.tn if conf else 0,
        fn=conf.fn if conf else 0,
        precision=conf.precision if conf else None,
        recall=conf.recall if conf else None,
        f1=conf.f1 if conf else None,
        runs=runs,
        pass_rate_spread=spread([r.pass_rate for r in runs]),
        score_spread=spread([r.mean_score for r in runs]),
        f1_spread=spread([r.f1 for r in runs]),
        tokens_input=usage.tokens_input,
        tokens_output=usage.tokens_output,
        cost_usd=usage.cost_usd,
        cost_mean_usd=usage.cost_mean_usd,
        duration_ms=usage.duration_ms,
        duration_mean_ms=usage.duration_mean_ms,
        invalid_reasons=reasons,
    )


def infer_positive_label(rows: Iterable[dict[str, Any]]) -> str | None:
    """The positive class as the rows themselves reveal it (for runs without their benchmark).

    By definition an FN row's ground truth and an FP row's verdict are the positive label.
    """
    for row in rows:
        if row.get("failure_kind") == "FN" and row.get("ground_truth") is not None:
            return str(row["ground_truth"])
        if row.get("failure_kind") == "FP" and row.get("judge_verdict") is not None:
            return str(row["judge_verdict"])
    return None


# -- comparing two evaluations -----------------------------------------------------------------


@dataclass
class CaseChange:
    case_id: str
    before: CaseStatus
    after: CaseStatus
    before_passes: str
    after_passes: str
    category: str


@dataclass
class Comparison:
    fixed: list[str]
    newly_broken: list[str]
    still_failing: list[str]
    still_passing: list[str]
    flaky: list[str]
    unmeasured: list[str]
    cases: list[CaseChange]
    before: Metrics
    after: Metrics
    deltas: dict[str, float | None]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = to_mapping(self)
        return data


def case_status(rows: list[dict[str, Any]]) -> tuple[CaseStatus, str]:
    """A case over its runs: all pass, all fail, runs disagree (flaky), or no valid run."""
    valid = _valid(rows)
    passes = sum(1 for r in valid if r["pass_fail"] == "pass")
    shown = f"{passes}/{len(valid)}"
    if not valid:
        return "unmeasured", shown
    if passes == len(valid):
        return "pass", shown
    return ("fail" if passes == 0 else "flaky"), shown


_CATEGORY = {
    ("fail", "pass"): "fixed",
    ("pass", "fail"): "newly_broken",
    ("fail", "fail"): "still_failing",
    ("pass", "pass"): "still_passing",
}


def _by_case(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(str(row["case_id"]), []).append(row)
    return grouped


def _delta(a: float | int | None, b: float | int | None) -> float | None:
    return None if a is None or b is None else float(b) - float(a)


def compare(
    rows_a: list[dict[str, Any]],
    rows_b: list[dict[str, Any]],
    positive_label: str | None = None,
) -> Comparison:
    """Per-case fate from evaluation A (before) to B (after), plus metric deltas B − A."""
    positive = positive_label or infer_positive_label([*rows_a, *rows_b])
    a_cases, b_cases = _by_case(rows_a), _by_case(rows_b)
    changes: list[CaseChange] = []
    for case_id in sorted(set(a_cases) | set(b_cases)):
        before, before_shown = case_status(a_cases.get(case_id, []))
        after, after_shown = case_status(b_cases.get(case_id, []))
        if "unmeasured" in (before, after):
            category = "unmeasured"
        elif "flaky" in (before, after):
            category = "flaky"
        else:
            category = _CATEGORY[(before, after)]
        changes.append(CaseChange(case_id, before, after, before_shown, after_shown, category))
    ma, mb = metrics(rows_a, positive), metrics(rows_b, positive)
    keys = ("pass_rate", "mean_score", "precision", "recall", "f1", "cost_usd", "duration_ms")
    deltas = {k: _delta(getattr(ma, k), getattr(mb, k)) for k in keys}
    deltas["tokens"] = float(
        (mb.tokens_input + mb.tokens_output) - (ma.tokens_input + ma.tokens_output)
    )

    def pick(category: str) -> list[str]:
        return [c.case_id for c in changes if c.category == category]

    return Comparison(
        fixed=pick("fixed"),
        newly_broken=pick("newly_broken"),
        still_failing=pick("still_failing"),
        still_passing=pick("still_passing"),
        flaky=pick("flaky"),
        unmeasured=pick("unmeasured"),
        cases=changes,
        before=ma,
        after=mb,
        deltas=deltas,
    )


__all__ = [
    "CaseChange",
    "Comparison",
    "Confusion",
    "Metrics",
    "RunMetrics",
    "Spread",
    "Usage",
    "case_status",
    "compare",
    "confusion",
    "infer_positive_label",
    "metrics",
    "outcome",
]
