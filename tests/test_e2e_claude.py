"""End to end through the real ``claude`` CLI against a scripted Messages-API server on 127.0.0.1.

The server's replies depend on the skill text Claude Code sends it: when the skill is listed it
loads it (a ``Skill`` tool call), when the loaded skill names a grep command it runs that command
(a real ``Bash`` tool call in the run directory), and it answers from the grep output. Without the
skill it guesses "safe". So the skill variant and the baseline score differently only if the skill
really travelled from the workspace through the run directory into Claude Code and back.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from engine.core.workspace import Workspace
from engine.evaluation.agents.network import url_host
from engine.evaluation.runner import run_evaluation
from tests.bench_helpers import write_benchmark, write_case
from tests.llm_server import MessagesServer, Reply, ToolUse, last_user_text, request_text

pytestmark = pytest.mark.e2e

CLAUDE_BIN = os.environ.get("SKILLSMITH_CLAUDE_BIN", "")
API_KEY = "sk-ant-api03-e2e-test-key-not-real-0000"
STEP = re.compile(r"Look for dangerous calls: `([^`]+)`")
SKILL = """---
name: audit
description: Audit code for vulnerabilities. Use for every security audit.
---
# Audit

1. Look for dangerous calls: `grep -n 'eval(' code.py`
2. Answer vulnerable when the grep finds a call, else safe.
"""


def require_cli(variable: str, program: str) -> None:
    """Skip unless ``$variable`` names the agent CLI ``program``; CI (SKILLSMITH_REQUIRE_E2E=1)
    installs it, so there a missing one fails instead."""
    path = os.environ.get(variable, "")
    if path and Path(path).is_file():
        return
    if os.environ.get("SKILLSMITH_REQUIRE_E2E") == "1":
        pytest.fail(f"SKILLSMITH_REQUIRE_E2E=1 but {variable}={path!r} is missing")
    pytest.skip(f"set {variable} to the {program} CLI to run this test")


def _claude_available() -> None:
    require_cli("SKILLSMITH_CLAUDE_BIN", "claude")


def _tools_just_used(req: dict[str, Any]) -> list[str]:
    messages = req.get("messages") or []
    if len(messages) < 2 or not isinstance(messages[-2].get("content"), list):
        return []
    return [b.get("name", "") for b in messages[-2]["content"] if b.get("type") == "tool_use"]


def auditor(req: dict[str, Any]) -> Reply:
    """A model that follows the audit skill only if the skill's text reaches it."""
    used = _tools_just_used(req)
    if "Bash" in used:
        found = "eval(" in last_user_text(req)
        return Reply(text=f"STEPS DONE: 1, 2\nVERDICT: {'vulnerable' if found else 'safe'}")
    step = STEP.search(request_text({"messages": req.get("messages")}))
    if step is not None:
        return Reply(
            text="Running step 1.",
            tool_uses=[ToolUse("Bash", {"command": step.group(1), "description": "step 1"})],
        )
    if "Audit code for vulnerabilities" in request_text(req) and "Skill" not in used:
        return Reply(tool_uses=[ToolUse("Skill", {"skill": "audit"})])
    return Reply(text="Nothing to check.\nVERDICT: safe")


AUDIT_CODE = {"v1": "x = eval(input())\n", "v2": "y = eval(s)\n", "s1": "x = int(input())\n"}
# what a model following the skill answers; without it (the baseline) it guesses "safe"
AUDIT_VERDICTS = {
    ("s1", "baseline"): "safe",
    ("s1", "skill"): "safe",
    ("v1", "baseline"): "safe",
    ("v1", "skill"): "vulnerable",
    ("v2", "baseline"): "safe",
    ("v2", "skill"): "vulnerable",
}


def audit_setup(ws: Workspace, code: dict[str, str] = AUDIT_CODE, seed: int = 3) -> None:
    """claude-code with a six-turn budget, the audit skill live, and benchmark ``b``: one case
    per ``code`` file, expected vulnerable when it calls eval."""
    cfg = ws.load_config()
    cfg.agent.kind = "claude-code"
    cfg.agent.timeout_s = 120
    cfg.agent.max_turns = 6
    ws.save_config(cfg)
    ws.skill_path("audit").parent.mkdir(parents=True, exist_ok=True)
    ws.skill_path("audit").write_text(SKILL)
    root = write_benchmark(
        ws.benchmarks_dir / "b", {}, config={"labels": ["vulnerable", "safe"], "seed": seed}
    )
    for case_id, text in code.items():
        expected = "vulnerable" if "eval" in text else "safe"
        write_case(root, case_id, {"expected": expected}, files={"code.py": text})


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_claude_code_evaluation_through_the_real_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, messages_server: MessagesServer
) -> None:
    _claude_available()
    messages_server.respond_with(auditor)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    ws = Workspace.init(tmp_path / "ws")
    audit_setup(ws)

    result = run_evaluation(ws, "b", jobs=2, baseline="none")

    verdicts = {(r["case_id"], r["variant"]): r["judge_verdict"] for r in result.rows}
    assert verdicts == AUDIT_VERDICTS
    assert result.metrics.pass_rate == 1.0 and result.metrics.f1 == 1.0
    assert result.baseline_metrics is not None and result.baseline_metrics.f1 == 0.0
    for row in result.rows:
        assert row["pass_fail"] != "invalid", row["invalid_reason"]
        assert row["tokens"]["input"] > 0 and row["tokens"]["output"] > 0
        assert row["cost_usd"] is not None and row["cost_usd"] > 0
        assert row["agent_session_id"]
    # the transcript: skill loaded, the skill's command run for real, its output, the verdict
    session = _read_jsonl(result.run_dir / "sessions" / "v1.0.jsonl")
    calls = [c for line in session for c in line.get("tool_calls", [])]
    assert [(c["name"], c["args"]) for c in calls] == [
        ("Skill", "audit"),
        ("Bash", "grep -n 'eval(' code.py"),
    ]
    tool_lines = [line for line in session if line["type"] == "tool"]
    assert tool_lines[1]["tool_name"] == "Bash" and "1:x = eval(input())" in tool_lines[1]["result"]
    assert session[-2] == {"type": "assistant", "content": "STEPS DONE: 1, 2\nVERDICT: vulnerable"}
    assert session[-1]["type"] == "result" and session[-1]["cost_usd"] > 0
    raw = _read_jsonl(result.run_dir / "raw" / "v1.0.stream.jsonl")
    assert raw[0]["type"] == "system" and "audit" in raw[0]["skills"]
    assert raw[-1]["type"] == "result"
    baseline = _read_jsonl(result.run_dir / "sessions" / "v1.0.baseline.jsonl")
    assert not any(line.get("tool_calls") for line in baseline)
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["agent"]["kind"] == "claude-code"
    assert manifest["agent"]["command"] == [CLAUDE_BIN]
    # sealed like every agent, reaching only the Messages API it needs (through the proxy)
    sandbox = manifest["agent"]["sandbox"]
    assert (sandbox["network"], sandbox["allow_hosts"]) == (
        "allow-list",
        [url_host(messages_server.url)],
    )
    # the key reached the server (it answered) but nothing in the run folder holds it
    assert all(r.has_credentials for r in messages_server.message_requests)
    for path in result.run_dir.rglob("*"):
        if path.is_file():
            assert API_KEY not in path.read_text(errors="replace")
    assert result.metrics.tokens_input > 0 and (result.metrics.cost_usd or 0) > 0
