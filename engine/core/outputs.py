"""What an agent leaves in its run folder: the outputs a run is judged by.

Real skills are judged by the files they produce (a report, a patched source file, a filled
spreadsheet), not only by the answer text, so each unit's outputs are kept under
``runs/<id>/outputs/<unit>/`` and the checks and the judge read them from there. Outputs are
everything in the room outside what the harness put there (PROMPT.md, AGENTS.md, the skills,
the answer file, HOME and TMPDIR) and outside the statement's own inputs left unchanged; an
input the agent edited is an output.

The room is the agent's: every entry is looked at with ``lstat`` and opened with
``O_NOFOLLOW``, so a link is kept *as a link* (its target text, never its target's bytes), and
fifos, sockets and devices are named, never opened. What is kept is capped in count and bytes
(the caps go into the row with whatever they left out), and text is redacted like every other
thing stored from a run.
"""

from __future__ import annotations

import mimetypes
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.core.vault import MASK, redact

MAX_FILES = 200  # entries kept per unit (files and links)
MAX_FILE_BYTES = 2_000_000  # a bigger file is named with its size, not kept
MAX_TOTAL_BYTES = 10_000_000  # bytes kept per unit
_SCAN_LIMIT = 10 * MAX_FILES  # entries looked at before the walk stops (a room of a million files)
_TEXT_SNIFF = 8192

EntryKind = Literal["file", "link", "other"]


@dataclass(frozen=True)
class OutputEntry:
    """One entry the agent left; ``data`` is None for a link, a special file or an entry the
    caps did not keep."""

    path: str  # below the room, with "/"
    kind: EntryKind
    size: int
    data: bytes | None = None
    target: str | None = None  # a link's target, as the agent wrote it
    mode: int = 0o644
    note: str | None = None  # why the bytes were not kept

    @property
    def text(self) -> str | None:
        """The content as text, when it is UTF-8 without NUL bytes (None for a binary)."""
        if self.data is None or b"\0" in self.data[:_TEXT_SNIFF]:
            return None
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    @property
    def media_type(self) -> str:
        guessed = mimetypes.guess_type(self.path)[0]
        if guessed:
            return guessed
        return "text/plain" if self.text is not None else "application/octet-stream"

    def record(self) -> dict[str, Any]:
        row: dict[str, Any] = {"path": self.path, "kind": self.kind, "size": self.size}
        if self.kind == "file":
            row["type"] = self.media_type
        if self.target is not None:
            row["target"] = self.target
        if self.note is not None:
            row["note"] = self.note
        return row


@dataclass(frozen=True)
class Outputs:
    """A unit's outputs as kept (see the module doc); ``left_out`` says what the caps dropped."""

    entries: tuple[OutputEntry, ...] = ()
    left_out: str | None = None
    caps: dict[str, int] = field(
        default_factory=lambda: {
            "max_files": MAX_FILES,
            "max_file_bytes": MAX_FILE_BYTES,
            "max_total_bytes": MAX_TOTAL_BYTES,
        }
    )

    def get(self, path: str) -> OutputEntry | None:
        wanted = Path(path).as_posix().removeprefix("./")
        return next((e for e in self.entries if e.path == wanted), None)

    def record(self, folder: str) -> dict[str, Any]:
        """The row's ``outputs`` field: where they are kept, what, and under which caps."""
        return {
            "dir": folder,
            "entries": [e.record() for e in self.entries],
            "left_out": self.left_out,
            "caps": self.caps,
        }

    def write(self, folder: Path) -> None:
        """Materialise the kept outputs in ``folder`` (which must not exist): files with their
        kept bytes and mode, links as links; nothing is read from anywhere else."""
        folder.mkdir(parents=True)
        for entry in self.entries:
            path = folder / entry.path
            path.parent.mkdir(parents=True, exist_ok=True)
            if entry.kind == "link" and entry.target is not None:
                os.symlink(entry.target, path)
            elif entry.kind == "file" and entry.data is not None:
                path.write_bytes(entry.data)
                path.chmod(entry.mode & 0o755)


