"""Every gate a candidate went through: verdict, figures, reasons and the cases behind them.

Gate records come from ``gates.json`` written by whichever engine loop made the candidate, so the
view shows every key it finds (unknown figures included) and escapes all text: reasons quote
model output and case ids, which must never be read as markup.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from tui.navigation import SCROLL_BINDINGS

VERDICT_STYLE = {
    "pass": "bold $gate-pass",
    "fail": "bold $gate-fail",
    "held": "bold $gate-held",
}
VERDICT_BADGE = {"pass": "✓ pass", "fail": "✗ fail", "held": "◆ held"}
_MAX_IDS = 40


def gate_summary(gates: Iterable[dict[str, Any]]) -> Content:
    """The queue's compact column: one coloured symbol per gate, in gate order."""
    parts: list[tuple[str, str] | str] = []
    for gate in gates:
        verdict = str(gate.get("verdict", "?"))
        symbol = VERDICT_BADGE.get(verdict, "? ")[0]
        parts.append((symbol, VERDICT_STYLE.get(verdict, "$text-muted")))
    return Content.assemble(*parts) if parts else Content("–")


def _format_figure(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _id_list(label: str, ids: Any) -> list[tuple[str, str] | str]:
    if not isinstance(ids, list) or not ids:
        return []
    shown = ", ".join(str(i) for i in ids[:_MAX_IDS])
    more = f" … (+{len(ids) - _MAX_IDS})" if len(ids) > _MAX_IDS else ""
    return [("    " + label + ": ", "$text-muted"), f"{shown}{more}\n"]


def render_gates(gates: list[dict[str, Any]]) -> Content:
    """The full gate report of one candidate."""
    if not gates:
        return Content.styled("No gate results recorded for this candidate.", "$text-muted")
    parts: list[tuple[str, str] | str] = []
    for gate in gates:
        verdict = str(gate.get("verdict", "?"))
        name = str(gate.get("gate", "?"))
        parts.append((f"{VERDICT_BADGE.get(verdict, verdict):<7}", VERDICT_STYLE.get(verdict, "")))
        parts.append((f" {name}\n", "bold"))
        figures = gate.get("figures")
        if isinstance(figures, dict) and isinstance(figures.get("line"), str):
            # a paired verdict: the change, its interval and the decision, read at a glance
            parts.append(("    change: ", "$text-muted"))
            parts.append((f"{figures['line']}\n", "bold"))
            figures = {k: v for k, v in figures.items() if k != "line"}
        if isinstance(figures, dict) and figures:
            shown = "  ".join(f"{k}={_format_figure(v)}" for k, v in figures.items())
            parts.append(("    figures: ", "$text-muted"))
            parts.append(f"{shown}\n")
        reasons = gate.get("reasons")
        if isinstance(reasons, list):
            for reason in reasons:
                parts.append(("    · ", "$text-muted"))
                parts.append(f"{reason}\n")
        parts += _id_list("cases", gate.get("case_ids"))
        parts += _id_list("fixed", gate.get("fixed"))
        parts += _id_list("newly broken", gate.get("newly_broken"))
    return Content.assemble(*parts)


class GatesPane(VerticalScroll, can_focus=True):
    """The gates tab; scrolls with j/k like the other panes."""

    DEFAULT_CSS = """
    GatesPane { background: $surface; padding: 0 1; }
    GatesPane > Static { width: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = SCROLL_BINDINGS

    def compose(self) -> ComposeResult:
        yield Static(Content.styled("No candidate selected.", "$text-muted"), id="gates-body")

    def show_gates(self, title: str, gates: list[dict[str, Any]]) -> None:
        header = Content.styled(f"{title}\n\n", "bold $text-primary")
        self.query_one("#gates-body", Static).update(header + render_gates(gates))
        self.scroll_home(animate=False)

    def show_message(self, message: str) -> None:
        self.query_one("#gates-body", Static).update(Content.styled(message, "$text-muted"))
