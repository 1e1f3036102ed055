"""The workbench in a real terminal: tmux runs ``skillsmith -w WS``, a keypress approves the
candidate, capture-pane reads the screen, and the published version is checked on disk.

Skipped when tmux is missing, unless SKILLSMITH_REQUIRE_E2E=1 (then it fails instead).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.core.queue import CandidateQueue
from engine.core.runs import run_folders
from engine.core.store import SkillStore
from engine.views.rows import compact_count
from tests.tui_workspace import BENCH, SKILL, build_workspace, demo_cases

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


def open_terminal(
    session: str, ws_root: Path, config_home: Path, size: tuple[int, int]
) -> tuple[Callable[[], str], Callable[..., None]]:
    """Start the workbench in a detached tmux window; return what reads and what types there."""
    tmux(
        "new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]),
        "-e", f"XDG_CONFIG_HOME={config_home}", "-c", str(ROOT), command(ws_root),
    )  # fmt: skip

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", session)

    def keys(*presses: str) -> None:
        for key in presses:
            tmux("send-keys", "-t", session, key)
            time.sleep(0.3)

    return screen, keys


def test_a_approves_in_a_real_terminal(tmp_path: Path, tmux_session: str) -> None:
    ws = build_workspace(tmp_path / "ws", candidates=1)
    queue = CandidateQueue(ws)
    for candidate in queue.list():
        if candidate.status == "pending_eval":  # leave exactly one open candidate
            queue.reject(candidate.id, why="not part of this test")
    (target,) = [c for c in queue.list() if c.status == "pending_approval"]
    config_home = tmp_path / "xdg"
    screen, _ = open_terminal(tmux_session, ws.root, config_home, (120, 40))

    wait_for(
        lambda: all(part in screen() for part in (target.id, "pending_approval", "press 1")),
        "the queue and the overview's next action",
        timeout=120,  # a cold start compiles and imports the whole engine
        show=tmux_session,
    )
    tmux("send-keys", "-t", tmux_session, "2")
    wait_for(lambda: "+++ b/SKILL.md" in screen(), "the diff", show=tmux_session)
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
    wait_for(lambda: f"{SKILL} v2" in screen(), "the status line to show the skill at v2")
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


def test_a_day_on_the_demo_in_a_real_terminal(tmp_path: Path, tmux_session: str) -> None:
    """The first screen orients, e asks and its outcome stays, the scoreboard's tokens are the
    run's, an evolve round's verdict is shown whatever it is, and b asks before rolling back."""
    ws = build_workspace(tmp_path / "ws", candidates=0, cases=demo_cases(16))
    # No seed pinned: every figure below is compared with the files of the same run, and the
    # round's verdict is checked whichever way it goes.
    queue = CandidateQueue(ws)
    for candidate in queue.list():
        queue.reject(candidate.id, why="not part of this test")
    screen, keys = open_terminal(tmux_session, ws.root, tmp_path / "xdg", (140, 45))

    wait_for(
        lambda: all(p in screen() for p in (SKILL, BENCH, "no evaluation yet — press e")),
        "the overview with the skill, the benchmark and the next action",
        timeout=120,
        show=tmux_session,
    )
    keys("e")
    wait_for(lambda: f"Evaluate {BENCH}?" in screen(), "the evaluation's confirmation")
    assert "16 units (16 cases × 1 run(s))" in screen()
    keys("Enter")  # the form's defaults
    wait_for(
        lambda: "Last outcome: Evaluated" in screen(), "the evaluation", 300, show=tmux_session
    )
    (run,) = run_folders(ws.runs_dir)
    time.sleep(11)  # the toast times out after 10 s; the outcome must still be on screen
    assert f"Last outcome: Evaluated {BENCH}: run {run.name}" in screen()

    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    tokens = sum((r["tokens"]["input"] or 0) + (r["tokens"]["output"] or 0) for r in rows)
    keys("5")
    wait_for(lambda: f"tokens {tokens:,}" in screen(), "the record's tokens", show=tmux_session)
    assert compact_count(tokens) in screen() and "…" not in screen()

    keys("0", "v")
    wait_for(lambda: "Start (ctrl+s)" in screen(), "the evolve form")
    keys("Enter")  # one round, the default
    wait_for(lambda: "Last outcome: Evolve round 1" in screen(), "the round", 400, tmux_session)
    shown = screen()
    if "rejected — " in shown:
        keys("3")
        wait_for(lambda: "rejected (no candidate)" in screen(), "the round's gates in 3 Gates")
        assert "fail" in screen()
    else:
        assert "awaits approval — press 1, then a" in shown or "published" in shown

    keys("6")
    wait_for(lambda: "Timeline of" in screen(), "the skills pane", show=tmux_session)
    keys("l", "b")
    wait_for(lambda: f"Roll {SKILL} back from" in screen(), "the rollback question")
    current = SkillStore(ws, SKILL).current()
    keys("n")
    time.sleep(1)
    assert SkillStore(ws, SKILL).current() == current  # declined: nothing moved
    keys("q")


def test_build_and_review_in_a_real_terminal(tmp_path: Path, tmux_session: str) -> None:
    """B builds a benchmark from a form filled in by keystrokes, W reviews a transcript folder;
    the screen shows each job's result and the Sessions pane lists both sessions."""
    from engine.core.workspace import Workspace
    from engine.evaluation.demo import copy_demo
    from tests.online_helpers import CLAUDE, add_weather_skill, copy_session

    ws = Workspace.at(copy_demo(tmp_path / "demo"))
    cfg = ws.load_config()
    cfg.agent.noise = 0.0  # the pilot's score is read off the screen, not recomputed: no slips
    ws.save_config(cfg)
    add_weather_skill(ws)
    exports = tmp_path / "exports"
    copy_session(CLAUDE, exports)
    screen, keys = open_terminal(tmux_session, ws.root, tmp_path / "xdg", (160, 50))

    def text(value: str) -> None:
        for start in range(0, len(value), 8):  # a few keys at a time, as a person types
            tmux("send-keys", "-t", tmux_session, "-l", value[start : start + 8])
            time.sleep(0.15)
        time.sleep(0.3)

    wait_for(lambda: "vuln-detect" in screen(), "the overview", timeout=120, show=tmux_session)
    keys("B")
    wait_for(lambda: "Build a benchmark" in screen(), "the build form", show=tmux_session)
    text("mini")
    keys("Tab", "Tab", "Tab", "Tab", "BSpace")  # goal, source (vuln-detect), pick: the defaults
    text("6")
    keys("Tab", "BSpace")
    text("1")
    keys("Enter")
    wait_for(
        lambda: "Last outcome: Build" in screen() or " failed" in screen(),
        "the build's result",
        600,
        tmux_session,
    )
    assert "Last outcome: Build: mini frozen at pilot 1" in screen(), screen()
    (build,) = ws.sessions_dir.glob("build-*.jsonl")
    finished = json.loads(build.read_text().splitlines()[-1])
    assert finished["kind"] == "finished" and finished["status"] == "frozen"

    keys("W")
    wait_for(lambda: "Online review" in screen(), "the review form", show=tmux_session)
    text(str(exports))
    keys("Enter")
    wait_for(
        lambda: "Last outcome: Review" in screen() or " failed" in screen(),
        "the review's result",
        120,
        tmux_session,
    )
    assert "Last outcome: Review: 1 review job" in screen(), screen()
    keys("4")
    wait_for(
        lambda: all(w in screen() for w in ("Build", "frozen", "Online review", "finished")),
        "both sessions in the Sessions pane",
        show=tmux_session,
    )


