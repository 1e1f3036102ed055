"""The ground-truth audit: five signals, their weights, the flag, data-quality problems."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.benchmark import load_benchmark
from engine.core.config import GtAuditConfig
from engine.evaluation.diagnosis.run import diagnose_run, load_run
from engine.evaluation.gt_audit import (
    SIGNALS,
    CaseFacts,
    Observation,
    audit,
    audit_runs,
)
from engine.evaluation.similar_texts import shingles, similar_pairs, similarity
from engine.evaluation.traces import TraceSummary, load_trace, summarise
from tests.bench_helpers import write_benchmark, write_case
from tests.diag_helpers import (
    SKILL_NAME,
    SKILL_TEXT,
    clean_calls,
    row,
    session_lines,
    skill_steps,
    write_jsonl,
    write_run,
)

STATEMENT = (
    "public class RewardController { @PostMapping('/reward') public void grant(Long campId, "
    "Long userId) { rewardService.grant(campId, userId); } } The service grants the reward to "
    "any user for any campaign id passed in the request body without an ownership check."
)


def obs(
    case_id: str,
    version: str,
    verdict: str,
    label: str = "vulnerable",
    *,
    summary: TraceSummary | None = None,
    rule_ids: tuple[str, ...] = (),
) -> Observation:
    failed = verdict != label
    return Observation(case_id, version, verdict, label, failed, summary=summary, rule_ids=rule_ids)


def clean_summary(tmp_path: Path, final: str) -> TraceSummary:
    path = write_jsonl(tmp_path / f"s{abs(hash(final))}.jsonl", session_lines(clean_calls(), final))
    return summarise(load_trace(path), skill_steps())


def test_runs_and_versions_disagreeing_alone_stay_below_the_flag() -> None:
    observations = [obs("c1", v, "safe") for v in ("A", "A", "B", "B")]
    (s,) = audit(observations).suspicions
    assert s.signals["consistent_disagreement"] == 1.0
    assert s.signals["cross_version_disagreement"] == 1.0
    assert s.score == pytest.approx(0.4) and not s.flagged  # a hard case looks the same
    assert s.reasons == [
        "all 4 runs say 'safe', label 'vulnerable'",
        "2 skill versions all say 'safe'",
    ]


def test_disagreement_with_an_evidenced_conclusion_flags_the_case(tmp_path: Path) -> None:
    summary = clean_summary(tmp_path, "STEPS DONE: 1, 2, 3, 4\nVERDICT: safe")
    observations = [obs("c1", v, "safe", summary=summary) for v in ("A", "A", "B", "B")]
    (s,) = audit(observations).suspicions
    assert s.score == pytest.approx(0.65) and s.flagged


def test_one_version_alone_is_not_enough() -> None:
    (s,) = audit([obs("c1", "A", "safe"), obs("c1", "A", "safe")]).suspicions
    assert s.score == pytest.approx(0.2) and not s.flagged
    assert s.signals["cross_version_disagreement"] == 0.0


def test_a_run_that_agrees_with_the_label_breaks_consistency() -> None:
    observations = [obs("c1", "A", "safe"), obs("c1", "B", "safe"), obs("c1", "B", "vulnerable")]
    (s,) = audit(observations).suspicions
    assert s.signals["consistent_disagreement"] == 0.0
    assert s.signals["cross_version_disagreement"] == 0.0  # B's runs are split: no majority


def test_a_confident_evidenced_conclusion_is_a_signal(tmp_path: Path) -> None:
    summary = clean_summary(tmp_path, "STEPS DONE: 1, 2, 3, 4\nVERDICT: safe")
    observations = [obs("c1", "A", "safe", summary=summary) for _ in range(2)]
    (s,) = audit(observations).suspicions
    assert s.signals["evidenced_conclusion"] == 1.0
    assert s.score == pytest.approx(0.45) and not s.flagged  # clean + consistent: not yet


def test_hedging_or_rule_hits_are_not_confident(tmp_path: Path) -> None:
    hedged = clean_summary(tmp_path, "Low confidence: the call chain is unclear.\nVERDICT: safe")
    clean = clean_summary(tmp_path, "STEPS DONE: 1, 2, 3, 4\nVERDICT: safe")
    observations = [
        obs("c1", "A", "safe", summary=hedged),
        obs("c1", "A", "safe", summary=clean, rule_ids=("tool_loop",)),
    ]
    (s,) = audit(observations).suspicions
    assert s.signals["evidenced_conclusion"] == 0.0


def test_a_near_identical_same_type_case_with_the_agents_label() -> None:
    facts = {
        "c1": CaseFacts("c1", "vulnerable", "idor", STATEMENT),
        "c2": CaseFacts("c2", "safe", "idor", STATEMENT + " Reviewed."),
        "c3": CaseFacts("c3", "safe", "sqli", STATEMENT),  # other type: not a peer
    }
    observations = [obs("c1", "A", "safe"), obs("c2", "A", "safe", label="safe")]
    result = audit(observations, facts=facts)
    (s,) = result.suspicions
    assert s.signals["similar_case_contradiction"] == 1.0
    assert any(r.startswith("near-identical case c2 (0.9") for r in s.reasons)
    # one case of each label in a type is a fair share (a near-miss beside a real find)
    assert all(p["problem"] != "contradictory_labels_in_type" for p in result.data_quality)
    near = [
        p
        for p in result.data_quality
        if p["problem"] == "near_identical_cases_labelled_differently"
    ]
    assert [p["case_ids"] for p in near] == [["c1", "c2"], ["c1", "c3"]]


def test_only_a_label_few_of_its_type_share_is_a_data_quality_problem() -> None:
    """Types built as finds plus near-miss negatives hold both labels: not a problem to report."""

    def facts(kind: str, labels: list[str]) -> dict[str, CaseFacts]:
        return {
            f"{kind}-{i}": CaseFacts(f"{kind}-{i}", label, kind, f"{kind} statement {i} " * 9)
            for i, label in enumerate(labels)
        }

    known = {
        **facts("sqli", ["vulnerable", "safe"] * 5),  # half and half, by design
        **facts("xss", ["vulnerable"] * 4 + ["safe"]),  # one safe case among five
    }
    result = audit([], facts=known)
    (problem,) = [p for p in result.data_quality if p["problem"] == "contradictory_labels_in_type"]
    assert problem["case_type"] == "xss" and problem["outliers"] == ["safe"]
    assert problem["labels"]["safe"] == ["xss-4"]


def test_unrelated_statements_are_not_similar() -> None:
    a = shingles(STATEMENT)
    b = shingles("def add(a, b): return a + b  # arithmetic helper with a docstring and tests")
    assert similarity(a, a) == 1.0 and similarity(a, b) < 0.05


def test_a_label_that_is_a_minority_in_its_type() -> None:
    facts = {f"s{i}": CaseFacts(f"s{i}", "vulnerable", "sqli") for i in range(4)}
    facts["s4"] = CaseFacts("s4", "safe", "sqli")
    observations = [obs("s4", "A", "vulnerable", label="safe")]
    (s,) = audit(observations, facts=facts).suspicions
    assert s.signals["type_label_outlier"] == 1.0 and s.score == 0.1
    assert s.reasons == [
        "only 1/5 'sqli' cases are 'safe'; the agent says 'vulnerable' like the rest"
    ]


def test_all_five_signals_sum_to_one(tmp_path: Path) -> None:
    facts = {
        f"s{i}": CaseFacts(f"s{i}", "vulnerable", "sqli", f"{i} {STATEMENT}") for i in range(4)
    }
    facts["s4"] = CaseFacts("s4", "safe", "sqli", f"0 {STATEMENT} x")
    summary = clean_summary(tmp_path, "STEPS DONE: 1, 2, 3, 4\nVERDICT: vulnerable")
    observations = [obs("s4", v, "vulnerable", label="safe", summary=summary) for v in ("A", "B")]
    (s,) = audit(observations, facts=facts).suspicions
    assert s.signals == dict.fromkeys(SIGNALS, 1.0)
    assert s.score == 1.0 and s.flagged


def test_weights_and_threshold_are_configurable() -> None:
    config = GtAuditConfig(w_consistent_disagreement=0.6, flag_threshold=0.6)
    (s,) = audit([obs("c1", "A", "safe"), obs("c1", "A", "safe")], config=config).suspicions
    assert s.score == 0.6 and s.flagged


def test_only_failing_cases_are_scored_most_suspect_first(tmp_path: Path) -> None:
    summary = clean_summary(tmp_path, "STEPS DONE: 1, 2, 3, 4\nVERDICT: safe")
    observations = [
        obs("pass", "A", "vulnerable"),
        obs("weak", "A", "safe"),
        obs("weak", "A", "vulnerable"),
        obs("strong", "A", "safe", summary=summary),
        obs("strong", "B", "safe", summary=summary),
    ]
    result = audit(observations)
    assert [s.case_id for s in result.suspicions] == ["strong", "weak"]
    assert result.flagged_case_ids == ["strong"]
    assert "strong (0.65)" in result.prompt_note()
    assert audit(observations, focus=["weak"]).flagged_case_ids == []


def test_audit_over_runs_of_two_skill_versions_with_the_benchmark(tmp_path: Path) -> None:
    bench_dir = write_benchmark(
        tmp_path / "ws" / "bench",
        {},
        config={"labels": ["vulnerable", "safe"], "runs_per_case": 2, "seed": 7},
    )
    write_case(
        bench_dir,
        "mislabelled",
        {"expected": "vulnerable", "type": "idor"},
        files={"A.java": STATEMENT},
    )
    write_case(bench_dir, "twin", {"expected": "safe", "type": "idor"}, files={"A.java": STATEMENT})
    write_case(
        bench_dir, "other", {"expected": "vulnerable", "type": "sqli"}, files={"B.java": "select 1"}
    )
    bench = load_benchmark(bench_dir, check=False)
    final = "STEPS DONE: 1, 2, 3, 4\nVERDICT: safe"
    runs = []
    for n, text in enumerate((SKILL_TEXT, SKILL_TEXT + "\n<!-- v2 -->\n")):
        units = [
            (row("mislabelled", "FN", run_index=i), session_lines(clean_calls(), final))
            for i in range(2)
        ]
        units.append((row("twin", "pass", label="safe"), session_lines(clean_calls(), final)))
        run = load_run(write_run(tmp_path / f"run-{n}", units, skill_text=text))
        runs.append((run, diagnose_run(run, bench=bench)))
    assert runs[0][0].version_of("skill") != runs[1][0].version_of("skill")
    result = audit_runs(runs, bench=bench)
    (s,) = result.suspicions
    assert s.case_id == "mislabelled"
    # consistent, cross-version, clean evidenced trace and a near-identical twin labelled 'safe'
    assert s.score == pytest.approx(0.9) and s.flagged
    assert s.signals["type_label_outlier"] == 0.0  # a 1-of-2 split is not a minority of 3+
    # the flagged case is still a failing case of the diagnosis: nothing is dropped
    assert "mislabelled" in runs[0][1].failing_case_ids


def test_one_skill_version_counts_once_whichever_variant_ran_it(tmp_path: Path) -> None:
    """A baseline at the same version as the skill is one version, not two (the variant name is
    not part of a version)."""
    folder = write_run(tmp_path / "run", [(row("c", "pass"), session_lines(clean_calls(), ""))])
    baseline = folder / "inputs" / "baseline" / SKILL_NAME / "SKILL.md"
    baseline.parent.mkdir(parents=True)
    baseline.write_text(SKILL_TEXT, encoding="utf-8")
    run = load_run(folder)
    assert run.version_of("skill") == run.version_of("baseline")
    baseline.write_text(SKILL_TEXT + "\nolder\n", encoding="utf-8")
    assert load_run(folder).version_of("skill") != load_run(folder).version_of("baseline")


def test_similar_pairs_finds_exactly_the_pairs_all_pairs_finds() -> None:
    """The prefix-filtered join is exact: on statements made to sit near the threshold (shared
    bodies with a varying number of edited words), it finds the same pairs, with the same
    similarities, as comparing every pair."""
    import random

    rng = random.Random(5)  # a fixed draw of edits, so a failure reproduces
    base = [f"w{n}" for n in range(40)]
    texts = {}
    for i in range(120):
        words = list(base) if i % 3 else [f"x{i}_{n}" for n in range(40)]
        for _ in range(rng.randrange(0, 6)):
            words[rng.randrange(len(words))] = f"e{rng.randrange(1000)}"
        texts[f"c{i:03d}"] = " ".join(words)
    sets = {cid: shingles(t) for cid, t in texts.items()}
    for threshold in (0.5, 0.8, 0.95):
        fast = similar_pairs(sets, threshold)
        slow: dict[str, dict[str, float]] = {}
        ids = sorted(sets)
        for n, a in enumerate(ids):
            for b in ids[n + 1 :]:
                sim = similarity(sets[a], sets[b])
                if sim >= threshold:
                    slow.setdefault(a, {})[b] = sim
                    slow.setdefault(b, {})[a] = sim
        assert fast == slow
        assert any(fast.values())  # the draw does put pairs above each threshold
