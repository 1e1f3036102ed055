"""A candidate's ``patch.diff`` over the whole skill folder, not only SKILL.md.

A skill is a folder (engine.core.skill_folder), so a proposed change may edit a reference file as
well as SKILL.md: one unified diff, one ``--- a/<path>`` / ``+++ b/<path>`` section per file,
paths relative to the skill folder, SKILL.md's section first (it is what every reviewer reads
first and what the patch filters judge). The candidate's folder is the parent version's folder
with the other sections applied; its SKILL.md is the candidate's own full text, as before.

What a patch may do is deliberately narrow, because an approved candidate becomes the folder the
next ``claude`` session loads: edit a text file the parent version has, or create a new text
file. A path that leaves the folder, a file under another file of the tree (``SKILL.md/x``), a
file under ``evals/`` (the skill's private eval set, never
shown to an agent), a binary file, a deletion or a rename is refused with one line naming it, so
a candidate either is a reviewable text change or never reaches the queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from engine.core.errors import SkillsmithError
from engine.core.patch_apply import PatchError, apply_patch
from engine.core.skill import SKILL_FILE
from engine.core.skill_folder import Resource, Resources, check_tree

PRIVATE_DIR = "evals"  # the skill's own eval set: expected answers, never edited by a patch
NEW_FILE_MODE = 0o644
_NULL = "/dev/null"


@dataclass(frozen=True)
class FileSection:
    """One file's part of a folder patch."""

    path: str  # relative to the skill folder, POSIX
    created: bool  # ``--- /dev/null``: the file is new
    diff: str  # this file's own unified diff


def _relative(name: str) -> str:
    name = name.rstrip("\r")
    return name[2:] if name.startswith(("a/", "b/")) else name


def _checked_path(where: Path, name: str) -> str:
    pure = PurePosixPath(name)
    if not name or pure.is_absolute() or ".." in pure.parts or "\\" in name:
        raise SkillsmithError(f"{where}: {name!r} leaves the skill folder; a patch stays inside it")
    if pure.parts[0] == PRIVATE_DIR:
        raise SkillsmithError(
            f"{where}: {name}: the {PRIVATE_DIR}/ folder holds the skill's private eval set; "
            "a patch may not touch it"
        )
    return pure.as_posix()


def file_sections(diff: str, *, where: Path) -> list[FileSection]:
    """The per-file sections of ``diff``, refused unless each is an edit or creation of a text
    file inside the folder and SKILL.md (when touched) comes first. Text that holds no file
    header (an empty patch, as a curate archive records) has no sections."""
    try:
        patch = PatchSet(diff)
    except UnidiffParseError as exc:
        raise SkillsmithError(f"{where}: cannot parse the patch: {exc}") from None
    sections: list[FileSection] = []
    for patched in patch:
        source, target = _relative(patched.source_file), _relative(patched.target_file)
        if patched.is_removed_file or target == _NULL:
            raise SkillsmithError(
                f"{where}: {_checked_path(where, source)}: a patch may edit or create a text "
                "file, not delete one"
            )
        path = _checked_path(where, target)
        created = patched.is_added_file or source == _NULL
        if not created and _checked_path(where, source) != path:
            raise SkillsmithError(f"{where}: {source} → {path}: a patch may not rename a file")
        if patched.is_binary_file:
            raise SkillsmithError(f"{where}: {path}: a binary file; a patch edits text files only")
        if any(s.path == path for s in sections):
            raise SkillsmithError(f"{where}: {path}: appears twice in the patch")
        if path == SKILL_FILE and sections:
            raise SkillsmithError(
                f"{where}: {SKILL_FILE} must come first in the patch (after {sections[0].path})"
            )
        sections.append(FileSection(path, created, str(patched)))
    return sections


def touches_resources(diff: str, *, where: Path) -> bool:
    """Whether the patch edits a file beside SKILL.md (checked as :func:`file_sections` does)."""
    return any(s.path != SKILL_FILE for s in file_sections(diff, where=where))


def apply_folder_patch(diff: str, parent: Resources, *, where: Path) -> dict[str, Resource]:
    """The parent folder's files beside SKILL.md with the patch's other sections applied.

    Every untouched file keeps its bytes and mode; an edited one keeps its mode; a created one
    is 0o644. SKILL.md's section is not applied here: the candidate carries its full text.
    """
    files = dict(parent)
    for section in file_sections(diff, where=where):
        if section.path == SKILL_FILE:
            continue
        have = parent.get(section.path)
        if section.created and have is not None:
            raise SkillsmithError(
                f"{where}: {section.path}: created by the patch but the parent version has it"
            )
        if not section.created and have is None:
            raise SkillsmithError(
                f"{where}: {section.path}: not in the parent version's folder (a new file is "
                "written as a creation, '--- /dev/null')"
            )
        try:
            old = "" if have is None else have.data.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillsmithError(
                f"{where}: {section.path}: a binary file; a patch edits text files only"
            ) from None
        try:
            new = apply_patch(old, section.diff)
        except PatchError as exc:
            raise SkillsmithError(f"{where}: {section.path}: {exc}") from None
        mode = NEW_FILE_MODE if have is None else have.mode
        files[section.path] = Resource(new.encode("utf-8"), mode)
    check_tree(files, where=where)
    return files


__all__ = [
    "PRIVATE_DIR",
    "FileSection",
    "apply_folder_patch",
    "file_sections",
    "touches_resources",
]
