"""Metrics and comparisons against hand-computed tables; result rows read from real files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from engine.core.errors import FormatError
from engine.core.results import read_results
from engine.evaluation.grading import compare, metrics
from engine.evaluation.metrics import Spread, infer_positive_label

V, S = "vulnerable", "safe"


def row(
    case_id: str,
    run: int,
    truth: str,
    verdict: str | None,
    pass_fail: str,
    *,
    score: float | None = None,
    cost: float | None = 0.01,
    duration: int = 1000,
    reason: str | None = None,
) -> dict[str, Any]:
    kind = None
    if pass_fail == "fail" and verdict != truth:
        kind = "FN" if truth == V else "FP"
    return {
        "case_id": case_id,
        "run_index": run,
        "variant": "skill",
        "ground_truth": truth,
        "judge_verdict": verdict,
        "pass_fail": pass_fail,
        "failure_kind": kind,
        "score": score if score is not None else (1.0 if pass_fail == "pass" else 0.0),
        "checks": [],
        "tokens": {"input": 100, "output": 10},
        "cost_usd": cost,
        "duration_ms": duration,
        "session_id": f"s-{case_id}-{run}",
        "session_file": f"sessions/{case_id}.{run}.jsonl",
        "invalid_reason": reason,
        "split": "selection",
        "case_type": None,
        "critical": False,
    }


# Run 0: TP, FN, TN, FP, TP   → P 2/3, R 2/3, F1 2/3, pass 3/5, mean score 0.7
# Run 1: TP, TP, TN, FP, (invalid) → P 2/3, R 1, F1 0.8, pass 3/4, mean score 0.75
RUNS_A = [
    row("c1", 0, V, V, "pass"),
    row("c2", 0, V, S, "fail"),
    row("c3", 0, S, S, "pass", cost=None),
    row("c4", 0, S, V, "fail", score=0.5),
    row("c5", 0, V, V, "pass"),
    row("c1", 1, V, V, "pass"),
    row("c2", 1, V, V, "pass"),
    row("c3", 1, S, S, "pass", cost=None),
    row("c4", 1, S, V, "fail"),
    row("c5", 1, V, None, "invalid", cost=0.02, duration=5000, reason="timeout"),
]


def test_metrics_match_the_hand_computed_table() -> None:
    m = metrics(RUNS_A, positive_label=V)
    assert (m.units, m.valid, m.invalid, m.passed, m.failed) == (10, 9, 1, 6, 3)
    assert (m.tp, m.fp, m.tn, m.fn) == (4, 2, 2, 1)
    assert m.pass_rate == pytest.approx(6 / 9)
    assert m.precision == pytest.approx(4 / 6)
    assert m.recall == pytest.approx(4 / 5)
    assert m.f1 == pytest.approx(8 / 11)
    assert [(r.run_index, r.valid, r.passed) for r in m.runs] == [(0, 5, 3), (1, 4, 3)]
    assert [r.f1 for r in m.runs] == [pytest.approx(2 / 3), pytest.approx(0.8)]
    assert [(r.precision, r.recall) for r in m.runs] == [
        (pytest.approx(2 / 3), pytest.approx(2 / 3)),
        (pytest.approx(2 / 3), 1.0),
    ]
    run0, run1 = (r.usage for r in m.runs)
    assert (m.runs[1].invalid, run1.cost_usd, run1.duration_ms) == (1, pytest.approx(0.05), 9000)
    assert (run0.tokens_input, run0.cost_usd, run0.cost_mean_usd) == (
        500,
        pytest.approx(0.04),
        pytest.approx(0.01),
    )
    assert m.f1_spread is not None and m.pass_rate_spread is not None
    assert m.f1_spread.mean == pytest.approx((2 / 3 + 0.8) / 2)
    assert m.f1_spread.stddev == pytest.approx((0.8 - 2 / 3) / math.sqrt(2))  # sample, n−1
    assert m.pass_rate_spread.mean == pytest.approx(0.675)
    assert m.pass_rate_spread.stddev == pytest.approx(0.15 / math.sqrt(2))
    assert m.score_spread is not None
    assert (m.score_spread.min, m.score_spread.max) == (pytest.approx(0.7), pytest.approx(0.75))
    assert m.mean_score == pytest.approx((0.7 * 5 + 0.75 * 4) / 9)
    # Usage counts every unit (a crashed run was paid for); cost ignores nulls.
    assert (m.tokens_input, m.tokens_output) == (1000, 100)
    assert m.cost_usd == pytest.approx(0.09) and m.cost_mean_usd == pytest.approx(0.09 / 8)
    assert (m.duration_ms, m.duration_mean_ms) == (14000, 1400.0)
    assert m.invalid_reasons == {"timeout": 1}
    assert json.loads(json.dumps(m.to_dict()))["f1"] == pytest.approx(8 / 11)


def test_metrics_edge_cases() -> None:
    nothing = metrics([row("c1", 0, V, None, "invalid", cost=None, reason="crash")], V)
    assert nothing.pass_rate is None and nothing.valid == 0 and nothing.cost_usd is None
    assert nothing.f1 == 0.0 and nothing.f1_spread is None and nothing.pass_rate_spread is None
    assert nothing.runs[0].pass_rate is None and nothing.runs[0].invalid == 1
    # Without a positive label only pass rate and scores are computed.
    plain = metrics([row("c1", 0, "x", "x", "pass")])
    assert plain.f1 is None and plain.tp == 0 and plain.pass_rate == 1.0
    assert plain.pass_rate_spread == Spread(1.0, 0.0, 1.0, 1.0)  # one run: stddev 0
    # A missing verdict on a negative case is counted as a false alarm (wrong class).
    m = metrics([{**row("c1", 0, S, None, "fail"), "failure_kind": None}], V)
    assert (m.tp, m.fp, m.tn, m.fn) == (0, 1, 0, 0)


def test_positive_label_is_inferred_from_fn_and_fp_rows() -> None:
    assert infer_positive_label(RUNS_A) == V
    assert infer_positive_label([row("c1", 0, S, V, "fail")]) == V
    assert infer_positive_label([row("c1", 0, V, V, "pass")]) is None


def test_compare_sorts_cases_into_fates() -> None:
    rows_b = [
        row("c1", 0, V, V, "pass"),
        row("c1", 1, V, V, "pass"),
        row("c2", 0, V, V, "pass"),
        row("c2", 1, V, V, "pass"),
        row("c3", 0, S, V, "fail"),
        row("c3", 1, S, V, "fail"),
        row("c4", 0, S, S, "pass"),
        row("c4", 1, S, S, "pass"),
        row("c5", 0, V, S, "fail"),
        row("c5", 1, V, S, "fail"),
        row("c6", 0, S, S, "pass"),
        row("c7", 0, S, V, "fail"),
    ]
    rows_a = [*RUNS_A, row("c7", 0, S, V, "fail")]
    cmp = compare(rows_a, rows_b)
    assert cmp.fixed == ["c4"]
    assert cmp.newly_broken == ["c3", "c5"]  # c5 passed its only valid run in A
    assert cmp.still_failing == ["c7"]
    assert cmp.still_passing == ["c1"]
    assert cmp.flaky == ["c2"]  # runs disagreed in A
    assert cmp.unmeasured == ["c6"]
    c2 = next(c for c in cmp.cases if c.case_id == "c2")
    assert (c2.before, c2.before_passes, c2.after, c2.after_passes) == (
        "flaky",
        "1/2",
        "pass",
        "2/2",
    )
    # B: TP c1×2, c2×2; FP c3×2; TN c4×2, c6; FN c5×2; FP c7 → P 4/7, R 4/6
    assert (cmp.after.tp, cmp.after.fp, cmp.after.tn, cmp.after.fn) == (4, 3, 3, 2)
    before_pass = 6 / 10
    assert cmp.deltas["pass_rate"] == pytest.approx(7 / 12 - before_pass)
    assert cmp.deltas["f1"] == pytest.approx(cmp.after.f1 - cmp.before.f1)  # type: ignore[operator]
    assert cmp.deltas["tokens"] == (12 - 11) * 110
    assert cmp.to_dict()["fixed"] == ["c4"]


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_read_results_validates_every_line(tmp_path: Path) -> None:
    good = json.dumps(row("c1", 0, V, V, "pass"))
    article = json.dumps(
        {
            "case_id": "biz-vul-002",
            "ground_truth": True,
            "judge_verdict": False,
            "pass_fail": "fail",
            "failure_kind": "FN",
            "platform_extra": 3,
        }
    )
    rows = read_results(_write(tmp_path / "results.jsonl", [good, "", article]))
    assert rows[0] == json.loads(good)
    assert rows[1]["ground_truth"] == "true" and rows[1]["judge_verdict"] == "false"
    assert rows[1]["score"] == 0.0 and rows[1]["run_index"] == 0 and rows[1]["platform_extra"] == 3
    cases = [
        ("{not json", r"results.jsonl:3: line is not valid JSON"),
        (
            json.dumps({**row("c", 0, V, V, "pass"), "score": 1.5}),
            r"results.jsonl:3: field 'score'",
        ),
        (json.dumps({**row("c", 0, V, V, "pass"), "pass_fail": "ok"}), r":3: field 'pass_fail'"),
        (json.dumps({"pass_fail": "pass"}), r"results.jsonl:3: field 'case_id': is required"),
        (json.dumps({**row("c", 0, V, V, "pass"), "duration_ms": 1.5}), r":3: field 'duration_ms'"),
        (
            json.dumps({**row("c", 0, V, V, "pass"), "checks": [{"x": 1}]}),
            r":3: field 'checks\[0\]'",
        ),
        ("[1, 2]", r"results.jsonl:3: line must be a JSON object"),
    ]
    for bad, message in cases:
        path = _write(tmp_path / "bad" / "results.jsonl", [good, good, bad, good])
        with pytest.raises(FormatError, match=message):
            read_results(path)
