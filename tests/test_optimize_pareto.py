"""The GEPA optimizer's decisions on hand-made score tables: Pareto parent draw, the minibatch
screen, final pick and its tie rule, holdout promotion (lower bound, minimum gain, critical cases).

The pick and the promotion are paired verdicts now (engine.evaluation.verdict): a gain must hold at
its
interval's lower bound, so the promotion tests use a holdout of twelve cases — on four, no gain
short of every case improving could be told from noise.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from scipy import stats

from engine.loops.gepa.pareto import (
    EpochBatches,
    assess_promotion,
    best_candidate,
    coverage,
    instance_fronts,
    minibatch_keeps,
    pool_standings,
    pruned_fronts,
    select_parent,
    validated_pick,
)

CASES = ["c1", "c2", "c3"]


def table(*rows: list[float]) -> list[dict[str, float]]:
    return [dict(zip(CASES, row, strict=True)) for row in rows]


# -- Pareto parent selection ---------------------------------------------------------------------


def test_fronts_hold_every_candidate_tied_for_best() -> None:
    scores = table([1, 0, 0.5], [1, 0.5, 0.5], [0, 0.5, 0.2])
    assert instance_fronts(scores, CASES) == {"c1": {0, 1}, "c2": {1, 2}, "c3": {0, 1}}


def test_a_candidate_whose_every_lead_is_shared_is_pruned() -> None:
    # A leads on c1, c2; B on c3; C ties A on c1, c2 only and has the lower mean.
    a, b, c = [1.0, 1.0, 0.2], [0.2, 0.2, 1.0], [1.0, 1.0, 0.0]
    scores = table(a, b, c)
    assert pruned_fronts(scores, CASES) == {"c1": {0}, "c2": {0}, "c3": {1}}
    assert coverage(scores, CASES) == [2, 1, 0]


def test_parents_are_drawn_in_proportion_to_coverage() -> None:
    scores = table([1.0, 1.0, 0.2], [0.2, 0.2, 1.0], [1.0, 1.0, 0.0])
    rng = random.Random(7)
    drawn = Counter(select_parent(scores, CASES, rng) for _ in range(3000))
    assert drawn[2] == 0  # C never
    assert 1.7 < drawn[0] / drawn[1] < 2.3  # A about twice as often as B


def test_identical_leaders_collapse_to_one_the_better_mean_kept() -> None:
    # Both lead on exactly c1 and c2; the second has the better mean and survives alone.
    scores = table([1, 1, 0.0], [1, 1, 0.3], [0, 0, 1])
    assert coverage(scores, CASES) == [0, 2, 1]


def test_identical_candidates_keep_the_newest() -> None:
    scores = table([1, 0, 0], [1, 0, 0], [0, 1, 1])
    assert coverage(scores, CASES) == [0, 1, 2]


def test_a_lone_seed_is_always_the_parent() -> None:
    scores = table([0.0, 0.0, 0.0])
    assert {select_parent(scores, CASES, random.Random(s)) for s in range(20)} == {0}


def test_the_draw_is_reproducible_from_the_seed() -> None:
    scores = table([1, 0, 1], [0, 1, 0], [0.5, 0.5, 0.5])
    first = [select_parent(scores, CASES, random.Random(3)) for _ in range(5)]
    again = [select_parent(scores, CASES, random.Random(3)) for _ in range(5)]
    assert first == again


def test_minibatches_never_repeat_a_case_and_an_epoch_draws_every_case_once() -> None:
    batches = EpochBatches(3, 10, random.Random(1))
    drawn: list[int] = []
    for _ in range(200):
        batch = batches.next()
        assert len(batch) == len(set(batch)) == 3
        drawn += batch
    # 600 draws of 10 cases: each epoch of ten holds every case once (topping up the last
    # minibatch of an epoch from the next one shifts the epoch's edges by at most a batch)
    assert sorted(Counter(drawn).values()) == [60] * 10
    assert sorted(drawn[:9]) == sorted(set(drawn[:9]))
    assert sorted(EpochBatches(5, 2, random.Random(1)).next()) == [0, 1]


# -- acceptance and final pick --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parent", "child", "kept"),
    [
        ([1, 0, 0], [1, 1, 0], True),  # one case up, none down: sign-test p = 1/2, the screen
        ([1, 0, 0], [0, 0, 1], False),  # equal sum: not an improvement
        ([1, 1, 0], [1, 0, 0], False),
        ([0, 0, 0], [1, 1, 0], True),
        ([1, 1, 0, 0], [0, 1, 1, 1], True),  # two up, one down: p = 1/2
        ([0.5, 0.25], [0.5, 0.25000001], False),  # a float's width is no gain
    ],
)
def test_the_minibatch_screen_keeps_a_child_that_mostly_went_up(
    parent: list[float], child: list[float], kept: bool
) -> None:
    assert minibatch_keeps(parent, child) is kept


def test_the_pick_is_the_best_validation_mean_and_its_verdict_only_a_record() -> None:
    # Validation selects, Holdout decides: one lucky case makes the pick (its one-run verdict
    # says it is no evidence), and only the holdout verdict may then submit it.
    cases = [f"v{i}" for i in range(10)]
    seed = dict.fromkeys(cases, 0.0)
    lucky = {**seed, "v0": 1.0}  # one case better: p = 1/2 by the exact test
    strong = {c: 1.0 if i < 7 else 0.0 for i, c in enumerate(cases)}
    index, verdict = validated_pick([seed, lucky], cases, alpha=0.05)
    assert index == 1 and verdict is not None and verdict.decision == "inconclusive"
    index, verdict = validated_pick([seed, lucky, strong], cases, alpha=0.05)
    assert index == 2 and verdict is not None and verdict.better
    # seven of ten cases up, none down: the paired t-test over cases
    expected = stats.ttest_1samp([1.0] * 7 + [0.0] * 3, 0.0, alternative="greater").pvalue
    assert verdict.p_value == pytest.approx(float(expected))
    assert validated_pick([seed], cases, alpha=0.05) == (0, None)
    assert validated_pick([seed, dict(seed)], cases, alpha=0.05) == (0, None)  # a tie: the seed


def test_after_a_recheck_the_pick_comes_from_the_leaders_and_the_rest_say_so() -> None:
    # Members 1 and 2 led after one run and ran Validation again (their scores are now the
    # mean of two runs); member 3's single run is higher still, but it was behind them when
    # the leaders were chosen, so it cannot win on one lucky run now.
    rows = table([0, 1, 0], [1, 0.5, 0.5], [1, 1, 0.5], [1, 1, 1])
    index, verdict = validated_pick(rows, CASES, alpha=0.05, leaders={1, 2})
    assert index == 2 and verdict is not None
    assert validated_pick(rows, CASES, alpha=0.05)[0] == 3  # without the recheck: the top mean
    standings = pool_standings(rows, CASES, index, {1, 2})
    assert standings[3].why.startswith("validation mean 1.0000 on one run, behind the 2 leaders")
    assert standings[2].why.startswith("picked")
    assert "a candidate has a higher one (0.8333)" in standings[1].why
    # leaders that all fall to the seed's mean or below leave the seed picked
    assert (
        validated_pick(table([1, 1, 0], [1, 0, 0.5], [1, 1, 1]), CASES, alpha=0.05, leaders={1})[0]
        == 0
    )


def test_best_validation_mean_wins() -> None:
    assert best_candidate(table([0, 0, 1], [1, 1, 0], [1, 0, 1]), CASES) == 1


def test_the_seed_wins_a_tie() -> None:
    assert best_candidate(table([1, 0, 1], [0, 1, 1], [1, 1, 0]), CASES) == 0


def test_among_later_candidates_the_earlier_wins_a_tie() -> None:
    assert best_candidate(table([0, 0, 0], [1, 0, 1], [0, 1, 1]), CASES) == 1


# -- holdout promotion -----------------------------------------------------------------------------

HOLDOUT = [f"h{i:02d}" for i in range(12)]
SEED = {c: 1.0 if i % 2 else 0.0 for i, c in enumerate(HOLDOUT)}  # mean 0.5
FAILING = [c for c in HOLDOUT if not SEED[c]]


def promote(candidate: dict[str, float], *, critical: tuple[str, ...] = (), gain: float = 0.0):  # type: ignore[no-untyped-def]
    return assess_promotion(
        selected_is_seed=False,
        seed=SEED,
        candidate=candidate,
        cases=HOLDOUT,
        critical=list(critical),
        min_gain=gain,
    )


def fixed(n: int) -> dict[str, float]:
    return {**SEED, **dict.fromkeys(FAILING[:n], 1.0)}


def test_selected_seed_is_never_promoted() -> None:
    result = assess_promotion(
        selected_is_seed=True, seed={}, candidate={}, cases=[], critical=[], min_gain=0
    )
    assert not result.eligible
    assert result.reason == "no candidate has a higher validation mean than the seed"


def test_no_holdout_no_promotion() -> None:
    result = assess_promotion(
        selected_is_seed=False, seed={}, candidate={}, cases=[], critical=[], min_gain=0
    )
    assert (result.eligible, result.reason) == (False, "no holdout split configured")


def test_holdout_gain_is_measured_against_the_minimum() -> None:
    better = fixed(6)  # mean 0.5 → 1.0: six of twelve cases fixed, none broken
    assert promote(better).eligible
    assert promote(better, gain=0.2).eligible  # the lower bound (0.229) clears a fifth
    short = promote(better, gain=0.25)
    assert not short.eligible and short.reason.startswith("holdout gain not shown")
    refused = promote(better, gain=0.6)
    assert not refused.eligible
    assert refused.reason == "holdout delta 0.5000 is below the required 0.6000"
    tie = promote(dict(SEED))  # the seed keeps a tie, whatever the minimum
    assert (tie.eligible, tie.reason) == (
        False,
        "holdout mean 0.5000 does not beat the seed's 0.5000",
    )


def test_a_gain_that_may_be_noise_is_not_promoted() -> None:
    # two of twelve cases fixed: the paired t-test over cases gives p = 0.083 (one-sided)
    result = promote(fixed(2))
    assert not result.eligible and result.delta == pytest.approx(2 / 12)
    assert result.verdict is not None and result.verdict.p_value == pytest.approx(0.0830, abs=1e-3)
    assert result.reason.startswith("holdout gain not shown: score +16.7 pts [")


def test_a_worse_holdout_mean_is_refused() -> None:
    worse = {**SEED, HOLDOUT[1]: 0.0}
    result = promote(worse)
    assert not result.eligible and result.delta == pytest.approx(-1 / 12)
    assert result.reason == "holdout mean 0.4167 does not beat the seed's 0.5000"


def test_a_critical_regression_blocks_promotion_despite_a_better_mean() -> None:
    candidate = {**fixed(6), HOLDOUT[1]: 0.0}  # six fixed, h01 worse
    assert promote(candidate).eligible
    result = promote(candidate, critical=("h01",))
    assert not result.eligible
    assert result.reason == "critical holdout case regressed: h01"
    assert result.regressed == ("h01",)
    # A critical case that did not get worse does not block.
    assert promote(candidate, critical=("h00", "h03")).eligible


def test_every_pool_member_has_its_wins_and_the_rule_that_stopped_it() -> None:
    cases = [f"c{i}" for i in range(12)]
    seed = dict.fromkeys(cases, 0.0) | {"c0": 1.0}
    even = seed | {"c1": 1.0, "c2": 1.0}  # the best mean: two cases more than the seed
    other = seed | {"c3": 1.0}  # wins c3, which the best one does not
    lower = dict.fromkeys(cases, 0.0)
    table = [seed, even, other, lower]
    picked, _verdict = validated_pick(table, cases, alpha=0.05)
    assert picked == 1

    found = pool_standings(table, cases, picked)

    assert [s.wins for s in found] == [("c0",), ("c0", "c1", "c2"), ("c0", "c3"), ()]
    assert found[0].why == "the seed"
    assert found[1].why == "picked: the best validation mean, 0.2500 against the seed's 0.0833"
    assert found[2].why == (
        "validation mean 0.1667 beats the seed's 0.0833, but a candidate has a higher one (0.2500)"
    )
    assert found[3].why == "validation mean 0.0000 does not beat the seed's 0.0833"
    # A later candidate with the best mean loses the tie to the earlier one, and says so.
    twin = seed | {"c4": 1.0, "c5": 1.0}
    found = pool_standings([seed, even, twin], cases, 1)
    assert found[2].why == (
        "validation mean 0.2500 beats the seed's 0.0833, but ties the best one, and the earlier "
        "candidate wins a tie"
    )
    # When no candidate has a higher mean the seed is kept, and says so.
    found = pool_standings([seed, lower], cases, 0)
    assert [s.why for s in found] == [
        "the seed, kept: no candidate has a higher validation mean",
        "validation mean 0.0000 does not beat the seed's 0.0833",
    ]
