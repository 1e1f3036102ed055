"""The decisions of the optimiser as pure functions over score tables.

A score table has one row per pool candidate (in the order they joined the pool, the seed skill
first) mapping each validation case to its score. Everything that decides which skill survives —
which parent to develop next, whether a child is kept, which candidate is finally chosen and
whether it may be submitted — is here, free of I/O, so each rule is tested on hand-made tables.

- Parents are drawn by per-case Pareto coverage: a candidate that is best (or tied best) on more
  validation cases is drawn more often, so a version that leads on a few hard cases keeps being
  developed even if its mean is lower (GEPA's instance-level Pareto selection). Among candidates
  that lead on exactly the same cases only one is kept, so duplicates do not crowd the draw.
- A child is kept only when its minibatch score beats its parent's strictly, on the same cases.
- The final pick is the highest validation mean; the seed wins ties, so an optimisation that
  found nothing better changes nothing.
- Promotion needs a holdout mean that beats the seed's, by at least a configurable minimum, and
  no case marked critical may score lower than it did with the seed. (tRPC-Agent-Go lets an
  equal mean through by default; here the seed keeps every tie, on holdout as on validation.)
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Scores = Mapping[str, float]
Table = Sequence[Scores]
# Float noise must not turn "gained exactly the minimum" into a refusal.
_EPSILON = 1e-9


def mean_score(scores: Scores, cases: Sequence[str]) -> float:
    """Mean over ``cases`` in their order (the same order always gives the same float)."""
    return math.fsum(scores[c] for c in cases) / len(cases) if cases else 0.0


def instance_fronts(table: Table, cases: Sequence[str]) -> dict[str, set[int]]:
    """For each case, the candidates whose score on it equals the best score anyone reached."""
    fronts: dict[str, set[int]] = {}
    for case in cases:
        best = max(row[case] for row in table)
        fronts[case] = {i for i, row in enumerate(table) if row[case] == best}
    return fronts


def pruned_fronts(table: Table, cases: Sequence[str]) -> dict[str, set[int]]:
    """The fronts without the candidates whose every lead is shared with a surviving candidate.

    Candidates are examined by ascending validation mean (then pool order) and one is removed
    at a time, so of several candidates leading on exactly the same cases the last one examined
    (the best mean, the newest on a tie) survives.
    """
    fronts = instance_fronts(table, cases)
    means = [mean_score(row, cases) for row in table]
    order = sorted(set().union(*fronts.values()), key=lambda i: (means[i], i))
    dominated: set[int] = set()
    changed = True
    while changed:
        changed = False
        for cand in order:
            if cand in dominated:
                continue
            leads = [front for front in fronts.values() if cand in front]
            shared = all(any(o != cand and o not in dominated for o in f) for f in leads)
            if leads and shared:
                dominated.add(cand)
                changed = True
                break
    return {case: front - dominated for case, front in fronts.items()}


def coverage(table: Table, cases: Sequence[str]) -> list[int]:
    """Each candidate's weight in the parent draw: the cases on whose pruned front it sits."""
    weights = [0] * len(table)
    for front in pruned_fronts(table, cases).values():
        for cand in front:
            weights[cand] += 1
    return weights


def select_parent(table: Table, cases: Sequence[str], rng: random.Random) -> int:
    """Draw a parent with probability proportional to its coverage (best mean if none covers)."""
    fronts = pruned_fronts(table, cases)
    weighted = [cand for case in cases for cand in sorted(fronts[case])]
    if not weighted:
        return best_candidate(table, cases)
    return weighted[rng.randrange(len(weighted))]


def sample_minibatch(size: int, population: int, rng: random.Random) -> list[int]:
    """``size`` distinct positions out of ``population`` (no case twice in one minibatch)."""
    return rng.sample(range(population), min(size, population))


def strictly_improves(parent: Sequence[float], child: Sequence[float]) -> bool:
    """Keep a child only when it beats its parent on the same minibatch: equal is not enough."""
    return math.fsum(child) > math.fsum(parent)


def best_candidate(table: Table, cases: Sequence[str]) -> int:
    """The highest validation mean; the earliest candidate (the seed) wins every tie."""
    best, best_mean = 0, -math.inf
    for index, row in enumerate(table):
        value = mean_score(row, cases)
        if value > best_mean:
            best, best_mean = index, value
    return best


@dataclass(frozen=True)
class Promotion:
    """Whether the selected candidate may be submitted, and the first rule that said no."""

    eligible: bool
    reason: str
    seed_mean: float | None = None
    candidate_mean: float | None = None
    delta: float | None = None
    regressed: tuple[str, ...] = ()


def assess_promotion(
    *,
    selected_is_seed: bool,
    seed: Scores,
    candidate: Scores,
    cases: Sequence[str],
    critical: Sequence[str],
    min_gain: float,
) -> Promotion:
    """The holdout rules, first failing rule wins (tRPC-Agent-Go's assessPromotion order)."""
    if selected_is_seed:
        return Promotion(False, "no accepted candidate improved validation")
    if not cases:
        return Promotion(False, "no holdout split configured")
    base, new = mean_score(seed, cases), mean_score(candidate, cases)
    delta = new - base
    regressed = tuple(c for c in cases if c in set(critical) and candidate[c] < seed[c])
    if delta <= _EPSILON:
        reason = f"holdout mean {new:.4f} does not beat the seed's {base:.4f}"
    elif delta < min_gain - _EPSILON:
        reason = f"holdout delta {delta:.4f} is below the required {min_gain:.4f}"
    elif regressed:
        reason = f"critical holdout case regressed: {regressed[0]}"
    else:
        reason = "holdout requirements satisfied"
    eligible = reason == "holdout requirements satisfied"
    return Promotion(eligible, reason, base, new, delta, regressed)


__all__ = [
    "Promotion",
    "Scores",
    "Table",
    "assess_promotion",
    "best_candidate",
    "coverage",
    "instance_fronts",
    "mean_score",
    "pruned_fronts",
    "sample_minibatch",
    "select_parent",
    "strictly_improves",
]
