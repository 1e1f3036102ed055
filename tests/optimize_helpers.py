"""Workspaces for the GEPA optimizer tests: a keyword agent whose verdicts the test controls, and a
scripted reflection model served by the local Messages-API server.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.core.workspace import Workspace
from tests.bench_helpers import write_benchmark, write_case
from tests.candidate_helpers import add_skill, skill_text
from tests.llm_server import MessagesServer, Reply, last_user_text

KEYWORD_AGENT = Path(__file__).resolve().parent / "agents" / "keyword_agent.py"
SKILL = "audit"
BENCH = "kw"
SEED_STEPS = ("Read the task: `read <file>`.", "Write the verdict line.")

# (split, expected, critical) per case: feedback all positive, validation and holdout mostly so.
Case = tuple[str, str, bool]


def standard_cases(*, critical_safe_holdout: bool) -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for i in range(10):
        cases[f"fb-{i:02d}"] = ("feedback", "vulnerable", False)
    for split in ("validation", "holdout"):
        for i in range(8):
            cases[f"{split[:3]}-pos-{i:02d}"] = (split, "vulnerable", False)
        for i in range(2):
            critical = critical_safe_holdout and split == "holdout" and i == 0
            cases[f"{split[:3]}-neg-{i:02d}"] = (split, "safe", critical)
    return cases


def keyword_workspace(root: Path, cases: dict[str, Case], *, noise: float = 0.0) -> Workspace:
    """A workspace whose agent is the keyword agent, a skill ``audit`` and a benchmark ``kw``;
    with ``noise`` every answer flips at that rate (seeded per run, see the agent)."""
    ws = Workspace.init(root)
    cfg = ws.load_config()
    cfg.agent.kind = "command"
    cfg.agent.command = [sys.executable, str(KEYWORD_AGENT)]
    cfg.agent.timeout_s = 30.0
    cfg.models.reflection.provider = "anthropic"
    # Without noise the agent repeats itself, so reruns could not move a verdict over the cases;
    # they would only split alpha over more looks. Only a noisy workspace samples adaptively.
    cfg.gates.max_extra_runs = cfg.gates.max_extra_runs if noise else 0
    ws.save_config(cfg)
    add_skill(ws, SKILL, skill_text(SKILL, steps=SEED_STEPS))
    config = {
        "labels": ["vulnerable", "safe"],
        "runs_per_case": 1,
        "seed": 7,
        "splits": {"feedback": 0.34, "validation": 0.33, "holdout": 0.33},
    }
    bench = write_benchmark(ws.benchmarks_dir / BENCH, {}, config=config)
    prompt = "Is this code vulnerable? Answer `VERDICT: vulnerable` or `VERDICT: safe`.\n"
    for case_id, (split, expected, critical) in cases.items():
        rubric = {"expected": expected, "split": split, "critical": critical}
        files = {"token.txt": case_id + "\n"} | ({"noise.txt": f"{noise}\n"} if noise else {})
        write_case(bench, case_id, rubric, prompt=prompt, files=files)
    return ws


def selected_section(req: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The section a reflection request asks to rewrite, and the skill's current sections."""
    text = last_user_text(req)
    section = text.split("Selected section: ", 1)[1].split("\n", 1)[0]
    sections_line = text.split("Current skill sections (JSON):\n", 1)[1].split("\n", 1)[0]
    return section, json.loads(sections_line)


def rewriting(steps_line: str) -> Callable[[dict[str, Any]], Reply]:
    """A reflection model that adds ``steps_line`` as a new step and changes nothing else."""

    def respond(req: dict[str, Any]) -> Reply:
        section, sections = selected_section(req)
        text = sections[section]
        if section == "steps":
            count = text.count("\n") + 1
            text = f"{text}\n{count + 1}. {steps_line}"
        body = {"section": section, "text": text, "rationale": "scripted"}
        return Reply(text=json.dumps(body))

    return respond


def use_server(monkeypatch: pytest.MonkeyPatch, server: MessagesServer) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret-123")
