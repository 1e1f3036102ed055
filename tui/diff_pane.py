"""The candidate's patch, unified or side by side, coloured by the theme's diff variables.

A line-API widget (like Textual's Log): only visible lines are rendered, so a whole-skill
``create`` diff scrolls as smoothly as a three-line patch, and the colours are component
classes so a theme switch recolours it without re-parsing.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from tui.diff_model import DiffRow, SplitRow, changed_files, parse_patch, split_rows, stats
from tui.navigation import SCROLL_BINDINGS

DiffMode = Literal["unified", "split"]

_FULL_WIDTH = ("hunk", "file", "note")
_SIGNS = {"added": "+", "removed": "-", "context": " "}


class DiffView(ScrollView, can_focus=True):
    """Scrollable rendering of one unified diff."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "diff-view--added",
        "diff-view--removed",
        "diff-view--context",
        "diff-view--hunk",
        "diff-view--file",
        "diff-view--note",
        "diff-view--gutter",
        "diff-view--empty",
    }
    DEFAULT_CSS = """
    DiffView { background: $surface; }
    DiffView > .diff-view--added { background: $diff-added; color: $diff-added-text; }
    DiffView > .diff-view--removed { background: $diff-removed; color: $diff-removed-text; }
    DiffView > .diff-view--context { color: $foreground; }
    DiffView > .diff-view--hunk { color: $diff-hunk; text-style: bold; }
    DiffView > .diff-view--file { color: $text-primary; text-style: bold; }
    DiffView > .diff-view--note { color: $text-muted; text-style: italic; }
    DiffView > .diff-view--gutter { color: $diff-gutter; }
    DiffView > .diff-view--empty { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = SCROLL_BINDINGS

    mode: reactive[DiffMode] = reactive("unified")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._patch = ""
        self._rows: list[DiffRow] = []
        self._pairs: list[SplitRow] = []
        self._placeholder = "No candidate selected."
        self._gutter = 1

    @property
    def rows(self) -> list[DiffRow]:
        return self._rows

    def show_patch(self, patch: str) -> None:
        if patch == self._patch and self._rows:
            return  # a reload of the same text keeps the scroll position
        self._patch = patch
        self._rows = parse_patch(patch)
        self._pairs = split_rows(self._rows)
        numbers = [n for r in self._rows for n in (r.old_no, r.new_no) if n is not None]
        self._gutter = len(str(max(numbers, default=1)))
        self._placeholder = "The patch is empty." if not self._rows else ""
        self.scroll_to(0, 0, animate=False)
        self._update_virtual_size()

    def show_message(self, message: str) -> None:
        self._patch, self._rows, self._pairs = "", [], []
        self._placeholder = message
        self._update_virtual_size()

    def watch_mode(self) -> None:
        self._update_virtual_size()

    def on_resize(self) -> None:
        self._update_virtual_size()

    def _update_virtual_size(self) -> None:
        if self.mode == "split" or not self._rows:
            width = self.scrollable_content_region.width
            height = len(self._pairs) if self._rows else 1
        else:
            width = max(cell_len(r.text) for r in self._rows) + 2 * self._gutter + 4
            height = len(self._rows)
        self.virtual_size = Size(width, height)
        self.refresh()

    # -- rendering ---------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if not self._rows:
            if index == 0:
                style = base + self.get_component_rich_style("diff-view--empty")
                return Strip([Segment(f" {self._placeholder}", style)]).crop_extend(0, width, base)
            return Strip.blank(width, base)
        if self.mode == "split":
            if index >= len(self._pairs):
                return Strip.blank(width, base)
            return self._split_line(self._pairs[index], width).apply_offsets(0, index)
        if index >= len(self._rows):
            return Strip.blank(width, base)
        row = self._rows[index]
        strip = Strip(self._unified_segments(row), None)
        style = self._row_style(row)
        return strip.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, index)

    def _row_style(self, row: DiffRow) -> Style:
        return self.rich_style + self.get_component_rich_style(f"diff-view--{row.kind}")

    def _number(self, value: int | None) -> str:
        return str(value).rjust(self._gutter) if value is not None else " " * self._gutter

    def _unified_segments(self, row: DiffRow) -> list[Segment]:
        style = self._row_style(row)
        if row.kind in _FULL_WIDTH:
            return [Segment(row.text, style)]
        gutter = style + self.get_component_rich_style("diff-view--gutter", partial=True)
        numbers = f"{self._number(row.old_no)} {self._number(row.new_no)} "
        return [Segment(numbers, gutter), Segment(f"{_SIGNS[row.kind]} {row.text}", style)]

    def _side_segments(self, row: DiffRow | None, side: Literal["old", "new"]) -> Strip:
        if row is None:
            return Strip([Segment("", self.rich_style)])
        style = self._row_style(row)
        gutter = style + self.get_component_rich_style("diff-view--gutter", partial=True)
        number = row.old_no if side == "old" else row.new_no
        return Strip(
            [
                Segment(f"{self._number(number)} ", gutter),
                Segment(f"{_SIGNS[row.kind]} {row.text}", style),
            ]
        )

    def _split_line(self, pair: SplitRow, width: int) -> Strip:
        left, right = pair
        if left is not None and left is right and left.kind in _FULL_WIDTH:
            style = self._row_style(left)
            return Strip([Segment(left.text, style)]).crop_extend(0, width, style)
        half = max((width - 1) // 2, 1)
        left_style = self._row_style(left) if left is not None else self.rich_style
        right_style = self._row_style(right) if right is not None else self.rich_style
        separator = self.rich_style + self.get_component_rich_style("diff-view--gutter")
        left_strip = self._side_segments(left, "old").crop_extend(0, half, left_style)
        right_strip = self._side_segments(right, "new").crop_extend(
            0, max(width - half - 1, 0), right_style
        )
        return Strip.join([left_strip, Strip([Segment("│", separator)]), right_strip])


class DiffPane(Vertical):
    """The diff tab: a one-line header (candidate, skill, size, mode) over the diff itself."""

    DEFAULT_CSS = """
    DiffPane > #diff-header { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    DiffPane > DiffView { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._title = ""

    def compose(self) -> ComposeResult:
        yield Static("", id="diff-header", markup=False)
        yield DiffView(id="diff-view")

    @property
    def view(self) -> DiffView:
        return self.query_one(DiffView)

    def show_candidate(self, title: str, patch: str) -> None:
        self._title = title
        self.view.show_patch(patch)
        self._update_header()

    def show_message(self, message: str) -> None:
        self._title = ""
        self.view.show_message(message)
        self._update_header()

    def toggle_mode(self) -> DiffMode:
        view = self.view
        view.mode = "split" if view.mode == "unified" else "unified"
        self._update_header()
        return view.mode

    def _update_header(self) -> None:
        header = self.query_one("#diff-header", Static)
        if not self._title:
            header.update("")
            return
        counts = stats(self.view.rows)
        mode = "side by side" if self.view.mode == "split" else "unified"
        files = changed_files(self.view.rows)
        where = f" · {len(files)} files: {', '.join(files)}" if len(files) > 1 else ""
        header.update(
            f"{self._title}{where} · +{counts.added} −{counts.removed} · {mode} (d switches)"
        )
