"""The version store of one skill: ``history/<name>/`` (docs/workspace.md).

Every published version is kept as ``vN/`` forever: the whole skill folder, SKILL.md at the top and
every other file of the folder (references, scripts, assets, licence) under ``vN/files/`` with its
bytes and permission bits. ``current`` names the active one and the live folder ``skills/<name>/``
(in a project: ``.claude/skills/<name>/``) mirrors it, so publishing or rolling back changes the
folder Claude Code loads. A version written before folders were kept has no ``files/``; its
resources are then unknown and left as they are. Rolling back only moves the pointer, so nothing
is lost, and every move is written to ``edit_audit.jsonl`` so a skill that silently went v7 → v5
can always be explained. Branches (``branches/<b>/``) get their own versions and pointer but share
the skill's taboo list, audit and timeline, so a lesson learnt on an experiment protects the main
line too.

Crash safety: a multi-file change (new version folder, pointer, active SKILL.md, workspace
version, log lines) goes through the intent journal ``.pending.json`` (engine.core.journal); each
step is idempotent, so opening the workspace rolls an interrupted change forward. A crash therefore
leaves the old state (intent not yet written) or, after recovery, the new one — never a mix.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.errors import FormatError, SkillsmithError
from engine.core.fsutil import (
    append_jsonl,
    atomic_write_json,
    atomic_write_text,
    fsync_dir,
    read_jsonl,
)
from engine.core.journal import Intent, Journal, is_leftover, remove_leftovers
from engine.core.pointer import NAME, VERSION, check_name, read_pointer
from engine.core.skill import SKILL_FILE
from engine.core.skill_folder import (
    Resource,
    Resources,
    check_tree,
    copy_resources,
    file_diff,
    folder_diff,
    read_resources,
    write_resources,
)
from engine.core.stamps import utc_now
from engine.core.taboo import (
    TabooEntry,
    TabooList,
    diff_hash,
    gate_thresholds,
    read_taboo,
    taboo_records,
)
from engine.core.workspace import INTENT_JOURNAL, RESTORE_JOURNAL, Workspace

__all__ = [
    "SkillStore",
    "TabooEntry",
    "TabooList",
    "VersionInfo",
    "check_name",
    "diff_hash",
    "stores_of",
    "unified_diff",
]

VERSION_FILES = ("SKILL.md", "metrics.json", "gate_verdict.json", "patch.diff", "provenance.json")
RESOURCES_DIR = "files"  # vN/files/: the skill folder's other files, paths kept
ARCHIVE_DIR = "archived"  # history/<name>/archived/: the live folder of an archived skill
JOURNAL = INTENT_JOURNAL


@dataclass(frozen=True)
class VersionInfo:
    version: str
    path: Path
    created_at: str
    why: str
    parent: str | None


def version_number(version: str) -> int:
    match = VERSION.match(version)
    if not match:
        raise SkillsmithError(f"version {version!r}: expected vN (for example v3)")
    return int(match.group(1))


def version_label(branch: str | None, version: str) -> str:
    """How a version is named to a person: a branch's v1 is not main's v1, so it is ``exp1/v1``."""
    return version if branch is None else f"{branch}/{version}"


def split_version(ref: str) -> tuple[str | None, str]:
    """``exp1/v1`` → (``exp1``, ``v1``); ``v1`` and ``main/v1`` → (None, ``v1``)."""
    branch, _, version = ref.rpartition("/")
    return (None if branch in ("", "main") else branch), version


def unified_diff(old: str, new: str) -> str:
    """The patch of one SKILL.md edit, in the ``--- a/SKILL.md`` form the patch filters expect."""
    return file_diff(SKILL_FILE, old.encode("utf-8"), new.encode("utf-8"))


def read_text(path: Path) -> str:
    """Text exactly as stored: ``Path.read_text`` would turn CRLF into LF. A file that is not
    UTF-8 (a hand edit, a binary pasted over it) is one line naming it, never a traceback."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillsmithError(f"{path}: expected UTF-8 text (byte {exc.start} is not)") from None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise FormatError(path, None, "file is missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(path, None, f"expected JSON ({exc})") from None


