"""The four outcome gates judged on constructed result rows and real SKILL.md texts."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from engine.core.config import GatesConfig
from engine.core.errors import FormatError
from engine.evaluation.gates import GateResult, all_passed, first_failure, gates_json
from engine.evaluation.gates.outcome import (
    Guardrail,
    Holdout,
    OutcomeGates,
    Sampling,
    Target,
    Verify,
    confirmation_runs,
    most_confirmation_runs,
    verify_calibration,
)
from engine.evaluation.verdict import compare_f1
from engine.evaluation.verify import verify_score
from tests.bench_helpers import result_row
from tests.conftest import REAL_STYLE

DEMO_SKILL = (
    Path(__file__).resolve().parents[1]
    / "engine"
    / "evaluation"
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
# The gates are paired experiments now (engine.evaluation.verdict): a targeted case passing on one
# more run
# is no longer "fixed" proof — the agent is noisy — so these tests use enough cases and runs for
# the exact tests to decide, and check the figures against the textbook binomial tails.


def test_target_passes_when_the_targeted_cases_are_better_with_confidence() -> None:
    aimed = [f"t{i}" for i in range(4)]
    before = rows({c: (False, False) for c in aimed} | {"c": (True, True)})
    after = rows({c: (True, True) for c in aimed[:3]} | {"t3": (False, True), "c": (True, True)})
    result = Target().judge(before, after, reversed(aimed))
    assert result.verdict == "pass"
    assert result.fixed == ["t0", "t1", "t2"]  # t3 passes on one run only: not fixed
    assert result.case_ids == aimed
    # 7 of 8 run pairs went fail → pass, none the other way: one-sided p = 1/2^7
    assert result.figures["p_value"] == pytest.approx(0.5**7, abs=1e-6)
    assert result.figures["decision"] == "better" and result.figures["targeted"] == 4
    assert result.figures["n_cases"] == 4 and result.figures["n_runs"] == 2
    assert result.reasons[0].startswith("4 targeted cases: +87.5 pts [")


def test_target_fails_when_one_lucky_run_is_all_the_evidence() -> None:
    # the old rule counted a once-fixed case; one discordant pair has p = 1/2: not shown
    before = rows({"a": (False, False), "b": (False, True)})
    after = rows({"a": (False, True), "b": (False, True)})
    result = Target().judge(before, after, ["a", "b"])
    assert result.verdict == "fail"
    assert result.fixed == []
    assert result.figures["p_value"] == pytest.approx(0.5)
    assert "better at one-sided p<0.05 wanted" in result.reasons[0]


def test_target_without_targets_fails() -> None:
    result = Target().judge(rows({"a": (True,)}), rows({"a": (True,)}), [])
    assert result.verdict == "fail"
    assert result.reasons == ["the patch targeted no failing case"]


def test_target_reruns_an_inconclusive_comparison_and_counts_the_extra_runs() -> None:
    before = rows({"a": (False, False), "b": (False, False)})
    after = rows({"a": (True, True), "b": (True, False)})  # 3 of 4 pairs: p = 1/8

    def rerun(cases: Any, runs: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        # the rerun of both texts on the same seeds: the candidate keeps fixing what it fixed
        return rows({c: (False,) * runs for c in cases}), rows({c: (True,) * runs for c in cases})

    gate = Target(Sampling(alpha=0.05, max_extra_runs=8, looks=3))
    result = gate.judge(before, after, ["a", "b"], rerun=rerun)
    assert result.verdict == "pass"
    assert result.figures["extra_runs"] == 4 and result.figures["looks"] == 2
    assert result.figures["agent_runs"] == {"rerun": 2 * 4}  # both variants
    assert "+4 extra" in result.figures["line"]
    assert Target().judge(before, after, ["a", "b"], rerun=rerun).verdict == "fail"  # no budget


# -- Guardrail -----------------------------------------------------------------------------------


def test_guardrail_keeps_a_candidate_with_one_chance_flip() -> None:
    # the old rule failed here: one of 2 runs of a passing case failed. On a noisy agent that is
    # what re-running the same skill does; one discordant pair is p = 1/2, no regression.
    before = rows({"a": (True, True), "b": (True, True), "c": (False, False)})
    after = rows({"a": (True, False), "b": (True, True), "c": (True, True)})
    result = Guardrail().judge(before, after)
    assert result.verdict == "pass"
    assert result.newly_broken == ["a"]  # still listed, for a person to look at
    assert result.fixed == ["c"]
    assert result.case_ids == ["a", "b", "c"]
    assert result.figures["guarded"] == 3 and result.figures["decision"] == "inconclusive"


def test_guardrail_fails_when_the_other_cases_are_worse_with_confidence() -> None:
    before = rows({f"g{i}": (True, True) for i in range(6)} | {"t": (False, False)})
    after = rows({f"g{i}": (False, False) if i < 3 else (True, True) for i in range(6)})
    after += rows({"t": (True, True)})
    result = Guardrail().judge(before, after, targeted=["t"])
    assert result.verdict == "fail"
    assert result.case_ids == [f"g{i}" for i in range(6)]  # the targeted case is not guarded
    assert result.newly_broken == ["g0", "g1", "g2"]
    assert result.figures["p_value"] == pytest.approx(0.5**6, abs=1e-6)
    assert "worse at one-sided p<0.05" in result.reasons[0]


def test_guardrail_fails_a_break_that_repeats_on_fresh_runs_even_when_fixes_hide_it() -> None:
    # pooled over the other cases, two fixes cancel two breaks (delta 0: not worse); rerun on
    # their own, the broken cases break again on every fresh run, which is a regression
    before = rows({"a": (True, True), "b": (True, True), "c": (False, False), "d": (False, False)})
    after = rows({"a": (False, False), "b": (False, False), "c": (True, True), "d": (True, True)})
    asked: list[tuple[list[str], int]] = []

    def repeats(cases: Any, runs: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        asked.append((list(cases), runs))
        return rows({c: (True,) * runs for c in cases}), rows({c: (False,) * runs for c in cases})

    gate = Guardrail(Sampling(alpha=0.05, max_extra_runs=12, looks=3))
    result = gate.judge(before, after, rerun=repeats)
    assert result.verdict == "fail"
    assert asked[-1] == (["a", "b"], 6)  # only the broken cases, 12 // 2 runs each
    assert "broke again on fresh runs" in result.reasons[-1] and "(a, b)" in result.reasons[-1]
    assert Guardrail().judge(before, after, rerun=repeats).verdict == "pass"  # no budget: pooled


def test_guardrail_records_every_run_it_asked_for_its_confirmation_included() -> None:
    # the pooled figure stays at delta 0 (fixes cancel breaks), so the only reruns are the
    # confirmation's: counted in agent_runs (both variants) though its verdict records no extra
    before = rows({"a": (True, True), "b": (True, True), "c": (False, False), "d": (False, False)})
    after = rows({"a": (False, False), "b": (False, False), "c": (True, True), "d": (True, True)})
    ran = 0

    def repeats(cases: Any, runs: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        nonlocal ran
        ran += 2 * len(cases) * runs  # both variants
        return rows({c: (True,) * runs for c in cases}), rows({c: (False,) * runs for c in cases})

    result = Guardrail(Sampling(alpha=0.05, max_extra_runs=12, looks=3)).judge(
        before, after, rerun=repeats
    )
    assert result.figures["extra_runs"] == 0  # what the verdict's own sampling added
    assert result.figures["agent_runs"] == {"rerun": 0, "confirm": 2 * 2 * 6} and ran == 24


def test_a_confirmation_of_many_broken_cases_costs_more_than_the_budget_and_says_so() -> None:
    # 30 passing cases break once each and 30 failing ones get fixed: pooled, not worse; each
    # broken case is confirmed on 2 fresh runs (never fewer), 60 case-runs a side past 48
    broke = {f"b{i}": ((True, True), (True, False)) for i in range(30)}
    fixed = {f"f{i}": ((False, False), (True, False)) for i in range(30)}
    spec = broke | fixed
    before = rows({c: pair[0] for c, pair in spec.items()})
    after = rows({c: pair[1] for c, pair in spec.items()})
    asked: list[tuple[int, int]] = []

    def flips(cases: Any, runs: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        asked.append((len(cases), runs))
        return rows({c: (True,) * runs for c in cases}), rows({c: (True,) * runs for c in cases})

    result = Guardrail(Sampling(alpha=0.05, max_extra_runs=48, looks=3)).judge(
        before, after, rerun=flips
    )
    assert result.newly_broken == sorted(broke) and asked[-1] == (30, 2)
    assert result.figures["agent_runs"]["confirm"] == 2 * 60
    assert confirmation_runs(48, 30) == 2 and most_confirmation_runs(48, 30) == 60
    assert most_confirmation_runs(48, 8) == 48 and most_confirmation_runs(48, 5) == 30
    assert most_confirmation_runs(0, 30) == 0


def test_guardrail_keeps_a_chance_flip_that_does_not_repeat() -> None:
    before = rows({"a": (True, True), "b": (True, True), "c": (False, False)})
    after = rows({"a": (True, False), "b": (True, True), "c": (True, True)})

    def passes_again(cases: Any, runs: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return rows({c: (True,) * runs for c in cases}), rows({c: (True,) * runs for c in cases})

    gate = Guardrail(Sampling(alpha=0.05, max_extra_runs=12, looks=3))
    assert gate.judge(before, after, rerun=passes_again).verdict == "pass"


def test_guardrail_refuses_a_case_that_could_not_be_measured() -> None:
    before = rows({"a": (True,), "b": (True,)})
    invalid = {**row("a", False), "pass_fail": "invalid", "failure_kind": None}
    result = Guardrail().judge(before, [invalid, row("b", True)])
    assert result.verdict == "fail"
    assert result.newly_broken == []
    assert result.figures["unmeasured"] == 1
    assert "could not be measured" in result.reasons[1]


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


def test_holdout_wants_the_lower_bound_above_minus_one_point() -> None:
    gate = Holdout(every=5, max_f1_drop=0.01)
    before = holdout_rows(tp=8, fn=2, tn=10, fp=0)  # F1 = 16/18 = 0.8889
    worse = holdout_rows(tp=7, fn=3, tn=10, fp=0)  # F1 = 14/17 = 0.8235
    result = gate.judge(before, worse, positive_label="vulnerable")
    assert result.verdict == "fail"
    assert result.figures["measure"] == "f1"
    assert result.figures["before"] == pytest.approx(16 / 18, abs=1e-6)
    assert result.figures["after"] == pytest.approx(14 / 17, abs=1e-6)
    assert result.figures["delta"] == pytest.approx(14 / 17 - 16 / 18, abs=1e-6)
    assert result.newly_broken == ["p7"]
    assert "not shown" in result.reasons[0]
    same = gate.judge(before, before, positive_label="vulnerable")
    assert same.verdict == "pass"  # identical behaviour: the interval is the point 0
    # every resample of a change that only fixed a case changes F1 by ≥ 0: its lower bound is 0
    better = gate.judge(worse, before, positive_label="vulnerable")
    assert better.figures["delta"] > 0 and better.figures["ci_low"] == 0
    assert better.verdict == "pass" and better.fixed == ["p7"]


def test_holdout_passes_a_broad_improvement_and_tracks_the_session_start() -> None:
    gate = Holdout(max_f1_drop=0.01)
    start = holdout_rows(tp=20, fn=20, tn=40, fp=0)
    before = holdout_rows(tp=25, fn=15, tn=40, fp=0)
    after = holdout_rows(tp=37, fn=3, tn=40, fp=0)
    result = gate.judge(before, after, positive_label="vulnerable", start=start)
    assert result.verdict == "pass" and result.figures["ci_low"] > -0.01
    assert result.figures["since_start_delta"] == pytest.approx(74 / 77 - 40 / 60, abs=1e-6)
    assert result.reasons[1].startswith("since the session's first version: f1 +29.4 pts")


def worked_holdout() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two runs a case: 3 positives fixed (fn,fn → tp,tp), 2 slip once (tp,tp → tp,fn), 5 stay
    tp and 10 negatives stay tn."""
    spec: dict[str, tuple[str, tuple[bool, ...], tuple[bool, ...]]] = {}
    spec |= {f"f{i}": ("vulnerable", (False, False), (True, True)) for i in range(3)}
    spec |= {f"d{i}": ("vulnerable", (True, True), (True, False)) for i in range(2)}
    spec |= {f"s{i}": ("vulnerable", (True, True), (True, True)) for i in range(5)}
    spec |= {f"n{i}": ("safe", (True, True), (True, True)) for i in range(10)}
    before = [row(c, ok, truth=t, run=i) for c, (t, b, _) in spec.items() for i, ok in enumerate(b)]
    after = [row(c, ok, truth=t, run=i) for c, (t, _, a) in spec.items() for i, ok in enumerate(a)]
    return before, after


