"""The Optimizer tunes the agent's settings, not only its skills: a too-tight turn budget on the
demo is raised, and the paired verdict keeps the raise."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.core.scoreboard import read_records
from engine.core.workspace import Workspace
from engine.evaluation.demo import copy_demo
from engine.evaluation.verdict import Verdict
from engine.loops.agent_optimizer import AgentOptimizerOptions
from engine.loops.agent_optimizer import run as run_optimizer
from engine.loops.builder import BuildOptions
from engine.loops.builder import run as run_build

BENCH = "tight"
# Demo cases whose runs need 13 to 18 tool calls: with a budget of 12 the agent stops before
# the Pitfalls review and keeps every hit, so the near-miss cases come out wrong.
LONG_CASES = (
    "crypto-php-password-hash",
    "crypto-php-md5",
    "deser-php-unserialize",
    "sqli-php-concat",
    "sqli-php-include-login",
    "crypto-js-des",
)


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = Workspace.at(copy_demo(tmp_path_factory.mktemp("tight") / "ws"))
    cfg = ws.load_config()
    cfg.agent.max_turns = 12
    # exact keep / roll-back decisions are asserted, so the demo agent runs without its slips
    cfg.agent.noise = 0.0
    ws.save_config(cfg)
    run_build(
        ws,
        BuildOptions(
            BENCH, source="vuln-detect", pick=LONG_CASES, cases=6, pilot_iterations=1, jobs=2
        ),
    )
    return ws.root


def _manifest_turns(ws: Workspace, run_id: str) -> int:
    manifest = json.loads((ws.runs_dir / run_id / "manifest.json").read_text())
    return int(manifest["agent"]["max_turns"])


def test_a_turn_budget_raise_is_tried_and_kept_by_the_paired_verdict(
    tight: Path, tmp_path: Path
) -> None:
    shutil.copytree(tight, tmp_path / "ws", symlinks=True)
    ws = Workspace.at(tmp_path / "ws")
    result = run_optimizer(
        ws, AgentOptimizerOptions(BENCH, auto_approve=True, rounds=1, runs=1, jobs=2)
    )

    (attempt,) = result.attempts
    assert attempt["candidate"]["target"] == "skillsmith.yaml"
    assert attempt["candidate"]["rule"] == "budget_exhaustion"
    assert attempt["candidate"]["summary"] == "agent.max_turns 12 → 18"
    verdict = Verdict.from_dict(attempt["verdict"])
    assert attempt["decision"] == "accepted" and verdict.better
    assert verdict.p_value < 0.05 and verdict.ci_low > 0 and verdict.alternative == "greater"
    assert attempt["score"] > attempt["parent_score"]

    # the agent really ran with each budget: the parent's runs at 12, the candidate's at 18
    assert _manifest_turns(ws, attempt["parent_run_id"]) == 12
    assert _manifest_turns(ws, attempt["run_id"]) == 18
    for rerun in attempt["reruns"]:
        assert (_manifest_turns(ws, rerun["before"]), _manifest_turns(ws, rerun["after"])) == (
            12,
            18,
        )
    assert (ws.load_config().agent.max_turns, ws.version()) == (18, 1)

    # the kept record says which verdict kept it
    record = read_records(ws.benchmarks_dir / BENCH)[-1]
    assert record.kind == "accepted" and record.run_id == attempt["run_id"]
    assert verdict.line() in record.summary
