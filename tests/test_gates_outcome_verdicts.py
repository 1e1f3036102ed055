"""The four outcome gates judged on constructed result rows and real SKILL.md texts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.config import GatesConfig
from engine.errors import FormatError
from engine.gates import GateResult, all_passed, first_failure, gates_json
from engine.gates.outcome import (
    Guardrail,
    Holdout,
    OutcomeGates,
    Target,
    Verify,
    verify_calibration,
)
from engine.verify import verify_score
from tests.bench_helpers import result_row

DEMO_SKILL = (
    Path(__file__).resolve().parents[1]
    / "engine"
    / "demo"
    / "workspace"
    / "skills"
    / "security-audit"
    / "SKILL.md"
)


def row(case_id: str, passed: bool, *, truth: str = "vulnerable", run: int = 0) -> dict[str, Any]:
    """A results.jsonl row as the runner writes it (binary labels, positive = vulnerable)."""
    other = "safe" if truth == "vulnerable" else "vulnerable"
    return result_row(case_id, run, truth, truth if passed else other)


def rows(spec: dict[str, tuple[bool, ...]], truth: str = "vulnerable") -> list[dict[str, Any]]:
    return [row(c, p, truth=truth, run=i) for c, runs in spec.items() for i, p in enumerate(runs)]


# -- Target --------------------------------------------------------------------------------------


def test_target_passes_when_one_targeted_case_is_fixed_in_every_run() -> None:
    before = rows({"a": (False, False), "b": (False, False), "c": (True, True)})
    after = rows({"a": (True, True), "b": (False, True), "c": (True, True)})
    result = Target().judge(before, after, ["b", "a"])
    assert result.verdict == "pass"
    assert result.fixed == ["a"]  # b passes on one run only: not fixed
    assert result.case_ids == ["a", "b"]
    assert result.figures == {"targeted": 2, "fixed": 1, "still_failing": 1, "min_fixed": 1}
    assert result.reasons == ["fixed 1 of 2 targeted failing cases"]


def test_target_fails_when_no_targeted_case_passes_now() -> None:
    before = rows({"a": (False, False), "b": (False, True)})
    after = rows({"a": (False, True), "b": (False, False)})
    result = Target().judge(before, after, ["a", "b"])
    assert result.verdict == "fail"
    assert result.fixed == []
    assert result.figures["still_failing"] == 2
    assert "1 wanted" in result.reasons[0]


def test_target_without_targets_fails() -> None:
    result = Target().judge(rows({"a": (True,)}), rows({"a": (True,)}), [])
    assert result.verdict == "fail"
    assert result.reasons == ["the patch targeted no failing case"]


# -- Guardrail -----------------------------------------------------------------------------------


def test_guardrail_fails_on_one_run_breaking_a_passing_case() -> None:
    before = rows({"a": (True, True), "b": (True, True), "c": (False, False)})
    after = rows({"a": (True, False), "b": (True, True), "c": (True, True)})
    result = Guardrail().judge(before, after)
    assert result.verdict == "fail"
    assert result.newly_broken == ["a"]
    assert result.fixed == ["c"]
    assert result.case_ids == ["a", "b"]
    assert result.figures["guarded"] == 2
    assert result.figures["still_passing"] == 1
    assert result.reasons == ["1 previously passing case now fails: a"]


def test_guardrail_passes_when_every_passing_case_still_passes() -> None:
    before = rows({"a": (True, True), "b": (False, True)})
    after = rows({"a": (True, True), "b": (False, False)})  # b was flaky, not guarded
    result = Guardrail().judge(before, after)
    assert result.verdict == "pass"
    assert result.newly_broken == []
    assert result.reasons == ["1 of 1 previously passing cases still pass"]


def test_guardrail_refuses_a_previously_passing_case_that_could_not_be_measured() -> None:
    before = rows({"a": (True,), "b": (True,)})
    invalid = {**row("a", False), "pass_fail": "invalid", "failure_kind": None}
    result = Guardrail().judge(before, [invalid, row("b", True)])
    assert result.verdict == "fail"
    assert result.newly_broken == []
    assert result.figures["unmeasured"] == 1
    assert "could not be measured" in result.reasons[0]


# -- Holdout -------------------------------------------------------------------------------------


def holdout_rows(tp: int, fn: int, tn: int, fp: int) -> list[dict[str, Any]]:
    out = [row(f"p{i}", i < tp, truth="vulnerable") for i in range(tp + fn)]
    out += [row(f"n{i}", i < tn, truth="safe") for i in range(tn + fp)]
    return out


def test_holdout_is_due_every_nth_round_only() -> None:
    gate = Holdout(every=5)
    assert [r for r in range(1, 16) if gate.due(r)] == [5, 10, 15]
    held = gate.off_round(3)
    assert held.verdict == "held"
    assert not held.failed
    assert held.reasons == ["round 3 is not a holdout round (every 5)"]


def test_holdout_allows_a_drop_of_at_most_one_point() -> None:
    gate = Holdout(every=5, max_f1_drop=0.01)
    before = holdout_rows(tp=8, fn=2, tn=10, fp=0)  # F1 = 16/18 = 0.8889
    worse = holdout_rows(tp=7, fn=3, tn=10, fp=0)  # F1 = 14/17 = 0.8235
    result = gate.judge(before, worse, positive_label="vulnerable")
    assert result.verdict == "fail"
    assert result.figures["measure"] == "f1"
    assert result.figures["before"] == pytest.approx(16 / 18, abs=1e-6)
    assert result.figures["after"] == pytest.approx(14 / 17, abs=1e-6)
    assert result.newly_broken == ["p7"]
    assert "dropped 6.5 points" in result.reasons[0]
    same = gate.judge(before, before, positive_label="vulnerable")
    assert same.verdict == "pass"
    better = gate.judge(worse, before, positive_label="vulnerable")
    assert better.verdict == "pass"
    assert better.fixed == ["p7"]


def test_holdout_drop_just_inside_the_limit_passes() -> None:
    # 100 positives: recall 0.90 → 0.89 with perfect precision drops F1 by 0.0058 (< 1 point)
    gate = Holdout(max_f1_drop=0.01)
    before = holdout_rows(tp=90, fn=10, tn=0, fp=0)
    after = holdout_rows(tp=89, fn=11, tn=0, fp=0)
    result = gate.judge(before, after, positive_label="vulnerable")
    assert 0 < result.figures["drop"] < 0.01
    assert result.verdict == "pass"
    strict = Holdout(max_f1_drop=0.005).judge(before, after, positive_label="vulnerable")
    assert strict.verdict == "fail"


def test_holdout_without_labels_uses_the_pass_rate() -> None:
    before = rows({"a": (True,), "b": (True,)})
    after = rows({"a": (True,), "b": (False,)})
    result = Holdout().judge(before, after, positive_label=None)
    assert result.figures["measure"] == "pass_rate"
    assert result.figures["drop"] == pytest.approx(0.5)
    assert result.verdict == "fail"


# -- Verify --------------------------------------------------------------------------------------


def test_verify_passes_the_demo_skill_and_records_the_parent_score() -> None:
    text = DEMO_SKILL.read_text(encoding="utf-8")
    score = verify_score(text).score
    result = Verify().judge(text, text)
    assert result.verdict == "pass"
    assert result.figures["score"] == score >= 75
    assert result.figures["parent_score"] == score
    assert result.figures["drop"] == 0


def test_verify_fails_a_drop_of_more_than_five_points() -> None:
    text = DEMO_SKILL.read_text(encoding="utf-8")
    head, _, _ = text.partition("## Pitfalls")  # losing the pitfalls costs 10 points
    result = Verify(min_score=0).judge(head, text)
    assert result.verdict == "fail"
    assert result.figures["drop"] == 10
    assert "pitfalls_present" in result.figures["failed_checks"]
    assert result.reasons == [
        f"verify score fell 10 points ({result.figures['parent_score']:.0f} → "
        f"{result.figures['score']:.0f}), at most 5 allowed"
    ]


def test_verify_fails_below_the_minimum_even_without_a_parent() -> None:
    result = Verify().judge("no frontmatter, no steps\n", None)
    assert result.verdict == "fail"
    assert result.figures["parent_score"] is None
    assert result.figures["score"] < 75
    assert "below 75" in result.reasons[0]


# -- all four, serialised ------------------------------------------------------------------------


def test_outcome_gates_from_config_judge_all_four_and_serialise(tmp_path: Path) -> None:
    gates = OutcomeGates.from_config(GatesConfig(holdout_every=2, holdout_max_f1_drop=0.02))
    text = DEMO_SKILL.read_text(encoding="utf-8")
    before = rows({"a": (False, False), "b": (True, True)})
    after = rows({"a": (True, True), "b": (True, False)})
    results = gates.judge(
        round_no=1,
        targeted=["a"],
        selection_before=before,
        selection_after=after,
        holdout_before=None,
        holdout_after=None,
        positive_label="vulnerable",
        text=text,
        parent_text=text,
    )
    assert [r.gate for r in results] == ["target", "guardrail", "holdout", "verify"]
    assert [r.verdict for r in results] == ["pass", "fail", "held", "pass"]
    assert not all_passed(results)
    failure = first_failure(results)
    assert failure is not None and failure.gate == "guardrail"
    assert failure.newly_broken == ["b"]
    path = tmp_path / "gates.json"
    path.write_text(json.dumps(gates_json(results)), encoding="utf-8")
    loaded = json.loads(path.read_text(encoding="utf-8"))
    assert set(loaded[1]) == {
        "gate",
        "verdict",
        "figures",
        "reasons",
        "case_ids",
        "fixed",
        "newly_broken",
    }
    assert [GateResult.from_json(e, path) for e in loaded] == results
    assert gates.holdout.max_f1_drop == 0.02 and gates.holdout.due(2)


def test_gate_result_from_json_names_the_bad_field(tmp_path: Path) -> None:
    path = tmp_path / "gates.json"
    with pytest.raises(FormatError, match=r"gates\.json: field 'target\.verdict'"):
        GateResult.from_json({"gate": "target", "verdict": "maybe"}, path)
    with pytest.raises(FormatError, match=r"field 'guardrail\.fixed'"):
        GateResult.from_json({"gate": "guardrail", "verdict": "pass", "fixed": [1]}, path)


def test_verify_calibration_reports_pearson_r_across_versions() -> None:
    assert verify_calibration([(80, 0.5), (85, 0.6)])["pearson_r"] is None
    assert verify_calibration([(80, 0.5), (80, 0.6), (80, 0.7)])["pearson_r"] is None
    calib = verify_calibration([(80, 0.5), (85, 0.6), (90, 0.7)])
    assert calib["pearson_r"] == pytest.approx(1.0)
    assert calib["versions"] == 3
    inverse = verify_calibration([(80, 0.7), (85, 0.6), (90, 0.4)])
    assert inverse["pearson_r"] < -0.9
