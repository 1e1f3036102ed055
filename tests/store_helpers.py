"""Helpers of the version-store, snapshot and queue tests: real files, real processes."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
STATE_ITEMS = ("skillsmith.yaml", "AGENTS.md", "skills", "history")
# a real-style skill folder with references, scripts and a licence (tests/data/corpus)
MCP_SERVER_KIT = Path(__file__).parent / "data" / "corpus" / "mcp-server-kit"


def make_skill(ws: Workspace, name: str, text: str) -> Path:
    """A skill as a user would have it before Skillsmith touches it."""
    path = ws.skill_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def files_with_modes(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file below ``folder``: its bytes and permission bits."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def tree(root: Path, only: tuple[str, ...] | None = None) -> dict[str, str]:
    """Every entry below ``root`` → a digest of what it is: folder, link target or file bytes."""
    found: dict[str, str] = {}
    tops = sorted(os.listdir(root)) if only is None else [n for n in only if _exists(root / n)]
    for top in tops:
        _walk(root / top, top, found)
    return found


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _walk(path: Path, rel: str, found: dict[str, str]) -> None:
    if path.is_symlink():
        found[rel] = "link:" + os.readlink(path)
    elif path.is_dir():
        found[rel] = "dir"
        for name in sorted(os.listdir(path)):
            _walk(path / name, f"{rel}/{name}", found)
    else:
        found[rel] = "file:" + hashlib.sha256(path.read_bytes()).hexdigest()


def state(root: Path) -> dict[str, str]:
    """The agent state part of a tree (what a snapshot holds)."""
    return tree(root, STATE_ITEMS)


def untar(archive: Path, dest: Path) -> Path:
    """Unpack with the real GNU tar: an independent reading of what we wrote."""
    dest.mkdir(parents=True)
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(dest)], check=True)
    (dest / ".skillsmith-snapshot.json").unlink()
    return dest


def tar_members(archive: Path) -> list[str]:
    out = subprocess.run(
        ["tar", "-tzf", str(archive)], check=True, capture_output=True, text=True
    ).stdout
    return [line.rstrip("/") for line in out.splitlines()]


def run(
    ws: Workspace, capsys: pytest.CaptureFixture[str], *args: str
) -> subprocess.CompletedProcess[str]:
    """The CLI in-process (fast): exit code and the captured stdout/stderr of one command."""
    capsys.readouterr()
    try:
        code = main([*args, "-w", str(ws.root)])
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def cli(ws: Workspace, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The headless CLI as a user runs it: a separate process (``env`` adds variables)."""
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args, "-w", str(ws.root)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env={**os.environ, **env},
    )


def leftovers(ws: Workspace) -> list[str]:
    """Temp files and intents that a finished (or recovered) operation must not leave behind."""
    bad: list[str] = []
    for dirpath, dirnames, filenames in os.walk(ws.root):
        for name in dirnames + filenames:
            if name.startswith((".tmp-", ".current.")) or name.endswith(".tmp"):
                bad.append(os.path.join(dirpath, name))
            if name in (".pending.json", ".restore.json"):
                bad.append(os.path.join(dirpath, name))
    return bad


def project_cli(
    project: Path, env: dict[str, str], timeout: float = 600
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """The CLI as a user runs it in ``project``: a separate process per command, started in the
    project folder; every command must succeed without a traceback."""

    def skillsmith(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "engine.cli", *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"{args}: {done.stderr}"
        assert "Traceback" not in done.stderr
        return done

    return skillsmith