def keep(outputs: Outputs, folder: Path) -> None:
    """Store ``outputs`` as ``folder``, replacing what a rerun of the unit left there; the new
    copy is complete before it takes the name."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        outputs.write(staging / "kept")
        if folder.is_symlink() or folder.exists():
            shutil.rmtree(folder)
        os.replace(staging / "kept", folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def collect(
    room: Path,
    statement_dir: Path,
    *,
    skip: Iterable[str],
    secrets: Iterable[str] = (),
    project: Path | None = None,
) -> Outputs:
    """The outputs the agent left in ``room``; ``skip`` are the top-level names the harness
    wrote there, ``secrets`` values masked in what is kept (besides the vault's). ``project``
    is the project copy the room was filled with under the statement: its files the agent left
    as they were are inputs too, not outputs."""
    hidden = set(skip)
    masks = tuple(s for s in secrets if s)
    entries: list[OutputEntry] = []
    kept_bytes = 0
    left: list[str] = []
    scanned = 0
    pending: list[str] = [""]
    while pending:
        prefix = pending.pop()
        try:
            names = sorted(os.listdir(room / prefix) if prefix else os.listdir(room))
        except OSError:
            continue
        for name in names:
            rel = f"{prefix}/{name}" if prefix else name
            if not prefix and name in hidden:
                continue
            scanned += 1
            if scanned > _SCAN_LIMIT:
                left.append(f"the walk stopped after {_SCAN_LIMIT} entries")
                pending.clear()
                break
            try:
                info = os.lstat(room / rel)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                pending.append(rel)
                continue
            source = statement_dir / rel
            if project is not None and not os.path.lexists(source):
                source = project / rel
            if _unchanged_input(room / rel, source, info):
                continue
            if len(entries) >= MAX_FILES:
                left.append(f"{rel} (over {MAX_FILES} entries)")
                continue
            entry = _entry(room / rel, rel, info, MAX_TOTAL_BYTES - kept_bytes, masks)
            kept_bytes += len(entry.data or b"")
            entries.append(entry)
    left_out = None
    if left:
        left_out = f"{len(left)} not kept: " + "; ".join(left[:5])
    return Outputs(tuple(sorted(entries, key=lambda e: e.path)), left_out)


def _entry(
    path: Path, rel: str, info: os.stat_result, room_left: int, masks: tuple[str, ...]
) -> OutputEntry:
    if stat.S_ISLNK(info.st_mode):
        return OutputEntry(rel, "link", info.st_size, target=os.readlink(path))
    if not stat.S_ISREG(info.st_mode):
        return OutputEntry(rel, "other", 0, note="not a regular file; not opened")
    mode = stat.S_IMODE(info.st_mode)
    if info.st_size > MAX_FILE_BYTES:
        note = f"over {MAX_FILE_BYTES} bytes; not kept"
        return OutputEntry(rel, "file", info.st_size, mode=mode, note=note)
    if info.st_size > room_left:
        note = f"over the {MAX_TOTAL_BYTES} bytes kept per unit; not kept"
        return OutputEntry(rel, "file", info.st_size, mode=mode, note=note)
    data = _read_nofollow(path, MAX_FILE_BYTES)
    if data is None:
        return OutputEntry(rel, "other", info.st_size, note="changed while it was read")
    return OutputEntry(rel, "file", len(data), data=_masked(data, masks), mode=mode)


def _read_nofollow(path: Path, limit: int) -> bytes | None:
    """The file's bytes, never through a link (one swapped in after the lstat is refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)[:limit]
    finally:
        os.close(fd)


def _masked(data: bytes, masks: tuple[str, ...]) -> bytes:
    """Secrets out of what is kept: the agent's own values wherever they are, and text through
    the vault's redaction as well (known values, key-shaped strings)."""
    for value in sorted(masks, key=len, reverse=True):
        data = data.replace(value.encode("utf-8"), MASK.encode())
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    return redact(text).encode("utf-8")


def _unchanged_input(path: Path, source: Path, info: os.stat_result) -> bool:
    """Whether ``path`` is an input exactly as the room got it (not an output)."""
    if stat.S_ISLNK(info.st_mode):  # a project's own link, pointing where it pointed
        try:
            return source.is_symlink() and os.readlink(source) == os.readlink(path)
        except OSError:
            return False
    if not stat.S_ISREG(info.st_mode):
        return False
    try:
        if source.is_symlink() or not source.is_file() or source.stat().st_size != info.st_size:
            return False
        got = _read_nofollow(path, info.st_size + 1)
        return got is not None and got == source.read_bytes()
    except OSError:
        return False
