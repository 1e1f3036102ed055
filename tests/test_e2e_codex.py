"""The ``codex`` agent kind end to end: the real Codex CLI against a local Responses API server,
and ``eval --agents claude-code,codex`` on an adopted project with the paired verdict printed.

The scripted OpenAI model follows the audit skill only as far as Codex shows it the skill: when
the skill is listed in Codex's instructions (it found ``.agents/skills/audit/SKILL.md``) it
reads the file with a real ``exec_command`` call, runs the grep the file names (a second real
command in the room), and answers from its output; without the skill it guesses "safe". The
Messages-API model does the same for Claude Code (tests/test_e2e_claude.py). So both agents
score the skill variant above the baseline only if the skill reached each CLI where it loads
skills, and the verdict between the two agents compares like with like.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.core.config import Config
from engine.core.workspace import Workspace
from tests.llm_server import MessagesServer
from tests.openai_server import Call, OpenAIServer, Said, input_text, tool_outputs
from tests.test_e2e_claude import (
    AUDIT_VERDICTS,
    SKILL,
    _claude_available,
    audit_setup,
    auditor,
    require_cli,
)

pytestmark = pytest.mark.e2e

CODEX_BIN = os.environ.get("SKILLSMITH_CODEX_BIN", "")
OPENAI_KEY = "sk-proj-e2e-codex-key-not-real-000000000000"
ANTHROPIC_KEY = "sk-ant-api03-e2e-codex-key-not-real-0000"
STEP = re.compile(r"Look for dangerous calls: `([^`]+)`")
LISTED = re.compile(
    r"- audit: Audit code for vulnerabilities\.[^\n]*\(file: [^)]*audit/SKILL\.md\)"
)
READ_SKILL = "cat .agents/skills/audit/SKILL.md"


def codex_auditor(req: dict[str, Any]) -> Said:
    """An OpenAI model that follows the audit skill only if Codex listed it."""
    outputs = tool_outputs(req)
    if not LISTED.search(input_text(req)):
        return Said(text="Nothing to check.\nVERDICT: safe")
    if not outputs:
        return Said(
            text="Reading the audit skill.", calls=[Call("exec_command", {"cmd": READ_SKILL})]
        )
    step = STEP.search(outputs[-1])
    if step is not None:
        return Said(calls=[Call("exec_command", {"cmd": step.group(1)})])
    found = "eval(" in outputs[-1]
    return Said(text=f"STEPS DONE: 1, 2\nVERDICT: {'vulnerable' if found else 'safe'}")


def _project(root: Path) -> Workspace:
    """A git project with its skill in .claude/skills, adopted as `skillsmith init` does."""
    (root / ".claude" / "skills" / "audit").mkdir(parents=True)
    (root / ".claude" / "skills" / "audit" / "SKILL.md").write_text(SKILL)
    (root / "CLAUDE.md").write_text("Audit before you answer.\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hello')\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
        check=True,
    )
    ws = Workspace.init_project(root, Config())
    audit_setup(ws, seed=5)
    return ws


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_codex_and_claude_code_compared_on_one_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _claude_available()
    require_cli("SKILLSMITH_CODEX_BIN", "codex")
    ws = _project(tmp_path / "proj")
    with MessagesServer() as messages, OpenAIServer(api_key=OPENAI_KEY) as openai:
        messages.respond_with(auditor)
        openai.respond_with(codex_auditor)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", messages.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", openai.url)
        monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        argv = ["eval", "b", "--agents", "claude-code,codex", "--baseline", "none", "-j", "3"]
        code = main([*argv, "-w", str(tmp_path / "proj")])
        requests = openai.response_requests
        errors = openai.responder_errors
    out, err = capsys.readouterr()
    assert code == 0, err
    assert not errors
    said = " ".join(out.split())
    # the paired verdict between the two agents, per skill version
    assert "codex vs claude-code (skill): " in said
    assert "codex vs claude-code (baseline): " in said
    assert "agent codex: OPENAI_API_KEY (from $OPENAI_API_KEY)" in " ".join(err.split())

    runs = {
        json.loads((p / "manifest.json").read_text())["agent"]["kind"]: p
        for p in ws.runs_dir.iterdir()
        if p.name.startswith("run")
    }
    assert set(runs) == {"claude-code", "codex"}
    manifest = json.loads((runs["codex"] / "manifest.json").read_text())
    assert manifest["agent"]["command"] == [CODEX_BIN]
    assert manifest["agent"]["sandbox"]["kind"] == "bwrap"
    assert manifest["project"]["mode"] == "tracked"
    rows = [json.loads(line) for line in (runs["codex"] / "results.jsonl").read_text().splitlines()]
    verdicts = {(r["case_id"], r["variant"]): r["judge_verdict"] for r in rows}
    assert verdicts == AUDIT_VERDICTS
    for row in rows:
        assert row["pass_fail"] != "invalid", row["invalid_reason"]
        assert row["tokens"]["input"] > 0 and row["tokens"]["output"] > 0
        assert row["cost_usd"] is None  # codex reports no cost
        assert row["agent_session_id"]
    # skills found by the CLI: listed to the model from .agents/skills (the baseline has none)
    assert any(LISTED.search(input_text(r.json)) for r in requests)
    # the session: the skill read, its step run for real in the room, the verdict
    session = _read_jsonl(runs["codex"] / "sessions" / "v1.0.jsonl")
    calls = [c for line in session for c in line.get("tool_calls", [])]
    assert [c["name"] for c in calls] == ["exec_command", "exec_command"]
    assert READ_SKILL in calls[0]["args"] and "grep -n 'eval(' code.py" in calls[1]["args"]
    tools = [line for line in session if line["type"] == "tool"]
    assert "1:x = eval(input())" in tools[1]["result"] and not tools[1]["is_error"]
    assert session[-2] == {"type": "assistant", "content": "STEPS DONE: 1, 2\nVERDICT: vulnerable"}
    assert session[-1]["type"] == "result" and session[-1]["tokens"]["input"] > 0
    for path in ws.root.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert OPENAI_KEY not in text and ANTHROPIC_KEY not in text, path
