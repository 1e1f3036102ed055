"""The activity log: every outcome the workbench reported, kept after its toast is gone.

A toast vanishes in seconds; a rejected evolve round or a failed job must stay findable, with a
link to the session, candidate or run it concerns. The app records every notification here (it
overrides ``notify``), and jobs add their outcome with its link; the pane lists them newest first
and filters them by a search text. The log lives as long as the workbench runs — the files it
links to are the lasting record.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from tui.navigation import VimTable

Kind = Literal["result", "rejected", "error", "warning", "info"]
KIND_STYLE: dict[str, str] = {
    "result": "$gate-pass",
    "rejected": "bold $gate-fail",
    "error": "bold $text-error",
    "warning": "$text-warning",
    "info": "$text-muted",
}
WHAT_WIDTH = 72
LinkKind = Literal["session", "candidate", "run"]


@dataclass(frozen=True)
class Link:
    kind: LinkKind
    id: str

    def __str__(self) -> str:
        return f"{self.kind} {self.id}"


@dataclass(frozen=True)
class ActivityEntry:
    when: str
    kind: Kind
    text: str
    link: Link | None = None

    def matches(self, query: str) -> bool:
        haystack = f"{self.kind} {self.text} {self.link or ''}".lower()
        return all(word in haystack for word in query.lower().split())


class ActivityLog:
    """The entries, oldest first; listeners hear about each new one."""

    def __init__(self, clock: Callable[[], str] | None = None) -> None:
        self.entries: list[ActivityEntry] = []
        self._clock = clock or (lambda: dt.datetime.now().strftime("%H:%M:%S"))
        self._listeners: list[Callable[[ActivityEntry], None]] = []

    def add(self, kind: Kind, text: str, link: Link | None = None) -> ActivityEntry:
        entry = ActivityEntry(self._clock(), kind, text, link)
        self.entries.append(entry)
        for listener in self._listeners:
            listener(entry)
        return entry

    def listen(self, listener: Callable[[ActivityEntry], None]) -> None:
        self._listeners.append(listener)


class ActivityPane(Vertical):
    """Search box over a table of outcomes; enter follows the highlighted entry's link."""

    DEFAULT_CSS = """
    ActivityPane > #activity-search { height: 1; border: none; padding: 0 1; }
    ActivityPane > VimTable { height: 1fr; }
    ActivityPane > #activity-detail { height: auto; max-height: 6; padding: 0 1;
        background: $panel; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search the log", id="activity_search"),
    ]

    class Follow(Message):
        """Enter on an entry with a link: the app shows what it points at."""

        def __init__(self, link: Link) -> None:
            super().__init__()
            self.link = link

    def __init__(self, log: ActivityLog, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.activity = log
        self.query_text = ""
        self.shown: list[ActivityEntry] = []
        self.loaded = True

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder="/ search the activity (enter keeps, escape clears)", id="activity-search"
        )
        table = VimTable(id="activity-list")
        # Fixed widths: styled Content cells do not widen an auto-sized column as they arrive.
        table.add_column("when", key="when", width=8)
        table.add_column("kind", key="kind", width=8)
        table.add_column("what", key="text", width=WHAT_WIDTH)
        table.add_column("link", key="link")
        yield table
        yield Static("", id="activity-detail", markup=False)

    def on_mount(self) -> None:
        self.activity.listen(lambda _entry: self.refill())
        self.refill()

    @property
    def table(self) -> VimTable:
        return self.query_one("#activity-list", VimTable)

    def refill(self) -> None:
        table = self.table
        table.clear()
        self.shown = [e for e in reversed(self.activity.entries) if e.matches(self.query_text)]
        for index, entry in enumerate(self.shown):
            first_line = entry.text.splitlines()[0] if entry.text else ""
            table.add_row(
                entry.when,
                Content.styled(entry.kind, KIND_STYLE[entry.kind]),
                Content(first_line),
                Content(str(entry.link) if entry.link else "–"),
                key=str(index),
            )
        if not self.shown:
            empty = "no entry matches the search" if self.query_text else "nothing happened yet"
            self.query_one("#activity-detail", Static).update(empty)
        else:
            self._detail()

    def _detail(self) -> None:
        key = self.table.highlighted_key
        if key is None or int(key) >= len(self.shown):
            return
        entry = self.shown[int(key)]
        follow = f"\nenter: show {entry.link}" if entry.link else ""
        self.query_one("#activity-detail", Static).update(f"{entry.text}{follow}")

    def action_search(self) -> None:
        self.query_one("#activity-search", Input).focus()

    @on(Input.Changed, "#activity-search")
    def _search(self, event: Input.Changed) -> None:
        event.stop()
        self.query_text = event.value.strip()
        self.refill()

    @on(Input.Submitted, "#activity-search")
    def _search_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.table.focus()

    def on_key(self, event: events.Key) -> None:
        search = self.query_one("#activity-search", Input)
        if event.key == "escape" and search.has_focus:
            search.value = ""
            self.table.focus()

    @on(DataTable.RowHighlighted, "#activity-list")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._detail()

    @on(DataTable.RowSelected, "#activity-list")
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = self.table.highlighted_key
        if key is not None and int(key) < len(self.shown):
            link = self.shown[int(key)].link
            if link is not None:
                self.post_message(self.Follow(link))
