"""Crash-safe file primitives.

Files are the database (DESIGN principle 6), so every write goes through here: a crash at any
instant leaves a file either old or new, never half-written, and history logs only ever grow.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from engine.core.strict_json import dump_line, load_stored


def fsync_dir(path: Path) -> None:
    """Persist a rename: without syncing the directory the new name may vanish on power loss."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class StagedFile:
    """A file's new bytes under a temp name beside it, synced but not yet in place.

    :func:`atomic_open` is prepare, write, :meth:`commit`. Split, the sync of the bytes can run
    while something that must be durable *before* the file is still being written (a run's final
    manifest while its scoreboard record is appended), and only the rename and the folder's
    sync wait for it. Until :meth:`commit` or :meth:`abort` the temp stays locked, so a sweep
    (:func:`sweep_temp_files`) never takes it for a killed writer's leftover.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # here: a command that only reads never loads it

        fd, self._tmp = tempfile.mkstemp(
            prefix=f".{self.path.name}.", suffix=TEMP_SUFFIX, dir=self.path.parent
        )
        self._fd: int | None = fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            self.abort()
            raise

    def stream(self) -> BinaryIO:
        """A binary stream into the temp; :meth:`sync` flushes and syncs what it was given."""
        assert self._fd is not None
        return os.fdopen(os.dup(self._fd), "wb")

    def sync(self) -> None:
        assert self._fd is not None
        os.fsync(self._fd)

    def commit(self, mode: int = 0o644, *, sync_dir: bool = True) -> None:
        """Rename the synced temp into place (and sync the folder, unless the caller does)."""
        try:
            os.chmod(self._tmp, mode)
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        self._close()
        if sync_dir:
            fsync_dir(self.path.parent)

    def abort(self) -> None:
        """Drop the temp: ``path`` keeps its old bytes."""
        with contextlib.suppress(OSError):
            os.unlink(self._tmp)
        self._close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def stage_bytes(path: Path, data: bytes) -> StagedFile:
    """``data`` written and synced under a temp name beside ``path``; commit it to publish."""
    staged = StagedFile(path)
    try:
        with staged.stream() as fh:
            fh.write(data)
        staged.sync()
    except BaseException:
        staged.abort()
        raise
    return staged


@contextlib.contextmanager
def atomic_open(path: Path, mode: int = 0o644, *, sync_dir: bool = True) -> Iterator[BinaryIO]:
    """Stream a file too large to hold in memory (a snapshot) with the temp + fsync + rename
    guarantee of :func:`atomic_write_bytes`; an exception inside the block leaves ``path`` old.

    ``sync_dir=False`` leaves the folder's fsync to a caller that writes several files into it
    and syncs it once (:func:`fsync_dir`) before it relies on their names."""
    staged = StagedFile(path)
    try:
        with staged.stream() as fh:
            yield fh
        staged.sync()
    except BaseException:
        staged.abort()
        raise
    staged.commit(mode, sync_dir=sync_dir)


# A file changed this recently may change again within the filesystem's timestamp tick without
# its stamp changing, so a cache keyed by stamps trusts only files older than this ("racy git").
SETTLED_AFTER_S = 2.0

Stamp = tuple[int, int, int, int, int]


def stamp_of(st: os.stat_result) -> Stamp:
    """A file's identity for in-process caches: device, inode, size, mtime and ctime. An atomic
    write is a new inode; an edit in place moves mtime and ctime (ctime even when the mtime is
    set back, as ``tar -x`` or ``cp -p`` do)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def settled(stamps: Iterable[Stamp]) -> bool:
    """Whether a value read from files with these stamps may be cached: none of them changed in
    the last :data:`SETTLED_AFTER_S` (a later change then always moves a timestamp)."""
    return settled_since(max((max(s[3], s[4]) for s in stamps), default=0))


def settled_since(changed_ns: int) -> bool:
    """Whether a file last changed at ``changed_ns`` (an mtime or ctime) has settled."""
    return time.time_ns() - changed_ns > SETTLED_AFTER_S * 1e9


TEMP_SUFFIX = ".tmp"
STALE_AFTER_S = 1.0  # a temp untouched this long and unlocked was left by a killed writer


_TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")  # mkstemp's 8 random characters


def is_temp_file(name: str) -> bool:
    """Whether ``name`` is an :func:`atomic_open` temp file (``.<name>.<random>.tmp``).

    Such a file is never content: fingerprints and listings skip it.
    """
    return _TEMP_NAME.match(name) is not None


def sweep_temp_files(folder: Path) -> list[Path]:
    """Delete the temp files a killed writer left in ``folder`` (not recursive); return them.

    A temp file is stale when no writer holds its lock and it has not changed for a moment (the
    moment covers a writer that created it but has not locked it yet).
    """
    try:
        names = [n for n in os.listdir(folder) if is_temp_file(n)]
    except OSError:
        return []
    swept = []
    for name in names:
        path = Path(folder) / name
        if not path.is_file() or path.is_symlink():
            continue
        with contextlib.suppress(OSError), stale_hold(path) as stale:
            if stale:
                path.unlink()
                swept.append(path)
    return swept


