"""Snapshots of the agent state: ``snapshots/v<version>-<UTC time>.tar.gz``.

PenguinHarness "Snapshot 与版本".

The agent state is what an evolution edits — ``skillsmith.yaml``, ``AGENTS.md``, ``skills/`` and
the version store ``history/`` — and nothing else: never ``vault/`` (secrets), never runs, caches or
lock files. A snapshot is the unit of "go back to how the agent was at version N", so restore is
built to be safe against archives from elsewhere: every member is checked before anything is
touched, the new state is unpacked beside the old one and swapped in item by item under an intent
journal (engine.core.journal), and the state being replaced is kept so a restore can be undone.

Keeping it costs a rename: the replaced items move whole into ``snapshots/.pending-<name>/`` and
are compressed into ``snapshots/<name>.tar.gz`` after the restore has returned (by a background
process the CLI starts, or by the next snapshot command, which first finishes every pending one).
So a restore costs about what unpacking the archive costs, and still returns the name of the
snapshot that undoes it.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

from engine.core.config import Config
from engine.core.errors import FormatError, SkillsmithError
from engine.core.fsutil import (
    append_jsonl,
    atomic_open,
    fsync_dir,
    hold,
    staged_open,
    sync_filesystem,
)
from engine.core.inflate import Inflated
from engine.core.journal import Intent, Journal, is_leftover, remove_leftovers
from engine.core.schema import from_mapping, parse_yaml, to_mapping
from engine.core.secret_scan import refuse_secrets
from engine.core.skill import frontmatter_error
from engine.core.stamps import utc_now
from engine.core.store import stores_of
from engine.core.vault import secret_values
from engine.core.workspace import (
    CONFIG_NAME,
    INTENT_JOURNAL,
    LOCK_NAME,
    RESTORE_JOURNAL,
    VERSION_FILE,
    Workspace,
    parse_version,
)
from engine.core.writers import Writers

MANIFEST = ".skillsmith-snapshot.json"
STATE_ITEMS = (CONFIG_NAME, "AGENTS.md", "skills", "history")
_STATE_DIRS = ("skills", "history")
RESTORE_LOG = "restores.jsonl"
MAX_MEMBERS = 200_000
MAX_HEADER_BYTES = 64 * 1024  # a GNU long name or a PAX header; real ones are a few hundred bytes
MAX_HEADER_CHAIN = 8
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255  # the longest file name Linux and macOS filesystems take
MAX_TRAILER_BYTES = 1024 * 1024  # tar pads its end to 10 KB records; more is not ours
_HELD_BYTES = 8 * 1024 * 1024  # a restored file up to this size is read whole, written on a thread
_EXTENSION_HEADERS = (
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
)
_INTERNAL_NAMES = {INTENT_JOURNAL, RESTORE_JOURNAL, LOCK_NAME, ".pending_round.json"}
# Agent settings that change nothing about which command runs or what it may see.
_HARMLESS_AGENT_KEYS = {"model", "timeout_s", "max_output_bytes", "max_turns", "noise"}
# v<workspace version>-<UTC time of the state>[-n].tar.gz; the older v<N>[-n] names still list
_NAME = re.compile(r"^v(\d+)(?:-(\d{8}T\d{6}Z))?(?:-(\d+))?\.tar\.gz$")
_SUFFIX = ".tar.gz"
_ISO_SECONDS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
_POINTER = re.compile(r"^history/[^/]+/(branches/[^/]+/)?current$")
_POINTER_TARGET = re.compile(r"^v\d+$")
_STAGE = re.compile(r"\.tmp-restore-[0-9a-f]{8}")
_SKILL_FILE = re.compile(r"^(?:skills/[^/]+|history/[^/]+/(?:branches/[^/]+/)?v\d+)/SKILL\.md$")
_CACHES = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".DS_Store"}
_COMPRESSLEVEL = 6  # what `tar -czf` (gzip -6) uses: the benchmark's baseline
# The archive of the state a restore replaced is written in the background, beside whatever the
# person does next: gzip -1 deflates text about four times faster than -6 for a file about half
# again as large.
_PRE_RESTORE_LEVEL = 1

# Workspaces this process is restoring right now: their temp folders are live, not leftovers.
_busy: set[Path] = set()


class AmbiguousSnapshot(SkillsmithError):
    """``restore vK`` when several snapshots hold version K: which one is for the person to say."""

    def __init__(self, folder: Path, asked: str, matches: list[SnapshotInfo]) -> None:
        self.matches = matches
        names = "; ".join(
            f"{snapshot_name(s.path)}" + (f" ({s.note})" if s.note else "") for s in matches
        )
        super().__init__(
            f"{folder}: {len(matches)} snapshots hold {asked}: {names}; "
            f"name one (skillsmith restore {snapshot_name(matches[-1].path)})"
        )


@dataclass(frozen=True)
class SnapshotInfo:
    version: int
    path: Path
    size: int
    created_at: str
    note: str


@dataclass
class _Archive:
    """What :func:`_inspect` learnt about an archive that passed every check."""

    version: int
    top: set[str] = field(default_factory=set)
    agent_change: str | None = None  # what it changes about the agent's command, if anything


# -- writing ---------------------------------------------------------------------------------------
def create_snapshot(ws: Workspace, note: str = "") -> Path:
    """Write the agent state to ``snapshots/v<version>-<UTC time>.tar.gz``."""
    with ws.lock("snapshot"):
        recover(ws)
        stores = list(stores_of(ws))
        for store in stores:  # an archive never holds a change half-way
            store.recover()
        dest, version = _write_snapshot(ws, note)
        for store in stores:
            store.record("snapshot", file=f"snapshots/{dest.name}", version=version, note=note)
        return dest


def _write_snapshot(ws: Workspace, note: str) -> tuple[Path, int]:
    version = ws.version()
    created_at = utc_now()
    dest = _free_name(ws, version, created_at)
    manifest = {"format": 1, "version": version, "created_at": created_at, "note": note}
    _write_archive(
        dest,
        manifest,
        partial(live_item, ws),
        secret_values(ws),
        _COMPRESSLEVEL,
        restorable=_Restorable(*_caps(ws)),
    )
    return dest, version


def _write_archive(
    dest: Path,
    manifest: dict[str, Any],
    locate: Callable[[str], Path],
    known: list[str],
    compresslevel: int,
    restorable: _Restorable | None = None,
) -> None:
    """Archive the state items found at ``locate(item)`` into ``dest``, refusing any secret
    (and, given ``restorable``, any member a restore would refuse)."""
    with (
        atomic_open(dest) as fh,
        gzip.GzipFile(fileobj=fh, mode="wb", compresslevel=compresslevel, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        head = json.dumps(manifest, ensure_ascii=False).encode("utf-8")
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mode = len(head), 0o644
        tar.addfile(info, io.BytesIO(head))
        for arcname, path in _state_members(locate):
            info = tar.gettarinfo(str(path), arcname)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            # whole seconds, as tar keeps them: a fractional mtime costs a PAX header per member,
            # which doubles the headers a restore must parse
            info.mtime = int(info.mtime)
            data = path.read_bytes() if info.isreg() else None
            if restorable is not None:
                restorable.check(arcname, path, data)
            if data is not None:
                refuse_secrets(path, data, known)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)


class _Restorable:
    """The checks a restore runs on each member, run while the snapshot is written: an archive
    that restore would refuse is worse than none (it looks like a way back and is not)."""

    def __init__(self, member_cap: int, total_cap: int) -> None:
        self.member_cap, self.total_cap = member_cap, total_cap
        self.members = self.total = 0

    def check(self, arcname: str, path: Path, data: bytes | None) -> None:
        def refuse(_name: str, problem: str) -> _Refused:
            return _Refused(
                f"{path}: {problem}; a restore would refuse the snapshot, so none was written"
            )

        _check_name_length(arcname, refuse)
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise refuse(arcname, f"is past the limit of {MAX_MEMBERS} files and folders")
        if data is None:
            return
        self.total += len(data)
        if len(data) > self.member_cap:
            raise refuse(arcname, f"is {len(data)} bytes, over limits.snapshot_max_member_bytes")
        if self.total > self.total_cap:
            raise refuse(arcname, "takes the snapshot over limits.snapshot_max_total_bytes")
        if _SKILL_FILE.match(arcname):
            try:
                _check_skill(data.decode("utf-8"), path, arcname)
            except UnicodeDecodeError:
                raise refuse(arcname, "is not UTF-8 text") from None
            except _Refused as exc:
                raise refuse(arcname, f"does not parse ({_clip(str(exc), 200)})") from None


def _state_members(locate: Callable[[str], Path]) -> Iterator[tuple[str, Path]]:
    """Archive name and path of every piece of agent state, in a stable sorted order."""

    def walk(path: Path, arcname: str) -> Iterator[tuple[str, Path]]:
        if path.is_symlink():
            if _POINTER.match(arcname) and _POINTER_TARGET.match(os.readlink(path)):
                yield arcname, path
                return
            raise SkillsmithError(
                f"{path}: symbolic links cannot be snapshotted (only history 'current' pointers); "
                "replace it with a copy of the file"
            )
        if path.is_file():
            yield arcname, path
        elif path.is_dir():
            yield arcname, path
            for child in sorted(path.iterdir(), key=lambda p: p.name):
                if child.name in _CACHES or child.name.endswith(".pyc") or is_leftover(child.name):
                    continue
                yield from walk(child, f"{arcname}/{child.name}")
        else:
            raise SkillsmithError(f"{path}: only files and folders can be snapshotted")

    for item in STATE_ITEMS:
        path = locate(item)
        if path.exists() or path.is_symlink():
            yield from walk(path, item)


def live_item(ws: Workspace, item: str) -> Path:
    """Where a state item lives: a project's workspace keeps skills and AGENTS.md outside itself
    (``paths`` in skillsmith.yaml), and the archive names them the same either way."""
    return {"skills": ws.skills_dir, "AGENTS.md": ws.agents_md}.get(item, ws.root / item)


def _free_name(ws: Workspace, version: int, created_at: str) -> Path:
    """A name that says what the file holds: the workspace version and when the state was taken
    (several snapshots of one version are the rule: every approval takes one)."""
    ws.snapshots_dir.mkdir(exist_ok=True)
    stamp = re.sub(r"[-:]", "", created_at) if re.fullmatch(_ISO_SECONDS, created_at) else ""
    stem = f"v{version}-{stamp}" if stamp else f"v{version}"
    dest = ws.snapshots_dir / f"{stem}{_SUFFIX}"
    n = 2
    while dest.exists() or _pending_of(dest).exists():
        dest = ws.snapshots_dir / f"{stem}-{n}{_SUFFIX}"
        n += 1
    return dest


def snapshot_name(path: Path) -> str:
    """What a person types to restore it: the file name without ``.tar.gz``."""
    return path.name.removesuffix(_SUFFIX)


# -- listing ---------------------------------------------------------------------------------------
def list_snapshots(ws: Workspace) -> list[SnapshotInfo]:
    """Snapshots oldest version first; a damaged file is still listed (restore will refuse it)."""
    found: list[tuple[int, str, int, SnapshotInfo]] = []
    if not ws.snapshots_dir.is_dir():
        return []
    for path in ws.snapshots_dir.iterdir():
        match = _NAME.match(path.name)
        if not match or not path.is_file():
            continue
        manifest = _read_manifest(path)
        stat = path.stat()
        info = SnapshotInfo(
            version=int(manifest.get("version") or match.group(1)),
            path=path,
            size=stat.st_size,
            created_at=str(manifest.get("created_at", "")),
            note=str(manifest.get("note", "")),
        )
        found.append((info.version, info.created_at, int(match.group(3) or 1), info))
    return [info for *_, info in sorted(found, key=lambda t: t[:3])]


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        with tarfile.open(path, "r:gz") as tar:
            first = tar.next()
            if first is None or first.name != MANIFEST or not first.isreg():
                return {}
            src = tar.extractfile(first)
            data = json.loads(src.read(64 * 1024)) if src is not None else {}
    except (tarfile.TarError, OSError, EOFError, zlib.error, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# -- validation ------------------------------------------------------------------------------------
class _Refused(SkillsmithError):
    """An archive that failed a check; raised from deep inside tarfile's header reader too."""


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text)} characters)"


