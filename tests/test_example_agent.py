"""The example `command` agent shipped in the demo workspace (agents/example_agent.py) is
evaluated like any agent: its session lines are read as documented in docs/agents.md, its tool
calls are real commands in the room, and with the skill it finds what it cannot without."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.workspace import Workspace
from engine.evaluation.demo import copy_demo
from engine.evaluation.runner import BASELINE, SKILL, run_evaluation

CASES = ["cmdi-py-system", "cmdi-php-system", "cmdi-py-quoted"]


def test_the_example_command_agent_follows_the_demo_skill(tmp_path: Path) -> None:
    ws = Workspace.at(copy_demo(tmp_path / "demo"))
    agent = ws.root / "agents" / "example_agent.py"
    cfg = ws.load_config()
    cfg.agent.kind = "command"
    cfg.agent.command = [sys.executable, str(agent)]
    ws.save_config(cfg)
    result = run_evaluation(ws, "vuln-detect", runs=1, jobs=2, case_ids=CASES, baseline="none")
    rows = {(r["case_id"], r["variant"]): r for r in result.rows}
    assert all(r["pass_fail"] != "invalid" for r in rows.values()), result.metrics.invalid_reasons
    assert rows[("cmdi-py-system", SKILL)]["judge_verdict"] == "vulnerable"
    assert rows[("cmdi-php-system", SKILL)]["judge_verdict"] == "vulnerable"
    assert {rows[(c, BASELINE)]["judge_verdict"] for c in CASES} == {"safe"}
    session = [
        json.loads(line)
        for line in (result.run_dir / "sessions" / "cmdi-py-system.0.jsonl")
        .read_text()
        .splitlines()
    ]
    calls = [c for line in session for c in line.get("tool_calls", [])]
    assert calls and all(c["name"] == "Bash" and c["args"].startswith("grep") for c in calls)
    outputs = [line["result"] for line in session if line["type"] == "tool"]
    assert any("system(" in out for out in outputs)  # a step's grep hit the file for real
    assert session[-1]["type"] == "result"


def test_eval_agents_pairs_the_example_agent_with_the_demo_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``eval --agents command,demo``: both agents on the same cases with one seed, and the
    paired verdict of the second against the first per skill version."""
    ws = Workspace.at(copy_demo(tmp_path / "demo"))
    cfg = ws.load_config()
    cfg.agent.kind = "command"
    cfg.agent.command = [sys.executable, str(ws.root / "agents" / "example_agent.py")]
    ws.save_config(cfg)
    argv = ["eval", "vuln-detect", "--cases", ",".join(CASES), "--runs", "1", "--json"]
    assert main([*argv, "--agents", "command,demo", "--seed", "11", "-w", str(ws.root)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert set(shown["runs"]) == {"command", "demo"}
    (difference,) = shown["differences"]
    assert (difference["before"], difference["after"], difference["variant"]) == (
        "command",
        "demo",
        "skill",
    )
    assert difference["verdict"]["n_cases"] == len(CASES)
    seeds = {
        json.loads((ws.runs_dir / run["run_id"] / "manifest.json").read_text())["seed"]
        for run in shown["runs"].values()
    }
    assert seeds == {11}  # one seed, so unit (case, run) of one agent pairs with the other's


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("codex", "--agents codex: name two or more kinds"),
        ("demo,gemini", "--agents demo,gemini: unknown kind 'gemini'"),
        ("codex,command", "--agents: a 'command' agent needs its command line"),
    ],
)
def test_eval_agents_refuses_what_it_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, said: str
) -> None:
    ws = Workspace.at(copy_demo(tmp_path / "demo"))
    assert main(["eval", "vuln-detect", "--agents", spec, "-w", str(ws.root)]) == 2
    assert said in capsys.readouterr().err
    assert not any(ws.runs_dir.iterdir())
