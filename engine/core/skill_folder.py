"""A skill is a folder: SKILL.md plus its references, scripts, assets and licence.

The version store keeps every version as the whole folder, so the files beside SKILL.md (its
"resources") are read, compared, diffed and written back here, byte for byte and with their
permission bits (a script must stay executable after a rollback). Paths are POSIX and relative
to the folder; SKILL.md itself is not a resource, it is the text every other part edits.
"""

from __future__ import annotations

import difflib
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from engine.core.errors import SkillsmithError
from engine.core.fsutil import atomic_write_bytes, fsync_dir
from engine.core.skill import SKILL_FILE

# Never part of a skill: caches, VCS folders and the temp names of an interrupted write.
IGNORED_NAMES = {"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".DS_Store"}
MAX_RESOURCE_FILES = 2_000  # a skill folder, not a home directory handed over by mistake
MAX_RESOURCE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Resource:
    """One file of a skill folder other than SKILL.md."""

    data: bytes
    mode: int  # permission bits only (0o644, 0o755 for a script)


Resources = Mapping[str, Resource]


def _ignored(name: str) -> bool:
    return (
        name in IGNORED_NAMES
        or name.endswith(".pyc")
        or name.startswith((".tmp-", ".current."))
        or (name.startswith(".") and name.endswith(".tmp"))
    )


def read_resources(folder: Path) -> dict[str, Resource]:
    """Every file of ``folder`` except its top SKILL.md; {} for a missing folder.

    A symlink is read as the file it points to when that stays inside the folder (the version
    keeps a copy); one that leaves the folder is refused, so a skill cannot carry ``~/.ssh`` in.
    """
    found: dict[str, Resource] = {}
    if not folder.is_dir():
        return found
    base = folder.resolve()
    total = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not _ignored(d))
        for d in dirnames:
            if (here / d).is_symlink():
                raise SkillsmithError(
                    f"{here / d}: a skill folder may not hold a link to a folder; copy it in"
                )
        for name in sorted(filenames):
            path = here / name
            rel = path.relative_to(folder).as_posix()
            if _ignored(name) or rel == SKILL_FILE:
                continue
            real = path.resolve()
            if base not in real.parents:
                raise SkillsmithError(f"{path}: links outside its skill folder; copy the file in")
            if not real.is_file():
                raise SkillsmithError(f"{path}: only regular files can be part of a skill")
            data = real.read_bytes()
            total += len(data)
            found[rel] = Resource(data, real.stat().st_mode & 0o777)
            if len(found) > MAX_RESOURCE_FILES or total > MAX_RESOURCE_BYTES:
                raise SkillsmithError(
                    f"{folder}: more than {MAX_RESOURCE_FILES} files or "
                    f"{MAX_RESOURCE_BYTES // (1024 * 1024)} MB; is this really a skill folder?"
                )
    return found


def check_resource_path(rel: str) -> str:
    """A resource path from a version or a patch may not climb out of its folder."""
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts or rel == SKILL_FILE:
        raise SkillsmithError(f"{rel!r}: not a file path inside a skill folder")
    return rel


def check_tree(paths: Iterable[str], *, where: Path) -> None:
    """Refuse a set of resource paths no folder can hold: a file under another file
    (``SKILL.md/x``, ``scripts/run.sh/x``) or a file where a folder of others is.

    Checked before anything is written: a publish that found out only while writing the live
    folder would leave ``current`` pointing at a version the skill folder cannot be made into.
    """
    files = {SKILL_FILE, *paths}
    for rel in sorted(files):
        for parent in PurePosixPath(rel).parents:
            if parent.as_posix() in files:
                raise SkillsmithError(
                    f"{where}: {rel}: under the file {parent.as_posix()}; a skill folder "
                    "cannot hold a file inside a file"
                )


def write_resources(folder: Path, resources: Resources) -> None:
    """Make ``folder``'s resources exactly ``resources``; SKILL.md and ignored files stay.

    Each file is written atomically and only when its bytes or mode differ, so re-running after
    a crash finishes the job and an unchanged script keeps its timestamp.
    """
    live = read_resources(folder)
    # the files that go first: a file ``notes`` replaced by ``notes/x.md`` must be out of the way
    for rel in sorted(set(live) - set(resources)):
        (folder / rel).unlink(missing_ok=True)
    _prune_empty(folder)
    for rel, res in sorted(resources.items()):
        target = folder / check_resource_path(rel)
        have = live.get(rel)
        if have == res and not target.is_symlink():
            continue
        if target.is_symlink() or target.is_dir():
            _remove(target)
        atomic_write_bytes(target, res.data, mode=res.mode)
    _prune_empty(folder)
    fsync_dir(folder)


def copy_resources(resources: Resources, folder: Path) -> None:
    """Write ``resources`` into a fresh folder (a version's ``files/``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for rel, res in sorted(resources.items()):
        atomic_write_bytes(folder / check_resource_path(rel), res.data, mode=res.mode)
    fsync_dir(folder)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _prune_empty(folder: Path) -> None:
    for dirpath, _dirs, _files in os.walk(folder, topdown=False):
        here = Path(dirpath)
        if here != folder and not any(here.iterdir()):
            here.rmdir()


@dataclass(frozen=True)
class FileChange:
    """One file that differs between two versions of a skill folder."""

    path: str
    kind: str  # "added" | "removed" | "modified" | "mode"
    diff: str  # unified diff (a one-line note for a mode change or a binary file)


def _decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def file_diff(path: str, old: bytes | None, new: bytes | None) -> str:
    """The ``--- a/<path>`` / ``+++ b/<path>`` diff of one file (``/dev/null`` when absent)."""
    old_text = "" if old is None else _decode(old)
    new_text = "" if new is None else _decode(new)
    if old_text is None or new_text is None:
        return f"Binary files a/{path} and b/{path} differ\n"
    lines = difflib.unified_diff(
        old_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        "/dev/null" if old is None else f"a/{path}",
        "/dev/null" if new is None else f"b/{path}",
    )
    out: list[str] = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def folder_changes(
    old_text: str, old: Resources, new_text: str, new: Resources
) -> list[FileChange]:
    """What changed between two whole folders, SKILL.md first, then by path."""
    changes: list[FileChange] = []
    if old_text != new_text:
        diff = file_diff(SKILL_FILE, old_text.encode("utf-8"), new_text.encode("utf-8"))
        changes.append(FileChange(SKILL_FILE, "modified", diff))
    for rel in sorted(set(old) | set(new)):
        a, b = old.get(rel), new.get(rel)
        if a == b:
            continue
        if a is not None and b is not None and a.data == b.data:
            changes.append(FileChange(rel, "mode", f"mode of {rel}: {a.mode:o} → {b.mode:o}\n"))
            continue
        kind = "added" if a is None else "removed" if b is None else "modified"
        diff = file_diff(rel, None if a is None else a.data, None if b is None else b.data)
        changes.append(FileChange(rel, kind, diff))
    return changes


def folder_diff(old_text: str, old: Resources, new_text: str, new: Resources) -> str:
    """One patch for the whole folder; for a SKILL.md-only change it is exactly that file's diff."""
    return "".join(c.diff for c in folder_changes(old_text, old, new_text, new))