def _refusal(path: Path, name: str, problem: str) -> _Refused:
    return _Refused(f"{path}: refused: member {_clip(name)!r} {problem}; nothing was changed")


class _CappedTarInfo(tarfile.TarInfo):
    """A header reader that refuses oversized extension headers BEFORE reading them.

    tarfile reads a GNU long-name or PAX header's whole payload into memory, so a 4 MB archive
    can claim a 1 GB name; and it follows a chain of such headers by recursion.
    """

    def _proc_member(self, archive: Any) -> Any:
        if self.type in _EXTENSION_HEADERS:
            chain = getattr(archive, "_skillsmith_chain", 0) + 1
            archive._skillsmith_chain = chain
            where = Path(getattr(archive, "name", None) or "archive")
            if self.size > MAX_HEADER_BYTES:
                raise _refusal(
                    where,
                    self.name,
                    f"is an extension header of {self.size} bytes (at most {MAX_HEADER_BYTES})",
                )
            if chain > MAX_HEADER_CHAIN:
                raise _refusal(where, self.name, "starts a chain of too many extension headers")
        else:
            archive._skillsmith_chain = 0
        return super()._proc_member(archive)  # type: ignore[misc]  # untyped in typeshed


@contextlib.contextmanager
def _open_archive(path: Path) -> Iterator[tuple[tarfile.TarFile, Inflated]]:
    """The archive's tar stream, read in order over its gzip stream inflated on a thread (so the
    gzip end can be checked after the tar's)."""
    with (
        path.open("rb") as raw,
        Inflated(raw) as gz,
        tarfile.open(
            name=str(path), fileobj=cast(Any, gz), mode="r|", tarinfo=_CappedTarInfo
        ) as tar,
    ):
        yield tar, gz


