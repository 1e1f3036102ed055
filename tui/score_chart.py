"""A bar chart of one figure per evaluation, oldest left, the highlighted record picked out.

Textual's Sparkline cannot mark one bar or label its axis, and the scoreboard needs both: the
user moves through the record table and sees which bar (and so which skill version) it is.
Bars use eighth blocks, so an 8-line chart resolves 64 levels.
"""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

_BLOCKS = " ▁▂▃▄▅▆▇█"
_AXIS = 8


def _label(value: float) -> str:
    if abs(value) >= 10_000:
        return f"{value / 1000:.0f}k"
    if abs(value) >= 100 or value == int(value):
        return f"{value:.0f}"
    return f"{value:.2f}"


class ScoreChart(Widget):
    """``values`` (None = no figure for that record) scaled between ``floor`` and the maximum."""

    DEFAULT_CSS = """
    ScoreChart { height: 8; background: $surface; }
    """

    highlighted: reactive[int | None] = reactive(None)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._values: list[float | None] = []
        self._ceiling: float | None = None
        self._empty = "No evaluations recorded yet."

    def set_values(
        self, values: list[float | None], *, ceiling: float | None = None, empty: str = ""
    ) -> None:
        """Plot ``values``; ``ceiling`` fixes the top (100 for scores, 1 for rates)."""
        self._values = list(values)
        self._ceiling = ceiling
        if empty:
            self._empty = empty
        self.refresh()

    @property
    def values(self) -> list[float | None]:
        return list(self._values)

    def render(self) -> Content:
        height = max(self.size.height, 1)
        width = max(self.size.width - _AXIS, 2)
        known = [v for v in self._values if v is not None]
        if not known:
            return Content.styled(self._empty, "$text-muted")
        top = self._ceiling if self._ceiling is not None else max(known)
        top = top if top > 0 else 1.0
        slots = width // 2
        start = max(0, len(self._values) - slots)
        if self.highlighted is not None and self.highlighted < start:
            start = self.highlighted
        shown = self._values[start : start + slots]
        levels = height * 8
        lines: list[Content] = []
        for row in range(height):
            floor_level = (height - 1 - row) * 8
            axis = _label(top) if row == 0 else (_label(0) if row == height - 1 else "")
            parts: list[tuple[str, str] | str] = [(f"{axis:>{_AXIS - 1}}│", "$text-muted")]
            for offset, value in enumerate(shown):
                index = start + offset
                style = "$chart-highlight" if index == self.highlighted else "$chart-bar"
                if value is None:
                    char = "·" if row == height - 1 else " "
                    parts.append((char + " ", "$text-muted"))
                    continue
                level = round(min(max(value / top, 0.0), 1.0) * levels)
                fill = min(max(level - floor_level, 0), 8)
                parts.append((_BLOCKS[fill] + " ", style))
            lines.append(Content.assemble(*parts))
        return Content("\n").join(lines)

    def watch_highlighted(self) -> None:
        self.refresh()
