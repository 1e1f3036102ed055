"""Screening and confirmation (engine.evaluation.gates.screening), on constructed result rows.

The reruns here are seeded draws from stated pass probabilities (as benchmarks/bench_verdicts.py
draws them), so each test's outcome is exact; the demo agent's own runs are in
tests/test_queue_eval.py.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from engine.core.config import GatesConfig
from engine.evaluation.gates.outcome import Sampling
from engine.evaluation.gates.queued import judge_queued
from engine.evaluation.gates.screening import CONFIRMED, gained, screen_and_confirm
from engine.evaluation.verdict import Rerun, compare_paired

Rows = list[dict[str, Any]]
CFG = GatesConfig()
DEFAULTS = Sampling(alpha=CFG.alpha, max_extra_runs=CFG.max_extra_runs, looks=CFG.looks)


def rows(outcomes: Mapping[str, Sequence[bool]]) -> Rows:
    return [
        {"case_id": c, "run_index": i, "variant": "skill", "pass_fail": "pass" if p else "fail"}
        for c, runs in outcomes.items()
        for i, p in enumerate(runs)
    ]


def drawn(probs: Mapping[str, float], ids: Sequence[str], runs: int, rng: random.Random) -> Rows:
    return rows({c: [rng.random() < probs[c] for _ in range(runs)] for c in ids})


def rerun_from(
    before: Mapping[str, float], after: Mapping[str, float], rng: random.Random, log: list[Any]
) -> Rerun:
    def rerun(ids: Sequence[str], runs: int) -> tuple[Rows, Rows]:
        log.append((list(ids), runs))
        return drawn(before, ids, runs, rng), drawn(after, ids, runs, rng)

    return rerun


def test_gained_ranks_by_gain_then_room_then_id() -> None:
    before = rows({"a": [False, True], "b": [False, False], "c": [True, True], "d": [False, False]})
    after = rows({"a": [True, True], "b": [True, False], "c": [True, True], "d": [True, False]})
    # a and b and d each gained half a point; b and d had more room (the parent passed neither)
    assert gained(before, after) == ["b", "d", "a"]
    assert gained(before, after, ["a", "c"]) == ["a"]


def test_gained_ranks_a_one_sided_case_above_a_larger_gain_both_ways() -> None:
    # steady: +50 points, its 5 discordant pairs all one way (one-sided p = 1/32); coin: +60
    # points, but 8 pairs its way and 2 the other (p = 56/1024): the steady one is the likelier fix
    before = rows({"steady": [False] * 10, "coin": [False] * 8 + [True] * 2})
    after = rows({"steady": [True] * 5 + [False] * 5, "coin": [True] * 8 + [False] * 2})
    assert gained(before, after) == ["steady", "coin"]


def test_the_schedule_at_the_defaults_and_a_fix_confirmed_on_its_own_runs() -> None:
    """20 cases gained on the first evaluation: 12 are rerun twice, the best 6 four times, and
    the best 3 get the 48 confirmation runs between them; only those 48 pairs are tested."""
    ids = [f"c{i:02d}" for i in range(40)]
    before = rows({c: [False, False] for c in ids})
    after = rows({c: [i < 20, False] for i, c in enumerate(ids)})
    fixed = {"c00", "c01", "c02"}
    parent = dict.fromkeys(ids, 0.0)
    candidate = {c: 1.0 if c in fixed else 0.0 for c in ids}
    log: list[Any] = []
    found = screen_and_confirm(
        before, after, DEFAULTS, rerun_from(parent, candidate, random.Random(1), log)
    )
    assert [(len(ids_), runs) for ids_, runs in log] == [(12, 2), (6, 4), (CONFIRMED, 16)]
    assert [r.runs_each for r in found.rounds] == [2, 4]
    assert set(found.confirmed) == fixed and found.confirmation_runs == 48
    v = found.verdict
    assert v.better and (v.n_cases, v.n_runs, v.n_pairs) == (3, 16, 48)
    assert v.p_value == pytest.approx(0.5**48)  # 48 discordant pairs, all one way
    assert v.extra_runs == 12 * 2 + 6 * 4 + 48


def test_cases_that_only_looked_better_are_not_confirmed() -> None:
    """The first evaluation says three cases improved; fresh runs of both sides are alike."""
    before = rows({c: [False, False] for c in "abcdef"})
    after = rows({c: [c in "abc", c in "abc"] for c in "abcdef"})
    same = dict.fromkeys("abcdef", 0.5)
    found = screen_and_confirm(
        before, after, DEFAULTS, rerun_from(same, same, random.Random(3), [])
    )
    assert set(found.confirmed) <= set("abcdef") and len(found.confirmed) == CONFIRMED
    assert not found.verdict.better
    # judged on the runs that picked them, the same three cases would have passed
    assert compare_paired(before, after, cases="abc", test="runs", alternative="greater").better


def test_nothing_gained_means_no_reruns_and_no_verdict() -> None:
    before = rows({c: [True, False] for c in "abc"})
    log: list[Any] = []
    found = screen_and_confirm(before, before, DEFAULTS, rerun_from({}, {}, random.Random(0), log))
    assert log == [] and found.confirmed == [] and found.verdict.decision == "inconclusive"


def test_screening_keeps_the_false_accept_rate_and_testing_the_picked_runs_does_not() -> None:
    """200 candidates that change nothing on a 30-case benchmark of coin-like and steady cases.

    Seeded (random.Random(7)) so the count is exact; the bound is the binomial 95 % upper limit
    for a 5 % rate over 200 decisions. Testing the screened cases on the screening runs instead
    of fresh ones is the regression to the mean the design avoids: it passes far more.
    """
    rng = random.Random(7)
    probs = {f"c{i:02d}": [0.0, 0.3, 0.5, 0.7, 1.0][i % 5] for i in range(30)}
    ids = sorted(probs)
    accepted = naive = 0
    sampling = DEFAULTS
    for _ in range(200):
        before, after = drawn(probs, ids, 2, rng), drawn(probs, ids, 2, rng)
        found = screen_and_confirm(before, after, sampling, rerun_from(probs, probs, rng, []))
        accepted += found.verdict.better
        picked = gained(before, after)[:CONFIRMED]
        naive += compare_paired(
            before, after, cases=picked, test="runs", alternative="greater"
        ).better
    assert accepted <= 15  # 5 % of 200 is 10; 15 is its binomial 95 % upper limit
    assert naive > 40  # over four times alpha (57 of 200 with this seed)


def test_without_reruns_a_candidate_naming_no_targets_is_judged_on_the_whole_benchmark() -> None:
    before = rows({c: [False, False] for c in "abcdef"})
    after = rows({c: [True, True] for c in "abcdef"})
    found = judge_queued(before, after, [], Sampling(max_extra_runs=0), None)
    assert found.passed and found.screening is None and found.guardrail is None
    assert found.verdict.n_cases == 6 and found.verdict.alpha == 0.05 and found.extra_runs == 0


def test_a_candidate_worse_on_the_whole_benchmark_is_not_screened() -> None:
    ids = [f"c{i}" for i in range(12)]
    before = rows({c: [True, True] for c in ids})
    after = rows({c: [i == 0, i == 0] for i, c in enumerate(ids)})
    log: list[Any] = []
    parent = dict.fromkeys(ids, 1.0)
    worse = {c: float(c == "c0") for c in ids}
    found = judge_queued(
        before,
        after,
        [],
        DEFAULTS,
        rerun_from(parent, worse, random.Random(2), log),
    )
    assert not found.passed and found.screening is None
    assert found.guardrail is not None and found.guardrail.worse
    assert found.broad is not None and not found.broad.better
    assert found.extra_runs == sum(len(ids_) * runs for ids_, runs in log)
