"""The project in the room: an adopted git project's files, as git sees them, in every unit's room.

A `command` agent (tests/agents/room_agent.py) reports what its room holds and then writes over
the project's files, as an agent editing the project would. The room must hold the project's
code and its Claude Code settings where Claude Code reads them, the skill text under test in
place of the project's live skill, the case's statement on top, and never the workspace (its
vault); and nothing the agent writes may reach the project or another unit's room.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from engine.core.vault import write_secret
from engine.core.workspace import Workspace
from engine.views.overview import evaluation_size
from tests.bench_helpers import write_benchmark, write_case
from tests.test_init_project import skillsmith

AGENT = Path(__file__).parent / "agents" / "room_agent.py"
VAULT_SECRET = "sk-ant-api03-room-vault-secret-not-real-0123"
LIVE_SKILL = "---\nname: review\ndescription: Review a diff.\n---\n# Review\nThe live text.\n"
UNDER_TEST = "---\nname: review\ndescription: Review a diff.\n---\n# Review\nThe text under test.\n"
PROJECT = {
    "src/app.py": "def handler(event):\n    return event\n",
    "src/util/__init__.py": "",
    ".claude/settings.json": '{"permissions": {"allow": ["Bash(pytest:*)"]}}\n',
    ".claude/agents/x.md": "---\nname: x\ndescription: Reviews diffs.\n---\nYou review.\n",
    ".claude/commands/ship.md": "Ship it.\n",
    ".mcp.json": '{"mcpServers": {}}\n',
    "CLAUDE.md": "Run pytest before you answer.\n",
    ".gitignore": "build/\n",
    ".claude/skills/review/SKILL.md": LIVE_SKILL,
    "skills/README.md": "A folder named like the one a command agent reads its skills from.\n",
}
EXPECTED = {
    "src/app.py",
    "src/util/__init__.py",
    ".claude/settings.json",
    ".claude/agents/x.md",
    ".claude/commands/ship.md",
    ".mcp.json",
    "CLAUDE.md",
    ".gitignore",
    "AGENTS.md -> CLAUDE.md",
    "diff.txt",  # the case's statement, on top
    "prompt.md",
    "PROMPT.md",
    "skills/review/SKILL.md",  # the skill under test, where a command agent finds it
}


def _git(project: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(project), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def _snapshot(project: Path) -> dict[str, bytes | str]:
    """Every file and link of the project, outside the workspace folder and git's own."""
    found: dict[str, bytes | str] = {}
    for path in sorted(project.rglob("*")):
        rel = path.relative_to(project).as_posix()
        if rel.split("/")[0] in (".git", ".skillsmith"):
            continue
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


def _adopted(tmp_path: Path, project_mode: str | None = None) -> tuple[Path, Workspace]:
    project = tmp_path / "proj"
    for rel, text in PROJECT.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    (project / "AGENTS.md").symlink_to("CLAUDE.md")
    (project / "escape").symlink_to("../../outside")  # leads out of the project: left out
    _git(tmp_path, "init", "-q", str(project))
    _git(project, "add", "-A")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    # after the commit: an edit, an untracked file and an ignored one
    (project / "src" / "app.py").write_text("def handler(event):\n    return None  # wip\n")
    (project / "notes.txt").write_text("untracked\n")
    (project / "build").mkdir()
    (project / "build" / "out.bin").write_text("ignored\n")
    done = skillsmith(project, "init", "--agent", "command")
    assert done.returncode == 0, done.stderr
    ws = Workspace.at(project / ".skillsmith")
    cfg = ws.load_config()
    cfg.agent.command = [sys.executable, str(AGENT)]
    if project_mode is not None:
        cfg.agent.project = project_mode  # type: ignore[assignment]
    ws.save_config(cfg)
    write_secret(ws, "anthropic_api_key", VAULT_SECRET)
    bench = write_benchmark(ws.benchmarks_dir / "b", {}, config={"labels": ["seen"], "seed": 1})
    for case_id in ("c1", "c2"):
        write_case(bench, case_id, {"expected": "seen"}, files={"diff.txt": f"diff {case_id}\n"})
    return project, ws


