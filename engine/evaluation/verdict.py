"""Paired verdicts: every accept/keep/promote decision is an experiment with a stated error rate.

A target agent does not give the same answer twice, so "the new version passed more cases" is
not evidence on its own: half of all changes that do nothing look better by chance. A verdict
compares two evaluations of the *same* cases (and, where both carry them, the same run seeds),
so each case is its own control, and says how sure the comparison is:

* ``test="runs"`` asks "did *these* cases improve": every (case, run) pair is one observation and
  the exact McNemar test (a binomial test on the discordant pairs) gives the p-value, with the
  Clopper–Pearson interval of the discordant share turned into an interval of the change. Right
  for the targeted cases of a patch and for the guardrail cases, where the question is about
  these very cases.
* ``test="cases"`` asks "does this generalise to cases like these": the per-case mean change is
  the observation (errors clustered by case, as Miller's "Adding Error Bars to Evals" argues) and
  a paired t-test gives p and interval. When the cases carry no spread to generalise from (one
  case, or every case changed by the same amount) it falls back to the exact run-level test,
  which still says what the runs support.
* :func:`compare_f1` compares F1 — not a mean over cases — by a paired bootstrap over cases, or
  (``test="runs"``, "did F1 on these cases change") by the delta method on the run noise.

scipy supplies the distributions (binomial test, Clopper–Pearson, Student t, bootstrap): they are
the textbook versions, tested far beyond what a hand-written copy here would be.

:func:`decide` adds adaptive sampling: an inconclusive comparison reruns only the cases that can
change it, up to a fixed budget, and spends the error rate across the looks by a group-sequential
design (an α·t² spending function of the share of the planned runs each look has seen, summed by
the union bound; :func:`look_alphas`), so looking again never raises the false-accept rate
above ``alpha``.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import numpy as np
from scipy import stats

from engine.evaluation.failures import counted, invalid_cause
from engine.evaluation.metrics import outcome

Rows = Sequence[Mapping[str, Any]]
Decision = Literal["better", "worse", "inconclusive"]
Alternative = Literal["two-sided", "greater", "less"]
Test = Literal["runs", "cases"]
Measure = Literal["pass_rate", "score"]
POWER = 0.8  # the power ``more`` plans for
MAX_MORE = 1000  # beyond this many extra runs a case, "more runs" is no plan
BOOTSTRAP_RESAMPLES = 2000
# The question each alternative's p answers, as a verdict line names it.
_QUESTION: dict[str, str] = {"greater": "better?", "less": "worse?", "two-sided": "changed?"}


@dataclass(frozen=True)
class Verdict:
    """The outcome of one paired comparison, with every figure needed to check it by hand.

    ``delta`` is after − before on a 0–1 scale; ``ci_low``/``ci_high`` bound it (each bound at
    ``alpha`` for a one-sided question, at ``alpha/2`` for a two-sided one). ``decision`` is
    "better" when the lower bound is above ``threshold``, "worse" when the upper bound is below
    it. ``n_runs`` is the most runs a case had before adaptive sampling, ``extra_runs`` how many
    case-runs (per variant) adaptive sampling added, ``more`` the extra runs per case that would
    most likely settle an inconclusive comparison (None: no number of runs is likely to).
    """

    decision: Decision
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    n_cases: int
    n_runs: int
    more: int | None
    extra_runs: int = 0
    looks: int = 1
    n_pairs: int = 0
    test: str = "paired-t"
    measure: str = "pass_rate"
    alternative: Alternative = "two-sided"
    threshold: float = 0.0
    alpha: float = 0.05
    before: float | None = None
    after: float | None = None
    agent_failures: int = 0  # runs the agent ended badly (timeout, no answer, …): failures
    excluded: int = 0  # runs that failed outside the agent (harness, outage, cancel): left out
    futile: bool = False  # the reruns stopped because the data already ruled the effect out

    @property
    def better(self) -> bool:
        return self.decision == "better"

    @property
    def worse(self) -> bool:
        return self.decision == "worse"

    def line(self) -> str:
        """What a person reads: ``+8.3 pts [+2.1, +14.5] p(better?)=0.01 better (23 paired
        cases, …)``. The p names the question it answers — "better?" for a one-sided test of a
        gain, "worse?" for one of a loss (a guardrail), "changed?" for a two-sided one — so
        ``p(worse?)=1 better`` reads as no sign of a loss, not as a contradiction."""
        label = "" if self.measure == "pass_rate" else f"{self.measure} "
        decision: str = self.decision
        if self.threshold and decision != "inconclusive":
            decision = f"{decision} than {_pts(self.threshold)} pts"
        cases = "paired case" if self.n_cases == 1 else "paired cases"
        runs = "run" if self.n_runs == 1 else "runs"
        extra = f", +{self.extra_runs} extra" if self.extra_runs else ""
        if self.agent_failures:
            extra += f", {self.agent_failures} ended by the agent counted failed"
        if self.excluded:
            extra += f", {self.excluded} failed outside the agent left out"
        if self.futile:
            extra += ", stopped for futility"
        return (
            f"{label}{_pts(self.delta)} pts [{_pts(self.ci_low)}, {_pts(self.ci_high)}] "
            f"p({_QUESTION[self.alternative]})={_p(self.p_value)} {decision} "
            f"({self.n_cases} {cases}, {self.n_runs} {runs}{extra})"
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("delta", "ci_low", "ci_high", "p_value", "before", "after"):
            if data[key] is not None:
                data[key] = round(float(data[key]), 6)
        data["line"] = self.line()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in names})


def _pts(value: float) -> str:
    points = 100 * value
    return "±0.0" if abs(points) < 0.05 else f"{points:+.1f}"


def _p(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.2g}"


# -- pairing ---------------------------------------------------------------------------------------
def _value(row: Mapping[str, Any], measure: Measure) -> float:
    if measure == "score":
        score = row.get("score")
        if score is not None:
            return float(score)
    return 1.0 if row.get("pass_fail") == "pass" else 0.0


def run_seed(row: Mapping[str, Any]) -> Any:
    """The seed a run was drawn with, when the agent records one."""
    return row.get("run_seed", row.get("seed"))


def _by_case(rows: Rows, cases: set[str] | None) -> dict[str, list[Mapping[str, Any]]]:
    """The runs a verdict counts, by case: a run the agent ended badly counts as a failure
    (``engine.evaluation.failures``), one that failed outside the agent is left out."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        case = str(row["case_id"])
        kept = counted(row)
        if kept is None or (cases is not None and case not in cases):
            continue
        grouped.setdefault(case, []).append(kept)
    return grouped