class LiveWriteFailed(SkillsmithError):
    """A publish or rollback whose live folder could not be written, undone whole."""


class SkillStore:
    """Versions, pointer, audit, timeline and taboo list of one skill (optionally one branch)."""

    def __init__(self, ws: Workspace, name: str, branch: str | None = None) -> None:
        self.ws = ws
        self.name = check_name("skill", name)
        self.branch = check_name("branch", branch) if branch is not None else None
        self.root = ws.history_dir / name
        self.dir = self.root if branch is None else self.root / "branches" / branch
        if branch is not None and not self.dir.is_dir():
            raise SkillsmithError(
                f"{self.dir}: skill '{name}' has no branch '{branch}' (fork it first)"
            )
        self._journal = Journal(self.root / JOURNAL, _checked_intent)

    # -- paths -------------------------------------------------------------------------------------
    @property
    def skill_file(self) -> Path:
        return self.ws.skill_path(self.name)

    @property
    def audit_path(self) -> Path:
        return self.root / "edit_audit.jsonl"

    @property
    def timeline_path(self) -> Path:
        return self.root / "timeline.jsonl"

    @property
    def taboo_path(self) -> Path:
        return self.root / "taboo.json"

    def _versions_dir(self, branch: str | None) -> Path:
        return self.root if branch is None else self.root / "branches" / branch

    # -- reading -----------------------------------------------------------------------------------
    def current(self) -> str | None:
        return read_pointer(self.dir)

    def versions(self) -> list[VersionInfo]:
        found: list[VersionInfo] = []
        for version in self._version_names(self.dir):
            path = self.dir / version
            prov = _read_json(path / "provenance.json")
            if not isinstance(prov, dict):
                raise FormatError(path / "provenance.json", None, "expected a JSON object")
            found.append(
                VersionInfo(
                    version=version,
                    path=path,
                    created_at=str(prov.get("created_at", "")),
                    why=str(prov.get("why", "")),
                    parent=prov.get("parent"),
                )
            )
        return found

    @staticmethod
    def _version_names(vdir: Path) -> list[str]:
        if not vdir.is_dir():
            return []
        names = [p.name for p in vdir.iterdir() if VERSION.match(p.name) and p.is_dir()]
        return sorted(names, key=version_number)

    def read(self, version: str) -> str:
        version_number(version)
        path = self.dir / version / "SKILL.md"
        if not path.is_file():
            have = ", ".join(self._version_names(self.dir)) or "none"
            raise SkillsmithError(f"{self.dir}: no version {version} (have: {have})")
        return read_text(path)

    def resources(self, version: str) -> dict[str, Resource] | None:
        """The files beside SKILL.md in ``version`` (None: an old version that kept none)."""
        files = self.resources_dir(version)
        return None if files is None else read_resources(files)

    def resources_dir(self, version: str) -> Path | None:
        """``vN/files/``: the folder of ``version``'s resources (None for an old version)."""
        self.read(version)
        files = self.dir / version / RESOURCES_DIR
        return files if files.is_dir() else None

    def diff(self, old: str, new: str) -> str:
        """The whole-folder patch from version ``old`` to ``new`` (SKILL.md first)."""
        return folder_diff(
            self.read(old), self.resources(old) or {}, self.read(new), self.resources(new) or {}
        )

    def timeline(self) -> list[dict[str, Any]]:
        return read_jsonl(self.timeline_path)

    def audit(self) -> list[dict[str, Any]]:
        return read_jsonl(self.audit_path)

    def branches(self) -> list[str]:
        bdir = self.root / "branches"
        if not bdir.is_dir():
            return []
        return sorted(p.name for p in bdir.iterdir() if p.is_dir() and not is_leftover(p.name))

    def taboo(self) -> TabooList:
        return TabooList(
            self.taboo_path,
            self._append_taboo,
            utc_now,
            lambda: gate_thresholds(self.ws.load_config()),
        )

    # -- writing -----------------------------------------------------------------------------------
    def ensure_adopted(self) -> str | None:
        """Make the skill's existing SKILL.md its ``v0`` (first use); returns the current version.

        A branch is adopted by construction; a skill with neither history nor SKILL.md has no
        version yet (its first publish creates it) and returns None.
        """
        found = self.current()
        if found is not None or self.branch is not None:
            return found
        with self.ws.lock(f"adopt {self.name}"):
            self._settle()
            found = self.current()
            if found is not None or not self.skill_file.is_file():
                return found
            self._refuse_linked_folder()
            text = read_text(self.skill_file)
            return self._stage_version(
                text,
                resources=read_resources(self.skill_file.parent),
                why=f"adopted from {os.path.relpath(self.skill_file, self.ws.root)}",
                parent=None,
                metrics={},
                gate_verdict={"verdict": "adopted", "gates": []},
                patch="",
                provenance={"source": "adopt"},
                bump=False,
            )

    def publish(
        self,
        text: str,
        *,
        why: str,
        metrics: dict[str, Any] | None = None,
        gate_verdict: dict[str, Any] | None = None,
        patch: str | None = None,
        provenance: dict[str, Any] | None = None,
        resources: Resources | None = None,
    ) -> str:
        """Make ``text`` (and ``resources``) the next version and point ``current`` at it.

        ``resources`` is every file of the new folder beside SKILL.md; None keeps the parent's,
        which is what an edit of SKILL.md alone means. On the main line this also rewrites the live
        skill folder and bumps the workspace version; a branch is an experiment and leaves the
        active agent state alone. Returns the new "vN".
        """
        with self.ws.lock(f"publish {self.name}"):
            self._settle()
            parent = self.ensure_adopted()
            old = self.read(parent) if parent is not None else ""
            old_files = self.known_resources(parent)
            new_files = dict(old_files if resources is None else resources)
            if parent is not None and old == text and old_files == new_files:
                raise SkillsmithError(
                    f"{self.dir / parent}: nothing to publish, the folder is identical to {parent}"
                )
            if self.branch is None:
                self._refuse_linked_folder()
            self._refuse_drift(parent, text, new_files)
            return self._stage_version(
                text,
                resources=new_files,
                why=why,
                parent=parent,
                metrics=metrics or {},
                gate_verdict=gate_verdict or {"verdict": "accepted", "gates": [], "reason": why},
                patch=folder_diff(old, old_files, text, new_files) if patch is None else patch,
                provenance=provenance or {},
                bump=self.branch is None,
            )

    @property
    def archive_dir(self) -> Path:
        return self.root / ARCHIVE_DIR

    def archive(self, *, why: str) -> str:
        """Move the live skill folder into the store; returns the version it was at.

        The skill leaves the agent state (nothing evaluates or loads it) but nothing is deleted:
        its versions stay, and :meth:`unarchive` moves the very folder back. A hand edit of the
        folder is refused first, as for a publish, so the folder is exactly that version.
        """
        with self.ws.lock(f"archive {self.name}"):
            self._settle()
            cur = self.archivable()
            version = self.ws.version() + 1
            self._commit({"op": "archive", "to": cur, "why": why, "workspace_version": version})
            return cur

    def archivable(self) -> str:
        """Refuse what would stop :meth:`archive` (checked before a snapshot is spent on it);
        returns the version the skill is at."""
        if self.branch is not None:
            raise SkillsmithError(f"{self.dir}: a branch is not archived; archive the skill")
        cur = self.ensure_adopted()
        if cur is None or not self.skill_file.is_file():
            raise SkillsmithError(f"{self.skill_file.parent}: no such skill to archive")
        if self.archive_dir.exists():
            raise SkillsmithError(f"{self.archive_dir}: skill '{self.name}' is archived")
        self._refuse_drift(cur, None, None)
        return cur

    def unarchive(self, *, why: str) -> str:
        """Move an archived skill's folder back to ``skills/<name>/``; returns its version."""
        with self.ws.lock(f"unarchive {self.name}"):
            self._settle()
            cur = self.current()
            if cur is None or not self.archive_dir.is_dir():
                raise SkillsmithError(f"{self.archive_dir}: skill '{self.name}' is not archived")
            if self.skill_file.parent.exists():
                raise SkillsmithError(
                    f"{self.skill_file.parent}: is in the way of the archived skill; move it first"
                )
            version = self.ws.version() + 1
            self._commit({"op": "unarchive", "to": cur, "why": why, "workspace_version": version})
            return cur

    def rollback(self, version: str, *, why: str) -> None:
        """Point ``current`` back at an earlier (or any existing) version; nothing is deleted."""
        with self.ws.lock(f"rollback {self.name}"):
            self._settle()
            cur = self.ensure_adopted()
            self.read(version)
            if version == cur:
                raise SkillsmithError(f"{self.dir / 'current'}: already at {version}")
            if self.branch is None:
                self._refuse_linked_folder()
            self._refuse_drift(cur, None, None)
            self._commit(
                {"op": "rollback", "branch": self.branch, "from": cur, "to": version, "why": why}
            )

    def fork(self, branch: str) -> SkillStore:
        """Start ``branches/<branch>/`` at the current version; it shares this skill's taboo."""
        check_name("branch", branch)
        with self.ws.lock(f"fork {self.name}"):
            self._settle()
            base = self.ensure_adopted()
            if base is None:
                raise SkillsmithError(f"{self.skill_file}: no such skill to fork")
            target = self.root / "branches" / branch
            if target.exists():
                raise SkillsmithError(f"{target}: branch '{branch}' already exists")
            stage = self.root / "branches" / f".tmp-fork-{secrets.token_hex(4)}"
            self._copy_version(self.dir / base, stage / base)
            self._set_pointer(stage, base)
            source = self.branch or "main"
            self._commit(
                {
                    "op": "fork",
                    "branch": branch,
                    "from": None,
                    "to": base,
                    "why": f"fork of {source} at {base}",
                    "forked_from": source,
                    "stage": str(stage.relative_to(self.root)),
                    "target": str(target.relative_to(self.root)),
                }
            )
        return SkillStore(self.ws, self.name, branch)

    def record(self, op: str, **data: Any) -> None:
        """Append one line to the skill's timeline (candidate decisions, snapshots, undos)."""
        with self.ws.lock(f"{op} {self.name}"):
            append_jsonl(
                self.timeline_path, {"when": utc_now(), "op": op, "branch": self.branch, **data}
            )

    # -- internals ---------------------------------------------------------------------------------
    def known_resources(self, version: str | None) -> dict[str, Resource]:
        """A version's resources; for an old version that kept none, the live folder's."""
        found = self.resources(version) if version is not None else None
        return read_resources(self.skill_file.parent) if found is None else found

    def _refuse_drift(self, cur: str | None, text: str | None, files: Resources | None) -> None:
        """Hand edits to the live skill folder are never overwritten without being kept first."""
        if self.branch is not None or cur is None or not self.skill_file.is_file():
            return
        folder = self.skill_file.parent
        live = read_text(self.skill_file)
        edited = self.skill_file if live != self.read(cur) and live != text else None
        kept = self.resources(cur)
        if edited is None and kept is not None:
            now = read_resources(folder)
            if now != kept and now != files:
                changed = sorted(k for k in set(now) | set(kept) if now.get(k) != kept.get(k))
                edited = folder / changed[0]
        if edited is not None:
            raise SkillsmithError(
                f"{edited}: edited by hand since {cur}; publish it first "
                f"(skillsmith publish {self.name} {folder} --why …) so it is not lost"
            )

    def _refuse_linked_folder(self) -> None:
        """The live folder is written on every publish and rollback, so it must be a folder of
        the skills folder, not a link to one elsewhere: writing through it would change files
        outside the project (a link a user made, or one an agent planted)."""
        live = self.skill_file.parent
        skills = self.ws.skills_dir.resolve()
        if live.is_symlink() or live.resolve().parent != skills:
            raise SkillsmithError(
                f"{live}: a link to {os.path.realpath(live)}; Skillsmith writes published "
                "versions into the skill folder, so replace the link with the folder itself"
            )

    @staticmethod
    def _copy_version(src: Path, dst: Path) -> None:
        for fname in VERSION_FILES:
            atomic_write_text(dst / fname, read_text(src / fname))
        if (src / RESOURCES_DIR).is_dir():
            copy_resources(read_resources(src / RESOURCES_DIR), dst / RESOURCES_DIR)
        fsync_dir(dst)

    def _stage_version(
        self,
        text: str,
        *,
        resources: Resources,
        why: str,
        parent: str | None,
        metrics: dict[str, Any],
        gate_verdict: dict[str, Any],
        patch: str,
        provenance: dict[str, Any],
        bump: bool,
    ) -> str:
        check_tree(resources, where=self.skill_file.parent)
        names = self._version_names(self.dir)
        version = f"v{version_number(names[-1]) + 1}" if names else "v0"
        now = utc_now()
        stage = self.dir / f".tmp-publish-{secrets.token_hex(4)}"
        prov = {
            **provenance,
            "version": version,
            "parent": parent,
            "why": why,
            "created_at": now,
            "branch": self.branch,
        }
        atomic_write_text(stage / "SKILL.md", text)
        atomic_write_json(stage / "metrics.json", metrics)
        atomic_write_json(stage / "gate_verdict.json", gate_verdict)
        atomic_write_text(stage / "patch.diff", patch)
        atomic_write_json(stage / "provenance.json", prov)
        copy_resources(resources, stage / RESOURCES_DIR)
        fsync_dir(stage)
        intent: dict[str, Any] = {
            "op": "publish",
            "branch": self.branch,
            "from": parent,
            "to": version,
            "why": why,
            "stage": str(stage.relative_to(self.root)),
            "target": str((self.dir / version).relative_to(self.root)),
        }
        if provenance.get("source") == "adopt":
            intent["adopted"] = True
        if bump:
            intent["workspace_version"] = self.ws.version() + 1
        self._commit(intent)
        return version

    def _append_taboo(self, entry: TabooEntry) -> TabooEntry:
        with self.ws.lock(f"taboo {self.name}"):
            self._settle()
            for known in read_taboo(self.taboo_path):
                same = (known.rule_id, known.diff_hash, known.gate, known.thresholds)
                if same == (entry.rule_id, entry.diff_hash, entry.gate, entry.thresholds):
                    return known
            self._commit(
                {
                    "op": "taboo_append",
                    "branch": self.branch,
                    "entry": taboo_records([entry])[0],
                }
            )
            return entry

    def remove_taboo(self, entry: TabooEntry, *, why: str) -> None:
        """Take back one taboo entry: only an undone rejection does, so the list holds exactly
        the rejections that still stand (an undone one must not block its patch)."""
        with self.ws.lock(f"taboo {self.name}"):
            self._settle()
            if entry not in read_taboo(self.taboo_path):
                return
            self._commit(
                {
                    "op": "taboo_remove",
                    "branch": self.branch,
                    "why": why,
                    "entry": taboo_records([entry])[0],
                }
            )

    def _commit(self, intent: Intent) -> None:
        self._journal.commit(
            {**intent, "op_id": secrets.token_hex(8), "when": utc_now()}, self._apply
        )

    def _apply(self, intent: dict[str, Any]) -> None:
        """Carry out (or finish) one intent; every step can safely run twice."""
        op = intent["op"]
        branch = intent.get("branch")
        vdir = self._versions_dir(branch)
        if "stage" in intent:
            target = self.root / intent["target"]
            if not target.exists():
                os.rename(self.root / intent["stage"], target)
                fsync_dir(target.parent)
        live = self.skill_file.parent
        moves = {"archive": (live, self.archive_dir), "unarchive": (self.archive_dir, live)}
        if op in moves:
            frm, to = moves[op]
            if frm.is_dir() and not to.exists():  # one rename, so a replay finds it done
                to.parent.mkdir(parents=True, exist_ok=True)
                os.rename(frm, to)
                fsync_dir(frm.parent)
                fsync_dir(to.parent)
        if "workspace_version" in intent and self.ws.version() < intent["workspace_version"]:
            self.ws.set_version(intent["workspace_version"])
        if op in ("publish", "rollback", "fork"):
            self._set_pointer(vdir, intent["to"])
            if branch is None:
                try:
                    self._mirror(vdir / intent["to"])
                except OSError as exc:
                    self._undo_move(intent, exc)
            audit = {
                k: intent.get(k) for k in ("when", "from", "to", "why", "branch", "op", "op_id")
            }
            self._append_once(self.audit_path, audit)
        if op == "taboo_append":
            entries = read_taboo(self.taboo_path)
            entry = TabooEntry(**intent["entry"])
            if entry not in entries:
                atomic_write_json(self.taboo_path, taboo_records([*entries, entry]))
        if op == "taboo_remove":
            entries = read_taboo(self.taboo_path)
            entry = TabooEntry(**intent["entry"])
            if entry in entries:
                kept = [e for e in entries if e != entry]
                atomic_write_json(self.taboo_path, taboo_records(kept))
        line = {k: v for k, v in intent.items() if k not in ("stage", "target", "entry")}
        self._append_once(self.timeline_path, {**line, **intent.get("entry", {})})

    def _undo_move(self, intent: Intent, exc: OSError) -> None:
        """The live folder could not be made into the new version (a full disk, a file in the
        way): put ``current`` and the live folder back where they were and drop the new version,
        so the workspace opens and the skill is as it was; the change is over, so is its journal."""
        live = self.skill_file.parent
        previous = intent.get("from")
        pointer = self.dir / "current"
        if previous is None:
            pointer.unlink(missing_ok=True)
        else:
            self._set_pointer(self.dir, previous)
            with contextlib.suppress(OSError):
                self._mirror(self.dir / previous)
        if intent["op"] == "publish":
            target = self.root / intent["target"]
            if target.is_dir():
                dropped = target.with_name(f".tmp-publish-{secrets.token_hex(4)}")
                os.rename(target, dropped)
                shutil.rmtree(dropped, ignore_errors=True)
        fsync_dir(self.dir)
        self._journal.close()
        back = f"left at {previous}" if previous is not None else "left unpublished"
        raise LiveWriteFailed(
            f"{live}: cannot write the skill folder ({exc.strerror or exc}); "
            f"{intent['op']} of {intent['to']} undone, {self.name} {back}"
        ) from None

    def _mirror(self, version_dir: Path) -> None:
        """Make the live skill folder equal to one version (resources first, SKILL.md last)."""
        files = version_dir / RESOURCES_DIR
        if files.is_dir():
            write_resources(self.skill_file.parent, read_resources(files))
        text = read_text(version_dir / "SKILL.md")
        if not self.skill_file.is_file() or read_text(self.skill_file) != text:
            atomic_write_text(self.skill_file, text)

    @staticmethod
    def _append_once(path: Path, record: dict[str, Any]) -> None:
        """Append unless a previous, interrupted attempt already wrote this operation's line."""
        rows = read_jsonl(path)
        if rows and rows[-1].get("op_id") == record["op_id"]:
            return
        append_jsonl(path, record)

    @staticmethod
    def _set_pointer(vdir: Path, version: str) -> None:
        """Move ``current`` atomically: a new link under a temp name renamed over the old one."""
        pointer = vdir / "current"
        if pointer.is_symlink() and os.readlink(pointer) == version:
            return
        tmp = vdir / f".current.{secrets.token_hex(4)}"
        try:
            os.symlink(version, tmp)
        except OSError:  # no symlinks here (some network and Windows filesystems)
            atomic_write_text(pointer, version + "\n")
            return
        os.replace(tmp, pointer)
        fsync_dir(vdir)

    # -- recovery ----------------------------------------------------------------------------------
    def _leftovers(self) -> Iterator[Path]:
        dirs = [self.root, self.skill_file.parent]
        if (self.root / "branches").is_dir():
            dirs.append(self.root / "branches")
            dirs.extend(p for p in (self.root / "branches").iterdir() if p.is_dir())
        for d in dirs:
            if d.is_dir():
                yield from (p for p in d.iterdir() if is_leftover(p.name))

    def _settle(self) -> None:
        """Before a write, under the lock: finish what a writer killed since this workspace was
        opened left here. A restore cut short swaps the whole agent state, which only opening the
        workspace finishes; writing into the half-swapped state would mix the two."""
        restore = self.ws.root / RESTORE_JOURNAL
        if restore.exists():
            raise SkillsmithError(
                f"{restore}: a restore was interrupted; run any skillsmith command on this "
                "workspace to finish it, then try again"
            )
        self.recover()

    def recover(self) -> None:
        """Finish an interrupted change and drop the temp files of one that never committed.

        Call with the workspace lock held (engine.core.recovery does, once, on opening).
        """
        self._journal.replay(self._resume)
        remove_leftovers(self._leftovers())

    def _resume(self, intent: Intent) -> None:
        """Roll a journalled change forward; a publish whose stage is gone and whose target never
        appeared died before its stage was complete, and is dropped."""
        staged = "stage" not in intent or (self.root / intent["target"]).exists()
        if staged or (self.root / intent["stage"]).exists():
            with contextlib.suppress(LiveWriteFailed):  # undone: the workspace opens as it was
                self._apply(intent)


