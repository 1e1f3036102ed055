"""Helpers for driving the workbench with Textual's Pilot.

``settle`` waits until every loader and writer worker has finished and its result message has
been handled, so a test asserts on what the user would see (and on the files those workers
wrote), never on a half-finished refresh. ``user_config_home`` keeps theme choices out of the
real home folder.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.worker import WorkerState

SIZE = (120, 40)
BACKGROUND_GROUPS = {"watch"}


@pytest.fixture(autouse=True)
def user_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "xdg-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    yield home


def _busy(pilot: Pilot[None]) -> bool:
    # The workbench starts its readers after a frame is out (call_after_refresh): callbacks
    # still waiting for that frame are work not yet started...
    if any(screen._callbacks for screen in pilot.app.screen_stack):
        return True
    # ...and so does the queue, for the work that follows the frame showing its rows.
    from tui.queue_pane import QueueTable

    table = pilot.app.query_one_optional(QueueTable)
    if table is not None and table.paint_pending:
        return True
    return any(
        worker.state in (WorkerState.PENDING, WorkerState.RUNNING)
        and worker.group not in BACKGROUND_GROUPS
        for worker in pilot.app.workers
    )


async def settle(pilot: Pilot[None], timeout: float = 30.0) -> None:
    """Wait for all foreground workers and the messages they posted."""
    deadline = time.monotonic() + timeout
    quiet_rounds = 0
    while quiet_rounds < 3:
        if time.monotonic() > deadline:
            raise AssertionError("the workbench did not settle: a worker kept running")
        await pilot.pause()
        if _busy(pilot):
            quiet_rounds = 0
            await asyncio.sleep(0.02)
        else:
            quiet_rounds += 1


async def wait_until(
    pilot: Pilot[None], condition: Callable[[], bool], timeout: float = 20.0, what: str = ""
) -> None:
    """Poll ``condition`` while the app keeps running (for work done by other processes)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await pilot.pause(0.05)


def toasts(pilot: Pilot[None]) -> list[str]:
    """The notifications shown so far, expired ones included (tests/tui_toasts.py keeps them)."""
    from tests.tui_toasts import SHOWN

    return list(pilot.app.__dict__.get(SHOWN, []))


async def confirm(pilot: Pilot[None], key: str, **fields: str) -> None:
    """Press a key that asks first (``b``; a loop's key opens its form), check it asked, and
    answer yes (a form: fill in ``fields`` over their defaults and start)."""
    from textual.widgets import Input

    from tui.dialogs import ConfirmScreen
    from tui.loop_form import LoopForm

    await pilot.press(key)
    await settle(pilot)
    screen = pilot.app.screen
    if isinstance(screen, LoopForm):
        for name, value in fields.items():
            screen.query_one(f"#f-{name}", Input).value = value
        await pilot.press("ctrl+s")
    else:
        assert isinstance(screen, ConfirmScreen), f"{key} did not ask first"
        await pilot.press("y")
    await pilot.pause()