def _with_invalid(verdict: Verdict, rows: Iterable[Rows], cases: Iterable[str] | None) -> Verdict:
    """The verdict with how many runs of its cases the agent ended (counted as failures) and
    how many failed outside it (left out)."""
    wanted = None if cases is None else {str(c) for c in cases}
    causes = [
        invalid_cause(r)
        for side in rows
        for r in side
        if wanted is None or str(r["case_id"]) in wanted
    ]
    return replace(
        verdict,
        agent_failures=causes.count("agent"),
        excluded=causes.count("external"),
    )


@dataclass(frozen=True)
class Paired:
    """The two evaluations lined up: per case, the (before, after) value of each paired run."""

    runs: dict[str, list[tuple[float, float]]]  # case → run pairs
    before_means: dict[str, float]
    after_means: dict[str, float]
    n_runs: int

    @property
    def cases(self) -> list[str]:
        return sorted(self.before_means)


def pair(
    before_rows: Rows,
    after_rows: Rows,
    *,
    cases: Iterable[str] | None = None,
    measure: Measure = "pass_rate",
) -> Paired:
    """Line up valid runs of the cases both sides measured.

    Runs pair on their seed when every run of the case on both sides carries one and the two
    sides drew the same seeds (the same noise, so only the skill differs), else on run_index.
    A case with a valid run on one side only is left out: it has no partner to compare with.
    """
    wanted = None if cases is None else {str(c) for c in cases}
    before, after = _by_case(before_rows, wanted), _by_case(after_rows, wanted)
    runs: dict[str, list[tuple[float, float]]] = {}
    b_means: dict[str, float] = {}
    a_means: dict[str, float] = {}
    n_runs = 0
    for case in sorted(set(before) & set(after)):
        b_rows, a_rows = before[case], after[case]
        b_means[case] = float(np.mean([_value(r, measure) for r in b_rows]))
        a_means[case] = float(np.mean([_value(r, measure) for r in a_rows]))
        n_runs = max(n_runs, len(b_rows), len(a_rows))
        seeds_b = {run_seed(r) for r in b_rows}
        seeds_a = {run_seed(r) for r in a_rows}
        by_seed = None not in seeds_b and seeds_b == seeds_a and len(seeds_b) == len(b_rows)
        key = run_seed if by_seed else (lambda r: int(r.get("run_index", 0)))
        a_by_key = {key(r): r for r in a_rows}
        runs[case] = [
            (_value(r, measure), _value(a_by_key[key(r)], measure))
            for r in b_rows
            if key(r) in a_by_key
        ]
    return Paired(runs, b_means, a_means, n_runs)


# -- the tests -------------------------------------------------------------------------------------
def _side_alpha(alpha: float, alternative: Alternative) -> float:
    return alpha / 2 if alternative == "two-sided" else alpha


def _decision(low: float, high: float, threshold: float) -> Decision:
    if low > threshold:
        return "better"
    if high < threshold:
        return "worse"
    return "inconclusive"


