"""The workbench's modal dialogs: confirm, ask for a reason, show an error.

Destructive confirmations open with "No" focused, so a reflexive enter never restores over the
user's work; all texts are shown without markup because they quote ids, paths and engine errors.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

DIALOG_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{
    width: 72; max-width: 90%; height: auto; max-height: 90%;
    border: thick $primary; background: $panel; padding: 1 2;
}}
{name}.-danger > Vertical {{ border: thick $error; }}
{name} .dialog-title {{ text-style: bold; margin-bottom: 1; }}
{name} .dialog-body {{ margin-bottom: 1; }}
{name} Horizontal {{ height: auto; align-horizontal: right; }}
{name} Button {{ margin-left: 2; }}
"""


class ConfirmScreen(ModalScreen[bool]):
    """Yes / No; ``y`` and ``n`` answer directly, escape is No."""

    DEFAULT_CSS = DIALOG_CSS.format(name="ConfirmScreen")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm_yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm_no"),
        Binding("left,h", "app.focus_previous", "Previous button", show=False),
        Binding("right,l", "app.focus_next", "Next button", show=False),
    ]

    def __init__(
        self,
        title: str,
        body: str,
        *,
        yes: str = "Yes",
        no: str = "No",
        danger: bool = False,
        focus_yes: bool = False,
    ) -> None:
        super().__init__(classes="-danger" if danger else None)
        self._title, self._body = title, body
        self._yes, self._no = yes, no
        self._focus_yes = focus_yes

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title, classes="dialog-title", markup=False)
            yield Static(self._body, classes="dialog-body", markup=False)
            with Horizontal():
                yield Button(f"{self._yes} (y)", id="yes", variant="error", compact=True)
                yield Button(f"{self._no} (n)", id="no", variant="primary", compact=True)

    def on_mount(self) -> None:
        self.query_one("#yes" if self._focus_yes else "#no", Button).focus()

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class ReasonScreen(ModalScreen[str | None]):
    """Ask why (a rejection's reason goes to the taboo list); escape cancels."""

    DEFAULT_CSS = DIALOG_CSS.format(name="ReasonScreen")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="reason_cancel"),
    ]

    def __init__(self, title: str, body: str, placeholder: str = "reason") -> None:
        super().__init__()
        self._title, self._body, self._placeholder = title, body, placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title, classes="dialog-title", markup=False)
            yield Static(self._body, classes="dialog-body", markup=False)
            yield Input(placeholder=self._placeholder, id="reason")
            yield Static("enter submits · escape cancels", classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        reason = event.value.strip()
        if not reason:
            self.notify("Say why: the reason is kept with the taboo entry.", severity="warning")
            return
        self.dismiss(reason)


class ErrorScreen(ModalScreen[None]):
    """A job or an action failed: the one-line engine error (or a crash summary)."""

    DEFAULT_CSS = (
        DIALOG_CSS.format(name="ErrorScreen")
        + """
    ErrorScreen > Vertical { border: thick $error; }
    """
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q", "close", "Close", id="error_close"),
    ]

    def __init__(self, title: str, message: str) -> None:
        super().__init__()
        self._title, self._message = title, message

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title, classes="dialog-title", markup=False)
            yield Static(self._message, classes="dialog-body", markup=False)
            with Horizontal():
                yield Button("Close", id="close", variant="primary", compact=True)

    def on_mount(self) -> None:
        self.query_one(Button).focus()

    def action_close(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self) -> None:
        self.dismiss(None)
