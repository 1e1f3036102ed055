"""Session event logs (evaluation, evolution, optimizer, builder, reviewer), live-tailed.

The left list holds every ``sessions/*.jsonl``; the right table the events of the highlighted
one. When the watcher reports that a log grew, only the new whole lines are read (from the byte
offset where the last read stopped), so tailing a long evaluation costs nothing per refresh.
Events that name a run and a case open that case's transcript with enter.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable
from textual.worker import get_current_worker

from engine.core.session_logs import SessionLogInfo, TailChunk, list_session_logs, read_tail
from engine.core.sessions import KINDS
from engine.core.workspace import Workspace
from tui.navigation import ListsPane, VimTable
from tui.report_key import REPORT_BINDING, write_report_of
from tui.skills_pane import human_size

KIND_STYLE = {
    "error": "bold $text-error",
    "gate_verdict": "$text-accent",
    "candidate_queued": "$text-warning",
    "published": "$text-success",
    "rolled_back": "$text-warning",
    "finished": "$text-success",
    "started": "$text-primary",
}
_HIDDEN_KEYS = {"time", "kind", "session_id", "session_kind", "case_id"}
_MAX_DETAIL = 160


def _short(value: Any) -> str:
    """A field's value in a few words: lists and mappings by their size, never a raw dump."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value[:3]) + (
            f" (+{len(value) - 3})" if len(value) > 3 else ""
        )
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in list(value.items())[:4])
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _line_of(kind: str, r: dict[str, Any]) -> str | None:
    """The readable line of the event kinds the engine writes (None: not one of them)."""
    get = r.get
    if kind == "progress" and "total" in r:
        done = get("done", get("completed", get("n", "?")))
        return f"{done}/{r['total']} {get('label') or get('message') or get('stage') or ''}".strip()
    if kind == "started" and "total" in r:
        again = (
            f", resuming at {r['total'] - get('todo', 0)}/{r['total']}" if get("resumed") else ""
        )
        return f"{get('benchmark', '')}: {r['total']} units{again}".strip()
    if kind == "started" and get("skill"):
        where = f" on {get('bench')}" if get("bench") else ""
        return f"{get('session_kind', 'session')} of {get('skill')}{where}, round {get('round', 1)}"
    if kind == "case_finished":
        fate = str(get("pass_fail", "?"))
        why = get("failure_kind") or get("invalid_reason")
        return f"{get('case_id')}.{get('run_index', 0)} {fate}" + (f" ({why})" if why else "")
    if kind == "gate_verdict":
        reasons = get("reasons") or []
        first = f" — {reasons[0]}" if isinstance(reasons, list) and reasons else ""
        return f"round {get('round', '?')}: {get('gate')} {get('verdict')}{first}"
    if kind == "candidate_queued":
        return f"{get('candidate') or get('id')} queued for approval ({get('skill', '')})"
    if kind == "published":
        return f"{get('skill', '')} {get('version', '')} published ({get('candidate', '')})"
    if kind == "rolled_back":
        return f"{get('skill')} {get('frm') or get('from')}→{get('to')}: {get('why', '')}"
    if kind == "finished":
        how = get("status") or get("stop_reason") or "finished"
        counts = f" · {_short(get('counts'))}" if get("counts") else ""
        return f"{how}{counts}"
    if kind == "error":
        return str(get("message") or get("error") or "")
    if kind == "message":
        return str(get("text") or get("message") or get("stage") or "")
    return None


def describe_event(record: dict[str, Any]) -> str:
    """One readable line for an event, per kind; unknown kinds as short key: value pairs."""
    kind = str(record.get("kind", ""))
    text = _line_of(kind, record)
    if text is None:
        text = "  ".join(
            f"{key}: {_short(value)}" for key, value in record.items() if key not in _HIDDEN_KEYS
        )
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


@dataclass
class _Tail:
    """Where the reading of the shown log stopped."""

    path: Path
    offset: int = 0
    next_line: int = 1


