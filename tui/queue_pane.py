"""The approval queue: every candidate with its gates and Δ score, a `/` filter and batch marks.

Open candidates (those still waiting for a decision) sort first, newest first, so the one the
user is most likely to act on is under the cursor when the workbench opens. Marks and the
filter survive reloads: the watcher reloads the queue whenever another process writes to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import count
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text, TextType
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import DataTable, Input
from textual.widgets.data_table import ColumnKey, RowKey

from tui.gates_pane import gate_summary
from tui.navigation import VimTable

OPEN_STATUSES = ("pending_approval", "pending_eval", "proposed")
DECIDED_STATUSES = ("approved", "published", "rejected", "dismissed", "superseded")

STATUS_STYLE = {
    "pending_approval": "bold $text-warning",
    "pending_eval": "$text-secondary",
    "proposed": "$text-primary",
    "approved": "$text-success",
    "published": "$text-success",
    "rejected": "$text-error",
    "dismissed": "$text-muted",
    "superseded": "$text-muted",
}


@dataclass(frozen=True)
class QueueEntry:
    """One row: the candidate as loaded plus its gate records (read with it, off the UI thread)."""

    candidate: Any
    gates: list[dict[str, Any]]
    behind: str | None = None  # stale: the version the skill has moved on to
    # Asked several times per row on every reload of a thousand rows: worked out once.
    id: str = field(init=False, compare=False, repr=False)
    is_open: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", str(self.candidate.id))
        object.__setattr__(self, "is_open", str(self.candidate.status) in OPEN_STATUSES)

    def haystack(self) -> str:
        c = self.candidate
        stale = "stale" if self.behind else ""
        fields = (c.id, c.skill, c.source, c.operation, c.status, stale, c.summary or "")
        return " ".join(str(f) for f in fields).lower()


def order_entries(entries: list[QueueEntry]) -> list[QueueEntry]:
    """Open candidates first; newest first within each group (ids break ties stably)."""
    newest = sorted(entries, key=lambda e: (str(e.candidate.created_at), e.id), reverse=True)
    return sorted(newest, key=lambda e: not e.is_open)


def matches(entry: QueueEntry, query: str) -> bool:
    """Every whitespace-separated term of the filter must occur in one of the row's fields."""
    haystack = entry.haystack()
    return all(term in haystack for term in query.lower().split())


def _delta(candidate: Any) -> Content:
    if candidate.delta_score is None:
        return Content.styled("unproven", "$gate-held") if candidate.unproven else Content("–")
    value = float(candidate.delta_score)
    style = "$text-success" if value > 0 else "$text-error" if value < 0 else ""
    return Content.styled(f"{value:+.3f}", style)


def _plain(value: object) -> Text:
    return Text(str(value), no_wrap=True, end="")


def _width(cell: object) -> int:
    """A cell's width as DataTable measures it: a Text's longest line, in terminal cells; 1 for
    Content, which offers Rich no measure (styled columns get fixed widths for that)."""
    if isinstance(cell, Text):
        return max((cell_len(line) for line in cell.plain.splitlines()), default=0)
    return 1


AFTER_PAINT_AT_THE_LATEST = 0.25  # seconds

FIRST_ROWS = 200  # rows a long queue's first fill adds at once: more than a screen shows
COLUMNS = ("mark", "id", "skill", "source", "op", "status", "gates", "delta", "summary")


