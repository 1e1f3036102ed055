"""A repeated seeded ``skillsmith eval`` is not paid for twice when the agent is deterministic.

Each test counts the real launches of the scripted command agent (tests/agents/scripted_agent.py
logs one line per launch), so "reused" means no agent ran, not only that a flag was set. The
seed is fixed because the seed is part of an evaluation's identity: only an eval asked with the
seed of a finished run may be answered by it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.core.workspace import Workspace
from engine.evaluation.reuse import Reuse
from engine.evaluation.runner import run_evaluation
from tests.runner_helpers import add_skill, command_workspace, launches, mode_benchmark

CASES = {
    "c1": ("answer", "eval(x)", "vulnerable"),
    "c2": ("answer", "print(x)", "safe"),
    "c3": ("answer", "eval(y)", "vulnerable"),
}


def workspace(root: Path, *, deterministic: bool, reuse: str = "auto") -> Workspace:
    ws = command_workspace(root)
    cfg = ws.load_config()
    cfg.agent.deterministic = deterministic
    cfg.reuse = reuse  # type: ignore[assignment]  # the literal is checked when the file is read
    ws.save_config(cfg)
    add_skill(ws, "audit", "Look for eval.\n")
    mode_benchmark(ws, CASES)
    return ws


def eval_json(ws: Workspace, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["eval", "b", "-j", "1", "--json", "-w", str(ws.root), *extra]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def test_a_repeated_seeded_eval_of_a_deterministic_agent_reuses_and_fresh_runs_again(
    tmp_path: Path, count_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = workspace(tmp_path / "ws", deterministic=True)
    first = eval_json(ws, capsys, "--seed", "5")
    assert len(launches(count_dir)) == 3 and first["reused"] is None

    again = eval_json(ws, capsys, "--seed", "5")
    assert len(launches(count_dir)) == 3  # no agent ran
    assert again["run_id"] == first["run_id"] and again["launched"] == 0
    assert again["metrics"] == first["metrics"]
    assert again["reused"].startswith(f"reused {first['run_id']} for audit sha256:")
    assert again["reused"].endswith(": 3 units (seed 5)")

    fresh = eval_json(ws, capsys, "--seed", "5", "--fresh")
    assert len(launches(count_dir)) == 6 and fresh["reused"] is None
    assert fresh["run_id"] != first["run_id"]
    # the newest finished run is the one that stands in from now on
    assert eval_json(ws, capsys, "--seed", "5")["run_id"] == fresh["run_id"]

    # another seed, another case set, or a changed benchmark is another evaluation
    eval_json(ws, capsys, "--seed", "6")
    eval_json(ws, capsys, "--seed", "5", "--cases", "c1,c2")
    assert len(launches(count_dir)) == 6 + 3 + 2
    prompt = ws.benchmarks_dir / "b" / "c3" / "code.txt"
    prompt.write_text("print(y)", encoding="utf-8")
    eval_json(ws, capsys, "--seed", "5")
    assert len(launches(count_dir)) == 6 + 3 + 2 + 3


def test_a_reused_run_that_is_gone_is_run_again(
    tmp_path: Path, count_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = workspace(tmp_path / "ws", deterministic=True)
    first = eval_json(ws, capsys, "--seed", "5")
    rows = ws.runs_dir / first["run_id"] / "results.jsonl"
    rows.write_text(rows.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    again = eval_json(ws, capsys, "--seed", "5")  # a unit missing: nothing stands in
    assert again["run_id"] != first["run_id"] and len(launches(count_dir)) == 6
    shutil.rmtree(ws.runs_dir / again["run_id"])  # a run deleted by hand: nothing stands in
    third = eval_json(ws, capsys, "--seed", "5")
    assert third["reused"] is None and len(launches(count_dir)) == 9


def test_a_noisy_agent_runs_again_unless_the_workspace_says_reuse_always(
    tmp_path: Path, count_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = workspace(tmp_path / "ws", deterministic=False)
    first = eval_json(ws, capsys, "--seed", "5")
    second = eval_json(ws, capsys, "--seed", "5")
    assert len(launches(count_dir)) == 6 and second["reused"] is None
    assert second["run_id"] != first["run_id"]

    cfg = ws.load_config()
    cfg.reuse = "always"
    ws.save_config(cfg)
    third = eval_json(ws, capsys, "--seed", "5")
    assert len(launches(count_dir)) == 6 and third["run_id"] == second["run_id"]
    assert third["reused"] is not None

    cfg.reuse = "never"
    cfg.agent.deterministic = True
    ws.save_config(cfg)
    eval_json(ws, capsys, "--seed", "5")
    assert len(launches(count_dir)) == 9


def test_an_eval_without_a_seed_is_a_new_draw(
    tmp_path: Path, count_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = workspace(tmp_path / "ws", deterministic=True)
    first = eval_json(ws, capsys)
    second = eval_json(ws, capsys)
    assert len(launches(count_dir)) == 6 and second["run_id"] != first["run_id"]
    # its seed, typed back, is answered by the run that drew it
    again = eval_json(ws, capsys, "--seed", str(second["seed"]))
    assert again["run_id"] == second["run_id"] and len(launches(count_dir)) == 6


def test_rows_a_loop_picked_targets_on_stand_in_only_for_picking_targets_again(
    tmp_path: Path, count_dir: Path
) -> None:
    # the rule that keeps a patch from being judged on the rows its targets came from
    ws = workspace(tmp_path / "ws", deterministic=True)
    diagnosed = run_evaluation(ws, "b", seed=5, jobs=1, reuse=Reuse("targets"))
    measured = run_evaluation(ws, "b", seed=5, jobs=1, reuse=Reuse("measure"))
    assert len(launches(count_dir)) == 6 and measured.run_id != diagnosed.run_id
    again = run_evaluation(ws, "b", seed=5, jobs=1, reuse=Reuse("targets"))
    assert (again.run_id, again.launched) == (diagnosed.run_id, 0)
    assert run_evaluation(ws, "b", seed=5, jobs=1, reuse=Reuse("measure")).run_id == (
        measured.run_id
    )
    # a caller that offers no purpose neither reuses nor is filed for reuse
    plain = run_evaluation(ws, "b", seed=7, jobs=1)
    assert run_evaluation(ws, "b", seed=7, jobs=1, reuse=Reuse()).run_id != plain.run_id
    assert len(launches(count_dir)) == 12