class SessionsPane(ListsPane, Horizontal):
    """Session list | events of the highlighted session."""

    DEFAULT_CSS = """
    SessionsPane > #session-list { width: 55%; }
    SessionsPane > #session-events { width: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [REPORT_BINDING]

    class OpenTranscript(Message):
        """The user asked to see the case transcript behind an event."""

        def __init__(
            self, run_id: str, case_id: str, run_index: int | None, variant: str | None
        ) -> None:
            super().__init__()
            self.run_id = run_id
            self.case_id = case_id
            self.run_index = run_index
            self.variant = variant

    class _Listed(Message):
        def __init__(self, logs: list[SessionLogInfo]) -> None:
            super().__init__()
            self.logs = logs

    class _Tailed(Message):
        def __init__(self, session_id: str, chunk: TailChunk, restart: bool) -> None:
            super().__init__()
            self.session_id = session_id
            self.chunk = chunk
            self.restart = restart

    def __init__(self, workspace: Workspace, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.workspace = workspace
        self._logs: dict[str, SessionLogInfo] = {}
        self._counts: dict[str, int] = {}
        self._tail: _Tail | None = None
        self._shown_id: str | None = None
        self._rows: dict[str, dict[str, Any]] = {}
        self.loaded = False

    def compose(self) -> ComposeResult:
        logs = VimTable(id="session-list")
        logs.add_column("session", key="id")
        logs.add_column("kind", key="kind")
        logs.add_column("state", key="state")
        logs.add_column("events", key="events")  # a count once read, else the log's size
        logs.add_column("result", key="headline")
        yield logs
        events = VimTable(id="session-events")
        events.add_column("time", key="time")
        events.add_column("event", key="kind", width=16)
        events.add_column("case", key="case")
        events.add_column("detail", key="detail")
        yield events

    @property
    def shown_session(self) -> str | None:
        return self._shown_id

    @property
    def events(self) -> list[dict[str, Any]]:
        return list(self._rows.values())

    def action_write_report(self) -> None:
        """The report of the highlighted session (H)."""
        key = self.query_one("#session-list", VimTable).highlighted_key
        write_report_of(self, self.workspace, key)

    # -- loading -------------------------------------------------------------------------------
    def reload(self) -> None:
        """Re-list the logs and tail the shown one (called on mount and by the watcher)."""
        self._list_logs()

    @work(thread=True, exclusive=True, group="sessions-list", exit_on_error=False)
    def _list_logs(self) -> None:
        logs = list_session_logs(self.workspace)
        if not get_current_worker().is_cancelled:
            self.post_message(self._Listed(logs))

    @on(_Listed)
    def _listed(self, message: _Listed) -> None:
        table = self.query_one("#session-list", VimTable)
        previous = table.highlighted_key
        self._logs = {info.session_id: info for info in message.logs}
        table.clear()
        for info in reversed(message.logs):  # newest first
            table.add_row(
                info.session_id,
                KINDS.get(info.kind, info.kind),
                info.state,
                # read events once the log was shown; its size until then, never a blank
                str(self._counts.get(info.session_id) or human_size(info.size)),
                info.headline,
                key=info.session_id,
            )
        table.move_to_key(previous)
        self.loaded = True
        selected = table.highlighted_key
        if selected is not None:
            self._follow(selected)

    def _follow(self, session_id: str) -> None:
        info = self._logs.get(session_id)
        if info is None:
            return
        if session_id != self._shown_id or self._tail is None:
            self._tail = _Tail(info.path)
            self._read_more(session_id, info.path, 0, 1, True)
        else:
            self._read_more(session_id, info.path, self._tail.offset, self._tail.next_line, False)

    @work(thread=True, exclusive=True, group="sessions-tail", exit_on_error=False)
    def _read_more(
        self, session_id: str, path: Path, offset: int, next_line: int, restart: bool
    ) -> None:
        chunk = read_tail(path, offset, next_line)
        if not get_current_worker().is_cancelled:
            self.post_message(self._Tailed(session_id, chunk, restart))

    @on(_Tailed)
    def _tailed(self, message: _Tailed) -> None:
        events = self.query_one("#session-events", VimTable)
        restarted = message.restart or (
            self._tail is not None and message.chunk.offset < self._tail.offset
        )
        if restarted:
            events.clear()
            self._rows = {}
        self._shown_id = message.session_id
        if self._tail is not None:
            self._tail.offset = message.chunk.offset
            self._tail.next_line = message.chunk.next_line
        follow = events.row_count == 0 or events.cursor_row >= events.row_count - 1
        for record in message.chunk.records:
            self._add_event(events, record)
        for line in message.chunk.bad_lines:
            events.add_row("", Content.styled("unreadable", "$text-error"), "", f"line {line}")
        count = len(self._rows)
        self._counts[message.session_id] = count
        listing = self.query_one("#session-list", VimTable)
        if message.session_id in listing.rows:
            listing.update_cell(message.session_id, "events", str(count))
        if follow and events.row_count and not restarted:
            events.move_cursor(row=events.row_count - 1, animate=False)

    def _add_event(self, table: VimTable, record: dict[str, Any]) -> None:
        key = f"e{len(self._rows)}"
        self._rows[key] = record
        kind = str(record.get("kind", record.get("type", "?")))
        table.add_row(
            str(record.get("time", ""))[11:19],
            Content.styled(kind, KIND_STYLE.get(kind, "")),
            str(record.get("case_id") or ""),
            describe_event(record),
            key=key,
        )

    def show_session(self, session_id: str) -> None:
        """Put the cursor on one session (an activity entry's link) and show its events."""
        table = self.query_one("#session-list", VimTable)
        table.move_to_key(session_id)
        table.focus()
        self._follow(session_id)

    # -- interaction ---------------------------------------------------------------------------
    @on(DataTable.RowHighlighted, "#session-list")
    def _session_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None and event.row_key.value != self._shown_id:
            self._follow(event.row_key.value)

    @on(DataTable.RowSelected, "#session-events")
    def _event_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        record = self._rows.get(event.row_key.value or "")
        if record is None:
            return
        # An evaluation's log is named after its run, so its events need not repeat the run id.
        run_id = record.get("run_id") or record.get("session_id")
        case_id = record.get("case_id")
        if isinstance(run_id, str) and isinstance(case_id, str):
            run_index = record.get("run_index")
            variant = record.get("variant")
            self.post_message(
                self.OpenTranscript(
                    run_id,
                    case_id,
                    run_index if isinstance(run_index, int) else None,
                    variant if isinstance(variant, str) else None,
                )
            )
        else:
            self.app.notify("This event names no run and case.", severity="warning", timeout=3)
