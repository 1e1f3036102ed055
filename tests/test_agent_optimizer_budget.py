"""An optimize-agent session bounded by a budget of agent runs stops cleanly and resumes.

The real CLI runs the Optimizer on a benchmark built from the demo (subprocess agents, two
workers, the demo agent without noise, as every Optimizer test). Every results row is one agent
run, so counting the rows the session added checks the budget against what really ran. A stop
comes in the middle of a round's evaluations: nothing of that round is decided or queued, the
parent state stays live, and the state file keeps the round for the resume.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from engine.core.queue import CandidateQueue
from engine.core.workspace import Workspace
from engine.loops.agent_optimizer.candidate import target_path
from tests.builder_helpers import BENCH, built_demo

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 2


def _plan(root: Path) -> dict[str, Any]:
    """``optimize-agent --dry-run --json``: the plan, with nothing run."""
    plan = _optimize(root, "--dry-run")
    assert plan["dry_run"]
    return plan


def _optimize(root: Path, *flags: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "engine.cli", "optimize-agent", "--bench", BENCH),
            *("-w", str(root), "-j", str(WORKERS), "--json", *flags),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _rows(ws: Workspace) -> int:
    return sum(
        len(p.read_text(encoding="utf-8").splitlines()) for p in ws.runs_dir.glob("*/results.jsonl")
    )


def test_a_session_stops_at_its_budget_with_nothing_decided_and_resumes(tmp_path: Path) -> None:
    ws = Workspace.at(built_demo(tmp_path / "demo"))
    built = _rows(ws)  # the Formal Baseline's runs, made before the session
    first = _plan(ws.root)  # 3 rounds of 2 evaluations of the 6 cases, once each
    assert first["agent_runs"] == 3 * 2 * 6 and "at most, 3 rounds" in first["line"]
    assert _rows(ws) == built and not list(ws.experiments_dir.glob("*/state.json"))

    stopped = _optimize(ws.root, "--budget-runs", "40")
    assert stopped["stop_reason"] == "budget"
    assert stopped["spent"]["runs"] == _rows(ws) - built
    assert 40 <= stopped["spent"]["runs"] <= 40 + WORKERS
    assert stopped["budget"] == {"runs": 40, "usd": None, "tokens": None}
    (attempt,) = stopped["attempts"]  # the first round, stopped in its evaluations
    assert attempt["decision"] is None and attempt["stage"] in ("snapshotted", "applied")
    assert CandidateQueue(ws).list() == []
    candidate = attempt["candidate"]
    live = target_path(ws, candidate["target"])
    assert live.read_text(encoding="utf-8") == candidate["before"]  # the parent stays live
    (state,) = [json.loads(p.read_text()) for p in ws.experiments_dir.glob("*/state.json")]
    assert state["status"] == "running" and state["spent"] == stopped["spent"]

    left = _plan(ws.root)  # planned on the unfinished session, for the rounds it has left
    assert f"resuming session {stopped['session_id']}" in left["line"]
    again = _optimize(ws.root, "--budget-runs", "80")
    assert again["resumed"] and again["session_id"] == stopped["session_id"]
    assert again["attempts"][0]["candidate"] == candidate  # the same round goes on
    assert again["spent"]["runs"] == _rows(ws) - built > stopped["spent"]["runs"]
    assert again["stop_reason"] == "budget" and again["spent"]["runs"] <= 80 + WORKERS
    most = first["agent_runs"] + first["max_extra_runs"]
    assert again["spent"]["runs"] <= most  # the plan's most bounds what the session spends
