"""The decisions of the GEPA optimizer as pure functions over score tables.

A score table has one row per pool candidate (in the order they joined the pool, the seed skill
first) mapping each validation case to its score. Everything that decides which skill survives —
which parent to develop next, whether a child is kept, which candidate is finally chosen and
whether it may be submitted — is here, free of I/O, so each rule is tested on hand-made tables.

- Parents are drawn by per-case Pareto coverage: a candidate that is best (or tied best) on more
  validation cases is drawn more often, so a version that leads on a few hard cases keeps being
  developed even if its mean is lower (GEPA's instance-level Pareto selection). Among candidates
  that lead on exactly the same cases only one is kept, so duplicates do not crowd the draw.
- A child is kept when its minibatch scores beat its parent's on the same cases by a paired
  verdict at ``SCREEN_ALPHA``: a deliberately loose screen (a minibatch is a few cases, where no
  strict test can ever pass); a child let through by chance only costs a validation evaluation.
  A merged child (engine.loops.gepa.merge) only has to score no lower than its parent there.
- The final pick is the highest validation mean, the seed on a tie (tRPC-Agent-Go's rule:
  Validation selects, Holdout decides). Validation is no test: it picked the best of the pool,
  so its own comparison with the seed is biased by the pick; the holdout cases never took part
  in the search, and only their paired verdict (below) can say the pick is better. A search
  that found only noise submits nothing because its pick fails there, at most ``alpha`` of
  the time.
- Promotion needs the holdout change's lower bound (paired over cases, at ``alpha``) above a
  configurable minimum gain, and no case marked critical may score lower than it did with the
  seed — a hard limit, whatever the statistics say.
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.evaluation.verdict import Judge, Rows, Verdict, compare_paired

Scores = Mapping[str, float]
Table = Sequence[Scores]
# Float noise must not turn "gained exactly the minimum" into a refusal.
_EPSILON = 1e-9
SCREEN_ALPHA = 0.5  # the minibatch screen: "more of it went up than down"
_SCREEN_EPSILON = 1e-6  # a gain smaller than this is a float's width, not a gain


def score_rows(scores: Scores, cases: Sequence[str]) -> list[dict[str, Any]]:
    """A score column as the one-run rows a paired verdict (and its reruns) read."""
    return [score_row(c, 0, float(scores[c])) for c in cases]


def score_row(case_id: str, run_index: int, score: float) -> dict[str, Any]:
    """One run as a verdict row. Only a full score counts as a pass: adaptive sampling picks the
    cases to rerun by whether their runs' passes disagree, and a partial score is no pass."""
    status = "pass" if score >= 1.0 - _EPSILON else "fail"
    return {"case_id": case_id, "run_index": run_index, "score": score, "pass_fail": status}


def paired_scores(
    before: Scores,
    after: Scores,
    cases: Sequence[str],
    *,
    alpha: float,
    threshold: float = 0.0,
) -> Verdict:
    """The paired verdict of two score columns over the same cases (one run each)."""
    return score_judge(cases, threshold)(score_rows(before, cases), score_rows(after, cases), alpha)


def score_judge(cases: Sequence[str], threshold: float = 0.0) -> Judge:
    """ "Better by more than ``threshold``" over ``cases``, for any number of runs per case, so
    adaptive sampling can look again at the same question with the reruns added."""
    wanted = list(cases)

    def judge(before: Rows, after: Rows, alpha: float) -> Verdict:
        return compare_paired(
            before,
            after,
            cases=wanted,
            alpha=alpha,
            alternative="greater",
            threshold=threshold,
            measure="score",
        )

    return judge


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