def _reports(ws: Workspace, run_id: str) -> list[dict[str, Any]]:
    reports = []
    for path in sorted((ws.runs_dir / run_id / "sessions").glob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        said = next(ln["content"] for ln in lines if str(ln.get("content")).startswith("REPORT: "))
        reports.append(json.loads(said.removeprefix("REPORT: ").split("\nVERDICT")[0]))
    return reports


def test_a_command_agent_sees_the_committed_project_and_writes_nothing_back(
    tmp_path: Path,
) -> None:
    project, ws = _adopted(tmp_path)
    before, status = _snapshot(project), _git(project, "status", "--porcelain")

    # the workbench tells the room's size before it starts a job
    size = sum(len(text) for rel, text in PROJECT.items() if "skills/" not in rel)
    told = evaluation_size(ws, "b").describe()
    assert f"\nRoom: project {project} (tracked files at " in told
    assert f"9 files, {size} bytes copied into each unit's room." in told
    done = skillsmith(project, "eval", "b", "--runs", "2", "-j", "2")
    assert done.returncode == 0, done.stderr
    (run_id,) = [p.name for p in ws.runs_dir.iterdir() if p.name.startswith("run")]
    # the room's size is shown as the units start (the link counts as a file, not as bytes)
    said = " ".join(done.stderr.split())
    assert f"room: project {project} (tracked files at " in said
    assert f"9 files, {size} bytes copied into each unit's room" in said
    reports = _reports(ws, run_id)
    assert len(reports) == 4
    for report in reports:
        assert set(report["files"]) == EXPECTED, report["files"]
        # tracked files at HEAD: the committed app.py, not the uncommitted edit, no notes.txt
        assert report["app_pristine"] and report["app_links"] == 1
        assert report["settings"] == {"permissions": {"allow": ["Bash(pytest:*)"]}}
        assert report["claude_md"] == "Run pytest before you answer.\n"
        assert report["skills_dir"] == "skills"
        assert report["skills"] == {"review": LIVE_SKILL}
    # every unit wrote over app.py, CLAUDE.md and settings.json: not one byte reached the project
    assert _snapshot(project) == before
    assert _git(project, "status", "--porcelain") == status
    # what the agent wrote is kept as its outputs; the project files it left alone are inputs
    rows = [json.loads(line) for line in (ws.runs_dir / run_id / "results.jsonl").open()]
    for row in rows:
        kept = {e["path"] for e in row["outputs"]["entries"]}
        assert kept == {"src/added.py", "src/app.py"}, kept
    manifest = json.loads((ws.runs_dir / run_id / "manifest.json").read_text())
    assert manifest["project"]["mode"] == "tracked"
    assert manifest["project"]["revision"] == _git(project, "rev-parse", "HEAD").strip()
    assert manifest["project"]["files"] == 9  # PROJECT less the live skill, plus the AGENTS.md link
    for path in (ws.runs_dir / run_id).rglob("*"):
        if path.is_file():
            assert VAULT_SECRET not in path.read_text(errors="replace")


def test_the_skill_under_test_replaces_the_live_one_and_the_working_tree_mode(
    tmp_path: Path,
) -> None:
    """``agent.project: worktree``: the uncommitted edit and the untracked file are in the room,
    the ignored build output is not; a skill text under test takes the live skill's place."""
    from engine.evaluation.runner import run_evaluation

    project, ws = _adopted(tmp_path, project_mode="worktree")
    before = _snapshot(project)
    result = run_evaluation(ws, "b", runs=1, jobs=2, skills={"review": UNDER_TEST})
    reports = _reports(ws, result.run_id)
    assert len(reports) == 2
    for report in reports:
        assert set(report["files"]) == EXPECTED | {"notes.txt"}
        assert not report["app_pristine"]  # the working tree's edit
        assert report["skills"] == {"review": UNDER_TEST}
    assert _snapshot(project) == before
    assert result.metrics.pass_rate == 1.0


def test_agent_project_none_leaves_the_project_out(tmp_path: Path) -> None:
    from engine.evaluation.runner import run_evaluation

    _, ws = _adopted(tmp_path, project_mode="none")
    result = run_evaluation(ws, "b", runs=1, jobs=1)
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert "project" not in manifest
    (report, _) = _reports(ws, result.run_id)
    assert "src/app.py" not in report["files"]


def test_a_project_without_a_commit_gives_its_rooms_nothing(tmp_path: Path) -> None:
    """A fresh ``git init``: nothing is tracked yet, so a tracked room holds none of it."""
    from engine.evaluation.runner import run_evaluation

    project, ws = _adopted(tmp_path)
    subprocess.run(["rm", "-rf", str(project / ".git")], check=True)
    _git(tmp_path, "init", "-q", str(project))
    result = run_evaluation(ws, "b", runs=1, jobs=1)
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["project"]["revision"] is None and manifest["project"]["files"] == 0
    (report, _) = _reports(ws, result.run_id)
    assert "src/app.py" not in report["files"] and "notes.txt" not in report["files"]
