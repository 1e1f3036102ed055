"""The workspace: the folder of plain files every part of Skillsmith shares (DESIGN.md).

``Workspace`` knows where each thing lives, loads and validates ``skillsmith.yaml``, and owns the
writer lock, so the TUI and a CLI process never interleave their writes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from engine.config import Config, checked
from engine.errors import LockError, SkillsmithError
from engine.fsutil import atomic_write_text
from engine.schema import from_mapping, load_yaml, to_mapping

CONFIG_NAME = "skillsmith.yaml"
LOCK_NAME = ".skillsmith.lock"
LAYOUT_DIRS = (
    "skills",
    "history",
    "candidates",
    "benchmarks",
    "runs",
    "experiments",
    "sessions",
    "snapshots",
    "vault",
)

_CONFIG_HEADER = "# Skillsmith workspace configuration; see DESIGN.md for every key.\n"

# One thread may take the lock in several nested places (a CLI command that publishes and then
# snapshots); flock is per open file, so nesting is tracked here, per workspace root and thread.
# Another thread of the same process opens its own file and so waits like another process would.
_held: dict[tuple[Path, int], int] = {}
_held_guard = threading.RLock()


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def at(cls, root: Path | str) -> Workspace:
        """Open an existing workspace (it must hold a skillsmith.yaml)."""
        path = Path(root).expanduser().resolve()
        if not (path / CONFIG_NAME).is_file():
            raise SkillsmithError(f"{path}: not a Skillsmith workspace (no {CONFIG_NAME})")
        return cls(path)

    @classmethod
    def init(cls, root: Path | str) -> Workspace:
        """Create the layout of DESIGN.md in ``root`` (refuses a folder that is already one)."""
        path = Path(root).expanduser().resolve()
        if (path / CONFIG_NAME).exists():
            raise SkillsmithError(f"{path / CONFIG_NAME}: a workspace already exists here")
        path.mkdir(parents=True, exist_ok=True)
        for name in LAYOUT_DIRS:
            (path / name).mkdir(exist_ok=True)
        (path / "vault").chmod(0o700)
        ws = cls(path)
        ws.save_config(Config())
        return ws

    # -- paths ---------------------------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def skills_dir(self) -> Path:
        return self.root / "skills"

    @property
    def history_dir(self) -> Path:
        return self.root / "history"

    @property
    def candidates_dir(self) -> Path:
        return self.root / "candidates"

    @property
    def benchmarks_dir(self) -> Path:
        return self.root / "benchmarks"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def experiments_dir(self) -> Path:
        return self.root / "experiments"

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    @property
    def snapshots_dir(self) -> Path:
        return self.root / "snapshots"

    @property
    def vault_dir(self) -> Path:
        return self.root / "vault"

    @property
    def agents_md(self) -> Path:
        return self.root / "AGENTS.md"

    @property
    def pending_round_path(self) -> Path:
        return self.root / ".pending_round.json"

    def skill_path(self, name: str) -> Path:
        return self.skills_dir / name / "SKILL.md"

    def skill_names(self) -> list[str]:
        if not self.skills_dir.is_dir():
            return []
        return sorted(p.parent.name for p in self.skills_dir.glob("*/SKILL.md"))

    # -- config ----------------------------------------------------------------------------------
    def load_config(self) -> Config:
        loaded = from_mapping(Config, load_yaml(self.config_path), self.config_path)
        return checked(loaded, self.config_path)

    def save_config(self, config: Config) -> None:
        import yaml

        body = yaml.safe_dump(to_mapping(config), sort_keys=False, allow_unicode=True)
        atomic_write_text(self.config_path, _CONFIG_HEADER + body)

    # -- the writer lock -------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, purpose: str = "write", wait_s: float | None = None) -> Iterator[None]:
        """Hold the workspace writer lock; wait up to ``wait_s`` then name the holder."""
        key = (self.root, threading.get_ident())
        with _held_guard:
            depth = _held.get(key, 0)
            if depth:
                _held[key] = depth + 1
        if depth:
            try:
                yield
            finally:
                with _held_guard:
                    _held[key] -= 1
            return
        if wait_s is None:
            wait_s = float(os.environ.get("SKILLSMITH_LOCK_WAIT", "5"))
        lock_path = self.root / LOCK_NAME
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait_s
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockError(
                            f"{lock_path}: workspace is locked by {_read_holder(lock_path)}; "
                            "try again when it finishes"
                        ) from None
                    time.sleep(0.05)
            holder = {"pid": os.getpid(), "purpose": purpose, "argv": sys.argv[:4]}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(holder).encode(), 0)
            with _held_guard:
                _held[key] = 1
            try:
                yield
            finally:
                with _held_guard:
                    _held.pop(key, None)
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _read_holder(lock_path: Path) -> str:
    try:
        info = json.loads(lock_path.read_text() or "{}")
    except (OSError, json.JSONDecodeError):
        return "another process"
    if not info:
        return "another process"
    argv = " ".join(str(a) for a in info.get("argv", []))
    return f"pid {info.get('pid')} ({info.get('purpose')}: {argv})"


def resolve(workspace: str | Path | None) -> Workspace:
    """The workspace a command acts on: the flag, else $SKILLSMITH_WORKSPACE, else the cwd."""
    root = workspace or os.environ.get("SKILLSMITH_WORKSPACE") or Path.cwd()
    return Workspace.at(root)
