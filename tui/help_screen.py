"""`?`: every key of the workbench, grouped by where it works, with the user's keymap applied."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingsMap, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static


@dataclass(frozen=True)
class KeyGroup:
    title: str
    bindings: list[BindingType]


def key_rows(
    groups: list[KeyGroup], keymap: Mapping[str, str]
) -> list[tuple[str, list[tuple[str, str]]]]:
    """(group title, [(keys, description)]) with keymap overrides; one row per binding id."""
    rows: list[tuple[str, list[tuple[str, str]]]] = []
    for group in groups:
        bindings = BindingsMap(group.bindings)
        if keymap:
            bindings.apply_keymap(dict(keymap))
        seen: dict[str, tuple[list[str], str]] = {}
        for key, found in bindings.key_to_bindings.items():
            for binding in found:
                ident = binding.id or f"{binding.action}:{binding.description}"
                keys, _ = seen.setdefault(ident, ([], binding.description or binding.action))
                keys.append(key)
        rows.append(
            (
                group.title,
                [(", ".join(_display(k) for k in keys), desc) for keys, desc in seen.values()],
            )
        )
    return rows


_DISPLAY = {
    "question_mark": "?",
    "slash": "/",
    "space": "space",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "escape": "esc",
}


def _display(key: str) -> str:
    return _DISPLAY.get(key, key)


class HelpScreen(ModalScreen[None]):
    """The key map; any of escape, ?, q closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 84; max-width: 95%; height: 90%;
        border: thick $primary; background: $panel; padding: 0 1;
    }
    HelpScreen #help-title { text-style: bold; padding: 0 1; width: 1fr; }
    HelpScreen VerticalScroll { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q,f1", "dismiss", "Close", id="help_close"),
    ]

    def __init__(self, groups: list[KeyGroup], keymap: Mapping[str, str]) -> None:
        super().__init__()
        self._groups = groups
        self._keymap = keymap

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Keys · esc closes · ctrl+p runs any action by name", id="help-title")
            with VerticalScroll():
                yield Static(self._render_keys(), id="help-body")

    def _render_keys(self) -> Content:
        parts: list[tuple[str, str] | str] = []
        for title, rows in key_rows(self._groups, self._keymap):
            parts.append((f"{title}\n", "bold $text-primary"))
            for keys, description in rows:
                parts.append((f"  {keys:<22}", "bold $text-accent"))
                parts.append(f"{description}\n")
            parts.append("\n")
        return Content.assemble(*parts)
