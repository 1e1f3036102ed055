"""The small form every loop opens with: its options as text fields, checked before it starts.

A loop's launcher (:mod:`tui.loops`) names the fields and turns their text into the loop's typed
options; a value that does not read (``runs: expected a number ≥ 1, got 'x'``) is shown in the
form, which stays open, so nothing starts on a typo. ``ctrl+s`` (or enter in a field) starts,
escape closes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from engine.core.errors import SkillsmithError
from tui.dialogs import DIALOG_CSS
from tui.jobs import Job


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    default: str = ""
    hint: str = ""  # the placeholder: what an empty field means


class LoopForm(ModalScreen[Job | None]):
    """Fields for one loop's options; dismisses with the job to run, or None."""

    DEFAULT_CSS = (
        DIALOG_CSS.format(name="LoopForm")
        + """
    LoopForm .form-row { height: auto; align-horizontal: left; }
    LoopForm .form-row > Label { width: 22; padding-top: 1; }
    LoopForm .form-row > Input { width: 1fr; }
    LoopForm #form-error { color: $text-error; height: auto; }
    """
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "start", "Start", id="form_start"),
        Binding("escape", "close", "Close", id="form_close"),
    ]

    def __init__(
        self, title: str, body: str, fields: list[Field], make_job: Callable[[dict[str, str]], Job]
    ) -> None:
        super().__init__()
        self._title, self._body = title, body
        self.fields = fields
        self._make_job = make_job

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title, classes="dialog-title", markup=False)
            if self._body:
                yield Static(self._body, classes="dialog-body", markup=False)
            for field in self.fields:
                with Horizontal(classes="form-row"):
                    yield Label(field.label, markup=False)
                    yield Input(value=field.default, placeholder=field.hint, id=f"f-{field.name}")
            yield Static("", id="form-error", markup=False)
            yield Static("ctrl+s or enter starts · escape closes", classes="dialog-hint")
            with Horizontal():
                yield Button("Start (ctrl+s)", id="start", variant="primary", compact=True)
                yield Button("Close (esc)", id="close", compact=True)

    def on_mount(self) -> None:
        inputs = self.query(Input)
        (inputs.first() if inputs else self.query_one("#start", Button)).focus()

    def values(self) -> dict[str, str]:
        return {f.name: self.query_one(f"#f-{f.name}", Input).value.strip() for f in self.fields}

    def action_start(self) -> None:
        try:
            job = self._make_job(self.values())
        except (ValueError, SkillsmithError) as exc:
            self.query_one("#form-error", Static).update(str(exc))
            return
        self.dismiss(job)

    def action_close(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_start()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.action_start()
        else:
            self.dismiss(None)