def test_s_down_enter_restores_the_second_newest_snapshot(
    tmp_path: Path, tmux_session: str
) -> None:
    """The snapshots list is moved by keyboard: S opens it on the newest, Down goes one older,
    Enter asks (No focused) and y restores that snapshot."""
    from engine.core.snapshots import create_snapshot

    ws = build_workspace(tmp_path / "ws", candidates=0)
    made = []
    for version in (1, 2, 3):
        ws.set_version(version)
        made.append(create_snapshot(ws, note=f"state {version}"))
    ws.set_version(4)
    screen, keys = open_terminal(tmux_session, ws.root, tmp_path / "xdg", (140, 40))
    wait_for(lambda: "press" in screen(), "the first screen", timeout=120, show=tmux_session)
    keys("S")
    wait_for(lambda: made[1].name in screen(), "the snapshots list", show=tmux_session)
    keys("Down", "Enter")
    wait_for(lambda: "Restore snapshot v2?" in screen(), "the confirmation", show=tmux_session)
    keys("y")
    log = ws.snapshots_dir / "restores.jsonl"  # appended once the restore is done
    wait_for(log.is_file, "the restore to finish", show=tmux_session)
    restored = json.loads(log.read_text().splitlines()[-1])
    assert restored["source"] == str(made[1]) and ws.version() == 2
