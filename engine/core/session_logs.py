"""Reading the session event logs (``sessions/<id>.jsonl``) while they are being written.

Session logs are appended to while they are watched, so these readers never fail on a line that
is still being written: they consume whole lines only, remember where they stopped and report
malformed lines instead of raising, because a viewer must keep showing the rest of the log. They
sit on the bottom floor, beside the writer (engine.core.events), because the session registry
(engine.core.sessions) reads the logs as much as the faces do.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.workspace import Workspace

SESSION_SUFFIX = ".jsonl"


@dataclass(frozen=True)
class SessionLogInfo:
    """One ``sessions/<id>.jsonl`` event log."""

    session_id: str
    path: Path
    size: int
    kind: str
    """``session_kind`` of the first event (evaluation, evolve, optimize, …), "" if unknown."""
    state: str = "running"
    """running, or how the last event ended it: the ``finished`` status, failed."""
    headline: str = ""
    """The session's result in one line (its ``finished`` event's headline; a failure's
    message)."""


@dataclass
class TailChunk:
    """The whole lines appended to a JSONL file since ``offset``."""

    records: list[dict[str, Any]]
    offset: int
    bad_lines: list[int] = field(default_factory=list)
    """1-based line numbers (within the whole file) that were not JSON objects."""
    next_line: int = 1


def list_session_logs(ws: Workspace) -> list[SessionLogInfo]:
    """Every event log under ``sessions/``, oldest first (ids start with a sortable stamp)."""
    logs: list[SessionLogInfo] = []
    try:
        entries = list(os.scandir(ws.sessions_dir))
    except FileNotFoundError:
        return []
    for entry in entries:
        if not entry.name.endswith(SESSION_SUFFIX) or entry.name.startswith("."):
            continue
        try:
            stat = entry.stat()
        except FileNotFoundError:
            continue
        session_id = entry.name[: -len(SESSION_SUFFIX)]
        path = Path(entry.path)
        identity = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
        known = _described.get(entry.path)
        if known is None or known[0] != identity:
            state, headline = _ending(path, stat.st_size)
            known = (identity, _first_kind(path), state, headline)
            _described[entry.path] = known
        _, kind, state, headline = known
        logs.append(SessionLogInfo(session_id, path, stat.st_size, kind, state, headline))
    logs.sort(key=lambda info: _sort_key(info.session_id))
    return logs


# What each log's first and last lines said, by path, with the size, mtime and inode they were
# read at: a live view lists the logs on every change, and only the logs that grew are re-read.
_described: dict[str, tuple[tuple[int, int, int], str, str, str]] = {}


def _first_kind(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            first = fh.readline()
    except OSError:
        return ""
    try:
        record = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ""
    kind = record.get("session_kind") if isinstance(record, dict) else None
    return kind if isinstance(kind, str) else ""


_ENDING_BYTES = 16384  # a finished event, with its figures, fits; the log may be megabytes


def _ending(path: Path, size: int) -> tuple[str, str]:
    """(state, headline) from the log's last whole line: only its end is read, so listing
    every session costs one short read per log however long the logs grow."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, size - _ENDING_BYTES))
            lines = fh.read(_ENDING_BYTES).split(b"\n")
    except OSError:
        return "running", ""
    for line in reversed(lines[1:] if size > _ENDING_BYTES else lines):
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if not isinstance(record, dict):
            break
        if record.get("kind") == "finished":
            return str(record.get("status") or "finished"), str(record.get("headline") or "")
        if record.get("kind") == "error":
            return "failed", str(record.get("message") or "")
        break
    return "running", ""


def _sort_key(session_id: str) -> tuple[str, str]:
    """Order by the ``YYYYmmdd-HHMMSS`` stamp of :func:`engine.core.stamps.new_id`, then the id."""
    parts = session_id.split("-")
    stamp = next((f"{a}-{b}" for a, b in itertools.pairwise(parts) if _is_stamp(a, b)), "")
    return (stamp, session_id)


def _is_stamp(day: str, time: str) -> bool:
    return len(day) == 8 and day.isdigit() and len(time) == 6 and time.isdigit()


def read_tail(path: Path, offset: int = 0, next_line: int = 1) -> TailChunk:
    """Read the complete lines of ``path`` after byte ``offset``.

    A torn last line (no newline yet) is left for the next call; a file that shrank (replaced or
    truncated) is read again from the start.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return TailChunk([], 0, [], 1)
    if size < offset:
        offset, next_line = 0, 1
    with path.open("rb") as fh:
        fh.seek(offset)
        data = fh.read()
    end = data.rfind(b"\n")
    if end < 0:
        return TailChunk([], offset, [], next_line)
    records: list[dict[str, Any]] = []
    bad: list[int] = []
    line_no = next_line
    for raw in data[: end + 1].splitlines():
        if raw.strip():
            try:
                value = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                value = None
            if isinstance(value, dict):
                records.append(value)
            else:
                bad.append(line_no)
        line_no += 1
    return TailChunk(records, offset + end + 1, bad, line_no)
