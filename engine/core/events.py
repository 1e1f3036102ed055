"""Progress events shared by the engine, the CLI and the TUI.

Long work (an evaluation, an evolution round, an optimization) reports through a ``Reporter``:
the CLI renders the events as rich progress bars, the TUI as widgets, and ``SessionLog`` appends
them to ``sessions/<id>.jsonl`` so the other view sees the same story from the files.
"""

from __future__ import annotations

import datetime as dt
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.core.fsutil import append_jsonl, append_jsonl_many

EventKind = Literal[
    "started",
    "progress",
    "case_finished",
    "gate_verdict",
    "candidate_queued",
    "published",
    "rolled_back",
    "message",
    "error",
    "finished",
]


def utc_now() -> str:
    """ISO-8601 UTC timestamp with seconds, the one time format of every file."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    """A sortable, collision-resistant id: ``<prefix>-YYYYmmdd-HHMMSS-<6 hex>``."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{prefix}-{stamp}-{secrets.token_hex(3)}"


@dataclass
class Event:
    kind: EventKind
    session_id: str
    data: dict[str, Any] = field(default_factory=dict)
    time: str = field(default_factory=utc_now)

    def to_record(self) -> dict[str, Any]:
        return {"time": self.time, "kind": self.kind, "session_id": self.session_id, **self.data}


Reporter = Callable[[Event], None]


def null_reporter(event: Event) -> None:
    """The reporter for callers that do not watch progress."""


class Cancelled(Exception):
    """Raised inside a job when its :class:`CancelToken` is set."""


class CancelToken:
    """Cooperative cancellation: jobs call :meth:`check` between units of work."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()


class SessionLog:
    """An append-only event log under ``sessions/`` that also forwards to a live reporter."""

    def __init__(
        self,
        sessions_dir: Path,
        kind: str,
        session_id: str | None = None,
        forward: Reporter = null_reporter,
    ) -> None:
        self.session_id = session_id or new_id(kind)
        self.kind = kind
        self.path = Path(sessions_dir) / f"{self.session_id}.jsonl"
        self._forward = forward
        self._lock = threading.Lock()

    def emit(self, kind: EventKind, **data: Any) -> Event:
        return self.emit_many([(kind, data)])[0]

    def emit_many(self, items: list[tuple[EventKind, dict[str, Any]]]) -> list[Event]:
        """Log several events with one append (one fsync), then forward them in order."""
        events = [
            Event(kind=kind, session_id=self.session_id, data={"session_kind": self.kind, **data})
            for kind, data in items
        ]
        with self._lock:
            append_jsonl_many(self.path, [event.to_record() for event in events])
        for event in events:
            self._forward(event)
        return events

    def __call__(self, event: Event) -> None:
        """Let a SessionLog itself serve as a Reporter for nested jobs."""
        with self._lock:
            append_jsonl(self.path, {**event.to_record(), "session_kind": self.kind})
        self._forward(event)
