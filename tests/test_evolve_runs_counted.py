"""Every agent run an evolve session launches is counted: its total equals the rows on disk.

The real CLI runs a two-round session on the demo's path-traversal cases, one run a case
(subprocess agents, two workers), with the Holdout gate due on round 2, so every kind of
evaluation a session makes appears: the baseline, the parent and the candidate, the gates'
fresh parent, their reruns, the accepted candidate's golden/holdout and the Holdout gate. The
session seed is fixed (``--seed 1``) because the noisy demo agent then makes the same runs every
time, and with this one round 1's Target gate reruns its cases and the Guardrail confirms a
case that broke on fresh runs — the runs no figure counted before.

The runner appends one row to ``results.jsonl`` for every agent run it finishes, so the rows
of every run folder the session wrote are the runs it launched, whatever the loop believes (a
unit run again after an invalid run keeps only its latest row once its run finishes: the one
case where the two differ, which these sessions do not meet).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from engine.core.results import read_results
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_BENCHMARK
from tests.evolve_helpers import demo, run_evolve, session_events

pytestmark = pytest.mark.slow

ARGS = ("--rounds", "2", "--auto-approve", "--seed", "1")


def rows_on_disk(ws: Workspace, session_id: str) -> int:
    """Rows of every run folder the session named as it started an evaluation."""
    named = {
        str(e["run_id"])
        for e in session_events(ws, session_id)
        if str(e.get("text", "")).startswith("evaluating ") and e.get("run_id")
    }
    folders = [ws.runs_dir / run_id for run_id in named if (ws.runs_dir / run_id).is_dir()]
    assert folders, "the session started no evaluation"
    return sum(len(read_results(folder / "results.jsonl")) for folder in folders)


def path_demo(tmp_path: Path) -> Workspace:
    """The demo's path-traversal cases, one run each; the Holdout gate due every second round."""
    ws = demo(tmp_path / "ws", ("path",))
    spec = ws.benchmarks_dir / DEMO_BENCHMARK / "benchmark.yaml"
    spec.write_text(re.sub(r"runs_per_case: \d+", "runs_per_case: 1", spec.read_text()))
    cfg = ws.load_config()
    cfg.gates.holdout_every = 2  # round 2 judges the Holdout gate: its reruns are counted too
    ws.save_config(cfg)
    return ws


def all_rows(ws: Workspace) -> list[dict[str, Any]]:
    return [row for p in ws.runs_dir.glob("*/results.jsonl") for row in read_results(p)]


def tokens(rows: list[dict[str, Any]]) -> int:
    """Tokens as the budget meter adds them: every number a row's ``tokens`` holds."""
    counts = [v for r in rows for v in (r.get("tokens") or {}).values()]
    return int(sum(v for v in counts if isinstance(v, (int, float))))


def test_an_evolve_sessions_recorded_runs_equal_the_result_rows_on_disk(tmp_path: Path) -> None:
    ws = path_demo(tmp_path)
    result = run_evolve(ws, *ARGS)
    by_kind: dict[str, int] = result["agent_runs"]
    total = sum(by_kind.values())
    assert total == rows_on_disk(ws, result["session_id"]) == result["spent"]["runs"]
    assert total == len(all_rows(ws))

    finished = session_events(ws, result["session_id"])[-1]
    assert finished["kind"] == "finished"
    assert finished["agent_runs"] == total and finished["agent_runs_by_kind"] == by_kind

    # each round's runs by kind; its reruns are exactly what its gates recorded asking for
    rounds = result["rounds"]
    assert len(rounds) == 2 and {"baseline", "selection", "candidate"} <= set(by_kind)
    asked: dict[str, dict[str, int]] = {}  # gate → kind → agent runs, over both rounds
    for record in rounds:
        gates = json.loads((ws.root / record["folder"] / "gates.json").read_text())
        counted = {
            g["gate"]: g["figures"]["agent_runs"] for g in gates if "agent_runs" in g["figures"]
        }
        recorded = sum(sum(kinds.values()) for kinds in counted.values())
        assert record["agent_runs"].get("rerun", 0) == recorded
        for gate, kinds in counted.items():
            tally = asked.setdefault(gate, {})
            for kind, n in kinds.items():
                tally[kind] = tally.get(kind, 0) + n
    assert asked["target"]["rerun"] > 0 and asked["guardrail"]["confirm"] > 0
    assert "holdout" in asked  # judged on round 2
    session_level = {"baseline", "final_holdout", "rollback_holdout"}
    per_round = sum(sum(r["agent_runs"].values()) for r in rounds)
    assert per_round + sum(v for k, v in by_kind.items() if k in session_level) == total


def test_runs_finished_after_a_kills_last_checkpoint_are_counted_when_the_session_resumes(
    tmp_path: Path,
) -> None:
    """A process killed outright saved its counts last when the evaluation it was running
    started; the rows that evaluation wrote since are on disk, and resuming must count them.

    The budget stops the session inside an evaluation at a clean point (its counts saved); the
    checkpoint is then put back to what it held when that evaluation started — exactly what a
    SIGKILL at that moment leaves — so the test does not depend on when a kill lands."""
    ws = path_demo(tmp_path)
    stopped = run_evolve(
        ws, "--rounds", "1", "--auto-approve", "--seed", "1", "--budget-runs", "20"
    )
    assert stopped["stop_reason"] == "budget"
    pending = json.loads(ws.pending_round_path.read_text())
    ((role, run_id),) = [
        (role, run_id)
        for role, run_id in pending["run_ids"].items()
        if json.loads((ws.runs_dir / run_id / "manifest.json").read_text())["status"]
        == "interrupted"
    ]
    lost = read_results(ws.runs_dir / run_id / "results.jsonl")
    assert lost and pending["run_rows"].pop(run_id) == len(lost)
    pending["spent_runs"] -= len(lost)
    pending["spent_tokens"] -= tokens(lost)
    for tally in ("agent_runs", "round_runs"):
        pending[tally][role] -= len(lost)
    ws.pending_round_path.write_text(json.dumps(pending))

    done = run_evolve(ws, "--rounds", "1", "--auto-approve", "--seed", "1", "--budget-runs", "5000")
    assert done["resumed"] and done["stop_reason"] == "max_rounds"
    rows = all_rows(ws)
    assert sum(done["agent_runs"].values()) == done["spent"]["runs"] == len(rows)
    assert done["spent"]["tokens"] == tokens(rows)