def _more(
    delta: float, low: float, high: float, threshold: float, side_alpha: float, n_runs: int
) -> int | None:
    """Extra runs per case that would give the observed change ``POWER`` to clear ``threshold``.

    The interval's half-width gives the standard error; it shrinks with the square root of the
    runs, so the runs needed scale with (needed z / observed z)².
    """
    z_side = float(stats.norm.ppf(1 - side_alpha))
    se = (high - low) / (2 * z_side) if z_side > 0 else 0.0
    gap = abs(delta - threshold)
    if se <= 0 or gap <= 0 or n_runs <= 0:
        return None
    factor = ((z_side + float(stats.norm.ppf(POWER))) * se / gap) ** 2
    if not math.isfinite(factor):
        return None
    extra = math.ceil(n_runs * (factor - 1))
    return None if extra > MAX_MORE else max(1, extra)


def _judged(
    delta: float,
    low: float,
    high: float,
    p_value: float,
    *,
    threshold: float,
    side: float,
    n_cases: int,
    n_runs: int,
    **figures: Any,
) -> Verdict:
    """A verdict from an interval: the decision and the runs that would settle it follow from
    the bounds alone, so every test reports them the same way."""
    decision = _decision(low, high, threshold)
    return Verdict(
        decision=decision,
        delta=delta,
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        n_cases=n_cases,
        n_runs=n_runs,
        more=None
        if decision != "inconclusive"
        else _more(delta, low, high, threshold, side, n_runs),
        threshold=threshold,
        **figures,
    )


def _no_data(
    measure: str, test: str, alternative: Alternative, threshold: float, alpha: float
) -> Verdict:
    return Verdict(
        decision="inconclusive",
        delta=0.0,
        ci_low=-1.0,
        ci_high=1.0,
        p_value=1.0,
        n_cases=0,
        n_runs=0,
        more=None,
        test=test,
        measure=measure,
        alternative=alternative,
        threshold=threshold,
        alpha=alpha,
    )


def _p_from_one_sided(p_greater: float, p_less: float, alternative: Alternative) -> float:
    if alternative == "greater":
        return p_greater
    if alternative == "less":
        return p_less
    return min(1.0, 2 * min(p_greater, p_less))


def _exact_runs(
    paired: Paired,
    measure: Measure,
    alternative: Alternative,
    threshold: float,
    alpha: float,
    *,
    weigh_cases: bool = False,
) -> Verdict:
    """Exact McNemar on run pairs: under no effect each discordant pair is a fair coin.

    ``weigh_cases``: report the change of the case set when some cases have more pairs than
    others (see below); the p-value and the test are the run pairs' either way."""
    pairs = [p for case in paired.cases for p in paired.runs[case]]
    n = len(pairs)
    if n == 0:
        return _no_data(measure, "mcnemar-exact", alternative, threshold, alpha)
    diffs = [a - b for b, a in pairs]
    side = _side_alpha(alpha, alternative)
    graded = any(d not in (-1.0, 0.0, 1.0) for d in diffs)
    if graded and len(diffs) > 1 and float(np.ptp(diffs)) > 0:
        return _t_test(diffs, paired, "paired-t-runs", measure, alternative, threshold, alpha)
    up = sum(1 for d in diffs if d > 0)
    down = sum(1 for d in diffs if d < 0)
    discordant = up + down
    delta = float(np.mean(diffs))
    per_case = [paired.runs[case] for case in paired.cases if paired.runs[case]]
    balanced = not weigh_cases or len({len(runs) for runs in per_case}) <= 1
    if discordant == 0:
        low = high = 0.0
        p_greater = p_less = 1.0
    else:
        # a pass/fail pair moves by exactly 1; graded scores (a sign test) by their mean size
        size = float(np.mean([abs(d) for d in diffs if d]))
        ci = stats.binomtest(up, discordant, 0.5).proportion_ci(
            confidence_level=1 - 2 * side, method="exact"
        )
        low = (2 * float(ci.low) - 1) * discordant / n * size
        high = (2 * float(ci.high) - 1) * discordant / n * size
        p_greater = float(stats.binomtest(up, discordant, 0.5, alternative="greater").pvalue)
        p_less = float(stats.binomtest(up, discordant, 0.5, alternative="less").pvalue)
        if not balanced:
            # Reruns went to the cases that can change the answer, so most pairs are theirs: the
            # change per run pair would read as a change of the whole case set (a held-out
            # accuracy 0.88 → 1.00 shown as +78 pts). Each case weighs alike instead: the
            # discordant share is each case's own, averaged over the cases. The test and the
            # sign of every bound stay as they are, so no decision at threshold 0 (the only one
            # a run-level question asks) moves.
            share = float(np.mean([sum(1 for b, a in runs if a != b) / len(runs)
                                   for runs in per_case]))  # fmt: skip
            ratio = share / (discordant / n)
            delta, low, high = delta * ratio, low * ratio, high * ratio
    if balanced:
        before = float(np.mean([b for b, _ in pairs]))
        after = float(np.mean([a for _, a in pairs]))
    else:  # each case's mean over its own pairs, averaged over the cases
        before = float(np.mean([np.mean([b for b, _ in runs]) for runs in per_case]))
        after = float(np.mean([np.mean([a for _, a in runs]) for runs in per_case]))
    return _judged(
        delta,
        low,
        high,
        _p_from_one_sided(p_greater, p_less, alternative),
        threshold=threshold,
        side=side,
        n_cases=len(paired.cases),
        n_runs=paired.n_runs,
        n_pairs=n,
        test="mcnemar-exact",
        measure=measure,
        alternative=alternative,
        alpha=alpha,
        before=before,
        after=after,
    )


