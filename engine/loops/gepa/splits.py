"""Feedback / Validation / Holdout: the three case sets an optimization keeps apart.

Feedback cases are the only ones whose runs the reflection model reads; Validation only ranks
versions by score; Holdout is looked at once, after the search, to decide whether the chosen
version may be submitted. A benchmark whose ``splits`` already name these three is used as
assigned; otherwise the cases are split afresh by the given ratios, stratified by label and case
type and seeded like every other split, so the same seed always gives the same three sets. Ratios
may sum to less than one to use only part of a large benchmark.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.core.benchmark import Benchmark, assign_splits, stratum_of
from engine.core.errors import UsageError

FAMILY = ("feedback", "validation", "holdout")
DEFAULT_RATIOS = (0.4, 0.3, 0.3)
UNUSED = "unused"
MIN_SUBMIT_CASES = 10  # per split, before a candidate may be submitted


@dataclass(frozen=True)
class Splits:
    feedback: list[str]
    validation: list[str]
    holdout: list[str]
    source: str  # how they were chosen, for the experiment record

    def sizes(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in FAMILY}

    def too_small(self) -> list[str]:
        """The splits with fewer cases than a submission needs."""
        return [name for name, n in self.sizes().items() if n < MIN_SUBMIT_CASES]


def parse_ratios(text: str) -> tuple[float, float, float]:
    """``"0.4,0.3,0.3"`` → three ratios in [0, 1] summing to at most 1."""
    parts = [p.strip() for p in text.split(",")]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or any(not math.isfinite(v) or v < 0 for v in values):
        raise UsageError(
            f"--splits: expected three ratios FEEDBACK,VALIDATION,HOLDOUT, got {text!r}"
        )
    if sum(values) > 1 + 1e-9:
        raise UsageError(f"--splits: the ratios sum to {sum(values):g}, more than 1")
    return values[0], values[1], values[2]


def choose_splits(bench: Benchmark, ratios: tuple[float, float, float] | None, seed: int) -> Splits:
    """The three case lists (in benchmark order), from the benchmark or from ``ratios``."""
    if ratios is None and set(bench.splits) == set(FAMILY):
        chosen = {c.id: c.split for c in bench.cases}
        source = "benchmark splits"
    else:
        fractions = ratios or DEFAULT_RATIOS
        weights = dict(zip(FAMILY, fractions, strict=True))
        weights[UNUSED] = max(0.0, 1.0 - sum(fractions))
        triples = [
            (
                c.id,
                stratum_of(c, labelled=bool(bench.labels)),
                c.rubric.split if c.rubric.split in FAMILY else None,
            )
            for c in bench.cases
        ]
        chosen = assign_splits(triples, weights, seed)
        source = "ratios " + "/".join(f"{r:g}" for r in fractions) + f", seed {seed}"
    lists = {name: [c.id for c in bench.cases if chosen[c.id] == name] for name in FAMILY}
    return Splits(lists["feedback"], lists["validation"], lists["holdout"], source)


__all__ = [
    "DEFAULT_RATIOS",
    "FAMILY",
    "MIN_SUBMIT_CASES",
    "Splits",
    "choose_splits",
    "parse_ratios",
]
