"""Near-identical statements, found without comparing every pair.

The ground-truth audit asks, for each case, which statements of the benchmark are near copies of
it (Jaccard similarity of word 3-shingles at or above a threshold). Comparing all pairs grows with
the square of the benchmark (23 s at 3,000 cases, and evolve audits every round), so the pairs are
found by prefix filtering (Bayardo et al., "Scaling up all pairs similarity search", 2007): order
each set's shingles rarest first; two sets with Jaccard ≥ t must share one of the first
``|x| - ceil(t·|x|) + 1`` shingles of each, and their sizes differ by at most a factor t. Only
pairs that share such a prefix shingle are compared in full, so the result is exactly the
all-pairs answer while the work follows the number of candidate pairs, not its square.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping

Shingles = frozenset[tuple[str, ...]]

_WORD = re.compile(r"\w+", re.UNICODE)


def shingles(text: str, size: int = 3) -> Shingles:
    words = [w.casefold() for w in _WORD.findall(text)]
    if len(words) < size:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def similarity(a: Shingles, b: Shingles) -> float:
    """Jaccard similarity of word 3-shingles: 1.0 for identical statements, ~0 for unrelated."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _prefix_length(size: int, threshold: float) -> int:
    # a set of `size` shingles shares ≥ ceil(t·size) with any set it is t-similar to, so at
    # least one of any size - ceil(t·size) + 1 of its shingles is common to both
    return size - math.ceil(threshold * size - 1e-9) + 1


def similar_pairs(sets: Mapping[str, Shingles], threshold: float) -> dict[str, dict[str, float]]:
    """Every pair of ids whose sets are at least ``threshold``-similar, each side naming the
    other with the similarity: the same pairs an all-pairs comparison finds."""
    found: dict[str, dict[str, float]] = defaultdict(dict)
    if threshold <= 0:  # every pair qualifies: nothing to filter by
        ids = sorted(i for i, s in sets.items() if s)
        for n, a in enumerate(ids):
            for b in ids[n + 1 :]:
                sim = similarity(sets[a], sets[b])
                found[a][b] = found[b][a] = sim
        return dict(found)
    rarity = Counter(sh for s in sets.values() for sh in s)
    index: dict[tuple[str, ...], list[str]] = defaultdict(list)
    # shortest sets first: a set only meets the ones indexed before it, which are no larger
    for cid in sorted((i for i, s in sets.items() if s), key=lambda i: (len(sets[i]), i)):
        mine = sets[cid]
        ordered = sorted(mine, key=lambda sh: (rarity[sh], sh))
        prefix = ordered[: _prefix_length(len(mine), threshold)]
        seen: set[str] = set()
        for sh in prefix:
            for other in index[sh]:
                if other in seen:
                    continue
                seen.add(other)
                if len(sets[other]) < threshold * len(mine):
                    continue
                sim = similarity(mine, sets[other])
                if sim >= threshold:
                    found[cid][other] = found[other][cid] = sim
            index[sh].append(cid)
    return dict(found)
