"""compare_paired, compare_f1 and decide against worked cases whose answers are known.

Expected p-values come from the textbook formula (the exact binomial tail of McNemar's test is
a sum of binomial coefficients over 2^n) or from scipy's independent two-sample-free routines
(``ttest_rel`` on the per-case means), never from the module under test.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from engine.evaluation.verdict import (
    compare_f1,
    compare_paired,
    decide,
    deciding_cases,
    look_alphas,
    pair,
    spent,
)


def rows(outcomes: dict[str, list[str]], **extra: Any) -> list[dict[str, Any]]:
    """Result rows: ``{"c1": ["pass", "fail"]}`` = case c1, run 0 passed, run 1 failed."""
    return [
        {"case_id": case, "run_index": i, "variant": "skill", "pass_fail": pf, **extra}
        for case, runs in outcomes.items()
        for i, pf in enumerate(runs)
    ]


def test_all_tied_data_is_inconclusive_with_no_change() -> None:
    same = rows({f"c{i}": ["pass", "pass"] for i in range(5)} | {"f": ["fail", "fail"]})
    v = compare_paired(same, same)
    assert (v.decision, v.delta, v.ci_low, v.ci_high, v.p_value) == ("inconclusive", 0, 0, 0, 1)
    assert v.n_cases == 6 and v.n_runs == 2
    assert v.more is None  # no run count turns a zero difference into a decision


def test_one_case_uses_the_exact_run_test() -> None:
    # 4 runs failing before, 4 passing after: McNemar exact, 4 discordant pairs all one way,
    # one-sided p = (1/2)^4 = 0.0625 — not enough at alpha 0.05 however large the change.
    v = compare_paired(rows({"c": ["fail"] * 4}), rows({"c": ["pass"] * 4}), alternative="greater")
    assert v.test == "mcnemar-exact"
    assert v.p_value == pytest.approx(1 / 16)
    assert v.decision == "inconclusive" and v.delta == 1.0
    assert v.more is not None and v.more >= 1
    two = compare_paired(rows({"c": ["fail"] * 4}), rows({"c": ["pass"] * 4}))
    assert two.p_value == pytest.approx(2 / 16)


def test_only_invalid_runs_measure_nothing() -> None:
    bad = rows({"c1": ["invalid", "invalid"], "c2": ["invalid"]})
    good = rows({"c1": ["pass", "pass"], "c2": ["pass"]})
    for v in (compare_paired(bad, good), compare_paired(good, bad), compare_paired(bad, bad)):
        assert v.decision == "inconclusive"
        assert (v.n_cases, v.n_runs, v.p_value) == (0, 0, 1.0)
        assert (v.ci_low, v.ci_high) == (-1.0, 1.0)
    assert "0 paired cases" in compare_paired(bad, bad).line()


def test_invalid_runs_are_dropped_from_a_case() -> None:
    before = rows({"c": ["fail", "invalid", "fail"]})
    after = rows({"c": ["pass", "pass", "invalid"]})
    paired = pair(before, after)
    assert paired.runs["c"] == [(0.0, 1.0)]  # only run 0 is valid on both sides
    assert paired.before_means["c"] == 0.0 and paired.after_means["c"] == 1.0


def test_clear_improvement_on_targeted_runs() -> None:
    # 10 cases × 2 runs fail before; after, 12 of the 20 runs pass and none got worse.
    before = rows({f"c{i}": ["fail", "fail"] for i in range(10)})
    after = rows({f"c{i}": ["pass", "pass"] if i < 6 else ["fail", "fail"] for i in range(10)})
    v = compare_paired(before, after, test="runs", alternative="greater")
    assert v.decision == "better"
    assert v.p_value == pytest.approx(0.5**12)  # all 12 discordant pairs went one way
    assert v.delta == pytest.approx(12 / 20)
    # the interval: Clopper–Pearson lower bound of 12/12 is 0.05^(1/12), scaled to 12 of 20
    assert v.ci_low == pytest.approx((2 * 0.05 ** (1 / 12) - 1) * 12 / 20)
    assert v.ci_high == pytest.approx(12 / 20)
    assert v.line().startswith("+60.0 pts [")
    assert "better (10 paired cases, 2 runs)" in v.line()
    # the line names the question its p answers: a guardrail's p is for a loss, so a clear gain
    # reads p(worse?)=1, not "p=1 better"
    assert "p(better?)=<0.001 better" in v.line()
    guard = compare_paired(before, after, test="runs", alternative="less")
    assert "p(worse?)=1 " in guard.line()
    assert "p(changed?)=" in compare_paired(before, after, test="runs").line()


def test_clear_regression_across_cases_matches_a_paired_t_test() -> None:
    before = rows({f"c{i}": ["pass", "pass"] for i in range(20)})
    after_runs = {f"c{i}": (["fail", "fail"] if i < 8 else ["fail", "pass"]) for i in range(12)}
    after_runs |= {f"c{i}": ["pass", "pass"] for i in range(12, 20)}
    after = rows(after_runs)
    v = compare_paired(before, after)
    means_b = [1.0] * 20
    means_a = [0.0] * 8 + [0.5] * 4 + [1.0] * 8
    expected = stats.ttest_rel(means_a, means_b)
    assert v.test == "paired-t" and v.decision == "worse"
    assert v.delta == pytest.approx(sum(a - b for a, b in zip(means_a, means_b, strict=True)) / 20)
    assert v.p_value == pytest.approx(float(expected.pvalue))
    ci = expected.confidence_interval(0.95)
    assert (v.ci_low, v.ci_high) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_non_inferiority_margin() -> None:
    # a 1-in-40 chance flip is "not worse than −10 points" with confidence, not "better"
    before = rows({f"c{i}": ["pass", "pass"] for i in range(20)})
    after = rows({f"c{i}": ["pass", "pass"] if i else ["pass", "fail"] for i in range(20)})
    plain = compare_paired(before, after, test="runs", alternative="greater")
    assert plain.decision == "inconclusive"
    loose = compare_paired(before, after, test="runs", alternative="greater", threshold=-0.10)
    assert loose.decision == "better" and loose.ci_low > -0.10
    assert "better than -10.0 pts" in loose.line()


def test_runs_pair_on_seed_when_both_sides_drew_the_same_seeds() -> None:
    before = [
        {"case_id": "c", "run_index": 0, "seed": 11, "pass_fail": "pass"},
        {"case_id": "c", "run_index": 1, "seed": 22, "pass_fail": "fail"},
    ]
    after = [
        {"case_id": "c", "run_index": 0, "seed": 22, "pass_fail": "fail"},
        {"case_id": "c", "run_index": 1, "seed": 11, "pass_fail": "pass"},
    ]
    assert sorted(pair(before, after).runs["c"]) == [(0.0, 0.0), (1.0, 1.0)]
    v = compare_paired(before, after, test="runs")
    assert v.delta == 0 and v.p_value == 1.0
    other = [{**r, "seed": r["seed"] + 1} for r in after]  # different seeds: run_index pairs
    assert sorted(pair(before, other).runs["c"]) == [(0.0, 1.0), (1.0, 0.0)]


def test_cases_filter_and_score_measure() -> None:
    before = [
        {"case_id": "a", "run_index": 0, "pass_fail": "fail", "score": 0.25},
        {"case_id": "b", "run_index": 0, "pass_fail": "fail", "score": 0.5},
    ]
    after = [
        {"case_id": "a", "run_index": 0, "pass_fail": "fail", "score": 0.75},
        {"case_id": "b", "run_index": 0, "pass_fail": "pass", "score": 0.5},
    ]
    v = compare_paired(before, after, cases=["a"], measure="score", test="runs")
    assert v.n_cases == 1 and v.delta == pytest.approx(0.5)
    assert v.measure == "score" and v.line().startswith("score +50.0 pts")


def labelled(outcomes: dict[str, tuple[str, list[str]]]) -> list[dict[str, Any]]:
    """Rows with a ground truth and the agent's verdicts: ``{"c": ("vuln", ["vuln", "safe"])}``."""
    return [
        {
            "case_id": case,
            "run_index": i,
            "pass_fail": "pass" if verdict == truth else "fail",
            "ground_truth": truth,
            "judge_verdict": verdict,
        }
        for case, (truth, verdicts) in outcomes.items()
        for i, verdict in enumerate(verdicts)
    ]