class QueueTable(VimTable):
    """The candidate table; space marks are handled by the app (one binding id for remapping).

    ``after_paint`` runs work once the table's rows have been drawn: Textual's
    ``call_after_refresh`` may run before a frame whose widgets have not reported as dirty yet.

    Drawn cells are kept per row version: DataTable keys its cell cache on one counter that
    every added, updated or re-sorted row moves, so one new candidate re-rendered every visible
    cell of a thousand-row queue (most of a refresh's time on the UI thread). Here a cell is
    drawn again only when its own row changed or it is drawn differently (cursor, hover, width,
    style, the zebra stripe); a row that only moved keeps its drawing, given its new row index
    as the click target.
    """

    def __init__(self, *, id: str | None = None) -> None:
        # Set before DataTable's own set-up, whose watchers already clear the caches.
        # A RowKey hashes and compares as its str: either finds the row's version.
        self._row_versions: dict[RowKey | str, int] = {}
        self._next_version = count()
        self._drawn: LRUCache[tuple[object, ...], tuple[int, list[list[Segment]]]] = LRUCache(10000)
        super().__init__(id=id)
        self._after_paint: list[Callable[[], None]] = []
        self._paint_deadline: Timer | None = None

    # -- cells drawn per row version ------------------------------------------------------------
    def add_row(
        self,
        *cells: Any,
        height: int | None = 1,
        key: str | None = None,
        label: TextType | None = None,
    ) -> RowKey:
        row_key = super().add_row(*cells, height=height, key=key, label=label)
        self._row_versions[row_key] = next(self._next_version)
        return row_key

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: Any,
        *,
        update_width: bool = False,
    ) -> None:
        super().update_cell(row_key, column_key, value, update_width=update_width)
        self._row_versions[row_key] = next(self._next_version)

    def remove_row(self, row_key: RowKey | str) -> None:
        super().remove_row(row_key)
        self._row_versions.pop(row_key, None)

    def _measure(self, new_rows: Iterable[RowKey]) -> None:
        """Widen the columns for new rows by their cells' lengths, then size the table.

        DataTable measures every cell of every new row through Rich: seconds for a queue of
        thousands, most of the time to fill it. The queue's cells are Text, whose width is its
        longest line's cell length, and Content, which Rich cannot measure; no row has a label
        or an automatic height, so the rest of DataTable's work here does not apply (a test
        holds the widths equal).
        """
        columns = self.ordered_columns
        widest = [column.content_width for column in columns]
        for row_key in new_rows:
            cells = self._data.get(row_key)
            if cells is None:  # removed before the idle that sizes it
                continue
            for at, column in enumerate(columns):
                width = _width(cells.get(column.key))
                if width > widest[at]:
                    widest[at] = width
        for column, width in zip(columns, widest, strict=True):
            column.content_width = width
        header_height = self.header_height if self.show_header else 0
        self.virtual_size = Size(
            sum(column.get_render_width(self) for column in columns) + self._row_label_column_width,
            self._total_row_height + header_height,
        )

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._drawn.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._drawn.clear()

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        if row_index < 0 or column_index < 0:  # the header and row labels: as DataTable draws
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        key = (
            row_key,
            self._row_versions.get(row_key) if row_key is not None else None,
            column_index,
            base_style,  # holds the zebra stripe of the row's index
            width,
            cursor,
            hover,
            row_index < self.fixed_rows,
            self._show_hover_cursor,
            self._pseudo_class_state,
        )
        drawn = self._drawn.get(key)
        if drawn is None:
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        else:
            drawn_at, lines = drawn
            if drawn_at == row_index:
                return lines
            # The row moved: its segments' meta (what a click selects) names the new index.
            target = Style.from_meta({"row": row_index, "column": column_index})
            lines = [list(Segment.apply_style(line, post_style=target)) for line in lines]
        self._drawn.set(key, (row_index, lines))
        return lines

    @property
    def paint_pending(self) -> bool:
        """Work is waiting for the table's next frame."""
        return bool(self._after_paint)

    def after_paint(self, callback: Callable[[], None]) -> None:
        if self.size.height == 0 or not self.screen.is_current:
            # Not drawn now (a tiny terminal, or a dialog on top): the work need not wait.
            self.call_later(callback)
            return
        self._after_paint.append(callback)
        self.refresh()
        # A dialog pushed before the next frame keeps the table from being drawn: then the
        # work runs anyway, a moment later. One deadline, from the newest request: an older
        # one left running would run this work before its frame.
        if self._paint_deadline is not None:
            self._paint_deadline.stop()
        self._paint_deadline = self.set_timer(AFTER_PAINT_AT_THE_LATEST, self._run_after_paint)

    def _run_after_paint(self) -> None:
        if self._paint_deadline is not None:
            self._paint_deadline.stop()
            self._paint_deadline = None
        callbacks, self._after_paint = self._after_paint, []
        for callback in callbacks:
            self.call_later(callback)

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        if self._after_paint:
            self._run_after_paint()  # the callbacks run after this frame is out
        return lines


