"""Themes: --theme and the palette switch them, the choice persists in the user config, every
theme (ours and Textual's) resolves the diff and gate variables."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from textual.color import Color
from textual.command import CommandPalette

from engine.cli import main as cli_main
from tests.tui_pilot import SIZE, settle, user_config_home
from tests.tui_workspace import build_fixed_workspace
from themes.palette import THEMES
from tui.app import make_app
from tui.diff_pane import DiffView
from tui.launch import open_workbench

__all__ = ["user_config_home"]


def saved_theme(config_home: Path) -> str | None:
    path = config_home / "skillsmith" / "config.yaml"
    return yaml.safe_load(path.read_text())["theme"] if path.is_file() else None


async def test_theme_flag_is_applied_and_remembered(tmp_path: Path, user_config_home: Path) -> None:
    ws = build_fixed_workspace(tmp_path / "ws")
    app = make_app(ws, theme="light", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "skillsmith-light"
    assert saved_theme(user_config_home) == "skillsmith-light"
    again = make_app(ws, watch=False)  # no flag: the remembered choice
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.theme == "skillsmith-light"


async def test_palette_switches_the_theme_and_it_persists(
    tmp_path: Path, user_config_home: Path
) -> None:
    app = make_app(build_fixed_workspace(tmp_path / "ws"), theme="dark", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"Theme: skillsmith-light")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert app.theme == "skillsmith-light"
    assert saved_theme(user_config_home) == "skillsmith-light"


@pytest.mark.parametrize("theme", [*THEMES, "nord", "textual-light"])
async def test_every_theme_colours_the_diff_from_its_variables(tmp_path: Path, theme: str) -> None:
    app = make_app(build_fixed_workspace(tmp_path / "ws"), theme=theme, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        variables = app.theme_variables
        for name in ("diff-added", "diff-removed", "gate-pass", "gate-fail", "gate-held"):
            assert name in variables
        view = app.query_one(DiffView)
        added = view.get_component_rich_style("diff-view--added")
        assert added.bgcolor is not None
        assert Color.from_rich_color(added.bgcolor) == Color.parse(variables["diff-added"])
        removed = view.get_component_rich_style("diff-view--removed")
        assert removed.bgcolor != added.bgcolor


def test_an_unknown_theme_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = build_fixed_workspace(tmp_path / "ws")
    code = cli_main(["--theme", "no-such-theme", "-w", str(ws.root)], open_tui=open_workbench)
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "--theme: unknown theme 'no-such-theme'" in err and "skillsmith-light" in err


def test_a_broken_user_config_names_the_file(
    tmp_path: Path, user_config_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = build_fixed_workspace(tmp_path / "ws")
    path = user_config_home / "skillsmith" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("theme: [dark\n")
    assert cli_main(["-w", str(ws.root)], open_tui=open_workbench) == 1
    err = capsys.readouterr().err.strip()
    assert str(path) in err and err.count("\n") == 0