def _read_to_end(path: Path, gz: Inflated) -> None:
    """Read the gzip stream past the tar's end marker: the CRC and length are checked only there."""
    extra = 0
    while chunk := gz.read(1024 * 1024):
        extra += len(chunk)
        if extra > MAX_TRAILER_BYTES:
            raise _Refused(
                f"{path}: refused: more than {MAX_TRAILER_BYTES} bytes after the end of the "
                "archive; nothing was changed"
            )


def _inspect(path: Path, member_cap: int, total_cap: int, live: Config | None = None) -> _Archive:
    """Check EVERY member of an archive; any problem refuses the whole archive in one line."""
    return _read_archive(path, member_cap, total_cap, live, dest=None)


def _read_archive(
    path: Path, member_cap: int, total_cap: int, live: Config | None, dest: Path | None
) -> _Archive:
    """Check every member of an archive and, given ``dest``, write it there in the same pass.

    One decompression instead of a checking pass and an extracting one: each member is checked
    before a byte of it is written, and a refusal leaves only ``dest`` to delete (the caller's
    staging folder). What the archive would become is validated like a live workspace: its
    configuration, each ``current`` pointer naming a version the archive holds, and every
    SKILL.md parsing. Nothing written is synced here: the caller syncs the finished folder once.
    """

    def refuse(name: str, problem: str) -> _Refused:
        return _refusal(path, name, problem)

    archive = _Archive(version=-1)
    kinds: dict[str, str] = {}
    implied: dict[str, str] = {}  # folder → the first member that needed it
    pointers: dict[str, str] = {}
    total = 0
    config: Config | None = None
    state_version: int | None = (
        None  # history/workspace.json's; older snapshots keep it in the config
    )
    made: set[str] = set()
    if dest is not None:
        dest.mkdir(parents=True)
    try:
        with _open_archive(path) as (tar, gz), Writers() as writers:
            for member in tar:
                name = _member_name(member.name)
                if name is None:
                    raise refuse(member.name, "has an absolute path or climbs out with '..'")
                _check_name_length(name, refuse)
                if name in kinds:
                    raise refuse(name, "appears twice")
                if len(kinds) >= MAX_MEMBERS:
                    raise refuse(name, f"is past the limit of {MAX_MEMBERS} members")
                top = name.split("/", 1)[0]
                if top not in (*STATE_ITEMS, MANIFEST):
                    allowed = ", ".join((*STATE_ITEMS, MANIFEST))
                    raise refuse(name, f"is outside the agent state (allowed: {allowed})")
                if top == MANIFEST and (name != MANIFEST or not member.isreg()):
                    raise refuse(name, "is not the snapshot's manifest file")
                if any(_is_internal(part) for part in name.split("/")):
                    raise refuse(name, "is an internal journal, lock or temp file")
                parts = name.split("/")
                for depth in range(1, len(parts)):
                    parent = "/".join(parts[:depth])
                    if kinds.get(parent, "dir") != "dir":
                        raise refuse(name, f"lies under {parent!r}, which is not a folder")
                    implied.setdefault(parent, name)
                data: bytes | None = None
                if member.issym():
                    if not (_POINTER.match(name) and _POINTER_TARGET.match(member.linkname)):
                        raise refuse(name, f"is a symbolic link to {_clip(member.linkname)!r}")
                    kinds[name] = "link"
                    pointers[name] = member.linkname
                elif member.islnk():
                    raise refuse(name, f"is a hard link to {_clip(member.linkname)!r}")
                elif member.isdir():
                    kinds[name] = "dir"
                elif member.isreg() and member.type != tarfile.GNUTYPE_SPARSE:
                    if member.size > member_cap:
                        raise refuse(name, f"is {member.size} bytes, over the cap of {member_cap}")
                    total += member.size
                    if total > total_cap:
                        raise refuse(name, f"takes the archive over the total cap of {total_cap}")
                    kinds[name] = "file"
                    if name == CONFIG_NAME:
                        data = _member_bytes(tar, member)
                        config = _parse_config(data, f"{path}:{CONFIG_NAME}")
                    elif name == VERSION_FILE:
                        data = _member_bytes(tar, member)
                        state_version = parse_version(data, f"{path}:{VERSION_FILE}")
                    elif _POINTER.match(name):
                        data = _member_bytes(tar, member)
                        pointers[name] = _utf8(data, path, name).strip()
                    elif _SKILL_FILE.match(name):
                        data = _member_bytes(tar, member)
                        _check_skill(_utf8(data, path, name), path, name)
                elif member.ischr() or member.isblk():
                    raise refuse(name, "is a device file")
                else:
                    raise refuse(name, "is a FIFO or another special file")
                if kinds[name] != "dir" and name in implied:
                    raise refuse(implied[name], f"lies under {name!r}, which is not a folder")
                if dest is not None and name != MANIFEST:
                    try:
                        _write_member(tar, member, dest, name, data, made, writers)
                    except OSError as exc:
                        raise _WriteFailed(dest, exc) from None
            _read_to_end(path, gz)
    except _WriteFailed as failed:  # the disk, not the archive: say so
        raise SkillsmithError(
            f"{failed.dest.parent}: cannot write the restored files "
            f"({failed.error.strerror or failed.error}); nothing was changed — free some space "
            "and restore again"
        ) from None
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        reason = _clip(str(exc) or type(exc).__name__, 160)
        raise SkillsmithError(f"{path}: not a readable tar.gz snapshot ({reason})") from None
    for name, kind in kinds.items():
        if name in (CONFIG_NAME, "AGENTS.md") and kind != "file":
            raise refuse(name, "must be a regular file")
        if name in _STATE_DIRS and kind != "dir":
            raise refuse(name, "must be a folder")
    for name, target in pointers.items():
        version = f"{name.rsplit('/', 1)[0]}/{target}"
        if not _POINTER_TARGET.match(target) or kinds.get(version) != "dir":
            raise refuse(name, f"points at {_clip(target)!r}, a version the archive does not hold")
    if config is None:
        raise SkillsmithError(
            f"{path}: refused: no {CONFIG_NAME} inside, not a Skillsmith snapshot"
        )
    archive.version = config.version if state_version is None else state_version
    archive.agent_change = _agent_change(live, config)
    archive.top = {name.split("/", 1)[0] for name in kinds}
    return archive


