"""SIGKILL in the middle of a write, then the next command: nothing refuses, nothing is left.

The writers are killed for real (a child process inside ``atomic_open`` or holding a unit folder,
then SIGKILL), so the leftovers are exactly what a crash leaves: an unlocked temp file, an
unlocked ``unit-*`` folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from engine.core.benchmark import load_benchmark
from engine.core.errors import LockError
from engine.core.fsutil import STALE_AFTER_S, atomic_open, is_temp_file, sweep_temp_files
from engine.core.runs import UNFINISHED, run_folders
from engine.core.scoreboard import read_records
from engine.core.workspace import Workspace
from engine.evaluation.agents import RoomSpec, build_room, remove_room, scratch_root, sweep_rooms
from engine.evaluation.runner import bench_fingerprint, run_evaluation
from tests.runner_helpers import (
    COUNT_ENV,
    SCRIPTED,
    command_workspace,
    launches,
    lock_held_elsewhere,
    mode_benchmark,
    running,
)

SAFE = "q = int(x)\n"
ROOT = Path(__file__).resolve().parents[1]


def _killed_inside(code: str) -> None:
    """Run ``code`` in a child until it prints ``ready``, then SIGKILL it."""
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGKILL)
    child.wait()


def _kill_while_writing(path: Path, prelude: str = "") -> Path:
    """A writer killed after its temp file holds data but before the rename; its temp file."""
    _killed_inside(
        f"""
        import time
        from pathlib import Path
        from engine.core.fsutil import atomic_open
        {prelude}
        with atomic_open(Path({str(path)!r})) as fh:
            fh.write(b"half a file")
            fh.flush()
            print("ready", flush=True)
            time.sleep(60)
        """
    )
    (temp,) = [p for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.")]
    return temp


def _age(path: Path) -> None:
    """Make a leftover look as old as a crash that happened a while ago."""
    old = os.stat(path).st_mtime - 10 * STALE_AFTER_S
    os.utime(path, (old, old))


def _workspace(tmp_path: Path, count_dir: Path) -> Path:
    ws = command_workspace(tmp_path / "ws")
    return mode_benchmark(ws, {"a": ("answer", SAFE, "safe"), "b": ("answer", SAFE, "safe")})


def test_a_scoreboard_write_killed_midway_changes_no_fingerprint_and_is_swept(
    tmp_path: Path, count_dir: Path
) -> None:
    bench_root = _workspace(tmp_path, count_dir)
    ws = Workspace.at(tmp_path / "ws")
    first = run_evaluation(ws, "b", run_id="r1")
    scoreboard = bench_root / "scoreboard.yaml"
    before = scoreboard.read_bytes()
    fingerprint = bench_fingerprint(load_benchmark(bench_root))

    temp = _kill_while_writing(scoreboard)

    assert scoreboard.read_bytes() == before  # the old file, whole
    assert bench_fingerprint(load_benchmark(bench_root)) == fingerprint
    # the same evaluation (an evolve resumes by run id) is still "the same inputs"
    again = run_evaluation(ws, "b", run_id="r1")
    assert again.launched == 0 and again.run_id == first.run_id
    assert temp.exists()  # too fresh to be called abandoned yet
    _age(temp)
    run_evaluation(ws, "b", run_id="r1")
    assert not temp.exists()
    assert len(read_records(bench_root)) == 1


def test_a_manifest_replacement_killed_midway_is_swept_by_the_next_run(
    tmp_path: Path, count_dir: Path
) -> None:
    _workspace(tmp_path, count_dir)
    ws = Workspace.at(tmp_path / "ws")
    first = run_evaluation(ws, "b", run_id="r1")
    assert _index(ws) == []  # a finished run is not in the index of unfinished runs
    manifest = first.run_dir / "manifest.json"
    old = manifest.read_bytes()
    # an evaluation of r1 (named in the index before it writes, as the runner does) killed
    # while it replaced r1's manifest
    temp = _kill_while_writing(manifest, _MARK.format(run=str(first.run_dir)))
    assert manifest.read_bytes() == old
    assert _index(ws) == ["r1"]
    _age(temp)

    other = run_evaluation(ws, "b", run_id="r2")  # any later run of the workspace sweeps it

    assert not temp.exists()
    assert other.status == "finished"
    assert [p for p in first.run_dir.iterdir() if is_temp_file(p.name)] == []
    assert _index(ws) == []  # r1's manifest says finished: its marker went with the sweep


_MARK = (
    "from engine.core.runs import RunFolder, mark_unfinished; "
    "mark_unfinished(RunFolder(Path({run!r})))"
)


def _index(ws: Workspace) -> list[str]:
    return sorted(os.listdir(ws.runs_dir / UNFINISHED))


def test_an_evaluation_killed_midway_is_resumed_through_the_index_and_leaves_it_when_done(
    tmp_path: Path, count_dir: Path
) -> None:
    """SIGKILL, not a clean stop: only the index of unfinished runs leads back to the run (no
    run folder is listed any more), to resume it and to sweep what its killed writes left."""
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {f"c{i}": ("sleep 0.3", SAFE, "safe") for i in range(4)}, runs=2)
    done = run_evaluation(ws, "b", case_ids=["c0"])  # history: a finished run
    env = {**os.environ, COUNT_ENV: str(count_dir), "TMPDIR": str(tmp_path / "tmp")}
    cli = [sys.executable, "-m", "engine.cli", "eval", "b", "-w", str(ws.root), "-j", "1"]
    proc = subprocess.Popen(
        cli, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        results = _wait_for_rows(ws, done.run_id, 2)
    finally:
        proc.kill()
        proc.wait()
    killed = results.parent
    assert _index(ws) == [killed.name]
    temp = _kill_while_writing(killed / "manifest.json")
    _age(temp)
    kept = len(results.read_text().splitlines())
    before = len(launches(count_dir))

    resumed = run_evaluation(ws, "b", jobs=2)

    assert resumed.run_id == killed.name and resumed.status == "finished"
    assert resumed.launched == 8 - kept and len(launches(count_dir)) - before == 8 - kept
    assert not temp.exists()
    assert _index(ws) == []


def test_a_workspace_from_before_the_index_still_resumes_its_unfinished_run(
    tmp_path: Path, count_dir: Path
) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {"ok": ("answer", SAFE, "safe"), "flaky": ("flaky", SAFE, "safe")})
    first = run_evaluation(ws, "b")
    assert first.status == "incomplete" and _index(ws) == [first.run_id]
    shutil.rmtree(ws.runs_dir / UNFINISHED)  # as a workspace made before the index was
    (count_dir / "fixed").write_text("")

    again = run_evaluation(ws, "b")

    assert again.run_id == first.run_id and again.launched == 1 and again.status == "finished"
    assert _index(ws) == []  # the index was built (naming it) and it left it on finishing


def _wait_for_rows(ws: Workspace, other: str, rows: int) -> Path:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for results in ws.runs_dir.glob("*/results.jsonl"):
            if results.parent.name != other and len(results.read_text().splitlines()) >= rows:
                return results
        time.sleep(0.05)
    raise AssertionError("the evaluation never got going")


def test_a_temp_file_still_being_written_is_never_swept(tmp_path: Path) -> None:
    target = tmp_path / "scoreboard.yaml"
    with atomic_open(target) as fh:
        fh.write(b"in progress")
        (temp,) = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        _age(temp)
        assert sweep_temp_files(tmp_path) == []  # its writer holds the lock
    assert target.read_bytes() == b"in progress"
    assert [p.name for p in tmp_path.iterdir()] == ["scoreboard.yaml"]


def _killed_room(statement: Path, root: Path) -> Path:
    """The unit folder a SIGKILL-ed evaluation left under the scratch root ``root``."""
    _killed_inside(
        f"""
        import time
        from pathlib import Path
        from engine.evaluation.agents import RoomSpec, build_room
        spec = RoomSpec(Path({str(statement)!r}), "# Task\\n", (), "skills")
        build_room(spec, Path({str(root)!r}))
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    (dead,) = list(root.iterdir())
    return dead


