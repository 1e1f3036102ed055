"""Progress events shared by the engine, the CLI and the TUI.

Long work (an evaluation, an evolution round, an optimization) reports through a ``Reporter``:
the CLI renders the events as rich progress bars, the TUI as widgets, and ``SessionLog`` appends
them to ``sessions/<id>.jsonl`` so the other view sees the same story from the files.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.core.fsutil import append_jsonl, append_jsonl_many
from engine.core.printable import printable
from engine.core.stamps import new_id, utc_now
from engine.core.vault import redact, redact_tree

EventKind = Literal[
    "started",
    "progress",
    "case_finished",
    "item_finished",
    "gate_verdict",
    "candidate_queued",
    "published",
    "rolled_back",
    "message",
    "error",
    "finished",
]


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
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the token is cancelled (at once if it already is): how work
        that waits on its own event (a folder watch, a timer) stops promptly."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()


def _shown(text: str) -> str:
    return printable(redact(text))


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
        """Log several events with one append (one fsync), then forward them in order.

        Every string is redacted first (vault values, key shapes) and stripped of terminal
        control sequences: events quote transcripts, agent output and model replies, and
        neither the log nor a live view may show a secret or let agent text drive a terminal.
        """
        events = [
            Event(
                kind=kind,
                session_id=self.session_id,
                data=redact_tree({"session_kind": self.kind, **data}, _shown),
            )
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
            append_jsonl(self.path, redact_tree({**event.to_record(), "session_kind": self.kind}))
        self._forward(event)


# -- the typed view every renderer reads ---------------------------------------------------------
#
# Loops write events as flat records (the session log's file format). Renderers never read those
# dicts: they read one of the eight typed events below, built by :func:`read_event` — the one
# place that knows which keys each kind carries — so the CLI, the TUI's job bar and the Sessions
# pane tell the same story and a new loop only has to write the keys documented here.


@dataclass(frozen=True, kw_only=True)
class LoopEvent:
    session_id: str
    session_kind: str
    time: str


@dataclass(frozen=True, kw_only=True)
class Started(LoopEvent):
    """The loop opened its session; ``fields`` are its settings as the loop wrote them.

    An evaluation also says how many units it has (``total``) and how many a resumed run
    already finished (``done``), so a bar starts where the run stands.
    """

    fields: dict[str, Any]
    done: int | None = None
    total: int | None = None


@dataclass(frozen=True, kw_only=True)
class Progress(LoopEvent):
    """``done`` of ``total`` units of the loop's own measure (units, calls, rounds, queries)."""

    done: int
    total: int
    label: str


@dataclass(frozen=True, kw_only=True)
class Stage(LoopEvent):
    """The loop reached a named step; ``text`` is its one readable line (empty for a step that
    has none). ``source`` names the library a raw log line came from (GEPA's): those lines are
    the session log's, shown on the terminal only when asked for (``-v``)."""

    name: str
    text: str
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class ItemFinished(LoopEvent):
    """One unit of work ended: an evaluation unit (``case_id.run_index``, with its run) or a
    loop's own item (a review job) with its readable account in ``text``."""

    item: str
    status: str
    text: str = ""
    run_id: str | None = None
    case_id: str | None = None
    run_index: int | None = None
    variant: str | None = None


@dataclass(frozen=True, kw_only=True)
class VerdictReached(LoopEvent):
    """A decision with its grounds: a gate's verdict, a publication or a rollback."""

    subject: str
    verdict: str
    text: str


@dataclass(frozen=True, kw_only=True)
class CandidateQueued(LoopEvent):
    candidate: str
    text: str


@dataclass(frozen=True, kw_only=True)
class Finished(LoopEvent):
    """The session ended; ``headline`` is its result in one line (what the Sessions pane shows)."""

    status: str
    headline: str


@dataclass(frozen=True, kw_only=True)
class Failed(LoopEvent):
    message: str


AnyLoopEvent = (
    Started | Progress | Stage | ItemFinished | VerdictReached | CandidateQueued | Finished | Failed
)


def _text(data: dict[str, Any], *keys: str) -> str:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _score(value: Any) -> str:
    return "—" if not isinstance(value, int | float) else f"{value:.2f}"


def draft_line(drafted: int, earlier: int) -> str:
    """``kept`` counts the cases an earlier draft left, not how many new ones survived."""
    new = f"{drafted} new case{'' if drafted == 1 else 's'} written"
    if not earlier:
        return f"draft: {new}"
    kept = f"{earlier} case{'' if earlier == 1 else 's'} from an earlier draft kept"
    return f"draft: {kept}" + (f", {new}" if drafted else ", nothing new drafted")