class _WriteFailed(Exception):
    """Writing an extracted member failed (a full disk, a quota): not the archive's fault."""

    def __init__(self, dest: Path, error: OSError) -> None:
        super().__init__(str(error))
        self.dest = dest
        self.error = error


def _write_member(
    tar: tarfile.TarFile,
    member: tarfile.TarInfo,
    dest: Path,
    name: str,
    data: bytes | None,
    made: set[str],
    writers: Writers,
) -> None:
    """Write one checked member (``data``: its bytes when the checks already read them).

    Folders and links are made here, in archive order, so a folder exists before the files in
    it; a file's bytes are read here (the stream is read in order) and written on one of
    ``writers``' threads, except a file too large to hold, copied here. ``made`` holds the
    folders this extraction has created, so a file in one costs no mkdir. Paths are strings:
    pathlib's parents and hashing cost more than the writes of the small files a skill is made of.
    """
    target = f"{dest}/{name}"
    folder = target if member.isdir() else os.path.dirname(target)
    if folder not in made:
        if os.path.dirname(folder) in made:
            os.mkdir(folder)  # the usual case: tar lists a folder after its parent
        else:
            os.makedirs(folder, exist_ok=True)
        while folder not in made:  # it and every folder above it exist now
            made.add(folder)
            folder = os.path.dirname(folder)
    if member.isdir():
        return
    if member.issym():
        try:
            os.symlink(member.linkname, target)
        except OSError:  # no symlinks here: the store reads a plain-file pointer too
            with staged_open(target) as out:
                out.write((member.linkname + "\n").encode("utf-8"))
        return
    mode = member.mode & 0o755 | 0o600
    if data is None and member.size <= _HELD_BYTES:
        data = _member_bytes(tar, member)
    if data is not None:
        writers.submit(partial(_write_file, dest, target, data, mode, member.mtime), len(data))
        return
    with staged_open(target, mode=mode) as out:
        src = tar.extractfile(member)
        assert src is not None  # checked: a regular file
        shutil.copyfileobj(src, out, 1024 * 1024)
    os.utime(target, (member.mtime, member.mtime))