class EpochBatches:
    """Minibatches that go through every Feedback case once per epoch, in a shuffled order.

    Drawing each round's cases afresh leaves some cases unseen for a whole run (with 8 of 43
    cases a round, one case in eight is never drawn in ten rounds), and the lesson only that
    case holds — the guard of its false alarm — is never learnt. gepa's own sampler goes
    through the data in epochs for this reason; unlike it, the last minibatch of an epoch is
    topped up from the next epoch's order, never padded with a case it already holds, so no
    case counts twice in one keep decision.
    """

    def __init__(self, size: int, population: int, rng: random.Random) -> None:
        self.size = min(size, population)
        self.population = population
        self.rng = rng
        self.order: list[int] = []

    def next(self) -> list[int]:
        batch: list[int] = []
        while len(batch) < self.size:
            if not self.order:
                self.order = self.rng.sample(range(self.population), self.population)
            position = next(i for i, p in enumerate(self.order) if p not in batch)
            batch.append(self.order.pop(position))
        return batch


def minibatch_screen(parent: Sequence[float], child: Sequence[float]) -> Verdict:
    """The paired comparison of a child with its parent on the same minibatch."""
    cases = [str(i) for i in range(min(len(parent), len(child)))]
    return paired_scores(
        dict(zip(cases, parent, strict=False)),
        dict(zip(cases, child, strict=False)),
        cases,
        alpha=0.05,
    )


def minibatch_keeps(parent: Sequence[float], child: Sequence[float]) -> bool:
    """Keep a child whose gain has p ≤ ``SCREEN_ALPHA`` on the minibatch; a tie never passes."""
    screen = minibatch_screen(parent, child)
    return screen.delta > _SCREEN_EPSILON and screen.p_value <= SCREEN_ALPHA + _EPSILON


def merge_keeps(parent: Sequence[float], child: Sequence[float]) -> bool:
    """Keep a merged child that scores at least its parent on the minibatch (the reference's
    merge rule: not below the parents). A merge adds what another lineage learnt on cases of
    its own; a random minibatch seldom holds them, so asking it to show a gain there would
    refuse nearly every merge, while one that breaks the parent's cases still fails here."""
    return math.fsum(child) >= math.fsum(parent) - _SCREEN_EPSILON


def validated_pick(
    table: Table, cases: Sequence[str], *, alpha: float, leaders: Collection[int] = ()
) -> tuple[int, Verdict | None]:
    """The best validation mean (the seed, index 0, on a tie) — among the seed and the
    ``leaders`` when some were rechecked (a member left at one run was behind them already) —
    and for the record the paired comparison of the pick with the seed on those scores, which
    decides nothing: the pick was chosen for them, so only the holdout verdict can confirm it."""
    among = sorted({0, *leaders}) if leaders else list(range(len(table)))
    best = among[best_candidate([table[i] for i in among], cases)]
    if best == 0:
        return 0, None
    return best, paired_scores(table[0], table[best], cases, alpha=alpha)


@dataclass(frozen=True)
class PoolStanding:
    """One pool member after the search: the cases it leads on, and why it was (not) picked."""

    wins: tuple[str, ...]
    why: str


def pool_standings(
    table: Table, cases: Sequence[str], picked: int, leaders: Collection[int] = ()
) -> list[PoolStanding]:
    """Each candidate's wins — the validation cases on whose front it sits while some other
    candidate does not — and the reason it was or was not picked, so a run that submits nothing
    says, per candidate, which rule stopped it."""
    fronts = instance_fronts(table, cases)
    everyone = set(range(len(table)))
    means = [mean_score(row, cases) for row in table]
    best = picked if leaders else best_candidate(table, cases)
    seed = means[0]
    found: list[PoolStanding] = []
    for index, value in enumerate(means):
        wins = tuple(c for c in cases if index in fronts[c] and fronts[c] != everyone)
        if leaders and index not in leaders and index not in (0, picked):
            why = (
                f"validation mean {value:.4f} on one run, behind the {len(leaders)} leaders "
                "that ran Validation twice"
            )
        elif index == picked:
            why = (
                "the seed, kept: no candidate has a higher validation mean"
                if index == 0
                else f"picked: the best validation mean, {value:.4f} against the seed's {seed:.4f}"
            )
        elif index == 0:
            why = "the seed"
        elif value <= seed + _EPSILON:
            why = f"validation mean {value:.4f} does not beat the seed's {seed:.4f}"
        elif value >= means[best] - _EPSILON:
            why = (
                f"validation mean {value:.4f} beats the seed's {seed:.4f}, but ties the best "
                "one, and the earlier candidate wins a tie"
            )
        else:
            why = (
                f"validation mean {value:.4f} beats the seed's {seed:.4f}, but a candidate "
                f"has a higher one ({means[best]:.4f})"
            )
        found.append(PoolStanding(wins, why))
    return found