class QueuePane(Vertical):
    """Filter input over the candidate table."""

    DEFAULT_CSS = """
    QueuePane > Input { display: none; height: 1; border: none; padding: 0 1; }
    QueuePane.-filtering > Input { display: block; }
    QueuePane > QueueTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear_filter", "Clear filter", show=False, id="clear_filter"),
    ]

    class Highlighted(Message):
        """The candidate under the cursor changed (or its content did)."""

        def __init__(self, entry: QueueEntry | None) -> None:
            super().__init__()
            self.entry = entry

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._entries: list[QueueEntry] = []
        self._by_id: dict[str, QueueEntry] = {}
        self._shown: list[QueueEntry] = []
        self._unfilled: list[QueueEntry] = []  # the end of ``_shown``, not in the table yet
        self.marked: set[str] = set()
        self.query_text = ""
        self.loaded = False

    def compose(self) -> ComposeResult:
        # Disabled until `/`: a hidden input must never catch the keys meant for the list.
        yield Input(
            placeholder="filter: words that must all appear (esc clears)",
            id="filter",
            disabled=True,
        )
        table = QueueTable(id="queue")
        table.add_column(" ", key="mark", width=1)
        table.add_column("id", key="id")
        table.add_column("skill", key="skill")
        table.add_column("source", key="source")
        table.add_column("op", key="op")
        # Styled cells are not measured by DataTable: their columns get fixed widths.
        table.add_column("status", key="status", width=16)
        table.add_column("gates", key="gates", width=6)
        table.add_column("Δ score", key="delta", width=8)
        table.add_column("summary", key="summary")
        yield table

    @property
    def table(self) -> QueueTable:
        return self.query_one(QueueTable)

    # -- data ----------------------------------------------------------------------------------
    @property
    def entries(self) -> list[QueueEntry]:
        return list(self._entries)

    def entry(self, candidate_id: str) -> QueueEntry | None:
        return self._by_id.get(candidate_id)

    @property
    def selected(self) -> QueueEntry | None:
        key = self.table.highlighted_key
        return self._by_id.get(key) if key is not None else None

    def marked_entries(self) -> list[QueueEntry]:
        return [e for e in self._shown if e.id in self.marked]

    def set_entries(self, entries: list[QueueEntry]) -> None:
        """Replace the rows, keeping the cursor, the marks and the filter."""
        previous = self.selected
        self._entries = order_entries(entries)
        self._by_id = {e.id: e for e in self._entries}
        self.marked &= {e.id for e in self._entries if e.is_open}
        self.loaded = True
        self._render_rows(previous)

    def _render_rows(self, previous: QueueEntry | None) -> None:
        """Bring the table to the filtered entries, touching only rows that changed.

        Rebuilding 500 rows on every watcher event would stall the UI; a new candidate is one
        added row and a decision one updated row (plus a re-sort when the order moved). A long
        queue's first fill adds the rows a screen shows at once and the rest after the frame
        that paints them: adding thousands of rows holds the UI for a good part of a second.
        """
        self._fill_rest()  # a fill under way completes before the table is compared
        table = self.table
        old = {e.id: e for e in self._shown}  # in the table's order
        query = self.query_text
        self._shown = [e for e in self._entries if matches(e, query)] if query else self._entries
        if not old and len(self._shown) > FIRST_ROWS:
            for entry in self._shown[:FIRST_ROWS]:
                table.add_row(*self._cells(entry), key=entry.id)
            self._unfilled = self._shown[FIRST_ROWS:]
            if previous is not None and any(e.id == previous.id for e in self._unfilled):
                self._fill_rest()  # the cursor stays on its candidate
            self.call_after_refresh(self._fill_rest)
            if previous is not None:
                table.move_to_key(previous.id)
            self._update_title()
            return
        wanted = {e.id for e in self._shown}
        for candidate_id in old.keys() - wanted:
            table.remove_row(candidate_id)
        order = [candidate_id for candidate_id in old if candidate_id in wanted]
        for entry in self._shown:
            known = old.get(entry.id)
            if known is None:
                table.add_row(*self._cells(entry), key=entry.id)
                order.append(entry.id)
            elif (
                known.candidate is entry.candidate
                and known.gates is entry.gates
                and known.behind == entry.behind
            ):
                continue  # the cache's own objects: an unchanged candidate costs no comparison
            elif known != entry:
                for column, value in zip(COLUMNS, self._cells(entry), strict=True):
                    table.update_cell(entry.id, column, value)
        shown = [e.id for e in self._shown]
        if order != shown:  # the rows kept, then those added: the table's order now
            position = {candidate_id: index for index, candidate_id in enumerate(shown)}
            table.sort("id", key=lambda cell: position[str(cell)])
        if previous is not None:
            table.move_to_key(previous.id)
        self._update_title()

    def _fill_rest(self) -> None:
        """Add the rows a first fill left for after its first frame."""
        unfilled, self._unfilled = self._unfilled, []
        for entry in unfilled:
            self.table.add_row(*self._cells(entry), key=entry.id)

    def _cells(self, entry: QueueEntry) -> tuple[Content | Text, ...]:
        """The row's cells. DataTable reads a plain str as Rich markup, and a summary is engine
        data (``[/tmp]`` in it must show, not break the row): plain cells are Rich Text, which
        the table also measures for its column widths."""
        c = entry.candidate
        return (
            self._mark_cell(entry.id),
            _plain(c.id),
            _plain(c.skill),
            _plain(c.source),
            _plain(c.operation),
            Content.styled(str(c.status), STATUS_STYLE.get(str(c.status), "")),
            gate_summary(entry.gates),
            _delta(c),
            self._summary(entry),
        )

    @staticmethod
    def _summary(entry: QueueEntry) -> Content | Text:
        """A stale candidate says so first, with what to do about it (approval is refused)."""
        summary = entry.candidate.summary or ""
        if entry.behind is None:
            return _plain(summary)
        stale = Content.styled(f"stale: skill at {entry.behind}, p re-proposes · ", "$text-warning")
        return stale + Content(summary)

    def _mark_cell(self, candidate_id: str) -> Content:
        return Content.styled("●", "bold $mark") if candidate_id in self.marked else Content(" ")

    def _update_title(self) -> None:
        open_count = sum(e.is_open for e in self._entries)
        title = f"1 Queue · {open_count} open / {len(self._entries)}"
        if self.marked:
            title += f" · {len(self.marked)} marked"
        self.border_title = title
        self.border_subtitle = f"filter: {self.query_text}" if self.query_text else ""

    # -- marks ---------------------------------------------------------------------------------
    def toggle_mark(self) -> bool:
        """Mark or unmark the highlighted open candidate; returns whether it is now marked."""
        entry = self.selected
        if entry is None or not entry.is_open:
            return False
        if entry.id in self.marked:
            self.marked.discard(entry.id)
        else:
            self.marked.add(entry.id)
        self.table.update_cell(entry.id, "mark", self._mark_cell(entry.id))
        self._update_title()
        if self.table.cursor_row < self.table.row_count - 1:
            self.table.action_cursor_down()
        return entry.id in self.marked

    def clear_marks(self) -> None:
        for candidate_id in list(self.marked):
            self.marked.discard(candidate_id)
            if candidate_id in self.table.rows:
                self.table.update_cell(candidate_id, "mark", self._mark_cell(candidate_id))
        self._update_title()

    # -- filter --------------------------------------------------------------------------------
    def start_filter(self) -> None:
        self.add_class("-filtering")
        filter_input = self.query_one(Input)
        filter_input.disabled = False
        filter_input.focus()

    def action_clear_filter(self) -> None:
        filter_input = self.query_one(Input)
        filter_input.value = ""
        self._apply_filter("")
        self._hide_filter()

    def _apply_filter(self, text: str) -> None:
        self.query_text = text.strip()
        self._render_rows(self.selected)
        self.post_message(self.Highlighted(self.selected))

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._apply_filter(event.value)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.query_text:
            self._hide_filter()
        else:
            self.table.focus()

    def _hide_filter(self) -> None:
        self.remove_class("-filtering")
        self.table.focus()
        self.query_one(Input).disabled = True

    @on(DataTable.RowHighlighted, "#queue")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        key = event.row_key.value
        self.post_message(self.Highlighted(self._by_id.get(key) if key else None))
