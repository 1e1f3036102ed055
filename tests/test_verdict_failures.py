"""Runs that ended badly in a verdict, and decisions that stop early for futility.

A run the agent ended itself (timeout, no answer, output cap, garbage) is a failure of the case;
only a run that failed outside the agent is left out, and the verdict counts both. The rows are
written out by hand, so every figure is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.evaluation.failures import counted, invalid_cause
from engine.evaluation.gates.outcome import Guardrail, Sampling, Target
from engine.evaluation.verdict import compare_paired, decide, futile_for_better

TIMEOUT = "timeout after 300s"
OUTSIDE = "agent could not start: bwrap: No permissions to create new namespace"


def rows(outcomes: dict[str, list[str]]) -> list[dict[str, Any]]:
    """``{"c1": ["fail", "timeout"]}``: case c1, run 0 failed, run 1 timed out ("outside": the
    run failed outside the agent)."""
    reasons = {"timeout": TIMEOUT, "outside": OUTSIDE}
    return [
        {
            "case_id": case,
            "run_index": i,
            "variant": "skill",
            "pass_fail": "invalid" if pf in reasons else pf,
            "invalid_reason": reasons.get(pf),
        }
        for case, runs in outcomes.items()
        for i, pf in enumerate(runs)
    ]


def test_the_cause_of_an_invalid_run_is_read_from_its_reason() -> None:
    def cause(reason: str) -> str | None:
        return invalid_cause({"pass_fail": "invalid", "invalid_reason": reason})

    assert cause("timeout after 60s") == "agent"
    assert cause("no answer (no answer.txt and no final assistant message)") == "agent"
    assert cause("output over cap (1048576 bytes)") == "agent"
    assert cause("garbage output: stdout line 3 is not JSON: 'x'") == "agent"
    assert cause("timeout after 60s (claude was retrying API status 529, attempt 9/10)") == (
        "external"
    )
    assert cause("cancelled") == "external"
    assert cause(OUTSIDE) == "external"
    assert invalid_cause({"pass_fail": "fail"}) is None
    assert counted({"pass_fail": "invalid", "invalid_reason": "cancelled"}) is None
    assert counted({"pass_fail": "invalid", "invalid_reason": TIMEOUT})["pass_fail"] == "fail"  # type: ignore[index]


def test_failures_turned_into_timeouts_are_no_fix() -> None:
    cases = [f"c{i}" for i in range(6)]
    before = rows({c: ["fail", "fail"] for c in cases})
    timed_out = rows({c: ["timeout", "timeout"] for c in cases})
    v = compare_paired(before, timed_out, test="runs", alternative="greater")
    assert (v.decision, v.delta, v.n_pairs, v.agent_failures, v.excluded) == (
        "inconclusive", 0.0, 12, 12, 0,
    )  # fmt: skip
    assert "12 ended by the agent counted failed" in v.line()
    verdict = Target(Sampling()).judge(before, timed_out, cases)
    assert not verdict.passed


def test_runs_that_failed_outside_the_agent_are_left_out_and_counted() -> None:
    before = rows({"a": ["fail", "fail"], "b": ["pass", "pass"]})
    after = rows({"a": ["pass", "outside"], "b": ["pass", "timeout"]})
    v = compare_paired(before, after, test="runs")
    # a: one pair (fail→pass) is left, b: pass→pass and pass→fail (the timeout)
    assert (v.n_pairs, v.agent_failures, v.excluded) == (3, 1, 1)
    assert v.delta == 0.0
    assert "1 failed outside the agent left out" in v.line()


def test_a_case_whose_runs_all_timed_out_is_measured_as_failing() -> None:
    before = rows({"a": ["pass", "pass"], "b": ["pass", "pass"], "c": ["pass", "pass"]})
    after = rows({"a": ["timeout", "timeout"], "b": ["pass", "pass"], "c": ["pass", "pass"]})
    result = Guardrail(Sampling()).judge(before, after)
    assert result.figures["unmeasured"] == 0
    assert result.newly_broken == ["a"]
    gone = rows({"a": ["outside", "outside"], "b": ["pass", "pass"], "c": ["pass", "pass"]})
    assert Guardrail(Sampling()).judge(before, gone).figures["unmeasured"] == 1


def _judge(b: Sequence[dict[str, Any]], a: Sequence[dict[str, Any]], alpha: float) -> Any:
    return compare_paired(b, a, alpha=alpha, test="runs", alternative="greater")


def test_a_decision_that_shows_no_effect_stops_for_futility() -> None:
    """Each rerun repeats the first look's mix: as many runs got worse as better. Today's rule
    spends the whole budget; the futility boundary stops once it rises above z = 0."""
    mixed = {f"c{i}": ["pass", "fail"] for i in range(4)}
    before = rows(mixed)
    after = rows({c: list(reversed(r)) for c, r in mixed.items()})
    calls: list[int] = []

    def rerun(cases: Sequence[str], runs: int) -> tuple[list[Any], list[Any]]:
        calls.append(len(cases) * runs)
        outcome = {c: (["pass", "fail"] * runs)[:runs] for c in cases}
        flipped = {c: (["fail", "pass"] * runs)[:runs] for c in cases}
        return rows(outcome), rows(flipped)

    plain, _, _ = decide(
        before, after, judge=_judge, wants_more=lambda v: not v.better, rerun=rerun,
        max_extra_runs=48, looks=5,
    )  # fmt: skip
    spent_plain = sum(calls)
    calls.clear()
    futile, _, _ = decide(
        before, after, judge=_judge, wants_more=lambda v: not v.better, rerun=rerun,
        max_extra_runs=48, looks=5, futile=futile_for_better,
    )  # fmt: skip
    assert not plain.better and not futile.better
    assert not plain.futile and futile.futile and "stopped for futility" in futile.line()
    assert spent_plain == 48 and sum(calls) < spent_plain


def test_a_clear_gain_is_not_futile_and_worse_questions_never_are() -> None:
    before = rows({f"c{i}": ["fail", "fail"] for i in range(6)})
    after = rows({f"c{i}": ["pass", "fail"] for i in range(6)})
    gain = _judge(before, after, 0.01)
    assert gain.delta > 0 and not futile_for_better(gain, 0.5, 0.05)
    loss = _judge(after, before, 0.01)
    assert futile_for_better(loss, 0.5, 0.05)
    worse = compare_paired(after, before, alpha=0.01, test="runs", alternative="less")
    assert not futile_for_better(worse, 0.5, 0.05)