def _statement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "scratch").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))  # a scratch root of its own
    statement = tmp_path / "statement"
    statement.mkdir()
    (statement / "prompt.md").write_text("x\n")
    return statement


def test_unit_folders_of_a_killed_evaluation_are_swept_and_live_ones_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    statement = _statement(tmp_path, monkeypatch)
    root = scratch_root(tmp_path / "ws")
    dead = _killed_room(statement, root)
    live = build_room(RoomSpec(statement, "# Task\n", (), "skills"), root)
    try:
        _age(dead)
        _age(live)
        assert sweep_rooms(root) == [dead]
        assert not dead.exists() and (live / "PROMPT.md").is_file()
    finally:
        remove_room(live)


def test_the_next_evaluation_sweeps_a_killed_units_folder(
    tmp_path: Path, count_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    statement = _statement(tmp_path, monkeypatch)
    _workspace(tmp_path, count_dir)
    ws = Workspace.at(tmp_path / "ws")
    root = scratch_root(ws.root)
    dead = _killed_room(statement, root)
    _age(dead)

    done = run_evaluation(ws, "b")

    assert done.status == "finished" and not dead.exists()
    assert list(root.iterdir()) == []  # its own unit folders went with their units


def test_a_new_run_that_cannot_take_the_workspace_lock_starts_no_agent_and_writes_nothing(
    tmp_path: Path, count_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {f"c{i}": ("sleep 30", SAFE, "safe") for i in range(3)})
    monkeypatch.setenv("SKILLSMITH_LOCK_WAIT", "0.3")
    with (
        lock_held_elsewhere(ws, "another command"),
        pytest.raises(LockError, match="another command"),
    ):
        run_evaluation(ws, "b", jobs=3)

    assert launches(count_dir) == []
    _assert_nothing_written(ws)


def test_a_new_run_whose_preparation_fails_stops_its_first_agents_and_writes_nothing(
    tmp_path: Path, count_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new run's first agents start while its folder is being prepared: when that fails they
    are stopped, and the run leaves no file behind (it was never named in the index)."""
    import engine.evaluation.runner as runner

    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {f"c{i}": ("sleep 30", SAFE, "safe") for i in range(3)})

    def failing(*args: Any) -> None:
        deadline = time.monotonic() + 30
        while len(launches(count_dir)) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)  # fail only once the agents run
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(runner, "_sweep_leftovers", failing)
    with pytest.raises(OSError, match="Input/output error"):
        run_evaluation(ws, "b", jobs=3)

    assert len(launches(count_dir)) == 3
    assert running(str(SCRIPTED)) == []
    _assert_nothing_written(ws)


def _assert_nothing_written(ws: Workspace) -> None:
    written = [p.name for run in run_folders(ws.runs_dir) for p in run.iterdir()]
    assert set(written) <= {".run.lock"}  # no manifest, row, session or input
    assert not ws.sessions_dir.exists() or list(ws.sessions_dir.iterdir()) == []
    assert list(scratch_root(ws.root).iterdir()) == []
    assert not (ws.runs_dir / UNFINISHED).exists()
