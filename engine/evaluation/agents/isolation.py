"""The sealed room an agent runs in: a fresh directory and a scrubbed environment.

The agent must see the case statement, the skills under test and AGENTS.md (in an adopted
project, a copy of the project too: engine.evaluation.agents.project) — and nothing that
could let it grade itself or escape: no rubric, no vault, no workspace path, no secrets it was not
meant to have. So the room is built outside the workspace (under the system temp dir), HOME points
inside it, and the environment is rebuilt from an allow-list instead of filtered from ours.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import SkillsmithError
from engine.core.fsutil import hold, stale_hold
from engine.core.skill_folder import Resources

PROMPT_FILE = "PROMPT.md"
ANSWER_FILE = "answer.txt"
HOME_DIR = ".home"
TMP_DIR = ".tmp"
BASE_ENV_ALLOW = ("PATH", "LANG", "TERM", "TZ")
ROOM_PREFIX = "unit-"
_held: dict[Path, int] = {}  # room → the open, flocked fd that marks it in use
_held_lock = threading.Lock()
# What the harness itself puts in a room: no statement file may be so named, and none of it is
# an output of the agent (engine.core.outputs).
HARNESS_NAMES = frozenset(
    {PROMPT_FILE, "AGENTS.md", ANSWER_FILE, HOME_DIR, TMP_DIR, "skills", ".claude"}
)
_FICLONE = 0x40049409  # linux/fs.h: share the source's blocks copy-on-write
# The private half of a case, wherever someone put it: a benchmark's rubric folder or file, and a
# skill's own eval set (skill-creator keeps expected answers in <skill>/evals/). Never copied.
RUBRIC_NAMES = frozenset({"rubric", "rubric.yaml"})
SKILL_EVALS = "evals"


@dataclass(frozen=True)
class SkillFiles:
    """One skill as the agent gets it: the SKILL.md text plus the rest of its folder (if any)."""

    name: str
    text: str
    folder: Path | None = None  # references/, scripts/, assets/ are copied from here
    # ...or, for a candidate whose patch edits them, the files themselves (no folder has them yet)
    resources: Resources | None = None


@dataclass(frozen=True)
class RoomSpec:
    """Everything that goes into one run directory."""

    statement_dir: Path
    prompt: str
    skills: tuple[SkillFiles, ...]
    skills_subdir: str  # "skills", ".claude/skills", ".agents/skills": where the agent looks
    agents_md: str | None = None
    # the project a workspace is adopted into: its snapshot (engine.evaluation.agents.project),
    # copied in first, and where its agent instructions go in it (CLAUDE.md)
    project: Path | None = None
    agents_md_name: str = "AGENTS.md"


def scratch_root(workspace_root: Path) -> Path:
    """``$TMPDIR/skillsmith-runs``; refused when it would lie inside the workspace."""
    root = Path(tempfile.gettempdir()).resolve() / "skillsmith-runs"
    ws = workspace_root.resolve()
    if root == ws or ws in root.parents:
        raise SkillsmithError(
            f"{root}: the run scratch folder lies inside the workspace {ws}; set TMPDIR elsewhere"
        )
    root.mkdir(parents=True, exist_ok=True)
    return root


def check_statement(statement_dir: Path) -> list[Path]:
    """Refuse a statement holding a name the harness writes into the run folder itself; return
    its entries, sorted (what a room copies).

    The runner asks before it creates a run folder or a session log, so a refusal leaves
    nothing behind.
    """
    items = sorted(statement_dir.iterdir())
    for item in items:
        if item.name in HARNESS_NAMES:
            raise SkillsmithError(
                f"{item}: a statement file may not be named {item.name!r} "
                "(the harness writes it into the run folder)"
            )
    return items


def build_room(spec: RoomSpec, root: Path) -> Path:
    """Create a fresh run directory under ``root`` holding exactly what ``spec`` names."""
    items = check_statement(spec.statement_dir)
    root.mkdir(parents=True, exist_ok=True)
    room = Path(tempfile.mkdtemp(prefix=ROOM_PREFIX, dir=root))
    hold_room(room)
    try:
        if spec.project is not None:
            copy_snapshot(spec.project, room)
        base = spec.statement_dir.resolve()
        for item in items:  # the statement on top of the project
            _copy(item, room / item.name, base, item.name)
        (room / PROMPT_FILE).write_bytes(spec.prompt.encode("utf-8"))  # CRLF stays CRLF
        if spec.agents_md is not None:
            instructions = room / spec.agents_md_name
            if instructions.is_symlink():  # CLAUDE.md -> AGENTS.md: the text under test goes here
                instructions.unlink()
            instructions.parent.mkdir(parents=True, exist_ok=True)
            instructions.write_text(spec.agents_md, encoding="utf-8")
        for skill in spec.skills:
            target = room / spec.skills_subdir / skill.name
            if skill.resources is not None:
                _write_resources(skill.resources, target)
            elif skill.folder is not None and skill.folder.is_dir():
                _copy(skill.folder, target, skill.folder.resolve(), "", SKILL_EVALS)
            target.mkdir(parents=True, exist_ok=True)
            (target / "SKILL.md").write_bytes(skill.text.encode("utf-8"))
        (room / HOME_DIR).mkdir()
        (room / TMP_DIR).mkdir()
    except BaseException:
        remove_room(room)
        raise
    return room


def hold_room(room: Path) -> None:
    """Mark ``room`` in use for :func:`sweep_rooms` in every other process, until
    :func:`remove_room`."""
    with _held_lock:
        _held[room] = hold(room)


def copy_snapshot(snapshot: Path, room: Path) -> None:
    """Give ``room`` its own copy of ``snapshot``: reflinked blocks or plain copies, links as
    links, never a hard link (a unit writing its file must not write into anyone else's)."""
    shutil.copytree(snapshot, room, symlinks=True, dirs_exist_ok=True, copy_function=_Clone())


class _Clone:
    """Copies one file, sharing its blocks copy-on-write while the filesystem can (btrfs, xfs);
    after the first refusal (ext4, tmpfs) it copies plainly without asking again."""

    def __init__(self) -> None:
        self.reflinks = True

    def __call__(self, src: str, dst: str) -> None:
        if self.reflinks:
            with open(src, "rb") as fin, open(dst, "wb") as fout:
                try:
                    fcntl.ioctl(fout.fileno(), _FICLONE, fin.fileno())
                except OSError as exc:
                    if exc.errno not in (errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOTTY):
                        raise
                    self.reflinks = False
                else:
                    shutil.copymode(src, dst)
                    return
        shutil.copy(src, dst)


def _copy(src: Path, dst: Path, base: Path, rel: str, private_top: str | None = None) -> None:
    """Copy a file or tree; symlinks are followed only when they stay inside ``base``.

    A statement or skill folder linking to ``../../vault`` must not smuggle secrets in, and no
    rubric (nor ``private_top``, a folder at the top of ``base``) is copied at any depth. Modes are
    kept, so a skill's scripts stay executable.
    """
    if src.is_symlink() and not _inside(src.resolve(), base):
        return
    if src.name in RUBRIC_NAMES or (private_top is not None and rel == private_top):
        return
    if dst.is_symlink():  # a project's link where a statement file goes: the file replaces it
        dst.unlink()
    if not src.is_dir():
        shutil.copyfile(src, dst)
        shutil.copymode(src, dst)
        return
    dst.mkdir(parents=True, exist_ok=True)
    for child in sorted(src.iterdir()):
        _copy(child, dst / child.name, base, f"{rel}/{child.name}".lstrip("/"), private_top)


def _write_resources(resources: Resources, target: Path) -> None:
    """A candidate's files, held back as :func:`_copy` holds back a folder's private parts (a
    room is scratch, so plain writes: no fsync)."""
    for rel, res in sorted(resources.items()):
        parts = Path(rel).parts
        if parts[0] == SKILL_EVALS or RUBRIC_NAMES.intersection(parts):
            continue
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(res.data)
        path.chmod(res.mode)


def _inside(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def remove_room(room: Path) -> None:
    """Delete a run directory even if the agent chmod-ed parts of it away."""
    try:
        shutil.rmtree(room)  # the usual case: one pass, no permission walk
    except OSError:
        with contextlib.suppress(OSError):
            os.chmod(room, 0o700)
        for dirpath, dirnames, _ in os.walk(room):
            for name in dirnames:
                full = os.path.join(dirpath, name)
                if not os.path.islink(full):  # chmod follows links; never touch outside the room
                    with contextlib.suppress(OSError):
                        os.chmod(full, 0o700)
        shutil.rmtree(room, ignore_errors=True)
    with _held_lock:
        fd = _held.pop(room, None)
    if fd is not None:
        os.close(fd)


def sweep_rooms(root: Path) -> list[Path]:
    """Remove the run folders killed evaluations left under the scratch root; return them.

    Evaluations of other workspaces share the scratch root, so a folder goes only when nobody
    holds its lock (a live unit always does, see build_room).
    """
    swept = []
    for room in sorted(root.glob(f"{ROOM_PREFIX}*")):
        if room.is_symlink() or not room.is_dir():
            continue
        with contextlib.suppress(OSError), stale_hold(room) as stale:
            if stale:
                remove_room(room)
                swept.append(room)
    return swept


def room_env(
    room: Path,
    *,
    allow: Iterable[str],
    extra: Mapping[str, str],
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The agent's whole environment: allow-listed names from ``source`` plus ``extra``.

    Built up rather than filtered down, so a variable nobody thought of can never slip through.
    """
    source = os.environ if source is None else source
    wanted = set(BASE_ENV_ALLOW) | set(allow)
    env = {
        name: value for name, value in source.items() if name in wanted or name.startswith("LC_")
    }
    env.update(
        {
            "HOME": str(room / HOME_DIR),
            "TMPDIR": str(room / TMP_DIR),
            "PWD": str(room),
            "SKILLSMITH_PROMPT_FILE": PROMPT_FILE,
        }
    )
    env.update(extra)
    return env


def compose_prompt(task: str, labels: list[str], label_pattern: str, default_pattern: str) -> str:
    """PROMPT.md: the statement's task text plus how to state the answer so it can be graded.

    It opens with a heading so that, passed as ``claude -p <prompt>``, it can never be mistaken
    for a command-line flag.
    """
    parts = ["# Task", "", task.strip(), "", "## How to answer", ""]
    parts.append(
        "Give your final answer as your last message (or write it to answer.txt in this folder)."
    )
    if label_pattern == default_pattern:
        choice = f"one of: {', '.join(labels)}" if labels else "your label"
        parts.append(f"End it with a line `VERDICT: <label>` where <label> is {choice}.")
    elif labels:
        parts.append(f"State one label ({', '.join(labels)}) matching /{label_pattern}/.")
    parts.append(
        "If you followed numbered steps of a skill, name them on a line `STEPS DONE: 1, 2, 4`."
    )
    return "\n".join(parts) + "\n"
