"""``skillsmith init`` adopts a project in place: the workspace is ``<project>/.skillsmith/`` and
publish/rollback land in ``<project>/.claude/skills/<name>/``, where Claude Code loads them.
Every command runs as a user runs it: a separate process started in the project folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from engine.core.store import SkillStore
from engine.core.workspace import Workspace, resolve
from tests.bench_helpers import write_benchmark, write_case
from tests.runner_helpers import LABELS

MCP_SERVER_KIT = Path(__file__).parent / "data" / "corpus" / "mcp-server-kit"


def skillsmith(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("SKILLSMITH_CLAUDE_BIN", "PATH")}
    base["PATH"] = os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **env},
    )


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    shutil.copytree(MCP_SERVER_KIT, project / ".claude" / "skills" / "mcp-server-kit")
    (project / ".claude" / "skills" / "notes").mkdir()  # no SKILL.md: not a skill
    (project / "CLAUDE.md").write_text("Use the mcp-server-kit skill for MCP work.\n")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def test_init_adopts_the_projects_skills_and_finds_the_claude_cli(tmp_path: Path) -> None:
    project = _project(tmp_path)
    leaky = project / ".claude" / "skills" / "leaky"
    leaky.mkdir()
    (leaky / "SKILL.md").write_text("---\nname: leaky\n---\nUse it.\n")
    (leaky / "key").symlink_to(tmp_path / "outside")  # cannot be kept whole: left unadopted
    (tmp_path / "outside").write_text("not part of the skill\n")
    fake_home = tmp_path / "home"
    done = skillsmith(project, "init", SKILLSMITH_CLAUDE_BIN=sys.executable, HOME=str(fake_home))
    assert done.returncode == 0, done.stderr

    ws = Workspace.at(project / ".skillsmith")
    assert f"created workspace {ws.root}" in done.stdout
    assert "adopted mcp-server-kit as v0" in done.stdout
    assert f"skipped {project / '.claude/skills/notes'}: no SKILL.md" in done.stdout
    key = project / ".claude/skills/leaky/key"
    assert f"not adopted leaky: {key}: links outside its skill folder" in done.stdout
    assert f"agent: claude-code (claude CLI: {sys.executable})" in done.stdout
    cfg = ws.load_config()
    assert cfg.agent.kind == "claude-code"
    assert (cfg.paths.skills, cfg.paths.agents_md) == ("../.claude/skills", "../CLAUDE.md")
    assert ws.skills_dir == project / ".claude" / "skills"
    assert ws.agents_md == project / "CLAUDE.md"
    assert "vault/" in (ws.root / ".gitignore").read_text().splitlines()
    store = SkillStore(ws, "mcp-server-kit")
    assert store.current() == "v0"
    kept = store.resources("v0")
    assert kept is not None and "scripts/evaluation.py" in kept and "LICENSE.txt" in kept
    # the project folder stands for its workspace (commands run from the project root)
    assert resolve(project).root == ws.root
    again = skillsmith(project, "init")
    assert again.returncode == 1 and "a workspace already exists here" in again.stderr


def test_publish_and_rollback_land_where_claude_code_loads_the_skill(tmp_path: Path) -> None:
    project = _project(tmp_path)
    live = project / ".claude" / "skills" / "mcp-server-kit"
    original = _files(live)
    assert skillsmith(project, "init").returncode == 0

    new = tmp_path / "SKILL.new.md"
    new.write_bytes(original["SKILL.md"] + b"\n## Before you finish\n\nRun the evaluation.\n")
    done = skillsmith(project, "publish", "mcp-server-kit", str(new), "--why", "finish step")
    assert done.returncode == 0, done.stderr
    assert (live / "SKILL.md").read_bytes() == new.read_bytes()
    assert {k: v for k, v in _files(live).items() if k != "SKILL.md"} == {
        k: v for k, v in original.items() if k != "SKILL.md"
    }
    done = skillsmith(project, "rollback", "mcp-server-kit", "v0", "--why", "undo")
    assert done.returncode == 0, done.stderr
    assert _files(live) == original
    history = json.loads(skillsmith(project, "history", "mcp-server-kit", "--json").stdout)
    assert [v["version"] for v in history["versions"]] == ["v0", "v1"]


def test_without_the_claude_cli_init_says_which_agent_and_eval_warns(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = skillsmith(project, "init")
    assert done.returncode == 0, done.stderr
    ws = Workspace.at(project / ".skillsmith")
    assert ws.load_config().agent.kind == "demo"
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("agent:"))
    assert "offline demo agent" in line and "set agent.kind in" in line
    assert str(ws.config_path) in line and "claude-code" in line
    assert "no claude CLI" in line and "install Claude Code" in line

    # Asked for by name while the CLI is there: the line says so instead of "no claude CLI".
    other = tmp_path / "other"
    other.mkdir()
    (other / "CLAUDE.md").write_text("x\n")
    done = skillsmith(other, "init", "--agent", "demo", SKILLSMITH_CLAUDE_BIN=sys.executable)
    assert done.returncode == 0, done.stderr
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("agent:"))
    assert f"(chosen with --agent; claude CLI: {sys.executable})" in line
    assert "no claude CLI" not in line and "install Claude Code" not in line

    root = write_benchmark(ws.benchmarks_dir / "mcp", {}, config=LABELS)
    write_case(root, "one", {"expected": "safe"})
    done = skillsmith(project, "eval", "mcp", "--runs", "1", "-j", "1")
    warnings = [ln for ln in done.stderr.splitlines() if ln.startswith("warning:")]
    assert warnings == [
        f"warning: {ws.config_path}: agent.kind is demo, the offline demo agent, which only "
        "answers the bundled demo benchmarks; set agent.kind: claude-code to evaluate mcp"
    ]


def test_user_skills_and_standalone_layouts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mine = home / ".claude" / "skills" / "mine"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("---\nname: mine\n---\nDo it.\n")
    project = tmp_path / "p"
    project.mkdir()
    done = skillsmith(project, "init", "--user-skills", HOME=str(home))
    assert done.returncode == 0, done.stderr
    ws = Workspace.at(project / ".skillsmith")
    assert ws.load_config().paths.skills == "~/.claude/skills"
    assert "adopted mine as v0" in done.stdout

    done = skillsmith(tmp_path, "init", "plain")
    assert done.returncode == 0, done.stderr
    plain = Workspace.at(tmp_path / "plain")
    assert plain.skills_dir == plain.root / "skills" and plain.agents_md == plain.root / "AGENTS.md"


def test_snapshot_and_restore_carry_the_projects_skill_folders(tmp_path: Path) -> None:
    project = _project(tmp_path)
    live = project / ".claude" / "skills" / "mcp-server-kit"
    original = _files(live)
    assert skillsmith(project, "init").returncode == 0
    done = skillsmith(project, "snapshot", "--note", "adopted", "--json")
    assert done.returncode == 0, done.stderr
    (live / "reference" / "extra.md").write_text("added by hand\n")
    done = skillsmith(project, "publish", "mcp-server-kit", str(live), "--why", "extra reference")
    assert done.returncode == 0, done.stderr

    done = skillsmith(project, "restore", "v0", "--yes")
    assert done.returncode == 0, done.stderr
    assert _files(live) == original
    assert (project / "CLAUDE.md").read_text() == "Use the mcp-server-kit skill for MCP work.\n"
    assert not (project / ".skillsmith" / "skills").exists()  # nothing landed beside the project


def test_a_restored_config_may_not_move_the_skills_unless_trusted(tmp_path: Path) -> None:
    """paths decide where a restore writes skills: a snapshot from elsewhere may not redirect
    them (a hostile archive naming ~/.ssh) without --trust-agent-config."""
    project = _project(tmp_path)
    assert skillsmith(project, "init").returncode == 0
    ws = Workspace.at(project / ".skillsmith")
    other = Workspace.init(tmp_path / "other")
    other.set_version(5)
    cfg = other.load_config()
    cfg.paths.skills = str(tmp_path / "elsewhere")
    other.save_config(cfg)
    made = json.loads(skillsmith(tmp_path, "snapshot", "--json", "-w", str(other.root)).stdout)
    done = skillsmith(project, "restore", made["path"], "--yes")
    assert done.returncode == 1
    assert f"paths.skills '../.claude/skills' → '{tmp_path / 'elsewhere'}'" in done.stderr
    assert "--trust-agent-config" in done.stderr
    assert ws.load_config().paths.skills == "../.claude/skills"
