"""Shared fixtures: real workspaces in temporary folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.workspace import Workspace

# The local Messages-API server fixture (`messages_server`), shared by every model-client test;
# the scripted agents' launch counter (`count_dir`), shared by the runner tests.
pytest_plugins = ["tests.llm_server", "tests.runner_helpers"]

SHARED = Path(__file__).resolve().parents[2] / "shared"
REAL_SKILLS = SHARED / "fixtures" / "real-skills"


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """An empty, freshly initialised workspace."""
    return Workspace.init(tmp_path / "ws")