_STAGE = re.compile(
    r"(?:branches/[A-Za-z0-9][A-Za-z0-9._-]{0,127}/)?\.tmp-publish-[0-9a-f]{8}"
    r"|branches/\.tmp-fork-[0-9a-f]{8}"
)
_OPS = ("publish", "rollback", "fork", "taboo_append", "taboo_remove", "archive", "unarchive")
_TABOO_OPS = ("taboo_append", "taboo_remove")


def _checked_intent(journal: Path, intent: Any) -> Intent:
    """Refuse a journal whose fields would move anything outside this skill's history folder.

    The journal is replayed without a person looking, so it is read like untrusted input: a
    planted ``"stage": "../../vault"`` must never become a rename.
    """

    def bad(field: str, expected: str) -> FormatError:
        return FormatError(journal, field, expected + "; remove the file if you did not write it")

    if not isinstance(intent, dict) or intent.get("op") not in _OPS:
        raise bad("op", f"expected one of {', '.join(_OPS)}")
    branch = intent.get("branch")
    if branch is not None and (
        not isinstance(branch, str) or not NAME.match(branch) or ".." in branch
    ):
        raise bad("branch", "expected a branch name")
    if intent["op"] not in _TABOO_OPS and not (
        isinstance(intent.get("to"), str) and VERSION.match(intent["to"])
    ):
        raise bad("to", "expected a version vN")
    if intent["op"] in _TABOO_OPS:
        try:
            TabooEntry(**intent["entry"])
        except (KeyError, TypeError):
            raise bad("entry", "expected the taboo entry") from None
    if "workspace_version" in intent and type(intent["workspace_version"]) is not int:
        raise bad("workspace_version", "expected a whole number")
    if "stage" in intent or "target" in intent:
        stage = intent.get("stage")
        if not isinstance(stage, str) or not _STAGE.fullmatch(stage):
            raise bad("stage", "expected a .tmp-publish- or .tmp-fork- folder of this skill")
        prefix = "" if branch is None else f"branches/{branch}/"
        wanted = f"branches/{branch}" if intent["op"] == "fork" else f"{prefix}{intent['to']}"
        if intent.get("target") != wanted:
            raise bad("target", f"expected {wanted!r}")
    if not isinstance(intent.get("op_id", ""), str) or not isinstance(intent.get("why", ""), str):
        raise bad("op_id", "expected text")
    return intent


def stores_of(ws: Workspace) -> Iterator[SkillStore]:
    """Stores of every skill that has a history (for workspace-wide timeline lines)."""
    if not ws.history_dir.is_dir():
        return
    for path in sorted(ws.history_dir.iterdir()):
        if path.is_dir() and not is_leftover(path.name) and NAME.match(path.name):
            yield SkillStore(ws, path.name)