def test_f1_change_matches_the_confusion_counts() -> None:
    truth = {f"v{i}": "vuln" for i in range(6)} | {f"s{i}": "safe" for i in range(6)}
    before = labelled(
        {c: (t, ["safe" if c in ("v0", "v1", "v2") else t]) for c, t in truth.items()}
    )
    after = labelled({c: (t, ["safe" if c == "v0" else t]) for c, t in truth.items()})
    v = compare_f1(before, after, positive_label="vuln", alternative="greater")
    # before: tp 3, fn 3 → F1 = 6/9; after: tp 5, fn 1 → F1 = 10/11
    assert v.before == pytest.approx(6 / 9) and v.after == pytest.approx(10 / 11)
    assert v.delta == pytest.approx(10 / 11 - 6 / 9)
    assert v.ci_low <= v.delta <= v.ci_high
    same = compare_f1(before, before, positive_label="vuln", threshold=-0.01, alternative="greater")
    assert (same.delta, same.ci_low, same.ci_high) == (0.0, 0.0, 0.0)
    assert same.decision == "better"  # identical behaviour is "not worse than −1 point"
    reproducible = compare_f1(before, after, positive_label="vuln", seed=3)
    assert reproducible == compare_f1(before, after, positive_label="vuln", seed=3)


def test_the_first_look_spends_alpha_times_its_share_squared() -> None:
    """Kim & DeMets' power family with ρ = 2: α(t) = α·t², all of alpha at t = 1."""
    assert spent(0.05, 0.5) == pytest.approx(0.0125) and spent(0.05, 0.2) == pytest.approx(0.002)
    assert spent(0.05, 1.0) == 0.05 and spent(0.05, 0.0) == 0.0
    assert look_alphas(0.05, [0.5, 1.0])[0] == pytest.approx(0.0125)  # nothing seen before it
    assert look_alphas(0.05, [1.0]) == [0.05]  # one look keeps the whole alpha


