"""Acceptance, end to end as a user runs it: a project holding a real skill folder with resources
(mcp-server-kit: SKILL.md, reference/, scripts/, LICENSE.txt) in ``.claude/skills/`` is adopted with
``skillsmith init``, gets five cases from a CSV (a multi-line cell, an input file per case), is
evaluated by the real ``claude`` CLI, evolved one round by the Anthropic proposer (the real SDK),
approved, and rolled back — every command a separate process started in the project folder, both
models served by the local Messages-API server.

The scripted model follows the skill only as far as the skill's text reaches it: it loads the
skill (a ``Skill`` call), and runs the skill's name check (a real ``Bash`` call on the case's
tools.txt) only when the loaded text holds that check. The shipped skill has no such check, so
it answers "ok" everywhere and fails the violating cases; the proposer adds the check as one
line of SKILL.md; the candidate then finds the camelCase names. So the new version can only pass
if it was written to ``.claude/skills/mcp-server-kit/`` and Claude Code loaded it from there.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engine.core.results import read_results
from engine.core.store import unified_diff
from engine.core.workspace import Workspace
from tests.llm_server import MessagesServer, Reply, ToolUse, last_user_text, request_text
from tests.store_helpers import project_cli
from tests.test_e2e_claude import CLAUDE_BIN, _claude_available, _tools_just_used

pytestmark = pytest.mark.e2e

API_KEY = "sk-ant-api03-e2e-adopt-key-not-real-0000"
MCP_SERVER_KIT = Path(__file__).parent / "data" / "corpus" / "mcp-server-kit"
ANCHOR = "- Clear tool descriptions\n"
CHECK = (
    "- Tool names in snake_case: `grep -nE '[a-z][A-Z]' */tools.txt` prints each camelCase name\n"
)
STEP = re.compile(r"Tool names in snake_case: `([^`]+)`")
PROMPT = (
    "Review the tool names of the MCP server listed in {case}/tools.txt.\n"
    "Every tool name must be snake_case with a service prefix.\n"
    "Answer VERDICT: violates or VERDICT: ok."
)
TOOLS = {
    "violates": "github_create_issue\ngithubListRepos\ngithub_close_issue\n",
    "ok": "github_create_issue\ngithub_list_repos\ngithub_close_issue\n",
}
# selection: two violating cases and one clean one; holdout and golden one each (pinned, so the
# rounds see failures whatever the seed)
CASES = [
    ("c1", "violates", "selection"),
    ("c2", "violates", "selection"),
    ("c3", "ok", "selection"),
    ("c4", "violates", "holdout"),
    ("c5", "ok", "golden"),
]


def _system_text(req: dict[str, Any]) -> str:
    system = req.get("system")
    if isinstance(system, list):
        return " ".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return str(system or "")


def model(original: str, patched: str) -> Any:
    """Both models of the test: the proposer (asked to patch SKILL.md) and the target agent."""
    patch = unified_diff(original, patched)

    def respond(req: dict[str, Any]) -> Reply:
        if "You improve one SKILL.md" in _system_text(req):
            return Reply(text=patch)
        if not req.get("tools"):  # Claude Code's own side requests (titles, summaries)
            return Reply(text="ok")
        used = _tools_just_used(req)
        if "Bash" in used:
            found = re.search(r"\d+:\w*[a-z][A-Z]", last_user_text(req)) is not None
            return Reply(text=f"VERDICT: {'violates' if found else 'ok'}")
        step = STEP.search(request_text({"messages": req.get("messages")}))
        if step is not None:
            return Reply(
                text="Checking the tool names.",
                tool_uses=[ToolUse("Bash", {"command": step.group(1), "description": "names"})],
            )
        if "mcp-server-kit" in request_text(req) and "Skill" not in used:
            return Reply(tool_uses=[ToolUse("Skill", {"skill": "mcp-server-kit"})])
        return Reply(text="The names look consistent.\nVERDICT: ok")

    return respond


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _verdicts(run_dir: Path) -> dict[str, str | None]:
    return {r["case_id"]: r["judge_verdict"] for r in read_results(run_dir / "results.jsonl")}


def _write_cases(root: Path) -> Path:
    root.mkdir()
    rows = [["id", "input", "expected", "split", "files"]]
    for case, expected, split in CASES:
        (root / case).mkdir()
        (root / case / "tools.txt").write_text(TOOLS[expected])
        rows.append([case, PROMPT.format(case=case), expected, split, f"{case}/tools.txt"])
    with (root / "cases.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    assert "\n" in PROMPT and '"Review' in (root / "cases.csv").read_text()  # a multi-line cell
    return root / "cases.csv"


def test_adopt_import_eval_evolve_approve_rollback_in_a_real_project(
    tmp_path: Path, messages_server: MessagesServer
) -> None:
    _claude_available()
    project = tmp_path / "proj"
    live = project / ".claude" / "skills" / "mcp-server-kit"
    shutil.copytree(MCP_SERVER_KIT, live)
    (live / "scripts" / "evaluation.py").chmod(0o755)
    (project / "CLAUDE.md").write_text("Use the mcp-server-kit skill for MCP work.\n")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(project)], check=True)
    subprocess.run([*git, "-C", str(project), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(project), "commit", "-qm", "project"], check=True)
    original = _files(live)
    text = original["SKILL.md"][0].decode("utf-8")
    assert text.count(ANCHOR) == 1
    patched = text.replace(ANCHOR, ANCHOR + CHECK)
    messages_server.respond_with(model(text, patched))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SKILLSMITH_"))},
        "SKILLSMITH_CLAUDE_BIN": CLAUDE_BIN,
        "ANTHROPIC_BASE_URL": messages_server.url,
        "ANTHROPIC_API_KEY": API_KEY,
    }

    skillsmith = project_cli(project, env, timeout=900)

    done = skillsmith("init")
    assert "adopted mcp-server-kit as v0" in done.stdout
    assert f"agent: claude-code (claude CLI: {CLAUDE_BIN})" in done.stdout
    ws = Workspace.at(project / ".skillsmith")
    cfg = ws.load_config()
    cfg.agent.max_turns = 6
    ws.save_config(cfg)

    csv_path = _write_cases(tmp_path / "cases")
    done = skillsmith("import", "cases", str(csv_path), "--bench", "mcp", "--labels", "violates,ok")
    assert "imported 5 cases" in done.stdout
    statement = ws.benchmarks_dir / "mcp" / "c1" / "statement"
    assert (statement / "c1" / "tools.txt").read_text() == TOOLS["violates"]
    assert (statement / "prompt.md").read_text().startswith(PROMPT.format(case="c1"))

    done = skillsmith("eval", "mcp", "-j", "2", "--json")
    run = json.loads(done.stdout)
    # the shipped skill has no name check: "ok" everywhere
    assert _verdicts(Path(run["run_dir"])) == {c: "ok" for c, _, _ in CASES}
    manifest = json.loads(Path(run["run_dir"], "manifest.json").read_text())
    assert manifest["agent"]["kind"] == "claude-code"

    done = skillsmith(
        "evolve", "mcp-server-kit", "--bench", "mcp", "--rounds", "1", "--proposer", "anthropic",
        "-j", "2", "--json",
    )  # fmt: skip
    proposer_calls = [
        r for r in messages_server.message_requests if "You improve one SKILL.md" in str(r.json)
    ]
    assert proposer_calls and not proposer_calls[0].json.get("tools")
    queue = json.loads(skillsmith("queue", "--json").stdout)
    pending = [c for c in queue if c["status"] == "pending_approval"]
    assert len(pending) == 1, (queue, done.stdout[-3000:])
    assert (live / "SKILL.md").read_text() == text  # nothing lands before it is approved

    skillsmith("queue", "approve", pending[0]["id"], "--why", "the name check works")
    now = _files(live)
    assert now["SKILL.md"][0].decode("utf-8") == patched
    assert {k: v for k, v in now.items() if k != "SKILL.md"} == {
        k: v for k, v in original.items() if k != "SKILL.md"
    }
    history = json.loads(skillsmith("history", "mcp-server-kit", "--json").stdout)
    assert history["current"] == "v1"

    # the next claude session in the project loads the new version from .claude/skills/
    done = skillsmith("eval", "mcp", "-j", "2", "--json")
    after = _verdicts(Path(json.loads(done.stdout)["run_dir"]))
    assert after == {c: e for c, e, _ in CASES}

    skillsmith("rollback", "mcp-server-kit", "v0", "--why", "back to the shipped folder")
    assert _files(live) == original
    status = subprocess.run(
        ["git", "-C", str(project), "status", "--porcelain", "--", ".claude"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""  # byte for byte what the project committed
