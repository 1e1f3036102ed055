"""Finding the cases a candidate changed, then proving the change on runs that did not find them.

A candidate that names no targets still claims "better", and a real fix usually changes a few
cases only: +50 points on five cases of a hundred is two points on the whole benchmark, below what
the benchmark's own run-to-run noise lets a paired test show (on the noisy demo a whole-benchmark
test caught such a fix about one time in seven, ``benchmarks/bench_verdicts.py``). Looking at the
whole benchmark for the cases that did better and then testing those same runs would be worse:
the cases were picked *because* their runs looked better, so chance alone passes them
(regression to the mean).

So the search and the proof use different runs:

* **screening** — rounds of fresh paired runs of the cases that did better so far (first the
  whole evaluation's, then each round's pooled runs), narrowing to fewer cases with more runs
  each: by default 12 cases × 2 runs, then 6 × 4 (``gates.max_extra_runs`` split over
  ``gates.looks − 1`` rounds, at most two). It decides nothing, so it spends no error rate;
* **confirmation** — the 3 cases that did best in screening get ``gates.max_extra_runs`` fresh
  paired runs between them, and only those runs are tested (exact run-level test, one-sided at the
  full ``gates.alpha``). Which cases were chosen depended on the screening runs alone, so under
  "no effect" the confirmation runs are as fair a coin as any: the false-accept rate stays within
  ``alpha``, however the cases were picked.

Screening and confirmation therefore add up to twice ``gates.max_extra_runs`` case-runs per
variant (96 at the defaults): one budget to find the cases, one to prove them; the whole
decision, with the broad comparison and the Guardrail before them, is bounded in
``engine.evaluation.gates.queued.most_extra_runs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from scipy import stats

from engine.evaluation.gates.outcome import Sampling
from engine.evaluation.verdict import Rerun, Rows, Verdict, compare_paired, pair, reindex

CONFIRMED = 3  # cases taken to confirmation: enough that one lucky case cannot carry it alone
FIRST_RUNS = 2  # runs a case in the first screening round; each later round doubles them
# at most this many looks' worth of rounds: the runs a case double each round, so a third round
# of the budget's share would hold fewer cases than go on to confirmation
SCREENING_LOOKS = 3


@dataclass(frozen=True)
class Round:
    cases: list[str]
    runs_each: int

    def to_dict(self) -> dict[str, Any]:
        return {"cases": list(self.cases), "runs_each": self.runs_each}


@dataclass(frozen=True)
class Screened:
    """The confirmation's verdict and how its cases were found.

    ``verdict`` is judged on the confirmation runs only; its ``extra_runs`` counts every run the
    screening and the confirmation added (per variant).
    """

    verdict: Verdict
    confirmed: list[str]
    rounds: list[Round] = field(default_factory=list)
    confirmation_runs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "rounds": [r.to_dict() for r in self.rounds],
            "confirmed": list(self.confirmed),
            "confirmation_runs": self.confirmation_runs,
        }


def gained(before: Rows, after: Rows, cases: Sequence[str] | None = None) -> list[str]:
    """Cases whose paired runs went better more often than worse, the most one-sided first.

    Ranked by the exact one-sided p-value of their discordant pairs (a binomial test), not by
    the mean gain: a case the parent sometimes passes throws discordant pairs both ways by
    chance, a fixed case the parent always failed throws them one way only, and at the same
    mean gain the second is the likelier fix. On the noisy demo that took a narrow fix's
    confirmation from about 80 % to about 88 % (``benchmarks/bench_verdicts.py``); screening
    decides nothing, so how it ranks leaves the confirmation's error rate as it was.
    Ties go to the case the parent passed least (it had the most room to gain), then by id.
    """
    paired = pair(before, after, cases=cases)
    ranked: list[tuple[float, float, str]] = []
    for case in paired.cases:
        wins = sum(1 for b, a in paired.runs[case] if a > b)
        losses = sum(1 for b, a in paired.runs[case] if b > a)
        if wins > losses:
            p = float(stats.binom.sf(wins - 1, wins + losses, 0.5))
            ranked.append((p, paired.before_means[case], case))
    return [case for *_, case in sorted(ranked)]


def screen_and_confirm(before: Rows, after: Rows, sampling: Sampling, rerun: Rerun) -> Screened:
    """Screen the whole evaluation for the cases that did better, then test them on fresh runs."""
    budget = sampling.max_extra_runs
    steps = max(1, min(sampling.looks, SCREENING_LOOKS) - 1)
    pooled_b, pooled_a = list(before), list(after)
    pool: list[str] | None = None  # every case
    rounds: list[Round] = []
    extra = 0
    for step in range(steps):
        runs_each = FIRST_RUNS * 2**step
        size = (budget // steps) // runs_each
        found = gained(pooled_b, pooled_a, pool)
        if size < 1 or not found:
            break
        pool = found[:size]
        new_b, new_a = rerun(pool, runs_each)
        existing = [*pooled_b, *pooled_a]
        pooled_b += reindex(existing, new_b)
        pooled_a += reindex(existing, new_a)
        rounds.append(Round(pool, runs_each))
        extra += len(pool) * runs_each
    chosen = gained(pooled_b, pooled_a, pool)[:CONFIRMED]
    runs_each = budget // max(1, len(chosen))
    if not chosen or runs_each < 1:  # nothing to confirm, or no runs to confirm it on
        empty = compare_paired([], [], alpha=sampling.alpha, test="runs", alternative="greater")
        return Screened(replace(empty, extra_runs=extra), chosen, rounds)
    fresh_b, fresh_a = rerun(chosen, runs_each)
    verdict = compare_paired(
        fresh_b, fresh_a, cases=chosen, alpha=sampling.alpha, test="runs", alternative="greater"
    )
    extra += len(chosen) * runs_each
    return Screened(replace(verdict, extra_runs=extra), chosen, rounds, len(chosen) * runs_each)


__all__ = ["CONFIRMED", "Round", "Screened", "gained", "screen_and_confirm"]