def _t_test(
    diffs: Sequence[float],
    paired: Paired,
    test: str,
    measure: Measure,
    alternative: Alternative,
    threshold: float,
    alpha: float,
) -> Verdict:
    side = _side_alpha(alpha, alternative)
    values = np.asarray(diffs, dtype=float)
    delta = float(values.mean())
    result = stats.ttest_1samp(values, threshold, alternative=alternative)
    # each bound at the side's alpha: the two-sided 1 − 2·side interval of the mean change
    ci = stats.ttest_1samp(values, 0.0).confidence_interval(confidence_level=1 - 2 * side)
    # a change of a 0–1 figure lies in [−1, 1], whatever a few cases' t-interval says
    low, high = max(-1.0, float(ci.low)), min(1.0, float(ci.high))
    return _judged(
        delta,
        low,
        high,
        float(result.pvalue),
        threshold=threshold,
        side=side,
        n_cases=len(paired.cases),
        n_runs=paired.n_runs,
        n_pairs=sum(len(p) for p in paired.runs.values()),
        test=test,
        measure=measure,
        alternative=alternative,
        alpha=alpha,
        before=float(np.mean(list(paired.before_means.values()))),
        after=float(np.mean(list(paired.after_means.values()))),
    )


def compare_paired(
    before_rows: Rows,
    after_rows: Rows,
    *,
    cases: Iterable[str] | None = None,
    alpha: float = 0.05,
    test: Test = "cases",
    alternative: Alternative = "two-sided",
    threshold: float = 0.0,
    measure: Measure = "pass_rate",
) -> Verdict:
    """Compare two evaluations of the same cases (``cases``: only these). A run the agent
    ended badly counts as a failure; one that failed outside the agent is left out (both
    counted in the verdict, ``engine.evaluation.failures``).

    ``alternative`` picks the question: "greater" = is after better than ``threshold`` with
    confidence (a negative threshold asks "not worse by more than that": non-inferiority),
    "less" = is it worse, "two-sided" = either. The false-accept rate of "better" is at most
    ``alpha`` for a one-sided question and ``alpha/2`` for a two-sided one.
    """
    chosen = None if cases is None else list(cases)
    verdict = _compare_paired(
        before_rows, after_rows, chosen, alpha, test, alternative, threshold, measure
    )
    return _with_invalid(verdict, (before_rows, after_rows), chosen)


def _compare_paired(
    before_rows: Rows,
    after_rows: Rows,
    cases: list[str] | None,
    alpha: float,
    test: Test,
    alternative: Alternative,
    threshold: float,
    measure: Measure,
) -> Verdict:
    paired = pair(before_rows, after_rows, cases=cases, measure=measure)
    if not paired.cases:
        return _no_data(
            measure,
            "paired-t" if test == "cases" else "mcnemar-exact",
            alternative,
            threshold,
            alpha,
        )
    diffs = [paired.after_means[c] - paired.before_means[c] for c in paired.cases]
    degenerate = len(diffs) < 2 or float(np.ptp(diffs)) == 0.0
    if test == "runs" or degenerate:
        # a fallback of the cases test weighs nothing: every case changed by the same amount,
        # which is then also the run pairs' change
        weigh = test == "runs"
        return _exact_runs(paired, measure, alternative, threshold, alpha, weigh_cases=weigh)
    return _t_test(diffs, paired, "paired-t", measure, alternative, threshold, alpha)


# -- F1 --------------------------------------------------------------------------------------------
def _cells(rows: list[Mapping[str, Any]], positive: str) -> tuple[float, float, float]:
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for row in rows:
        cell = outcome(dict(row), positive)
        if cell is not None:
            counts[cell] += 1
    n = max(1, len(rows))
    return counts["tp"] / n, counts["fp"] / n, counts["fn"] / n


