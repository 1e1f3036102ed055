"""SVG snapshots of the workbench (pytest-textual-snapshot; update with --snapshot-update).

Deterministic by construction: a workspace with fixed ids, times and snapshot bytes
(``build_fixed_workspace``), no watcher, a fixed terminal size, every loader settled before the
picture is taken, and no clock anywhere on screen. The workspace folder is always named ``ws``,
the only part of its path the status line shows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

from tests.tui_pilot import SIZE, settle, user_config_home
from tests.tui_workspace import build_fixed_workspace
from tui.activity import ActivityLog
from tui.app import SkillsmithApp, make_app

__all__ = ["user_config_home"]

Snap = Callable[..., bool]


def fixed_app(tmp_path: Path, theme: str) -> SkillsmithApp:
    return make_app(build_fixed_workspace(tmp_path / "ws"), theme=theme, watch=False)


def keys(*presses: str) -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run_before(pilot: Pilot[None]) -> None:
        pilot.app.animation_level = "none"
        await settle(pilot)
        for key in presses:
            await pilot.press(key)
            await settle(pilot)
        # A focused Input's cursor blinks every half second from the moment it has focus (a
        # loop's form): a loaded machine can take that long to settle, and the picture would
        # catch it hidden. Held on, the cursor shows as it does first.
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False

    return run_before


def test_main_screen_dark(snap_compare: Snap, tmp_path: Path) -> None:
    """The first screen: the queue and the overview (skills, benchmarks, next action)."""
    app = fixed_app(tmp_path, "dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys())


def test_main_screen_light(snap_compare: Snap, tmp_path: Path) -> None:
    app = fixed_app(tmp_path, "light")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys())


def test_diff_unified_second_candidate(snap_compare: Snap, tmp_path: Path) -> None:
    app = fixed_app(tmp_path, "dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("j", "2"))


def test_diff_side_by_side(snap_compare: Snap, tmp_path: Path) -> None:
    app = fixed_app(tmp_path, "dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("d"))


def test_diff_side_by_side_light(snap_compare: Snap, tmp_path: Path) -> None:
    app = fixed_app(tmp_path, "light")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("d"))


def test_gates_pane(snap_compare: Snap, tmp_path: Path) -> None:
    app = fixed_app(tmp_path, "dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("3"))


def test_help_screen(snap_compare: Snap, tmp_path: Path) -> None:
    app = fixed_app(tmp_path, "dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("question_mark"))


def test_restore_confirmation(snap_compare: Snap, tmp_path: Path) -> None:
    """The snapshots screen with the restore dialog: "No" focused, older version called out."""
    app = fixed_app(tmp_path, "dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("S", "enter"))


def test_restore_confirmation_light(snap_compare: Snap, tmp_path: Path) -> None:
    app = fixed_app(tmp_path, "light")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("S", "enter"))


def fixed_clock_app(tmp_path: Path, theme: str) -> SkillsmithApp:
    """The fixed workspace with a fixed clock for the activity log's times."""
    app = fixed_app(tmp_path, theme)
    app.activity = ActivityLog(clock=lambda: "09:30:00")
    return app


def quiet(*presses: str) -> Callable[[Pilot[None]], Awaitable[None]]:
    """``keys`` and then no toasts: their vanishing is timing, not layout."""
    before = keys(*presses)

    async def run_before(pilot: Pilot[None]) -> None:
        await before(pilot)
        pilot.app.clear_notifications()
        await settle(pilot)

    return run_before


def test_activity_log(snap_compare: Snap, tmp_path: Path) -> None:
    """An approval, then a refusal (a held candidate), kept in the activity log after the toasts."""
    app = fixed_clock_app(tmp_path, "dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=quiet("a", "G", "a", "7"))


def test_activity_log_light(snap_compare: Snap, tmp_path: Path) -> None:
    app = fixed_clock_app(tmp_path, "light")
    assert snap_compare(app, terminal_size=SIZE, run_before=quiet("a", "G", "a", "7"))


def test_evaluate_confirmation(snap_compare: Snap, tmp_path: Path) -> None:
    """e says the evaluation's size and asks before it starts."""
    app = fixed_app(tmp_path, "dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("e"))


def test_evaluate_confirmation_light(snap_compare: Snap, tmp_path: Path) -> None:
    app = fixed_app(tmp_path, "light")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("e"))


def test_rollback_confirmation(snap_compare: Snap, tmp_path: Path) -> None:
    """After an approval, b in Skills & history offers the version before current, and asks."""
    app = fixed_clock_app(tmp_path, "dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=quiet("a", "6", "l", "b"))


def test_rollback_confirmation_light(snap_compare: Snap, tmp_path: Path) -> None:
    app = fixed_clock_app(tmp_path, "light")
    assert snap_compare(app, terminal_size=SIZE, run_before=quiet("a", "6", "l", "b"))