def test_look_levels_keep_the_chance_of_any_lucky_look_within_alpha() -> None:
    """Simulated independently of the module: a statistic that sees a share t of the data is a
    Brownian motion at time t over √t. Under no effect, look k says "better" with chance at
    most its level α(t_k) − α(t_{k−1}), and some look does with chance at most alpha."""
    fractions = [0.25, 0.625, 1.0]
    levels = look_alphas(0.05, fractions)
    assert levels == pytest.approx([0.05 * 0.25**2, 0.05 * (0.625**2 - 0.25**2),
                                    0.05 * (1 - 0.625**2)])  # fmt: skip
    rng = np.random.default_rng(1)
    steps = np.diff([0.0, *fractions])
    walk = np.cumsum(rng.normal(size=(400_000, 3)) * np.sqrt(steps), axis=1)
    crossed = walk / np.sqrt(fractions) >= np.array([stats.norm.isf(x) for x in levels])
    assert crossed.mean(axis=0) == pytest.approx(levels, abs=1.5e-3)  # each look at its level
    anywhere = float(crossed.any(axis=1).mean())
    assert 0.03 < anywhere <= 0.05  # the union bound holds, and spends most of alpha


def test_decide_reruns_only_deciding_cases_and_records_extra_runs() -> None:
    before = rows({"t1": ["fail", "fail"], "t2": ["fail", "pass"], "flat": ["pass", "pass"]})
    after = rows({"t1": ["pass", "fail"], "t2": ["pass", "pass"], "flat": ["pass", "pass"]})
    assert deciding_cases(before, after) == ["t1", "t2"]
    asked: list[tuple[list[str], int]] = []

    def rerun(cases: Any, runs: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        asked.append((list(cases), runs))
        return rows({c: ["fail"] * runs for c in cases}), rows({c: ["pass"] * runs for c in cases})

    def judge(b: Any, a: Any, alpha: float) -> Any:
        return compare_paired(b, a, test="runs", alternative="greater", alpha=alpha)

    first = judge(before, after, 0.05)
    assert first.decision == "inconclusive"  # 2 discordant pairs: p = 1/4
    v, b_rows, a_rows = decide(
        before,
        after,
        judge=judge,
        wants_more=lambda v: v.decision == "inconclusive",
        rerun=rerun,
        max_extra_runs=8,
        looks=3,
    )
    assert asked[0] == (["t1", "t2"], 2)  # 8 runs over 2 extra looks: 4 a look, 2 a case
    assert v.decision == "better" and v.extra_runs == len(asked) * 4 and v.looks == 1 + len(asked)
    assert v.n_runs == 2 and f"+{v.extra_runs} extra" in v.line()
    assert {r["run_index"] for r in a_rows if r["case_id"] == "t1"} >= {0, 1, 2, 3}
    assert len(b_rows) == len(a_rows)
    # without a budget nothing reruns and the first look keeps the whole alpha
    alone, _, _ = decide(before, after, judge=judge, wants_more=lambda v: True, rerun=rerun)
    assert alone.extra_runs == 0 and alone == first


# -- worked cases computed with scipy's distributions, independently of the module ----------------
def _mixed(up: int, down: int, tied: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One run each of ``up`` cases that went fail → pass, ``down`` pass → fail, ``tied`` same."""
    before = {f"u{i}": ["fail"] for i in range(up)} | {f"d{i}": ["pass"] for i in range(down)}
    after = {f"u{i}": ["pass"] for i in range(up)} | {f"d{i}": ["fail"] for i in range(down)}
    same = {f"t{i}": ["pass" if i % 2 else "fail"] for i in range(tied)}
    return rows(before | same), rows(after | same)


@pytest.mark.parametrize(("up", "down", "tied"), [(9, 2, 9), (7, 7, 6), (3, 0, 17), (1, 5, 4)])
def test_mcnemar_with_discordant_pairs_both_ways_matches_scipy(
    up: int, down: int, tied: int
) -> None:
    before, after = _mixed(up, down, tied)
    n, k, alpha = up + down + tied, up, 0.05
    v = compare_paired(before, after, test="runs", alternative="greater", alpha=alpha)
    # the exact one-sided tail: P(X ≥ up) for X ~ Binomial(up + down, 1/2)
    assert v.p_value == pytest.approx(float(stats.binom.sf(k - 1, up + down, 0.5)))
    # Clopper–Pearson bounds of the share that went up, from the beta distribution
    low = float(stats.beta.ppf(alpha, k, up + down - k + 1)) if k else 0.0
    high = float(stats.beta.ppf(1 - alpha, k + 1, up + down - k)) if k < up + down else 1.0
    assert v.ci_low == pytest.approx((2 * low - 1) * (up + down) / n)
    assert v.ci_high == pytest.approx((2 * high - 1) * (up + down) / n)
    assert v.delta == pytest.approx((up - down) / n) and v.n_pairs == n
    assert v.decision == ("better" if v.ci_low > 0 else "inconclusive")
    two = compare_paired(before, after, test="runs", alpha=alpha)
    expected = stats.binomtest(k, up + down, 0.5, alternative="two-sided").pvalue
    assert two.p_value == pytest.approx(min(1.0, float(expected)))


def test_a_one_sided_case_level_test_matches_scipy() -> None:
    means_b = [0.0, 0.25, 0.5, 0.5, 0.75, 0.25, 0.0, 1.0]
    means_a = [0.5, 0.25, 0.75, 1.0, 0.75, 0.5, 0.25, 1.0]

    def four_runs(means: list[float]) -> list[dict[str, Any]]:
        return rows({f"c{i}": ["pass"] * round(4 * m) + ["fail"] * (4 - round(4 * m))
                     for i, m in enumerate(means)})  # fmt: skip

    v = compare_paired(four_runs(means_b), four_runs(means_a), alternative="greater", alpha=0.05)
    expected = stats.ttest_rel(means_a, means_b, alternative="greater")
    assert v.test == "paired-t" and v.p_value == pytest.approx(float(expected.pvalue))
    diffs = [a - b for a, b in zip(means_a, means_b, strict=True)]
    mean, se = float(sum(diffs) / 8), float(stats.sem(diffs))
    # the one-sided bound at alpha: mean − t(1 − alpha, n − 1) · se
    assert v.ci_low == pytest.approx(mean - float(stats.t.ppf(0.95, 7)) * se)
    assert v.decision == ("better" if v.ci_low > 0 else "inconclusive")
    assert v.decision == "better" and float(expected.pvalue) < 0.05


def test_graded_scores_on_runs_use_a_paired_t_test_like_scipy() -> None:
    scores_b = [0.2, 0.4, 0.5, 0.1, 0.3, 0.6]
    scores_a = [0.5, 0.4, 0.9, 0.2, 0.35, 0.7]

    def graded(scores: list[float]) -> list[dict[str, Any]]:
        return [
            {"case_id": "c", "run_index": i, "pass_fail": "fail", "score": s}
            for i, s in enumerate(scores)
        ]

    v = compare_paired(graded(scores_b), graded(scores_a), test="runs", measure="score",
                       alternative="greater")  # fmt: skip
    expected = stats.ttest_rel(scores_a, scores_b, alternative="greater")
    assert v.test == "paired-t-runs" and v.p_value == pytest.approx(float(expected.pvalue))


def test_one_case_and_only_invalid_runs_leave_the_f1_change_undecided() -> None:
    one = labelled({"v": ("vuln", ["safe", "safe"])})
    fixed = labelled({"v": ("vuln", ["vuln", "vuln"])})
    v = compare_f1(one, fixed, positive_label="vuln", alternative="greater")
    assert v.delta == 1.0 and (v.ci_low, v.ci_high) == (-1.0, 1.0)  # one case: no spread to use
    assert v.decision == "inconclusive" and v.n_cases == 1
    invalid = [{**r, "pass_fail": "invalid"} for r in fixed]
    nothing = compare_f1(one, invalid, positive_label="vuln")
    assert (nothing.decision, nothing.n_cases, nothing.p_value) == ("inconclusive", 0, 1.0)


def test_decide_does_not_rerun_tied_or_invalid_data() -> None:
    tied = rows({f"c{i}": ["pass", "pass"] for i in range(4)})
    invalid = rows({f"c{i}": ["invalid", "invalid"] for i in range(4)})
    asked: list[Any] = []

    def rerun(cases: Any, runs: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        asked.append(cases)
        return [], []

    def judge(b: Any, a: Any, alpha: float) -> Any:
        return compare_paired(b, a, test="runs", alternative="greater", alpha=alpha)

    for before, after in ((tied, tied), (invalid, tied), (invalid, invalid)):
        v, _, _ = decide(before, after, judge=judge, wants_more=lambda v: not v.better,
                         rerun=rerun, max_extra_runs=24)  # fmt: skip
        assert v.decision == "inconclusive" and v.extra_runs == 0 and v.looks == 1
    assert asked == []  # no case whose runs disagree: no rerun can move the verdict


def test_a_run_level_change_weighs_each_case_alike_when_reruns_made_some_cases_longer() -> None:
    """Eight cases, one run each: seven pass on both sides, one fails before and passes after.
    Reruns of that one case (it is the one that can change the answer) add 24 pairs, all its
    way. The exact test counts 25 discordant pairs of 32; the change it reports is the case
    set's, 0.875 → 1.000 (+12.5 pts), not the run pairs' 25/32 (+78.1), with the same p and
    the same decision. Clopper–Pearson for 25 of 25 at one-sided 0.05: 0.05^(1/25) = 0.8871,
    so the lower bound is (2·0.8871 − 1)·(1/8)."""
    before = rows({f"c{i}": ["pass"] for i in range(7)} | {"x": ["fail"] * 25})
    after = rows({f"c{i}": ["pass"] for i in range(7)} | {"x": ["pass"] * 25})
    v = compare_paired(before, after, test="runs", alternative="greater")
    assert (v.test, v.decision, v.n_pairs) == ("mcnemar-exact", "better", 32)
    assert v.p_value == pytest.approx(2**-25)
    assert (v.before, v.after, v.delta) == pytest.approx((0.875, 1.0, 0.125))
    assert v.ci_low == pytest.approx((2 * 0.05 ** (1 / 25) - 1) / 8)
    assert v.ci_high == pytest.approx(0.125)
    assert v.line().startswith("+12.5 pts [+9.7, +12.5] p(better?)=<0.001 better (8 paired")
    # the same runs with every case as long: nothing to weigh, the run pairs' own figures
    even = compare_paired(
        rows({f"c{i}": ["pass"] * 25 for i in range(7)} | {"x": ["fail"] * 25}),
        rows({f"c{i}": ["pass"] * 25 for i in range(7)} | {"x": ["pass"] * 25}),
        test="runs",
        alternative="greater",
    )
    assert (even.before, even.after, even.delta) == pytest.approx((0.875, 1.0, 0.125))
    assert even.p_value == pytest.approx(v.p_value)