def _f1(tp: Any, fp: Any, fn: Any) -> Any:
    denominator = 2 * tp + fp + fn
    return np.where(denominator > 0, 2 * tp / np.where(denominator > 0, denominator, 1), 0.0)


def compare_f1(
    before_rows: Rows,
    after_rows: Rows,
    *,
    positive_label: str,
    cases: Iterable[str] | None = None,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    threshold: float = 0.0,
    seed: int = 0,
    test: Test = "cases",
) -> Verdict:
    """The F1 change with a paired bootstrap over cases (each case weighs one, whatever its runs).

    F1 is a ratio of totals, not a mean of per-case figures, so no t-test applies; resampling
    whole cases keeps each case's runs together (the clustered error). ``seed`` makes the
    interval reproducible.

    ``test="runs"`` asks about *these* cases instead (:func:`_f1_runs`): only the run-to-run
    noise is uncertain, so an improvement that lands on a few cases is not read as a possible
    loss because a resample of cases might leave them out. With a single run a case there is
    no run-to-run spread to measure, and it falls back to the bootstrap over cases.
    """
    chosen = None if cases is None else [str(c) for c in cases]
    verdict = _compare_f1(
        before_rows, after_rows, positive_label, chosen, alpha, alternative, threshold, seed, test
    )
    return _with_invalid(verdict, (before_rows, after_rows), chosen)


def _compare_f1(
    before_rows: Rows,
    after_rows: Rows,
    positive_label: str,
    cases: list[str] | None,
    alpha: float,
    alternative: Alternative,
    threshold: float,
    seed: int,
    test: Test,
) -> Verdict:
    wanted = None if cases is None else {str(c) for c in cases}
    before, after = _by_case(before_rows, wanted), _by_case(after_rows, wanted)
    common = sorted(set(before) & set(after))
    if not common:
        return _no_data("f1", "bootstrap-f1", alternative, threshold, alpha)
    if test == "runs" and any(len(side[c]) > 1 for side in (before, after) for c in common):
        return _f1_runs(before, after, common, positive_label, alpha, alternative, threshold)
    cells_b = np.array([_cells(before[c], positive_label) for c in common])
    cells_a = np.array([_cells(after[c], positive_label) for c in common])

    def statistic(idx: Any, axis: int = -1) -> Any:
        idx = np.moveaxis(np.asarray(idx, dtype=int), axis, -1)
        b = cells_b[idx].sum(axis=-2)
        a = cells_a[idx].sum(axis=-2)
        return _f1(a[..., 0], a[..., 1], a[..., 2]) - _f1(b[..., 0], b[..., 1], b[..., 2])

    whole = np.arange(len(common))
    f1_b = float(_f1(*cells_b.sum(axis=0)))
    f1_a = float(_f1(*cells_a.sum(axis=0)))
    delta = f1_a - f1_b
    side = _side_alpha(alpha, alternative)
    if len(common) < 2:
        low, high, p_greater, p_less = -1.0, 1.0, 1.0, 1.0
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = stats.bootstrap(
                (whole,),
                statistic,
                vectorized=True,
                n_resamples=BOOTSTRAP_RESAMPLES,
                confidence_level=1 - 2 * side,
                method="percentile",
                rng=np.random.default_rng(seed),
            )
        boot = np.asarray(result.bootstrap_distribution, dtype=float)
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
        if math.isnan(low) or math.isnan(high):  # every resample identical
            low = high = delta
        p_greater = float((np.sum(boot <= threshold) + 1) / (boot.size + 1))
        p_less = float((np.sum(boot >= threshold) + 1) / (boot.size + 1))
    return _f1_judged(
        (delta, low, high, _p_from_one_sided(p_greater, p_less, alternative)),
        before,
        after,
        common,
        test="bootstrap-f1",
        threshold=threshold,
        side=side,
        alternative=alternative,
        alpha=alpha,
        before=f1_b,
        after=f1_a,
    )


def _f1_judged(
    figures: tuple[float, float, float, float],
    before_runs: dict[str, list[Mapping[str, Any]]],
    after_runs: dict[str, list[Mapping[str, Any]]],
    common: list[str],
    **rest: Any,
) -> Verdict:
    """An F1 verdict from (delta, low, high, p), with the case and run counts both tests report."""
    return _judged(
        *figures,
        n_cases=len(common),
        n_runs=max(max(len(before_runs[c]), len(after_runs[c])) for c in common),
        n_pairs=sum(min(len(before_runs[c]), len(after_runs[c])) for c in common),
        measure="f1",
        **rest,
    )


def _f1_gradient(tp: float, fp: float, fn: float) -> np.ndarray:
    """∂F1/∂(tp, fp, fn) of F1 = 2·tp / (2·tp + fp + fn), at the pooled cell shares."""
    denominator = 2 * tp + fp + fn
    if denominator <= 0:
        return np.zeros(3)
    square = denominator**2
    return np.array([2 * (fp + fn) / square, -2 * tp / square, -2 * tp / square])


