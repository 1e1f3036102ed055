"""The workspace: the folder of plain files every part of Skillsmith shares (docs/workspace.md).

``Workspace`` knows where each thing lives, loads and validates ``skillsmith.yaml``, and owns the
writer lock, so the TUI and a CLI process never interleave their writes. It is the one place the
layout is decided: a standalone workspace holds its skills in ``skills/``; a workspace adopted into
a project lives in ``<project>/.skillsmith/`` and its ``paths`` section points the live skills and
AGENTS.md at the project's ``.claude/skills/`` and CLAUDE.md, where Claude Code loads them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.core.errors import FormatError, LockError, SkillsmithError
from engine.core.fsutil import atomic_write_json, atomic_write_text
from engine.core.journal import is_leftover

# The config's dataclasses and the typed loader are imported where a config is read or written:
# opening a workspace (the workbench's first frame, a quick command) reads no YAML.
if TYPE_CHECKING:
    from engine.core.config import Config, PathsConfig

CONFIG_NAME = "skillsmith.yaml"
# The agent-state version is the tool's, not the user's: it lives beside the skills' histories
# (so every snapshot carries it) and skillsmith.yaml changes only where its user edits it.
VERSION_FILE = "history/workspace.json"
LOCK_NAME = ".skillsmith.lock"
# The intent journals (engine.core.journal): a restore's at the top; the queue's and each store's.
RESTORE_JOURNAL = ".restore.json"
INTENT_JOURNAL = ".pending.json"
IMPORT_STAGE = (
    ".import-"  # benchmarks/.import-*: an import being filled (recovery removes dead ones)
)
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

# skillsmith.yaml as parsed, kept by engine.core.yaml_twin: in runs/, which stays on this machine
CONFIG_TWIN = ".config.json"
PROJECT_DIR = ".skillsmith"  # the workspace folder inside an adopted project
PROJECT_SKILLS = ".claude/skills"  # where Claude Code loads a project's skills
USER_SKILLS = "~/.claude/skills"  # where Claude Code loads the user's own skills
PROJECT_MARKERS = (".claude", ".git", "CLAUDE.md", "AGENTS.md")
PROJECT_IGNORED = ("vault/", "runs/", "sessions/", LOCK_NAME)  # never committed with the project

_CONFIG_HEADER = (
    "# Skillsmith workspace configuration. Every key is optional; each one, its default and its "
    "meaning\n# are listed in docs/configuration.md of the Skillsmith repository.\n"
)

# One thread may take the lock in several nested places (a CLI command that publishes and then
# snapshots); flock is per open file, so nesting is tracked here, per workspace root and thread.
# Another thread of the same process opens its own file and so waits like another process would.
_held: dict[tuple[Path, int], int] = {}
_held_guard = threading.RLock()


@dataclass
class _Turnstile:
    """First come, first served among one process's threads waiting for one workspace.

    flock is not fair: a thread that releases and retakes the lock in a loop (snapshots in a
    worker) wins every race against threads polling for it, which then time out although the
    lock was free many times. Threads queue here first, so only the head polls flock.
    """

    cond: threading.Condition = field(default_factory=threading.Condition)
    line: deque[int] = field(default_factory=deque)
    tickets: int = 0

    def enter(self, deadline: float) -> bool:
        with self.cond:
            ticket = self.tickets
            self.tickets += 1
            self.line.append(ticket)
            while self.line[0] != ticket:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.line.remove(ticket)
                    self.cond.notify_all()
                    return False
                self.cond.wait(left)
            return True

    def leave(self) -> None:
        with self.cond:
            self.line.popleft()
            self.cond.notify_all()


_turnstiles: dict[Path, _Turnstile] = {}


@dataclass(frozen=True)
class _Settings:
    paths: PathsConfig | None  # None: skillsmith.yaml cannot be read
    lock_wait: float


_settings_cache: dict[Path, tuple[tuple[int, int, int], _Settings]] = {}


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def at(cls, root: Path | str) -> Workspace:
        """Open an existing workspace (it must hold a skillsmith.yaml)."""
        try:
            path = Path(root).expanduser().resolve()
            # a killed change is finished before anything reads (not by a thread mid-write:
            # its own stage would look like a dead writer's)
            if _needs_recovery(path) and not _held.get((path, threading.get_ident())):
                from engine.core.recovery import recover_workspace

                recover_workspace(cls(path))
            found = (path / CONFIG_NAME).is_file()
        except OSError as exc:  # a path too long for the filesystem, a folder we may not read
            shown = str(root) if len(str(root)) <= 80 else str(root)[:79] + "…"
            raise SkillsmithError(f"{shown}: cannot open as a workspace ({exc.strerror})") from None
        if not found:
            raise SkillsmithError(f"{path}: not a Skillsmith workspace (no {CONFIG_NAME})")
        return cls(path)

    @classmethod
    def init(cls, root: Path | str, config: Config | None = None) -> Workspace:
        """Create the layout in ``root`` (refuses a folder that is already one)."""
        path = Path(root).expanduser().resolve()
        if (path / CONFIG_NAME).exists():
            raise SkillsmithError(f"{path / CONFIG_NAME}: a workspace already exists here")
        path.mkdir(parents=True, exist_ok=True)
        for name in LAYOUT_DIRS:
            if name != "skills":  # paths.skills says where the live skills are
                (path / name).mkdir(exist_ok=True)
        (path / "vault").chmod(0o700)
        ws = cls(path)
        if config is None:
            from engine.core.config import Config

            config = Config()
        ws.save_config(config)
        ws.skills_dir.mkdir(parents=True, exist_ok=True)
        return ws

    @classmethod
    def init_project(
        cls, project: Path | str, config: Config, *, user_skills: bool = False
    ) -> Workspace:
        """Create ``<project>/.skillsmith/`` managing the project's skills where they already are.

        ``config.paths`` is set here (the project's ``.claude/skills`` or, with ``user_skills``,
        ``~/.claude/skills``; CLAUDE.md, else AGENTS.md) so the layout rule lives in one place.
        """
        proj = Path(project).expanduser().resolve()
        config.paths.skills = USER_SKILLS if user_skills else f"../{PROJECT_SKILLS}"
        has_agents_only = (proj / "AGENTS.md").is_file() and not (proj / "CLAUDE.md").is_file()
        config.paths.agents_md = "../AGENTS.md" if has_agents_only else "../CLAUDE.md"
        ws = cls.init(proj / PROJECT_DIR, config)
        atomic_write_text(ws.root / ".gitignore", "".join(f"{p}\n" for p in PROJECT_IGNORED))
        return ws

    # -- paths ---------------------------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def skills_dir(self) -> Path:
        """The live skill folders (``paths.skills``): what an agent run and a publish act on."""
        return self._located(self._paths().skills)

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
        return self._located(self._paths().agents_md)

    def _located(self, configured: str) -> Path:
        path = Path(configured).expanduser()
        return Path(os.path.normpath(self.root / path))

    def _paths(self) -> PathsConfig:
        paths = self._settings().paths
        # unreadable: never guess where the skills are; loading again raises the one-line error
        return self.load_config().paths if paths is None else paths

    def _settings(self) -> _Settings:
        """The settings the workspace itself needs, re-read only when skillsmith.yaml changed
        (paths are asked for on every file access). A config that cannot be read has no paths
        here and the default lock wait, so a lock can still be taken to report the error."""
        from engine.core.config import LimitsConfig, PathsConfig

        stamp = self._config_stamp()
        if stamp is None:
            return _Settings(PathsConfig(), LimitsConfig().lock_wait_s)
        with _held_guard:
            cached = _settings_cache.get(self.root)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            cfg = self.load_config()
        except SkillsmithError:
            found = _Settings(None, LimitsConfig().lock_wait_s)
        else:
            found = _Settings(cfg.paths, cfg.limits.lock_wait_s)
        with _held_guard:
            _settings_cache[self.root] = (stamp, found)
        return found

    def _config_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self.config_path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

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
        """The parsed skillsmith.yaml; what the workspace itself needs of it is kept (by the
        file's identity, taken before reading), so the first path asked for after a command
        has loaded its config does not parse the file a second time."""
        from engine.core.config import Config, check_config
        from engine.core.schema import from_mapping
        from engine.core.yaml_twin import load_yaml_twinned

        stamp = self._config_stamp()
        data = load_yaml_twinned(self.config_path, self.runs_dir / CONFIG_TWIN)
        cfg = check_config(from_mapping(Config, data, self.config_path), self.config_path)
        if stamp is not None:
            with _held_guard:
                _settings_cache[self.root] = (
                    stamp,
                    _Settings(dataclasses.replace(cfg.paths), cfg.limits.lock_wait_s),
                )
        return cfg

    def version(self) -> int:
        """The agent-state version (raised by every publish on the main line).

        A workspace written before the version had its own file keeps it as the legacy
        ``version`` key of skillsmith.yaml, which is read until the first publish writes the file.
        """
        path = self.root / VERSION_FILE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return self.load_config().version
        return parse_version(raw, path)

    def set_version(self, version: int) -> None:
        atomic_write_json(self.root / VERSION_FILE, {"version": version})

    def save_config(self, config: Config) -> None:
        """Write a new workspace's skillsmith.yaml (``init``); nothing rewrites it afterwards."""
        import yaml

        from engine.core.schema import to_mapping

        mapping = to_mapping(config)
        mapping.pop("version", None)  # the tool's own: history/workspace.json
        body = yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True)
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
            wait_s = float(os.environ.get("SKILLSMITH_LOCK_WAIT") or self._settings().lock_wait)
        lock_path = self.root / LOCK_NAME
        deadline = time.monotonic() + wait_s
        with _held_guard:
            turnstile = _turnstiles.setdefault(self.root, _Turnstile())
        if not turnstile.enter(deadline):
            raise self._busy(lock_path)
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            raise self._busy(lock_path) from None
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
        finally:
            turnstile.leave()

    @staticmethod
    def _busy(lock_path: Path) -> LockError:
        return LockError(
            f"{lock_path}: workspace is locked by {_read_holder(lock_path)}; "
            "try again when it finishes"
        )