def best_candidate(table: Table, cases: Sequence[str]) -> int:
    """The highest validation mean; the earliest candidate (the seed) wins every tie."""
    best, best_mean = 0, -math.inf
    for index, row in enumerate(table):
        value = mean_score(row, cases)
        if value > best_mean:
            best, best_mean = index, value
    return best


def promotion_floor(min_gain: float) -> float:
    """The gain the holdout verdict's lower bound must clear (a float's width under min_gain)."""
    return min_gain - _EPSILON if min_gain > 0 else 0.0


@dataclass(frozen=True)
class Promotion:
    """Whether the selected candidate may be submitted, and the first rule that said no."""

    eligible: bool
    reason: str
    seed_mean: float | None = None
    candidate_mean: float | None = None
    delta: float | None = None
    regressed: tuple[str, ...] = ()
    verdict: Verdict | None = None


def assess_promotion(
    *,
    selected_is_seed: bool,
    seed: Scores,
    candidate: Scores,
    cases: Sequence[str],
    critical: Sequence[str],
    min_gain: float,
    alpha: float = 0.05,
    verdict: Verdict | None = None,
) -> Promotion:
    """The holdout rules, first failing rule wins (tRPC-Agent-Go's assessPromotion order).

    The gain must hold at the interval's lower bound (a paired comparison over the holdout
    cases, one-sided ``alpha``), not only in the mean: a noisy agent's holdout mean moves by
    chance. A critical case that scores lower is a hard limit. ``seed`` and ``candidate`` are
    per-case means; ``verdict``, when given, is the comparison already decided with reruns
    (judged with :func:`promotion_floor`), else their one run per case decides.
    """
    if selected_is_seed:
        return Promotion(False, "no candidate has a higher validation mean than the seed")
    if not cases:
        return Promotion(False, "no holdout split configured")
    base, new = mean_score(seed, cases), mean_score(candidate, cases)
    delta = new - base
    regressed = tuple(c for c in cases if c in set(critical) and candidate[c] < seed[c])
    if verdict is None:
        verdict = paired_scores(
            seed, candidate, cases, alpha=alpha, threshold=promotion_floor(min_gain)
        )
    if delta <= _EPSILON:
        reason = f"holdout mean {new:.4f} does not beat the seed's {base:.4f}"
    elif delta < min_gain - _EPSILON:
        reason = f"holdout delta {delta:.4f} is below the required {min_gain:.4f}"
    elif regressed:
        reason = f"critical holdout case regressed: {regressed[0]}"
    elif not verdict.better:
        reason = f"holdout gain not shown: {verdict.line()}"
    else:
        reason = f"holdout requirements satisfied: {verdict.line()}"
    eligible = reason.startswith("holdout requirements satisfied")
    return Promotion(eligible, reason, base, new, delta, regressed, verdict)


__all__ = [
    "EpochBatches",
    "PoolStanding",
    "Promotion",
    "Scores",
    "Table",
    "assess_promotion",
    "best_candidate",
    "coverage",
    "instance_fronts",
    "mean_score",
    "merge_keeps",
    "minibatch_keeps",
    "minibatch_screen",
    "paired_scores",
    "pool_standings",
    "promotion_floor",
    "pruned_fronts",
    "score_judge",
    "score_row",
    "score_rows",
    "select_parent",
    "validated_pick",
]
