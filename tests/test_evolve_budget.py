"""An evolve session bounded by a budget of agent runs stops cleanly and resumes with more.

The real CLI runs a session on a third of the demo (subprocess agents, two workers). Every
results row is one agent run, so counting the rows of every run folder checks the budget against
what really ran. Cancelled in-flight units are not stored, so the count may stay at the budget;
it must not pass it by more than one batch of workers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.core.workspace import Workspace
from tests.evolve_helpers import SMALL_FAMILIES, demo, run_evolve

ARGS = ("--rounds", "1", "--auto-approve", "--seed", "11")
WORKERS = 2  # evolve_argv's -j

pytestmark = pytest.mark.slow


def agent_runs(ws: Workspace) -> int:
    return sum(
        len(path.read_text(encoding="utf-8").splitlines())
        for path in ws.runs_dir.glob("*/results.jsonl")
    )


def test_a_session_stops_at_its_budget_and_resumes_with_a_larger_one(tmp_path: Path) -> None:
    ws = demo(tmp_path / "ws", SMALL_FAMILIES)
    stopped = run_evolve(ws, *ARGS, "--budget-runs", "60")
    assert stopped["stop_reason"] == "budget"
    assert stopped["spent"]["runs"] == agent_runs(ws)
    assert 60 <= agent_runs(ws) <= 60 + WORKERS
    assert stopped["budget"] == {"runs": 60, "usd": None, "tokens": None}
    kept = json.loads(ws.pending_round_path.read_text(encoding="utf-8"))
    assert kept["spent_runs"] == stopped["spent"]["runs"] and kept["budget_runs"] == 60

    again = run_evolve(ws, *ARGS, "--budget-runs", "60")  # nothing left: stops at once
    assert again["stop_reason"] == "budget" and agent_runs(ws) == stopped["spent"]["runs"]

    done = run_evolve(ws, *ARGS, "--budget-runs", "5000")
    assert done["resumed"] and done["session_id"] == stopped["session_id"]
    assert done["stop_reason"] == "max_rounds"
    assert done["spent"]["runs"] == agent_runs(ws) > stopped["spent"]["runs"]
    assert not ws.pending_round_path.exists()
