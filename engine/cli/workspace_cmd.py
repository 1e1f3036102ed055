"""``skillsmith init``: a standalone workspace, or one adopted into a project in place.

In a project (a folder with ``.claude/``, ``.git``, CLAUDE.md or AGENTS.md) the workspace goes to
``<project>/.skillsmith/`` and manages the skills where Claude Code already loads them, so the
user's next ``claude`` session runs whatever version was published or rolled back last.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path
from typing import Any

from engine.cli import print_json, wants_json
from engine.core.config import Config
from engine.core.errors import SkillsmithError, UsageError
from engine.core.skill import SKILL_FILE
from engine.core.store import SkillStore
from engine.core.workspace import PROJECT_MARKERS, Workspace
from engine.evaluation.agents.kinds import CLAUDE_BIN_ENV, CODEX_BIN_ENV


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "init",
        parents=[common],
        help="adopt a project's skills in place (.skillsmith/), or create an empty workspace",
    )
    p.add_argument(
        "dir",
        nargs="?",
        help="the project folder (default: -w DIR, else the current one); a new or empty "
        "folder becomes a standalone workspace",
    )
    layout = p.add_mutually_exclusive_group()
    layout.add_argument(
        "--project",
        action="store_true",
        help="adopt DIR as a project even without .claude/, .git, CLAUDE.md or AGENTS.md",
    )
    layout.add_argument(
        "--standalone", action="store_true", help="make DIR itself a self-contained workspace"
    )
    p.add_argument(
        "--user-skills",
        action="store_true",
        help="manage your own ~/.claude/skills/ instead of the project's .claude/skills/",
    )
    p.add_argument(
        "--agent",
        choices=("claude-code", "codex", "demo", "command"),
        help="the agent to evaluate with (default: claude-code when the claude CLI is found)",
    )
    p.set_defaults(func=_init)


def claude_cli() -> str | None:
    """The claude CLI an evaluation would launch: ``$SKILLSMITH_CLAUDE_BIN``, else PATH."""
    chosen = os.environ.get(CLAUDE_BIN_ENV)
    if chosen:
        return chosen if Path(chosen).is_file() else None
    return shutil.which("claude")


def _is_project(folder: Path) -> bool:
    return any((folder / marker).exists() for marker in PROJECT_MARKERS)


def _init(args: argparse.Namespace) -> int:
    named = getattr(args, "workspace", None)
    if args.dir is not None and named is not None and Path(args.dir) != Path(named):
        raise UsageError(f"init: two folders named ({args.dir} and -w {named}); give one")
    folder = Path(args.dir or named or ".").expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise SkillsmithError(f"{folder}: not a folder")
    project = args.project or args.user_skills or (not args.standalone and _is_project(folder))
    config = Config()
    found = claude_cli()
    config.agent.kind = args.agent or ("claude-code" if found else "demo")
    if project:
        ws = Workspace.init_project(folder, config, user_skills=args.user_skills)
    else:
        ws = Workspace.init(folder, config)
    adopted: dict[str, str | None] = {}
    refused: dict[str, str] = {}  # a skill that cannot be kept whole waits; the others go on
    for name in ws.skill_names():
        try:
            adopted[name] = SkillStore(ws, name).ensure_adopted()
        except SkillsmithError as exc:
            refused[name] = str(exc)
    strays = sorted(
        p.name
        for p in ws.skills_dir.iterdir()
        if p.is_dir() and not (p / SKILL_FILE).is_file() and not p.name.startswith(".")
    )
    if wants_json(args):
        print_json(
            {
                "workspace": str(ws.root),
                "project": str(folder) if project else None,
                "skills_dir": str(ws.skills_dir),
                "agents_md": str(ws.agents_md) if ws.agents_md.is_file() else None,
                "agent": config.agent.kind,
                "claude_cli": found,
                "adopted": adopted,
                "not_adopted": refused,
                "skipped": strays,
            }
        )
        return 0
    print(f"created workspace {ws.root}")
    if project:
        print(f"skills: {ws.skills_dir} (published versions land here)")
    for name, version in adopted.items():
        files = len(list((ws.skills_dir / name).rglob("*")))
        print(f"  adopted {name} as {version} ({files} files and folders)")
    for name, error in refused.items():  # a name with control characters is shown escaped
        print(f"  not adopted {name if name.isprintable() else repr(name)}: {error}")
    for name in strays:
        print(f"  skipped {ws.skills_dir / name}: no {SKILL_FILE}")
    if ws.agents_md.is_file():
        print(f"agent instructions: {ws.agents_md}")
    print(_agent_line(ws, config.agent.kind, found))
    return 0


def _agent_line(ws: Workspace, kind: str, found: str | None) -> str:
    where = f"agent.kind in {ws.config_path}"
    if kind == "claude-code":
        cli = found or f"not found yet: put it on PATH or set ${CLAUDE_BIN_ENV}"
        return f"agent: claude-code (claude CLI: {cli}); change it with {where}"
    if kind == "codex":
        return f"agent: codex (codex CLI on PATH or in ${CODEX_BIN_ENV}); change it with {where}"
    if kind == "demo":
        why, fix = (
            (f"chosen with --agent; claude CLI: {found}", "set")
            if found
            else (f"no claude CLI on PATH or in ${CLAUDE_BIN_ENV}", "install Claude Code and set")
        )
        return (
            f"agent: demo, the offline demo agent ({why}); it only answers the bundled demo "
            f"tasks: {fix} {where} to claude-code"
        )
    return f"agent: command; set agent.command (the command line) in {ws.config_path}"
