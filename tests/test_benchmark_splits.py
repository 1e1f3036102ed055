"""Split assignment: deterministic from the seed, stratified by label and case type (small strata
merged into their label), overrides respected."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from engine.core.benchmark import assign_splits, load_benchmark
from engine.evaluation.demo import DEMO_BENCHMARK, copy_demo
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


def _typed(per_stratum: dict[tuple[str, str], int]) -> dict[str, dict[str, object] | str]:
    """``n`` cases of each (label, type), ids ``<type>-<label>-<i>``."""
    return {
        f"{kind}-{label}-{i:02d}": {"expected": label, "type": kind}
        for (label, kind), n in per_stratum.items()
        for i in range(n)
    }


def _counts(splits: dict[str, str], prefix: str) -> Counter[str]:
    return Counter(split for case, split in splits.items() if case.startswith(prefix))


def test_typed_cases_are_cut_per_family_and_label(tmp_path: Path) -> None:
    families = ("sqli", "xss", "ssrf")
    cases = _typed({(label, kind): 20 for kind in families for label in ("vulnerable", "safe")})
    root = write_benchmark(tmp_path / "b", cases)
    splits = _splits(root)
    assert _splits(root) == splits
    for kind in families:
        for label in ("vulnerable", "safe"):
            # every family sees each split in the configured proportion, for each label
            counts = _counts(splits, f"{kind}-{label}-")
            assert counts == {"selection": 12, "holdout": 5, "golden": 3}, (kind, label)


def test_a_small_family_still_reaches_every_split() -> None:
    # Stratified by label alone, 5 of 15 ssrf cases would land where chance puts them; by
    # (label, type) each family of five gives 3/1/1, so a holdout never lacks a family.
    ratios = {"selection": 0.6, "holdout": 0.25, "golden": 0.15}
    cases = [
        (f"{kind}-{i}", ("vulnerable", kind), None)
        for kind in ("sqli", "xss", "ssrf", "path")
        for i in range(5)
    ]
    for seed in range(20):
        splits = assign_splits(cases, ratios, seed)
        for kind in ("sqli", "xss", "ssrf", "path"):
            counts = Counter(s for c, s in splits.items() if c.startswith(kind + "-"))
            assert counts == {"selection": 3, "holdout": 1, "golden": 1}, (seed, kind)


def test_strata_too_small_to_split_merge_into_their_label() -> None:
    ratios = {"selection": 0.6, "holdout": 0.25, "golden": 0.15}
    # three families of two cases each: none can give every split a case, so the six cases
    # are one "vulnerable" stratum cut 60/25/15 → 4/1/1 (largest remainder), with the untyped
    # vulnerable case joining them → 7 → 4/2/1
    cases = [(f"{kind}-{i}", ("vulnerable", kind), None) for kind in "abc" for i in range(2)]
    merged = assign_splits(cases, ratios, 3)
    assert Counter(merged.values()) == {"selection": 4, "holdout": 1, "golden": 1}
    with_untyped = assign_splits([*cases, ("plain", ("vulnerable",), None)], ratios, 3)
    assert Counter(with_untyped.values()) == {"selection": 4, "holdout": 2, "golden": 1}
    # a big enough family keeps its own stratum next to the merged small ones
    big = [(f"big-{i}", ("vulnerable", "big"), None) for i in range(5)]
    mixed = assign_splits([*cases, *big], ratios, 3)
    assert Counter(mixed[c] for c, _, _ in big) == {"selection": 3, "holdout": 1, "golden": 1}
    assert Counter(mixed[c] for c, _, _ in cases) == {"selection": 4, "holdout": 1, "golden": 1}
    # labels are never merged with each other: a lone safe case stays apart
    lone = assign_splits([*cases, ("safe-0", ("safe", "a"), None)], ratios, 3)
    assert lone["safe-0"] == "selection"


def test_typed_strata_are_deterministic_and_independent_of_each_other() -> None:
    ratios = {"selection": 0.6, "holdout": 0.25, "golden": 0.15}
    sqli = [(f"sqli-{i}", ("vulnerable", "sqli"), None) for i in range(8)]
    xss = [(f"xss-{i}", ("vulnerable", "xss"), None) for i in range(8)]
    shuffled = [*xss, *sqli]
    random.Random(4).shuffle(shuffled)
    both = assign_splits([*sqli, *xss], ratios, 7)
    assert assign_splits(shuffled, ratios, 7) == both
    # adding a case to one family reshuffles that family only
    grown = assign_splits([*sqli, *xss, ("xss-8", ("vulnerable", "xss"), None)], ratios, 7)
    assert {c: grown[c] for c, _, _ in sqli} == {c: both[c] for c, _, _ in sqli}
    assert assign_splits([*sqli, *xss], ratios, 8) != both


def test_the_demo_holdout_holds_every_family_with_both_labels(tmp_path: Path) -> None:
    bench = load_benchmark(copy_demo(tmp_path / "demo") / "benchmarks" / DEMO_BENCHMARK)
    families = {c.rubric.type for c in bench.cases}
    for split in ("selection", "holdout", "golden"):
        seen = {(c.rubric.type, c.expected_label) for c in bench.cases_in(split)}
        assert seen == {(kind, label) for kind in families for label in bench.labels}, split