@contextlib.contextmanager
def stale_hold(path: Path) -> Iterator[bool]:
    """Yield whether ``path`` (a file or folder) was abandoned: its flock is free and it has not
    changed for :data:`STALE_AFTER_S`. While the block runs the lock is ours, so its owner cannot
    come back; a live owner holds the lock for as long as it uses the path."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield time.time() - os.fstat(fd).st_mtime >= STALE_AFTER_S
    finally:
        os.close(fd)


def hold(path: Path) -> int:
    """Open ``path`` and flock it for as long as the returned fd stays open (see stale_hold)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


@contextlib.contextmanager
def staged_open(path: Path | str, mode: int = 0o644) -> Iterator[BinaryIO]:
    """Create a NEW file inside a staging folder that is later renamed into place as a whole.

    The folder's rename is the atomic step, so the file needs no temp name of its own (a restore
    writes thousands), nor a sync of its own: one :func:`sync_filesystem` over the finished
    folder makes every file and name in it durable before the rename publishes them, where one
    fsync per file and folder would cost more than writing them.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fd, mode)
        yield fh


def sync_filesystem(path: Path) -> None:
    """Flush everything written on ``path``'s filesystem to disk, in one call (Linux syncfs;
    elsewhere a system-wide sync)."""
    syncfs = _syncfs()
    if syncfs is None:
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        call: Callable[[int], int] = libc.syncfs
    except (OSError, AttributeError):
        return None
    return call


def atomic_write_bytes(
    path: Path, data: bytes, mode: int = 0o644, *, sync_dir: bool = True
) -> None:
    """Write ``data`` to ``path`` via temp file + fsync + rename."""
    with atomic_open(path, mode, sync_dir=sync_dir) as fh:
        fh.write(data)


def atomic_write_text(path: Path, text: str, *, sync_dir: bool = True) -> None:
    """Text variant of :func:`atomic_write_bytes`; no newline translation, so CRLF survives."""
    atomic_write_bytes(path, text.encode("utf-8"), sync_dir=sync_dir)


def json_bytes(obj: Any) -> bytes:
    """How every JSON file here is written (indented, UTF-8, keys in their order)."""
    return (json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8")


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, json_bytes(obj))


def atomic_write_yaml(path: Path, obj: Any) -> None:
    import yaml  # deferred: most processes that load this module never write YAML

    atomic_write_text(path, yaml.safe_dump(obj, sort_keys=False, allow_unicode=True))


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line and fsync it.

    A single ``write`` of a line under ``O_APPEND`` keeps concurrent appenders from interleaving
    inside a line; readers skip a torn last line (see :func:`read_jsonl`).
    """
    append_jsonl_many(path, [record])


def append_jsonl_many(path: Path, records: list[dict[str, Any]]) -> None:
    """Append several JSON lines with one ``write`` and one fsync (a batch costs one sync).

    When this returns every line is on disk, as after the same number of :func:`append_jsonl`.
    """
    if not records:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(dump_line(record) + "\n" for record in records).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:  # a short write on a full disk must not leave half a batch unreported
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl(path: Path, *, strict: bool = False) -> list[dict[str, Any]]:
    """Read a JSONL log.

    With ``strict`` a malformed line raises a :class:`FormatError` naming file and line; without
    it only a torn *last* line (a crash mid-append) is tolerated and dropped.
    """
    from engine.core.errors import FormatError

    path = Path(path)
    if not path.exists():
        return []
    rows: list[dict[str, Any]] = []
    lines = path.read_bytes().splitlines()
    for number, data in enumerate(lines, start=1):
        try:
            raw = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not strict and number == len(lines):
                break
            raise FormatError(
                path, None, f"line is not UTF-8 text (byte {exc.start} of the line)", line=number
            ) from None
        if not raw.strip():
            continue
        try:
            value = load_stored(raw)
        except json.JSONDecodeError as exc:
            if not strict and number == len(lines):
                break
            raise FormatError(
                path, None, f"line is not valid JSON ({exc.msg})", line=number
            ) from None
        if not isinstance(value, dict):
            raise FormatError(path, None, "line must be a JSON object", line=number)
        rows.append(value)
    return rows


def iter_files(root: Path) -> Iterator[Path]:
    """Every regular file below ``root`` in a stable order (for hashing and snapshots).

    A killed writer's temp file is not content, so it is not listed.
    """
    for path, _rel in walk_files(root):
        yield Path(path)


def walk_files(root: Path, *, temp_files: bool = False) -> Iterator[tuple[str, str]]:
    """:func:`iter_files` as strings: each file's path and its path below ``root`` with ``/``.

    The same files in the same order as ``os.walk`` (sorted, files of a folder before its
    subfolders, a symlinked folder listed but not entered, an unreadable folder skipped), from
    one ``scandir`` per folder: a caller that touches every file of a tree before each
    evaluation (the benchmark fingerprint) would otherwise spend more on building paths and on
    ``lstat`` calls than on reading the files. ``temp_files`` lists temp-named files too (for a
    check of what a copy of the tree will hold).
    """
    top = os.fspath(root)
    pending = [(top, "")]
    while pending:
        folder, prefix = pending.pop()
        files: list[str] = []
        folders: list[tuple[str, bool]] = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if is_dir:
                        folders.append((entry.name, entry.is_symlink()))
                    else:
                        files.append(entry.name)
        except OSError:
            continue
        for name in sorted(files):
            if temp_files or not is_temp_file(name):
                yield os.path.join(folder, name), prefix + name
        # a stack: push in reverse so the folders come off it in sorted order
        for name, link in sorted(folders, reverse=True):
            if not link:
                pending.append((os.path.join(folder, name), f"{prefix}{name}/"))