# F1 goes 14/17 → 18/19 (+12.4 pts). Only the two slipping cases vary: their pooled pass/fail
# variance is 0.5/2 = 0.25 on 2 degrees of freedom, times the F1 step tp↔fn squared over the runs,
# (1.38408² + 1.10803²)/2 = 1.57171, summed over both and over 20² cases:
# se = √(2·0.25·1.57171/400) = 0.044325 on 4 degrees of freedom (Welch–Satterthwaite).
WORKED_DELTA = 18 / 19 - 14 / 17
WORKED_HALF_WIDTH = float(stats.t(4).ppf(0.95)) * math.sqrt(2 * 0.25 * 1.57171 / 400)


def test_holdout_judges_run_noise_so_a_fix_of_a_few_cases_passes() -> None:
    """The one-sided 5 % lower bound is 0.12384 − t₀.₉₅,₄·0.044325 = +2.9 pts. A bootstrap over
    cases reads the same rows as possibly −5 pts: resamples that leave the fixed cases out."""
    before, after = worked_holdout()
    result = Holdout(max_f1_drop=0.01).judge(before, after, positive_label="vulnerable")
    assert result.figures["test"] == "delta-f1-runs"
    assert result.figures["delta"] == pytest.approx(WORKED_DELTA, abs=1e-6)
    assert result.figures["ci_low"] == pytest.approx(WORKED_DELTA - WORKED_HALF_WIDTH, abs=1e-4)
    assert result.verdict == "pass"
    by_cases = compare_f1(
        before, after, positive_label="vulnerable", alternative="greater", threshold=-0.01
    )
    assert by_cases.test == "bootstrap-f1" and by_cases.ci_low < -0.01
    assert by_cases.decision == "inconclusive"