def _shares(by_case: dict[str, list[Mapping[str, Any]]], common: list[str], positive: str) -> Any:
    return np.array([_cells(by_case[c], positive) for c in common]).mean(axis=0)


def _passes(rows: Sequence[Mapping[str, Any]]) -> list[float]:
    return [1.0 if r.get("pass_fail") == "pass" else 0.0 for r in rows]


def _f1_noise(
    before: dict[str, list[Mapping[str, Any]]],
    after: dict[str, list[Mapping[str, Any]]],
    common: list[str],
    gradients: tuple[Any, Any],
    positive: str,
) -> tuple[float, float]:
    """The run-level variance of the F1 change (delta method) and its degrees of freedom.

    A run of a case either passes or fails, so its noise is the case's pass/fail variance times
    the squared F1 step between the two outcomes (tp↔fn for a positive case, tn↔fp for a
    negative one). The variance is pooled over both sides' runs of the case (n_b + n_a − 2
    degrees of freedom): two runs a side leave too little to estimate it per side, and a
    per-side estimate that is zero most of the time makes the interval too narrow (9 % of
    no-effect changes "better" at α = 5 % on the noisy demo). A case with one run a side gets
    the largest two-outcome variance, 1/4. The degrees of freedom (Welch–Satterthwaite) let
    the bound use Student's t, not the normal, where few cases vary.
    """
    total, spread = 0.0, 0.0
    for case in common:
        runs = [_passes(before[case]), _passes(after[case])]
        step = 0.0
        for side, gradient in enumerate(gradients):
            truth = outcome(dict(before[case][0] if side == 0 else after[case][0]), positive)
            # gradient order (tp, fp, fn); a true negative moves F1 by nothing
            gap = gradient[0] - gradient[2] if truth in ("tp", "fn") else gradient[1]
            step += float(gap) ** 2 / len(runs[side])
        df = len(runs[0]) + len(runs[1]) - 2
        if df <= 0:
            total += step / 4
            continue
        squares = sum(float(np.sum((np.array(r) - np.mean(r)) ** 2)) for r in runs)
        part = step * squares / df
        total += part
        spread += part**2 / df
    scale = len(common) ** 2
    return total / scale, (math.inf if spread == 0 else total**2 / spread)


def _f1_runs(
    before: dict[str, list[Mapping[str, Any]]],
    after: dict[str, list[Mapping[str, Any]]],
    common: list[str],
    positive: str,
    alpha: float,
    alternative: Alternative,
    threshold: float,
) -> Verdict:
    """The F1 change on these cases, with its run-level standard error by the delta method.

    The two sides' noise adds (pairing on seeds could only narrow it further, so ignoring it
    is on the safe side); the bounds and p-value are normal at the side's ``alpha``. Reruns
    of the cases that vary shrink exactly this error, which the bootstrap over cases does not:
    there the spread between cases stays whatever the runs.
    """
    shares_b, shares_a = _shares(before, common, positive), _shares(after, common, positive)
    f1_b, f1_a = float(_f1(*shares_b)), float(_f1(*shares_a))
    variance, df = _f1_noise(
        before, after, common, (_f1_gradient(*shares_b), _f1_gradient(*shares_a)), positive
    )
    delta = f1_a - f1_b
    se = math.sqrt(variance)
    side = _side_alpha(alpha, alternative)
    law = stats.norm if math.isinf(df) else stats.t(df)
    z = float(law.ppf(1 - side))
    low, high = max(-1.0, delta - z * se), min(1.0, delta + z * se)
    if se > 0:
        p_greater = float(law.sf((delta - threshold) / se))
        p_less = float(law.cdf((delta - threshold) / se))
    else:
        p_greater = 0.0 if delta > threshold else 1.0
        p_less = 0.0 if delta < threshold else 1.0
    return _f1_judged(
        (delta, low, high, _p_from_one_sided(p_greater, p_less, alternative)),
        before,
        after,
        common,
        test="delta-f1-runs",
        threshold=threshold,
        side=side,
        alternative=alternative,
        alpha=alpha,
        before=f1_b,
        after=f1_a,
    )


# -- adaptive sampling -----------------------------------------------------------------------------
Judge = Callable[[Rows, Rows, float], Verdict]  # before, after, alpha of this look → verdict
Rerun = Callable[[Sequence[str], int], tuple[Rows, Rows]]  # cases, runs each → (before, after)
# before, after, the cases judged (None: all) → the cases to rerun, most telling first
Pick = Callable[[Rows, Rows, Iterable[str] | None], list[str]]


SPENDING_POWER = 2  # α(t) = α·t²: between Pocock's (t¹) and O'Brien–Fleming's (≈ t³) shapes


