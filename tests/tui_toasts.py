"""Every notification a Pilot-driven app shows, kept for the test to read.

Textual drops a toast from ``App._notifications`` once its timeout passes; on a loaded machine
a test can reach its assertion after that, and read nothing. This plugin records each
notification as the app receives it, so ``tests.tui_pilot.toasts`` sees all of them.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App
from textual.notifications import Notify

SHOWN = "_shown_toasts"


@pytest.fixture(autouse=True)
def shown_toasts(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = App._on_notify

    def record(self: App[Any], event: Notify) -> None:
        self.__dict__.setdefault(SHOWN, []).append(str(event.notification.message))
        shown(self, event)

    monkeypatch.setattr(App, "_on_notify", record)