def _stage_text(stage: str, data: dict[str, Any]) -> str:
    """The readable line of a Builder / Optimizer step (the other loops write ``text``)."""
    if stage == "draft" and isinstance(data.get("drafted"), list):
        return draft_line(len(data["drafted"]), len(data.get("kept") or []))
    if stage == "pilot" and "iteration" in data:
        return (
            f"pilot {data['iteration']}: score {_score(data.get('score'))} (predicted "
            f"{_score(data.get('predicted'))}, mean error {data.get('mean_abs_error')}), flagged "
            f"{len(data.get('flagged') or [])}, run {data.get('run_id')}"
        )
    if stage == "calibration":
        return f"calibration: {len(data.get('changes') or [])} changes"
    if stage in ("repair", "judge_rerequest", "proposal_rerequest"):
        return f"{stage}: {data.get('problem') or data.get('units') or data.get('cases')}"
    if stage == "formal_baseline":
        return f"Formal Baseline: {_score(data.get('score'))} (run {data.get('run_id')})"
    if stage == "resumed":
        return f"resuming at attempt {data.get('attempt')} ({data.get('at')})"
    return stage


def _verdict_text(kind: str, data: dict[str, Any]) -> tuple[str, str, str]:
    if kind == "gate_verdict":
        reasons = data.get("reasons") or []
        why = "; ".join(str(r) for r in reasons) if isinstance(reasons, list) else str(reasons)
        gate, verdict = _text(data, "gate"), _text(data, "verdict")
        return gate, verdict, f"{gate} {verdict}" + (f": {why}" if why else "")
    if "decision" in data:  # the agent Optimizer's published / rolled back attempt
        return (
            f"v{data.get('version')}",
            str(data["decision"]),
            f"{data['decision']}: {_score(data.get('score'))} vs "
            f"{_score(data.get('reference_score'))}, hypothesis held: "
            f"{data.get('hypothesis_held')}, version v{data.get('version')}",
        )
    skill = _text(data, "skill")
    if kind == "published":
        return skill, kind, f"published {skill} {data.get('version')} ({data.get('candidate')})"
    return (
        skill,
        kind,
        f"rolled back {skill} {data.get('frm')} → {data.get('to')}: {data.get('why', '')}",
    )


def read_event(event: Event) -> AnyLoopEvent:
    """The typed event behind a record of any loop (unknown kinds read as a stage)."""
    data = event.data
    base: dict[str, Any] = {
        "session_id": event.session_id,
        "session_kind": _text(data, "session_kind"),
        "time": event.time,
    }
    kind = event.kind
    done, total = data.get("done"), data.get("total")
    if kind == "started":
        fields = {k: v for k, v in data.items() if k != "session_kind"}
        todo = data.get("todo")
        if isinstance(total, int) and isinstance(todo, int):
            return Started(**base, fields=fields, done=total - todo, total=total)
        return Started(**base, fields=fields)
    if kind == "progress" and isinstance(done, int) and isinstance(total, int):
        return Progress(**base, done=min(done, total), total=total, label=_text(data, "label"))
    if kind == "case_finished":
        case_id, run_index = _text(data, "case_id"), data.get("run_index")
        index = run_index if isinstance(run_index, int) else None
        return ItemFinished(
            **base,
            item=f"{case_id}.{index if index is not None else 0}",
            status=_text(data, "pass_fail") or "?",
            run_id=_text(data, "run_id") or None,
            case_id=case_id or None,
            run_index=index,
            variant=_text(data, "variant") or None,
        )
    if kind == "item_finished":
        return ItemFinished(
            **base,
            item=_text(data, "item"),
            status=_text(data, "status") or "?",
            text=_text(data, "text"),
        )
    if kind in ("gate_verdict", "published", "rolled_back"):
        subject, verdict, text = _verdict_text(kind, data)
        return VerdictReached(**base, subject=subject, verdict=verdict, text=text)
    if kind == "candidate_queued":
        candidate = _text(data, "candidate", "id")
        what = _text(data, "summary", "reason", "skill")
        return CandidateQueued(
            **base, candidate=candidate, text=f"{candidate} queued" + (f": {what}" if what else "")
        )
    if kind == "finished":
        status = _text(data, "status") or "finished"
        return Finished(**base, status=status, headline=_text(data, "headline") or status)
    if kind == "error":
        return Failed(**base, message=_text(data, "message", "reason", "error") or "failed")
    name = _text(data, "stage", "label")
    text = _text(data, "text", "message") or _stage_text(name, data)
    return Stage(**base, name=name, text=text, source=_text(data, "source"))
