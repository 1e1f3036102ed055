"""An append-only YAML block list: the storage of history files such as scoreboard.yaml.

A history file is read far more often than it is written and grows with the life of a project,
so neither reading nor appending may cost the whole file's parse. The file stays one ordinary
YAML block list (any YAML reader loads it), and two properties of that layout make it cheap:

* every item starts with ``-`` in column 0 and nothing else does (PyYAML indents continuation
  lines), so the items are found by a text scan and each one parses on its own;
* a new item is appended after the existing bytes, which never move.

An append is crash-safe through a small intent file (``.<name>.append``: the size before the
append, a digest of the bytes just before that point, and the new piece), written atomically
before the bytes are appended and removed after the fsync. The next append finishes an
interrupted one; a reader meanwhile sees the file as it was before that append. The first item
needs none of this: a file that does not exist yet is written whole, by a rename.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.errors import FormatError
from engine.core.fsutil import atomic_write_bytes, atomic_write_json, fsync_dir

_TAIL = 65536  # bytes before the append point whose digest identifies the file appended to


@dataclass(frozen=True)
class Item:
    """One item's text, where it starts in the file (1-based line) and a digest of its text
    (length and the interpreter's string hash: for in-process caches only)."""

    index: int
    text: str
    first_line: int
    digest: tuple[int, int]


@dataclass(frozen=True)
class Listing:
    """The items of a file, or ``plain`` False when it is not a bare block list (then its
    ``text`` is for the caller to parse whole)."""

    plain: bool
    items: tuple[Item, ...]
    text: str


def intent_path(path: Path) -> Path:
    return path.parent / f".{path.name}.append"


def index_path(path: Path) -> Path:
    """Where a reader keeps an index of the log's items (rebuilt from the log when missing)."""
    return path.parent / f".{path.name}.index.json"


def is_log_file(name: str, log_name: str) -> bool:
    """Is ``name`` the log ``log_name``, its append intent or its index (for fingerprints that
    skip it)."""
    log = Path(log_name)
    return name in (log_name, intent_path(log).name, index_path(log).name)


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    try:
        intent = intent_path(path).stat().st_mtime_ns
    except FileNotFoundError:
        intent = 0
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, intent)


def _intent(path: Path) -> dict[str, Any] | None:
    try:
        intent = json.loads(intent_path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError):
        raise FormatError(intent_path(path), None, "unreadable append intent") from None
    if not isinstance(intent, dict) or not isinstance(intent.get("size"), int):
        raise FormatError(intent_path(path), "size", "expected an integer")
    return intent


def _limit(data: bytes, intent: dict[str, Any] | None) -> int | None:
    """The size before an unfinished append (readers stop there); None when there is none, or
    when the intent belongs to other bytes than these (a restore replaced the file)."""
    if intent is None:
        return None
    size: int = intent["size"]
    if len(data) >= size and _tail_digest(data[:size]) == intent.get("tail"):
        return size
    return None


def _significant(text: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines())


def _starts(text: str) -> list[int]:
    """Where the items start: ``-`` then a space or the line's end, in column 0 (str.find runs
    in C; a regex over a history of megabytes costs ten times more)."""
    starts = [0] if text[:2] in ("- ", "-\n", "-") else []
    at = text.find("\n-")
    while at >= 0:
        if text[at + 2 : at + 3] in (" ", "\n", ""):
            starts.append(at + 1)
        at = text.find("\n-", at + 2)
    return starts


def split(text: str) -> Listing:
    """Cut ``text`` into its items; comments and blank lines before the first item belong to
    nobody, anything else there (a flow list, a mapping, a document marker) makes it not plain."""
    starts = _starts(text)
    if _significant(text[: starts[0]] if starts else text):
        return Listing(False, (), text)
    items = []
    line = 1 + text.count("\n", 0, starts[0]) if starts else 1
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(text)
        piece = text[start:end]
        items.append(Item(index, piece, line, (len(piece), hash(piece))))
        line += piece.count("\n")
    return Listing(True, tuple(items), text)


_cache: dict[Path, tuple[tuple[int, ...], Listing]] = {}
_cache_lock = threading.Lock()


def read(path: Path) -> Listing | None:
    """The listing of ``path`` (None when it does not exist), cached by file identity."""
    path = Path(path)
    identity = _identity(path)
    if identity is None:
        return None
    with _cache_lock:
        cached = _cache.get(path)
    if cached is not None and cached[0] == identity:
        return cached[1]
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    limit = _limit(data, _intent(path))
    try:
        text = data[:limit].decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(path, None, "file is not UTF-8 text") from None
    listing = split(text)
    with _cache_lock:
        _cache[path] = (identity, listing)
    return listing


def count(text: str) -> int:
    """How many items a plain block list holds (a text scan, no parse)."""
    return len(_starts(text))


def appendable(text: str) -> bool:
    """Can an item be appended textually: empty, or a plain block list (not flow style)."""
    starts = _starts(text[:65536]) or _starts(text)
    return not _significant(text[: starts[0]] if starts else text)


def _tail_digest(data: bytes) -> str:
    return hashlib.blake2b(data[-_TAIL:], digest_size=16).hexdigest()


def _apply(path: Path, size: int, piece: bytes) -> None:
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, size)
        written = 0
        while written < len(piece):
            written += os.pwrite(fd, piece[written:], size + written)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)


def recover(path: Path) -> None:
    """Finish an append a crash interrupted, or drop its intent when the file it was meant
    for is gone (a restore replaced it). Call with the writers' lock held."""
    intent = _intent(path)
    if intent is None:
        return
    current = path.read_bytes() if path.exists() else b""
    size = _limit(current, intent)
    if size is not None:
        _apply(path, size, str(intent.get("piece", "")).encode("utf-8"))
    intent_path(path).unlink()
    fsync_dir(path.parent)


def ends(path: Path) -> tuple[int, bytes, bytes]:
    """(size, first bytes, last bytes) of ``path``: all an append needs to look at, whatever
    the length of the history (zeros and empty bytes when there is no file yet)."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return 0, b"", b""
    with fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(_TAIL)
        fh.seek(max(0, size - _TAIL))
        return size, head, fh.read(_TAIL)


def append(path: Path, size: int, tail: bytes, piece: str) -> None:
    """Append ``piece`` after the first ``size`` bytes of the file, the last of which are
    ``tail``, atomically: after a crash the file reads as those bytes until :func:`recover`
    completes it. Call with the writers' lock held.

    A file that does not exist yet is written whole under a temp name and renamed into place:
    it appears complete or not at all, so no intent is needed (two syncs instead of five)."""
    if size == 0 and not os.path.lexists(path):
        atomic_write_bytes(path, piece.encode("utf-8"))
        return
    payload = ("\n" if tail and not tail.endswith(b"\n") else "") + piece
    intent = intent_path(path)
    atomic_write_json(intent, {"size": size, "tail": _tail_digest(tail), "piece": payload})
    _apply(path, size, payload.encode("utf-8"))
    intent.unlink()
    fsync_dir(path.parent)


__all__ = [
    "Item",
    "Listing",
    "append",
    "appendable",
    "count",
    "ends",
    "index_path",
    "intent_path",
    "is_log_file",
    "read",
    "recover",
    "split",
]
