"""Shared fixtures: real workspaces in temporary folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.workspace import Workspace

# The local Messages-API server fixture (`messages_server`), shared by every model-client test;
# the scripted agents' launch counter (`count_dir`), shared by the runner tests.
# Every toast a Pilot-driven app shows, kept past its timeout (`shown_toasts`, tests/tui_pilot.py).
pytest_plugins = ["tests.llm_server", "tests.runner_helpers", "tests.tui_toasts"]


# Skills written for these tests in the styles public skills use (tests/data/corpus/README.md):
# prose without numbered steps, references and scripts beside SKILL.md, a Claude Code plugin.
REAL_STYLE = Path(__file__).parent / "data" / "corpus"
REAL_STYLE_FILES = sorted(REAL_STYLE.rglob("SKILL.md"))


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """An empty, freshly initialised workspace."""
    return Workspace.init(tmp_path / "ws")