def spent(alpha: float, fraction: float) -> float:
    """The error rate spent by the time a share ``fraction`` of the planned runs has been seen:
    Kim & DeMets' power family α(t) = α·t^ρ with ρ = 2.

    ρ = 2 keeps enough for the first look that a clear change (ten discordant runs of ten)
    decides there without a rerun, and still leaves the last look — the one that settles the
    close calls — most of ``alpha``; O'Brien–Fleming's shape would spend nothing early
    and make every clear decision pay for a second look.
    """
    if fraction <= 0:
        return 0.0
    if fraction >= 1:
        return alpha
    return alpha * fraction**SPENDING_POWER


def look_alphas(alpha: float, fractions: Sequence[float]) -> list[float]:
    """The one-sided level each look is judged at; together they spend ``alpha``.

    ``fractions`` is the share of the planned runs each look will have seen (the last is 1);
    look k gets α(t_k) − α(t_{k−1}) of :func:`spent`. By the union bound the chance that any
    look says "better" by luck stays within ``alpha`` whatever the test, however the looks
    correlate and whichever cases the reruns picked. A group-sequential boundary from the
    looks' joint normal distribution would grant the last look more, but it assumes each
    look's information grows as its share of the runs; reruns of only the cases that disagree
    grow it faster, and on the noisy demo that let 6 % of no-effect candidates through.
    """
    if len(fractions) <= 1:
        return [alpha]
    marks = [spent(alpha, min(1.0, max(0.0, f))) for f in fractions[:-1]] + [alpha]
    return [marks[0]] + [b - a for a, b in itertools.pairwise(marks)]


def deciding_cases(
    before_rows: Rows, after_rows: Rows, cases: Iterable[str] | None = None
) -> list[str]:
    """Cases whose runs are not all the same on both sides: only their reruns can move a verdict.

    The order (most varying first) and the choice depend only on how much a case's runs
    disagree, not on which side was better, so picking them does not bias the next look.
    """
    paired = pair(before_rows, after_rows, cases=cases)
    spread: list[tuple[int, str]] = []
    for case in paired.cases:
        values = [v for p in paired.runs[case] for v in p]
        if len(set(values)) > 1:
            ones = sum(1 for v in values if v)
            spread.append((min(ones, len(values) - ones), case))
    return [case for _, case in sorted(spread, key=lambda s: (-s[0], s[1]))]


def can_improve(
    before_rows: Rows, after_rows: Rows, cases: Iterable[str] | None = None
) -> list[str]:
    """The cases to rerun when the question is "is after better": those whose runs disagree
    (most first, :func:`deciding_cases`), then those both sides failed on every run so far.

    A fix shows only where the before side fails, and with one run a case a fixed case that
    slipped on its first run looks like one neither side can pass; left out of the reruns, it
    can never show its fix (on the Optimizer's 8 built cases, one run each, that cost a real
    fix one chance in five). The cases both always passed are left out: they can only tell
    against the change. Whether a case's runs all failed on both sides does not change when a
    pair's sides swap, so the choice does not look at which side a run favoured and keeps the
    verdict's error rate.
    """
    varying = deciding_cases(before_rows, after_rows, cases)
    paired = pair(before_rows, after_rows, cases=cases)
    failed = [
        c for c in paired.cases if paired.runs[c] and not any(b or a for b, a in paired.runs[c])
    ]
    return varying + failed


def reindex(existing: Rows, extra: Rows) -> list[dict[str, Any]]:
    """Extra runs numbered after the runs a case already has, so pairs keep their partners."""
    top: dict[str, int] = {}
    for row in existing:
        case = str(row["case_id"])
        top[case] = max(top.get(case, -1), int(row.get("run_index", 0)))
    out: list[dict[str, Any]] = []
    for row in extra:
        case = str(row["case_id"])
        out.append({**row, "run_index": top.get(case, -1) + 1 + int(row.get("run_index", 0))})
    return out


