"""Which invalid runs the agent ended itself (a failure) and which the world ended (left out).

A run the agent ended badly — it ran out of time, printed no answer, overflowed its output cap,
hit its turn or budget limit — is the agent failing the case. Leaving such runs out of a
comparison lets a candidate fake a fix: turn the failing runs of the cases it aims at into
timeouts and the failures vanish (74.5 % of no-effect candidates passed the evolve gates that
way). Miller's "Adding Error Bars to Evals" gives the rule: count a crash as a failure unless it
is known to be unrelated to what is measured. So only runs that failed for reasons outside the
agent — the harness, the network, an API outage, a cancel — are left out of a verdict (and
rerun by a resumed evaluation); every other invalid run is a failure.

The cause is read from the unit's recorded ``invalid_reason``; the patterns below are the
reasons the agent kinds write (``engine.evaluation.agents.kinds``). A timeout during which
``claude`` was still retrying the API is an outage, not the agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Cause = Literal["agent", "external"]

# the reasons an agent run ends that are the agent's own doing
_AGENT_REASONS = (
    "timeout after",
    "output over cap",
    "no answer",
    "no output",
    "garbage output",
    "turn limit",
    "max turns",
    "budget limit",
    "error_max_turns",
    "error_max_budget",
)
_OUTAGE_NOTES = ("was retrying API",)


def invalid_cause(row: Mapping[str, Any]) -> Cause | None:
    """``agent`` for a run the agent ended badly, ``external`` for one the world ended, None for
    a valid run."""
    if row.get("pass_fail") != "invalid":
        return None
    reason = str(row.get("invalid_reason") or "")
    if any(note in reason for note in _OUTAGE_NOTES):
        return "external"
    return "agent" if reason.startswith(_AGENT_REASONS) else "external"


def counted(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The row as a verdict counts it: an agent-ended run as a failure with no answer, an
    externally failed one not at all (None), any other row as it is."""
    cause = invalid_cause(row)
    if cause is None:
        return row
    if cause == "external":
        return None
    return {**row, "pass_fail": "fail", "score": 0.0, "judge_verdict": None, "failure_kind": None}


__all__ = ["Cause", "counted", "invalid_cause"]
