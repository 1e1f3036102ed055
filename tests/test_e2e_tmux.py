"""The workbench in a real terminal: tmux runs ``skillsmith -w WS``, a keypress approves the
candidate, capture-pane reads the screen, and the published version is checked on disk.

Skipped when tmux is missing, unless SKILLSMITH_REQUIRE_E2E=1 (then it fails instead).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.queue import CandidateQueue
from engine.store import SkillStore
from tests.tui_workspace import SKILL, build_workspace

pytestmark = pytest.mark.e2e

TMUX = shutil.which("tmux")
REQUIRED = os.environ.get("SKILLSMITH_REQUIRE_E2E") == "1"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tmux_session(tmp_path: Path) -> Iterator[str]:
    if TMUX is None:
        if REQUIRED:
            pytest.fail("tmux is not installed and SKILLSMITH_REQUIRE_E2E=1")
        pytest.skip("tmux is not installed")
    name = f"skillsmith-e2e-{os.getpid()}-{tmp_path.name}"
    yield name
    subprocess.run([TMUX, "kill-session", "-t", name], capture_output=True, check=False)


def tmux(*args: str) -> str:
    assert TMUX is not None
    done = subprocess.run([TMUX, *args], capture_output=True, text=True, check=False)
    return done.stdout


def wait_for(
    condition: Callable[[], bool], what: str, timeout: float = 30.0, show: str = ""
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            size = tmux("display", "-p", "-t", show, "#{window_width}x#{window_height}")
            screen = size + tmux("capture-pane", "-p", "-t", show) if show else ""
            raise AssertionError(f"timed out waiting for {what}\n{screen}")
        time.sleep(0.1)


def command(ws_root: Path) -> str:
    """The installed console script when there is one, else the same entry point via -m."""
    script = Path(sys.executable).parent / "skillsmith"
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "tui"]
    # pytest exports COLUMNS/LINES (80x24); the app must measure the real tmux pane instead.
    return shlex.join(["env", "-u", "COLUMNS", "-u", "LINES", *argv, "-w", str(ws_root)])


def test_a_approves_in_a_real_terminal(tmp_path: Path, tmux_session: str) -> None:
    ws = build_workspace(tmp_path / "ws", candidates=1)
    queue = CandidateQueue(ws)
    for candidate in queue.list():
        if candidate.status == "pending_eval":  # leave exactly one open candidate
            queue.reject(candidate.id, why="not part of this test")
    (target,) = [c for c in queue.list() if c.status == "pending_approval"]
    config_home = tmp_path / "xdg"
    tmux(
        "new-session", "-d", "-s", tmux_session, "-x", "120", "-y", "40",
        "-e", f"XDG_CONFIG_HOME={config_home}", "-c", str(ROOT), command(ws.root),
    )  # fmt: skip

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", tmux_session)

    wait_for(
        lambda: all(part in screen() for part in (target.id, "pending_approval", "+++ b/SKILL.md")),
        "the queue and the diff",
        timeout=120,  # a cold start compiles and imports the whole engine
        show=tmux_session,
    )
    tmux("send-keys", "-t", tmux_session, "a")
    store = SkillStore(ws, SKILL)
    wait_for(lambda: store.current() == "v2", "v2 to be published on disk")
    # The pointer moves first, the active SKILL.md follows within the same locked publish.
    wait_for(
        lambda: ws.skill_path(SKILL).read_text() == target.skill_text(),
        "the active SKILL.md to become the candidate's text",
    )
    wait_for(lambda: "published" in screen(), "the queue to show the published status")
    wait_for(lambda: f"Approved {target.id}" in screen(), "the approval toast")
    wait_for(lambda: "workspace v2" in screen(), "the status line to show version 2")
    tmux("send-keys", "-t", tmux_session, "q")
    wait_for(
        lambda: (
            subprocess.run(
                [TMUX or "tmux", "has-session", "-t", tmux_session], capture_output=True
            ).returncode
            != 0
        ),
        "the workbench to quit",
    )
