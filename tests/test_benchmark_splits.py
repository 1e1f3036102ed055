"""Split assignment: deterministic from the seed, stratified by label, overrides respected."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from engine.benchmark import assign_splits, load_benchmark
from tests.bench_helpers import labelled_cases, write_benchmark


def _splits(root: Path) -> dict[str, str]:
    return {c.id: c.split for c in load_benchmark(root).cases}


def test_same_seed_same_splits_and_counts_follow_the_ratios(tmp_path: Path) -> None:
    root = write_benchmark(tmp_path / "b", labelled_cases(20, 20))
    first = _splits(root)
    assert _splits(root) == first
    # Stratified: each label alone is cut 60/25/15 → 12/5/3 of its 20 cases.
    for prefix in ("vuln", "safe"):
        counts = Counter(split for case, split in first.items() if case.startswith(prefix))
        assert counts == {"selection": 12, "holdout": 5, "golden": 3}


def test_another_seed_gives_other_splits_with_the_same_counts(tmp_path: Path) -> None:
    cases = [(f"c{i:02d}", "x", None) for i in range(40)]
    ratios = {"selection": 0.6, "holdout": 0.25, "golden": 0.15}
    a, b = assign_splits(cases, ratios, seed=1), assign_splits(cases, ratios, seed=2)
    assert a != b
    assert (
        Counter(a.values()) == Counter(b.values()) == {"selection": 24, "holdout": 10, "golden": 6}
    )


def test_input_order_does_not_matter() -> None:
    cases = [(f"c{i:02d}", "pos" if i % 3 else "neg", None) for i in range(30)]
    ratios = {"feedback": 0.5, "validation": 0.3, "holdout": 0.2}
    shuffled = list(cases)
    random.Random(0).shuffle(shuffled)
    assert assign_splits(cases, ratios, 9) == assign_splits(shuffled, ratios, 9)


def test_override_is_kept_and_the_rest_is_still_apportioned(tmp_path: Path) -> None:
    cases = labelled_cases(10, 10)
    cases["vuln-000"] = {"expected": "vulnerable", "split": "golden"}
    cases["safe-000"] = {"expected": "safe", "split": "holdout"}
    root = write_benchmark(tmp_path / "b", cases)
    splits = _splits(root)
    assert splits["vuln-000"] == "golden" and splits["safe-000"] == "holdout"
    # The 9 other vulnerable cases: 60/25/15 of 9 → 5.4/2.25/1.35 → largest remainder 6/2/1.
    rest = Counter(s for c, s in splits.items() if c.startswith("vuln") and c != "vuln-000")
    assert rest == {"selection": 6, "holdout": 2, "golden": 1}


def test_small_strata_go_to_the_largest_split_first() -> None:
    ratios = {"selection": 0.6, "holdout": 0.25, "golden": 0.15}
    assert assign_splits([("only", "a", None)], ratios, 7) == {"only": "selection"}
    two = assign_splits([("x", "a", None), ("y", "a", None)], ratios, 7)
    assert sorted(two.values()) == ["holdout", "selection"]


def test_unlabelled_benchmark_is_one_stratum(tmp_path: Path) -> None:
    cases: dict[str, dict[str, object] | str] = {
        f"q{i}": {"expected": f"answer number {i}"} for i in range(20)
    }
    root = write_benchmark(tmp_path / "b", cases, config={"seed": 5})
    assert Counter(_splits(root).values()) == {"selection": 12, "holdout": 5, "golden": 3}
