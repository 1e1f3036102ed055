"""Shared fixtures: real workspaces in temporary folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.workspace import Workspace

# The local Messages-API server fixture (`messages_server`), shared by every model-client test;
# the scripted agents' launch counter (`count_dir`), shared by the runner tests.
pytest_plugins = ["tests.llm_server", "tests.runner_helpers"]


def _shared() -> Path:
    """The developers' ``shared/`` folder beside the checkout: a CI clone sits right under the
    folder holding it, a git worktree may sit a level or two deeper. Falls back to the clone's
    sibling, so a missing fixture fails with that path in the message."""
    here = Path(__file__).resolve()
    for parent in here.parents[1:]:
        if (parent / "shared" / "fixtures" / "real-skills").is_dir():
            return parent / "shared"
    return here.parents[2] / "shared"


SHARED = _shared()
REAL_SKILLS = SHARED / "fixtures" / "real-skills"


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """An empty, freshly initialised workspace."""
    return Workspace.init(tmp_path / "ws")
