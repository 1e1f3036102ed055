"""The bundled demo: a workspace (a security-audit skill and the vuln-detect benchmark) shipped
inside the package, and the offline agent that follows the skill (``engine.evaluation.demo.agent``).

It is what ``skillsmith demo`` opens, so the whole loop — evaluate, diagnose, evolve, approve,
roll back — runs on a fresh install with no network and no API key.

Every agent run starts a Python process that imports this package before its ``agent`` module,
so the package itself imports nothing heavy at load time: the workspace, its YAML and the
file helpers are imported by the functions that copy the demo, not by each of the thousands of
agent runs an evolution session makes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from engine.core.workspace import Workspace

DEMO_BENCHMARK = "vuln-detect"
DEMO_SKILL = "security-audit"


def demo_source() -> Traversable:
    """The demo workspace as shipped in the package (a folder, or a zip member)."""
    from importlib.resources import files

    return files(__name__) / "workspace"


def demo_agent_notice(ws: Workspace, bench_id: str) -> str | None:
    """One line when the offline demo agent is about to "answer" tasks it cannot understand.

    The demo agent follows the security-audit skill on the bundled benchmarks only; on anything
    else its VERDICT lines mean nothing, so an adopted project must never be scored by it quietly.
    """
    if ws.load_config().agent.kind != "demo" or (demo_source() / "benchmarks" / bench_id).is_dir():
        return None
    return (
        f"warning: {ws.config_path}: agent.kind is demo, the offline demo agent, which only "
        f"answers the bundled demo benchmarks; set agent.kind: claude-code to evaluate {bench_id}"
    )


def copy_demo(dest: Path | str) -> Path:
    """Copy the demo workspace to ``dest`` (a new or empty folder) and return its path.

    The copy is built in a hidden sibling folder and renamed into place, so ``dest`` is either
    absent or a complete workspace, never half a copy.
    """
    import shutil
    import tempfile

    from engine.core.errors import SkillsmithError
    from engine.core.fsutil import fsync_dir
    from engine.core.workspace import LAYOUT_DIRS, Workspace

    target = Path(dest).expanduser().resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise SkillsmithError(f"{target}: already exists and is not empty; choose a new folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        _copy_tree(demo_source(), staging)
        for name in LAYOUT_DIRS:
            (staging / name).mkdir(exist_ok=True)
        (staging / "vault").chmod(0o700)
        staging.chmod(0o755)
        os.replace(staging, target)  # an empty target folder is replaced atomically too
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    fsync_dir(target.parent)
    return Workspace.at(target).root


def _copy_tree(source: Traversable, dest: Path) -> None:
    from engine.core.fsutil import atomic_write_bytes

    for item in sorted(source.iterdir(), key=lambda t: t.name):
        if item.name.startswith(".") or item.name == "__pycache__":
            continue
        if item.is_dir():
            (dest / item.name).mkdir()
            _copy_tree(item, dest / item.name)
        else:
            atomic_write_bytes(dest / item.name, item.read_bytes())
