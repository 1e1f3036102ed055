"""The project a workspace is adopted into, as every room of an evaluation holds it.

Most skills act on the project they live in ("run our migrations", "review this diff", a skill
that forks to ``.claude/agents/reviewer.md``); measured in an empty folder they measure
something else. So for a workspace adopted into a git project (``<project>/.skillsmith/``), each
unit's room starts as a copy of the project as git sees it — its tracked files at HEAD (the
commit evaluated, ``agent.project: tracked``, the default) or its working tree as git lists it
(``worktree``: tracked plus untracked files that are not ignored, as they are now) — with
``.claude/settings.json``, ``.claude/agents/``, ``.claude/commands/``, ``.mcp.json`` and
``CLAUDE.md`` where Claude Code reads them. The skills under test and the case's statement are
put on top (engine.evaluation.agents.isolation.build_room).

Never copied: the workspace folder (its vault, runs and history), the project's own live skill
folders (the skills under test take their place, never mixed with the live ones), git's own
folder, and the names the harness writes itself. A symbolic link is kept only when it stays
inside the project (``CLAUDE.md -> AGENTS.md``); one that leads out is left out.

The project is read once per evaluation into a snapshot under the scratch root (a sibling of
the rooms, hidden from every agent by the sandbox); each room gets its own copy of it, by
reflink where the filesystem shares blocks copy-on-write, else by a plain copy. Never by a
hard link: a unit writing to its file would write into the snapshot every later unit copies,
or, worse, into the project itself. The project is only read, never written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import SkillsmithError
from engine.core.workspace import PROJECT_DIR, Workspace
from engine.evaluation.agents.isolation import (
    ANSWER_FILE,
    HOME_DIR,
    PROMPT_FILE,
    ROOM_PREFIX,
    TMP_DIR,
    hold_room,
    remove_room,
)

# Where every supported agent CLI loads a project's skills: the project's own never enter a
# room, whichever agent runs there (the skills under test do)
SKILL_FOLDERS = (".claude/skills", ".agents/skills")
_HARNESS_NAMES = frozenset({PROMPT_FILE, ANSWER_FILE, HOME_DIR, TMP_DIR, ".git"})
_GIT_TIMEOUT_S = 120


@dataclass(frozen=True)
class ProjectTree:
    """A snapshot of the project, made once per evaluation and copied into each of its rooms."""

    snapshot: Path
    source: Path
    mode: str  # "tracked" | "worktree"
    revision: str | None  # HEAD's commit (tracked), None for a working tree
    files: int
    size: int  # bytes, what each room copies
    digest: str  # of every path, mode and content: another project is another evaluation
    agents_md: str | None  # where the workspace's agent instructions sit in it (CLAUDE.md)

    def describe(self) -> dict[str, object]:
        """What the manifest records (paths of the project, never its contents)."""
        return {
            "source": str(self.source),
            "mode": self.mode,
            "revision": self.revision,
            "files": self.files,
            "bytes": self.size,
            "sha256": self.digest,
        }

    def line(self) -> str:
        """The room in one line, shown before the units start."""
        if self.mode == "tracked" and self.revision is None:
            return (
                f"room: project {self.source} has no commit yet, so nothing of it is copied "
                "(agent.project: worktree copies its working tree)"
            )
        at = f"tracked files at {self.revision[:12]}" if self.revision else "working tree"
        return (
            f"room: project {self.source} ({at}): {self.files} files, "
            f"{_size(self.size)} copied into each unit's room"
        )


def project_of(ws: Workspace) -> Path | None:
    """The git project ``ws`` is adopted into, or None (a standalone workspace, no git)."""
    if ws.root.name != PROJECT_DIR:
        return None
    project = ws.root.parent
    return project if (project / ".git").exists() else None


@contextlib.contextmanager
def project_snapshot(
    ws: Workspace, mode: str, scratch: Path, skills_subdir: str
) -> Iterator[ProjectTree | None]:
    """The project's snapshot for one evaluation (None: no project, or ``agent.project: none``),
    removed when the evaluation ends. ``skills_subdir`` is where the agent reads its skills: a
    project folder there is left out too, so the agent finds only the skills under test."""
    project = project_of(ws) if mode != "none" else None
    if project is None:
        yield None
        return
    excluded = {PROJECT_DIR, *SKILL_FOLDERS, skills_subdir}
    with contextlib.suppress(ValueError):
        excluded.add(ws.skills_dir.relative_to(project).as_posix())
    snapshot = Path(tempfile.mkdtemp(prefix=f"{ROOM_PREFIX}project-", dir=scratch))
    hold_room(snapshot)
    try:
        tree = _fill(snapshot, project, mode, excluded)
        agents_md = None
        with contextlib.suppress(ValueError):
            agents_md = ws.agents_md.relative_to(project).as_posix()
        yield ProjectTree(snapshot, project, mode, *tree, agents_md=agents_md)
    finally:
        remove_room(snapshot)


def _fill(
    snapshot: Path, project: Path, mode: str, excluded: set[str]
) -> tuple[str | None, int, int, str]:
    """Write the project's files into ``snapshot``; (revision, files, bytes, digest)."""
    digest = hashlib.sha256()
    files = size = 0
    revision = _head(project) if mode == "tracked" else None
    if mode == "tracked" and revision is None:  # a fresh `git init`: nothing is tracked yet
        return None, 0, 0, digest.hexdigest()
    for rel, kind, data in _entries(project, mode):
        if _left_out(rel, excluded):
            continue
        target = snapshot / rel
        if kind == "link":
            link = data.decode("utf-8", errors="surrogateescape")
            if not _stays_inside(rel, link):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(link, target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(0o755 if kind == "exec" else 0o644)
            size += len(data)
        files += 1
        digest.update(f"{rel}\0{kind}\0".encode() + data + b"\0")
    return revision, files, size, digest.hexdigest()


def _entries(project: Path, mode: str) -> Iterator[tuple[str, str, bytes]]:
    """(path, "file" | "exec" | "link", content or link target) of each file git lists."""
    if mode == "tracked":
        listing = _git(project, "ls-tree", "-r", "-z", "--full-tree", "HEAD")
        items = []
        for record in filter(None, listing.split("\0")):
            meta, rel = record.split("\t", 1)
            file_mode, kind, oid = meta.split()
            if kind == "blob":  # a submodule is a commit: not the project's own files
                items.append((rel, _KINDS.get(file_mode, "file"), oid))
        yield from _blobs(project, items)
        return
    listing = _git(project, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for rel in dict.fromkeys(filter(None, listing.split("\0"))):
        path = project / rel
        try:
            st = path.lstat()
            if path.is_symlink():
                yield rel, "link", os.readlink(path).encode("utf-8", errors="surrogateescape")
            elif path.is_file():
                yield rel, "exec" if st.st_mode & 0o100 else "file", path.read_bytes()
        except OSError:
            continue  # deleted from the working tree, or not ours to read: not in the room


_KINDS = {"100755": "exec", "120000": "link"}


def _blobs(project: Path, items: list[tuple[str, str, str]]) -> Iterator[tuple[str, str, bytes]]:
    """The objects of ``items`` through one ``git cat-file --batch`` (one process, not one per
    file)."""
    if not items:
        return
    query = "".join(f"{oid}\n" for _, _, oid in items).encode()
    done = subprocess.run(
        ["git", "-C", str(project), "cat-file", "--batch"],
        input=query,
        capture_output=True,
        timeout=_GIT_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise SkillsmithError(f"{project}: git cat-file failed: {_last_line(done.stderr)}")
    out, at = done.stdout, 0
    for rel, kind, _ in items:
        end = out.index(b"\n", at)
        length = int(out[at:end].split()[2])
        yield rel, kind, out[end + 1 : end + 1 + length]
        at = end + 1 + length + 1


def _head(project: Path) -> str | None:
    """HEAD's commit, or None in a repository without one."""
    done = subprocess.run(
        ["git", "-C", str(project), "rev-parse", "--verify", "-q", "HEAD"],
        capture_output=True,
        timeout=_GIT_TIMEOUT_S,
        check=False,
    )
    commit = done.stdout.decode().strip() if done.returncode == 0 else ""
    return commit or None


def _git(project: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(project), *args],
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SkillsmithError(
            f"{project}: cannot list the project's files with git: {exc}"
        ) from None
    if done.returncode != 0:
        raise SkillsmithError(
            f"{project}: git {args[0]} failed ({_last_line(done.stderr)}); set "
            "'agent.project: worktree' or 'none' in skillsmith.yaml"
        )
    return done.stdout.decode("utf-8", errors="surrogateescape")


def _last_line(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no message"


def _left_out(rel: str, excluded: set[str]) -> bool:
    if rel.split("/", 1)[0] in _HARNESS_NAMES:
        return True
    return any(rel == e or rel.startswith(e + "/") for e in excluded)


def _stays_inside(rel: str, target: str) -> bool:
    """Whether a link at ``rel`` to ``target`` resolves inside the project (lexically)."""
    if not target or os.path.isabs(target):
        return False
    resolved = os.path.normpath(os.path.join(os.path.dirname(rel), target))
    return resolved != ".." and not resolved.startswith("../")


def _size(count: int) -> str:
    if count < 1000:
        return f"{count} bytes"
    return f"{count / 1000:.1f} kB" if count < 1_000_000 else f"{count / 1_000_000:.1f} MB"