def _write_file(dest: Path, target: str, data: bytes, mode: int, mtime: float) -> None:
    """A new file with ``data``, its mode and time (on a writer thread: a failure is the disk's)."""
    try:
        with staged_open(target, mode=mode) as out:
            out.write(data)
        os.utime(target, (mtime, mtime))
    except OSError as exc:
        raise _WriteFailed(dest, exc) from None


def _check_name_length(name: str, refuse: Callable[[str, str], _Refused]) -> None:
    if len(name) > MAX_PATH_CHARS:
        raise refuse(name, f"has a path longer than {MAX_PATH_CHARS} characters")
    if any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in name.split("/")):
        raise refuse(name, f"has a path part longer than {MAX_NAME_BYTES} bytes")


def _is_internal(basename: str) -> bool:
    """Journals, locks and temp files belong to the workspace that wrote them, never to an archive:
    a planted journal would be replayed by the next command."""
    return basename in _INTERNAL_NAMES or is_leftover(basename)


def _member_bytes(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    src = tar.extractfile(member)
    return src.read() if src is not None else b""


def _utf8(raw: bytes, path: Path, name: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _refusal(path, name, "is not UTF-8 text") from None


def _check_skill(text: str, path: Path, name: str) -> None:
    """A skill the store could not read back would make every later store command refuse."""
    error = frontmatter_error(text, f"{path}:{name}")
    if error is not None:
        raise _Refused(f"refused: {_clip(str(error), 300)}; nothing was changed")


def _agent_change(live: Config | None, restored: Config) -> str | None:
    """What a restored configuration changes about the command that runs and what it sees."""
    if live is None:
        return None
    old, new = to_mapping(live.agent), to_mapping(restored.agent)
    changed = [
        f"agent.{key} {old.get(key)!r} → {new.get(key)!r}"
        for key in sorted(set(old) | set(new))
        if key not in _HARMLESS_AGENT_KEYS and old.get(key) != new.get(key)
    ]
    # paths decide where the restored skills and AGENTS.md are written: an archive may not
    # move them (to ~/.ssh, say) unless trusted like a new agent command
    was, now = to_mapping(live.paths), to_mapping(restored.paths)
    changed += [f"paths.{k} {was[k]!r} → {now[k]!r}" for k in sorted(was) if was[k] != now[k]]
    return "; ".join(changed) or None


def _member_name(raw: str) -> str | None:
    """The archive name as a clean relative path, or None if it is absolute or climbs out."""
    if not raw or raw.startswith("/") or "\\" in raw or "\x00" in raw:
        return None
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _parse_config(raw: bytes, label: str) -> Config:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(label, None, "expected a valid UTF-8 YAML configuration") from None
    return from_mapping(Config, parse_yaml(text, label), label)  # the C loader, as load_config


def _caps(ws: Workspace) -> tuple[int, int]:
    limits = ws.load_config().limits
    return limits.snapshot_max_member_bytes, limits.snapshot_max_total_bytes


# -- restore ---------------------------------------------------------------------------------------
def restore(
    ws: Workspace, source: str | Path, *, yes: bool = False, trust_agent_config: bool = False
) -> Path:
    """Make the agent state equal to a snapshot; returns the snapshot of the state it replaced.

    ``source`` is a file or "vK" (the newest snapshot of version K). A version not newer than the
    current one is refused unless ``yes``; a configuration that changes the agent's command or
    what it may see is refused unless ``trust_agent_config`` (the next eval would run it); vault/,
    runs/ and everything else outside the agent state are left alone.
    """
    with ws.lock("restore"):
        recover(ws)
        path = _resolve_source(ws, source)
        live = ws.load_config()
        current = ws.version()
        stage = ws.root / f".tmp-restore-{secrets.token_hex(4)}"
        _busy.add(ws.root)
        try:
            try:
                # checked and unpacked in one pass; a refusal deletes the stage, nothing else
                archive = _read_archive(path, *_caps(ws), live, dest=stage / "new")
                _refuse_unasked(path, archive, current, yes, trust_agent_config)
                for item in _STATE_DIRS:
                    (stage / "new" / item).mkdir(exist_ok=True)
                created_at = utc_now()
                before = _free_name(ws, current, created_at)
                note = f"before restoring {path.name}"
                manifest = {"format": 1, "version": current, "created_at": created_at, "note": note}
                (stage / "old").mkdir()
                (stage / "old" / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False))
                sync_filesystem(stage)  # the whole new state durable before the swap shows it
            except BaseException:
                shutil.rmtree(stage, ignore_errors=True)
                raise
            items = sorted(archive.top & set(STATE_ITEMS) | set(_STATE_DIRS))
            intent = {
                "stage": stage.name,
                "items": items,
                "source": str(path),
                "pending": before.name,
            }
            _journal(ws).commit(intent, lambda _intent: _swap_and_keep(ws, stage, items, before))
            shutil.rmtree(stage)  # only the emptied folders of the new state are left in it
        finally:
            _busy.discard(ws.root)
        append_jsonl(
            ws.snapshots_dir / RESTORE_LOG,
            {
                "when": utc_now(),
                "source": str(path),
                "version": archive.version,
                "replaced_version": current,
                "pre_restore": f"snapshots/{before.name}",
            },
        )
        return before


def _refuse_unasked(
    path: Path, archive: _Archive, current: int, yes: bool, trust_agent_config: bool
) -> None:
    if archive.version <= current and not yes:
        how = "older than" if archive.version < current else "the same as"
        raise SkillsmithError(
            f"{path}: holds version {archive.version}, {how} the current version {current}; "
            "pass --yes to restore it anyway"
        )
    if archive.agent_change is not None and not trust_agent_config:
        raise SkillsmithError(
            f"{path}: its {CONFIG_NAME} changes how the agent runs ({archive.agent_change}); "
            "pass --trust-agent-config to restore it anyway"
        )


def _resolve_source(ws: Workspace, source: str | Path) -> Path:
    text = str(source)
    if len(text) > MAX_PATH_CHARS:
        raise SkillsmithError(f"{_clip(text)}: no such snapshot file (the path is too long)")
    named = ws.snapshots_dir / (text if text.endswith(_SUFFIX) else text + _SUFFIX)
    if "/" not in text and _NAME.match(named.name) and named.is_file() and not Path(text).exists():
        return named
    if re.fullmatch(r"v\d+", text) and not Path(text).exists():
        wanted = int(text[1:])
        matches = [s for s in list_snapshots(ws) if s.version == wanted]
        if not matches:
            have = ", ".join(sorted({f"v{s.version}" for s in list_snapshots(ws)})) or "none"
            raise SkillsmithError(f"{ws.snapshots_dir}: no snapshot of {text} (have: {have})")
        if len(matches) > 1:
            raise AmbiguousSnapshot(ws.snapshots_dir, text, matches)
        return matches[0].path
    path = Path(source).expanduser().resolve()
    if not path.is_file():
        raise SkillsmithError(f"{path}: no such snapshot file")
    return path


def _swap(ws: Workspace, stage: Path, items: list[str]) -> None:
    """Move each state item of ``stage/new`` into place and the replaced one into ``stage/old``.

    Runs again unchanged after a crash: an item still waiting in ``new`` is swapped, one already
    swapped is left alone, and an item the snapshot lacks (AGENTS.md) is moved out, so the result
    is always the whole new state.
    """
    new, old = stage / "new", stage / "old"
    old.mkdir(parents=True, exist_ok=True)
    for item in STATE_ITEMS:
        src, live, kept = new / item, live_item(ws, item), old / item
        waiting = src.exists() or src.is_symlink()
        if item in items and not waiting:
            continue  # swapped before a crash
        if (live.exists() or live.is_symlink()) and not (kept.exists() or kept.is_symlink()):
            os.rename(live, kept)
        if waiting:
            os.rename(src, live)
    fsync_dir(ws.root)


def _swap_and_keep(ws: Workspace, stage: Path, items: list[str], before: Path) -> None:
    _swap(ws, stage, items)
    _keep_replaced(stage, before)


def _keep_replaced(stage: Path, before: Path) -> None:
    """Move the replaced state (``stage/old``) whole to the folder that waits to become the
    snapshot ``before``: a rename, where archiving it here would cost more than the restore."""
    pending = _pending_of(before)
    if (stage / "old").is_dir() and not pending.exists():
        os.rename(stage / "old", pending)
        fsync_dir(pending.parent)


# -- the replaced state, archived after the restore --------------------------------------------
_PENDING = ".pending-"


def _pending_of(dest: Path) -> Path:
    """The folder a replaced state waits in until it is archived as ``dest``."""
    return dest.with_name(f"{_PENDING}{snapshot_name(dest)}")


def _pending_folders(ws: Workspace) -> list[Path]:
    if not ws.snapshots_dir.is_dir():
        return []
    found = (p for p in ws.snapshots_dir.iterdir() if p.name.startswith(_PENDING))
    return sorted(p for p in found if p.is_dir() and not p.is_symlink())


def finish_pending(ws: Workspace) -> list[Path]:
    """Archive every replaced state still waiting in ``snapshots/.pending-*``; return the
    snapshots written.

    Safe beside another process doing the same (each folder is locked while it is archived, and
    a second comer waits for the first), and after a kill (the folder stays until its archive is
    complete). A secret in a replaced state refuses its archive like any snapshot: the folder is
    kept and the error names the file to fix.
    """
    written = []
    for folder in _pending_folders(ws):
        dest = folder.with_name(folder.name.removeprefix(_PENDING) + _SUFFIX)
        try:
            fd = hold(folder)
        except FileNotFoundError:
            continue  # archived by someone else since the listing
        try:
            if not folder.is_dir():
                continue  # archived by the process whose lock we waited for
            if not dest.exists():
                _write_archive(
                    dest,
                    _pending_manifest(folder),
                    folder.joinpath,
                    secret_values(ws),
                    _PRE_RESTORE_LEVEL,
                )
                written.append(dest)
            shutil.rmtree(folder)
            fsync_dir(folder.parent)
        finally:
            os.close(fd)
    return written


def _pending_manifest(folder: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        manifest = None
    if isinstance(manifest, dict):
        return manifest
    match = _NAME.match(folder.name.removeprefix(_PENDING) + _SUFFIX)  # torn: the name tells
    return {"format": 1, "version": int(match.group(1)) if match else 0, "note": "before a restore"}


def finish_pending_in_background(ws: Workspace) -> None:
    """Start a detached process that archives the replaced states, so the command that
    restored can return at once (the next snapshot command finishes whatever it leaves)."""
    if not _pending_folders(ws):
        return
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    subprocess.Popen(
        [sys.executable, "-m", "engine.core.archive_pending", str(ws.root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )


# -- import ----------------------------------------------------------------------------------------
def import_snapshot(ws: Workspace, path: Path) -> Path:
    """Copy a snapshot made elsewhere into ``snapshots/`` once it passes every restore check."""
    if len(str(path)) > MAX_PATH_CHARS:
        raise SkillsmithError(f"{_clip(str(path))}: no such snapshot file (the path is too long)")
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise SkillsmithError(f"{path}: no such snapshot file")
    with ws.lock("import snapshot"):
        recover(ws)
        archive = _inspect(path, *_caps(ws))
        dest = _free_name(ws, archive.version, str(_read_manifest(path).get("created_at", "")))
        with path.open("rb") as src, atomic_open(dest) as out:
            shutil.copyfileobj(src, out, 1024 * 1024)
        return dest


# -- recovery --------------------------------------------------------------------------------------
def _leftovers(ws: Workspace) -> Iterator[Path]:
    if ws.root in _busy:
        return
    if ws.root.is_dir():  # a restore's stage, or the temp file of an atomic write at the top
        yield from (
            p
            for p in ws.root.iterdir()
            if p.name.startswith(".tmp-restore-") or (p.name[:1] == "." and p.name.endswith(".tmp"))
        )
    if ws.snapshots_dir.is_dir():
        yield from (
            p
            for p in ws.snapshots_dir.iterdir()
            if p.name.startswith(".") and p.name.endswith(".tmp")
        )


def recover(ws: Workspace) -> None:
    """Finish a restore whose swap had begun and archive the states restores replaced; drop the
    temp files of anything that had not begun.

    Call with the workspace lock held. The pending archives come before the sweep: it would
    take the temp file of a background archiver for a killed writer's.
    """
    if ws.root in _busy:
        return
    _journal(ws).replay(lambda intent: _resume(ws, intent))
    finish_pending(ws)
    remove_leftovers(_leftovers(ws))


def _journal(ws: Workspace) -> Journal:
    return Journal(ws.root / RESTORE_JOURNAL, _checked_intent)


def _resume(ws: Workspace, intent: Intent) -> None:
    """Swap in the rest of a restore killed mid-swap; one killed before it has no stage left to
    swap and is dropped (its temp files with it)."""
    stage = ws.root / intent["stage"]
    if stage.is_dir():
        _swap(ws, stage, intent["items"])
        if "pending" in intent:
            _keep_replaced(stage, ws.snapshots_dir / intent["pending"])


def _checked_intent(journal: Path, intent: Any) -> Intent:
    """The restore journal, checked before anything is moved by it: the stage must be one of our
    own temp folders at the top and the items agent-state names."""

    def bad(field: str, expected: str) -> FormatError:
        return FormatError(journal, field, expected + "; remove the file if you did not write it")

    if not isinstance(intent, dict):
        raise bad("stage", "expected the restore journal's fields")
    stage, items = intent.get("stage"), intent.get("items")
    if not isinstance(stage, str) or not _STAGE.fullmatch(stage):
        raise bad("stage", "expected a .tmp-restore-<hex> folder at the top of the workspace")
    if not isinstance(items, list) or not all(i in STATE_ITEMS for i in items):
        raise bad("items", f"expected names among {', '.join(STATE_ITEMS)}")
    pending = intent.get("pending", "v0.tar.gz")
    if not isinstance(pending, str) or not _NAME.fullmatch(pending):
        raise bad("pending", "expected the name of the snapshot that keeps the replaced state")
    return intent