def parse_version(raw: bytes, label: Path | str) -> int:
    """The ``version`` of a history/workspace.json, or one line naming the file and the field."""
    try:
        value = json.loads(raw).get("version")
    except (ValueError, AttributeError):
        raise FormatError(label, None, "expected a JSON object") from None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise FormatError(label, "version", f"expected a whole number ≥ 0, got {value!r}")
    return value


def _needs_recovery(root: Path) -> bool:
    """Whether a killed writer left a journal or temp files: a handful of directory listings (the
    top, candidates/, snapshots/, benchmarks/, runs/, each skill's history), no file read, no
    import."""
    if (root / RESTORE_JOURNAL).exists() or (root / "candidates" / INTENT_JOURNAL).exists():
        return True
    history = root / "history"
    folders = [root, root / "candidates", root / "snapshots", root / "benchmarks", root / "runs"]
    folders.append(history)  # history/workspace.json's temp, when a publish was killed writing it
    if history.is_dir():
        skills = [p for p in history.iterdir() if p.is_dir()]
        folders += [*skills, *(p / "branches" for p in skills)]
    return any(_holds_leftovers(folder) for folder in folders)


def _holds_leftovers(folder: Path) -> bool:
    """Every leftover's name starts with a dot, so only those are looked at: candidates/ may
    hold thousands of folders, and opening the workspace must not cost a look at each."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return any(
        name == INTENT_JOURNAL or is_leftover(name) or name.startswith(IMPORT_STAGE)
        for name in names
        if name[0] == "."
    )


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
    """The workspace a command acts on: the flag, else $SKILLSMITH_WORKSPACE, else the cwd.

    A project folder stands for the workspace adopted into it (``<project>/.skillsmith/``), so
    every command works from the project root as well as from the workspace folder itself.
    """
    root = Path(workspace or os.environ.get("SKILLSMITH_WORKSPACE") or Path.cwd())
    with contextlib.suppress(OSError):  # an unusable path is reported by Workspace.at
        inner = root.expanduser() / PROJECT_DIR
        if not (root.expanduser() / CONFIG_NAME).is_file() and (inner / CONFIG_NAME).is_file():
            root = inner
    return Workspace.at(root)
