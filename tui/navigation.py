"""j/k/g/G everywhere: the navigation keys every list and scrolling pane of the workbench shares."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist, RowKey

# Binding ids shared by every list and pane, so one keymap entry remaps them all.
# The arrows and home/end do what the widgets already do; they are named here so that `?`
# says how to move in a list, not only the vim keys.
TABLE_BINDINGS: list[BindingType] = [
    Binding("down,j", "cursor_down", "Down", show=False, id="down"),
    Binding("up,k", "cursor_up", "Up", show=False, id="up"),
    Binding("home,g", "scroll_top", "First", show=False, id="top"),
    Binding("end,G", "scroll_bottom", "Last", show=False, id="bottom"),
]
SCROLL_BINDINGS: list[BindingType] = [
    Binding("down,j", "scroll_down", "Down", show=False, id="down"),
    Binding("up,k", "scroll_up", "Up", show=False, id="up"),
    Binding("home,g", "scroll_home", "First", show=False, id="top"),
    Binding("end,G", "scroll_end", "Last", show=False, id="bottom"),
]


class VimTable(DataTable[Any]):
    """Row-cursor table with vim navigation; the row key is the item's id."""

    BINDINGS: ClassVar[list[BindingType]] = TABLE_BINDINGS

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(
            id=id,
            classes=classes,
            cursor_type="row",
            zebra_stripes=True,
            cursor_foreground_priority="renderable",
        )
        self._drawn_widths: tuple[int, ...] = ()

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Measure as DataTable does, and report a change of column widths as a change.

        DataTable measures auto-width columns when idle, but its render caches are keyed by
        its update count, which that measuring leaves alone: a frame drawn after it could
        still show cells cut to the widths before (the labels' width on the first screen).
        """
        self._measure(new_rows)
        widths = (
            self._row_label_column_width,
            *(column.get_render_width(self) for column in self.ordered_columns),
        )
        if widths != self._drawn_widths:
            self._drawn_widths = widths
            self._update_count += 1
            self.refresh()

    def _measure(self, new_rows: Iterable[RowKey]) -> None:
        """Size the columns for ``new_rows`` and the table: DataTable's own measuring."""
        super()._update_dimensions(new_rows)

    @property
    def highlighted_key(self) -> str | None:
        """The key of the row under the cursor, or None for an empty table."""
        if self.row_count == 0:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value

    def move_to_key(self, key: str | None) -> None:
        """Put the cursor back on ``key`` after a reload, if that row still exists."""
        if key is None:
            return
        try:
            index = self.get_row_index(key)
        except RowDoesNotExist:
            return
        self.move_cursor(row=index, animate=False)


class ListsPane(Widget):
    """A pane made of several lists side by side: h / l move between them."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "sibling(1)", "Next list", show=False, id="next_list"),
        Binding("h", "sibling(-1)", "Previous list", show=False, id="previous_list"),
    ]

    def action_sibling(self, step: int) -> None:
        lists = [w for w in self.query("*") if w.focusable]
        if not lists:
            return
        focused = self.screen.focused
        index = lists.index(focused) if focused in lists else -step
        lists[(index + step) % len(lists)].focus()