def test_holdout_rejects_the_worked_rows_reversed() -> None:
    """Three cases broken and two steadied: −12.4 pts, the upper bound below −1 point."""
    before, after = worked_holdout()
    result = Holdout(max_f1_drop=0.01).judge(after, before, positive_label="vulnerable")
    assert result.figures["delta"] == pytest.approx(-WORKED_DELTA, abs=1e-6)
    assert result.figures["ci_high"] == pytest.approx(-WORKED_DELTA + WORKED_HALF_WIDTH, abs=1e-4)
    assert result.figures["ci_high"] < -0.01
    assert result.verdict == "fail"


def test_holdout_without_labels_uses_the_pass_rate() -> None:
    before = rows({f"c{i}": (True,) for i in range(10)})
    after = rows({f"c{i}": (i > 4,) for i in range(10)})
    result = Holdout().judge(before, after, positive_label=None)
    assert result.figures["measure"] == "pass_rate"
    assert result.figures["delta"] == pytest.approx(-0.5)
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
        f"{result.figures['score']:.0f}), at most 5 points allowed"
    ]


def test_verify_below_the_house_style_is_advice_not_a_refusal() -> None:
    """A prose skill (no numbered steps, no Pitfalls) scores low on the house style; a change
    that keeps its score passes, and the low score is shown as advice."""
    text = (REAL_STYLE / "pdf-workbench" / "SKILL.md").read_text(encoding="utf-8")
    child = text.replace("## Forms\n", "## Forms\n\nOpen forms with `pypdf`.\n")
    result = Verify().judge(child, text)
    assert result.verdict == "pass"
    assert result.figures["score"] == result.figures["parent_score"] < 75
    assert result.figures["below_min"] is True
    assert result.reasons[1].startswith("advice: house-style score 60 is below 75 (missing: ")
    alone = Verify().judge("no frontmatter, no steps\n", None)
    assert alone.verdict == "pass" and alone.figures["parent_score"] is None
    assert "advice: house-style score" in alone.reasons[-1]


# -- all four, serialised ------------------------------------------------------------------------


def test_outcome_gates_from_config_judge_all_four_and_serialise(tmp_path: Path) -> None:
    gates = OutcomeGates.from_config(GatesConfig(holdout_every=2, holdout_max_f1_drop=0.02))
    text = DEMO_SKILL.read_text(encoding="utf-8")
    aimed = {f"a{i}": (False, False) for i in range(3)}
    guarded = {f"b{i}": (True, True) for i in range(4)}
    before = rows(aimed | guarded)
    after = rows({c: (True, True) for c in aimed} | {c: (False, False) for c in guarded})
    results = gates.judge(
        round_no=1,
        targeted=list(aimed),
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
    assert failure.newly_broken == list(guarded)
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