def decide(
    before_rows: Rows,
    after_rows: Rows,
    *,
    judge: Judge,
    wants_more: Callable[[Verdict], bool],
    rerun: Rerun | None = None,
    alpha: float = 0.05,
    max_extra_runs: int = 0,
    looks: int = 3,
    cases: Iterable[str] | None = None,
    pick: Pick | None = None,
    futile: Callable[[Verdict, float, float], bool] | None = None,
) -> tuple[Verdict, list[dict[str, Any]], list[dict[str, Any]]]:
    """Judge, and while ``wants_more`` and budget remain, rerun the deciding cases and judge again.

    ``futile(verdict, fraction, alpha)`` stops the reruns early when a look's data (``fraction``
    of the planned runs) already rule out what the caller looks for (:func:`futile_for_better`).
    Stopping for futility can only turn a later "better" into "not shown", so it never raises
    the false-accept rate (a non-binding boundary); what it costs in power
    ``benchmarks/bench_verdicts.py`` measures.

    ``pick`` chooses the cases to rerun (default :func:`deciding_cases`); any choice keeps the
    error rate as long as it does not look at which side a discordant run favoured.

    The schedule is fixed before any outcome is seen: ``max_extra_runs`` case-runs per variant
    split evenly over ``looks − 1`` extra looks, each look judged at its share of ``alpha``
    (:func:`look_alphas`, by the share of the planned runs it has seen). Returns the last
    verdict (its ``extra_runs`` and ``looks`` filled in) and the accumulated before/after rows.
    """
    before = [dict(r) for r in before_rows]
    after = [dict(r) for r in after_rows]
    wanted = None if cases is None else list(cases)
    planned = looks if rerun is not None and max_extra_runs > 0 and looks > 1 else 1
    per_look = max_extra_runs // (planned - 1) if planned > 1 else 0
    # the information each look will have, fixed before any outcome is seen: the run pairs
    # measured so far plus the reruns scheduled up to that look
    first = sum(len(p) for p in pair(before, after, cases=wanted).runs.values())
    whole = max(1, first + per_look * (planned - 1))
    fractions = [(first + per_look * k) / whole for k in range(planned)]
    alphas = look_alphas(alpha, fractions)
    verdict = judge(before, after, alphas[0])
    extra = 0
    done = 1
    stopped = False
    while rerun is not None and done < planned and wants_more(verdict) and per_look > 0:
        if futile is not None and futile(verdict, fractions[done - 1], alpha):
            stopped = True
            break
        candidates = (pick or deciding_cases)(before, after, wanted)
        if not candidates:
            break
        chosen = candidates[:per_look]
        runs_each = max(1, per_look // len(chosen))
        new_before, new_after = rerun(chosen, runs_each)
        shifted_after = reindex([*before, *after], new_after)
        before = [*before, *reindex([*before, *after], new_before)]
        after = [*after, *shifted_after]
        extra += len(chosen) * runs_each
        verdict = judge(before, after, alphas[done])
        done += 1
    verdict = replace(verdict, extra_runs=extra, looks=done, alpha=alpha, futile=stopped)
    if extra:
        verdict = replace(verdict, n_runs=_first_runs(before_rows, after_rows))
    return verdict, before, after


FUTILITY_BETA = 0.1  # the most power the futility boundary may cost at the design effect


def futile_for_better(
    verdict: Verdict, fraction: float, alpha: float, beta: float = FUTILITY_BETA
) -> bool:
    """The futility boundary of a "better than threshold" question at an interim look that has
    seen ``fraction`` of the planned runs: the data rule out the effect the design looks for.

    The design effect is the one the whole planned budget detects with ``POWER`` at the
    decision's one-sided ``alpha``: its z-statistic grows as θ·√t with θ = z₁₋α + z_POWER.
    A look stops when its observed z falls below θ·√t − z₁₋β(t), where β(t) = β·t² spends the
    chance of stopping a real effect of that size across the looks (the shape ``spent`` gives α).
    So a real change of the design size is stopped at most ``beta`` of the time; a larger one
    less; a change that does nothing sits at z ≈ 0 and is stopped once enough runs make the
    boundary rise above it. Stopping only ever turns a later "better" into "not shown", so it
    never raises the false-accept rate (a non-binding boundary). A look with no spread to
    measure (no discordant run) carries no evidence either way and is never futile.
    Questions of another kind (is it worse?) have their own ``wants_more``.
    """
    if verdict.alternative != "greater" or fraction <= 0 or verdict.ci_high <= verdict.ci_low:
        return False
    # the look's one-sided p as a z-statistic (the exact tests give no standard error)
    observed = float(stats.norm.isf(min(1.0, max(verdict.p_value, 1e-12))))
    theta = float(stats.norm.isf(alpha)) + float(stats.norm.ppf(POWER))
    allowed = spent(beta, fraction)
    boundary = theta * math.sqrt(fraction) - float(stats.norm.ppf(1 - allowed))
    return observed < boundary


def _first_runs(before_rows: Rows, after_rows: Rows) -> int:
    counts: dict[tuple[int, str], int] = {}
    for side, rows in enumerate((before_rows, after_rows)):
        for row in rows:
            if row.get("pass_fail") != "invalid":
                key = (side, str(row["case_id"]))
                counts[key] = counts.get(key, 0) + 1
    return max(counts.values(), default=0)


__all__ = [
    "Alternative",
    "Decision",
    "Paired",
    "Pick",
    "Verdict",
    "can_improve",
    "compare_f1",
    "compare_paired",
    "decide",
    "deciding_cases",
    "futile_for_better",
    "look_alphas",
    "pair",
    "reindex",
    "run_seed",
    "spent",
]
