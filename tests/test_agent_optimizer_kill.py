"""SIGKILL an Optimizer in the middle of a round; the restart repeats only the missing units."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.benchmark import load_benchmark
from engine.core.snapshots import list_snapshots
from engine.core.workspace import Workspace
from tests.builder_helpers import (
    BENCH,
    COUNT_ENV,
    DELAY_ENV,
    built_demo,
    events,
    launches,
    result_rows,
    use_counting_agent,
)

ROOT = Path(__file__).resolve().parents[1]
RUNS = 2


def _state(ws: Workspace) -> dict[str, object] | None:
    found = list(ws.experiments_dir.glob("*/state.json"))
    return json.loads(found[0].read_text()) if found else None


def _finished_rows(run_dir: Path) -> int:
    path = run_dir / "results.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_killed_round_resumes_with_the_same_candidate_and_runs_only_missing_units(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = Workspace.at(built_demo(tmp_path / "ws", cases=4))
    cfg = ws.load_config()
    cfg.gates.max_extra_runs = 0  # the test counts the units of the round's two evaluations
    ws.save_config(cfg)
    count = use_counting_agent(ws, tmp_path / "count")
    env = {**os.environ, COUNT_ENV: str(count), DELAY_ENV: "0.3"}
    monkeypatch.setenv(COUNT_ENV, str(count))
    cli = [sys.executable, "-m", "engine.cli", "optimize-agent", "-w", str(ws.root)]
    cli += [
        "--bench",
        BENCH,
        "--rounds",
        "1",
        "--runs",
        str(RUNS),
        "-j",
        "1",
        "--json",
        "--auto-approve",
    ]
    proc = subprocess.Popen(
        cli, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    run_dir: Path | None = None
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        state = _state(ws)
        attempts = state["attempts"] if state else []
        if attempts and attempts[0]["run_id"]:  # type: ignore[index]
            run_dir = ws.runs_dir / attempts[0]["run_id"]  # type: ignore[index]
            if _finished_rows(run_dir) >= 3:
                break
        time.sleep(0.05)
    assert run_dir is not None and _finished_rows(run_dir) >= 3, "the round never got going"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    time.sleep(1.0)  # an agent started just before the kill finishes on its own

    state = _state(ws)
    assert state is not None and state["status"] == "running"
    (attempt,) = state["attempts"]  # type: ignore[misc]
    assert attempt["stage"] == "applied"
    kept = {(r["case_id"], r["run_index"]) for r in result_rows(run_dir)}
    before = len(launches(count))
    total = len(load_benchmark(ws.benchmarks_dir / BENCH).cases) * RUNS
    assert 3 <= len(kept) < total

    out, err = io.StringIO(), io.StringIO()  # the restart runs in-process: same command
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(cli[3:])
    assert code == 0, err.getvalue()
    result = json.loads(out.getvalue())
    assert result["resumed"] is True and result["session_id"] == state["session_id"]
    (final,) = result["attempts"]
    assert final["number"] == 1 and final["run_id"] == run_dir.name
    assert final["candidate"] == attempt["candidate"]  # the same candidate, not a new proposal
    assert final["decision"] in ("accepted", "rolled_back") and result["valid_rounds"] == 1

    # exactly the units missing at the kill ran after the restart, each once
    bench = load_benchmark(ws.benchmarks_dir / BENCH)
    files = {
        c.id: ",".join(sorted(p.name for p in c.statement_dir.iterdir() if p.suffix != ".md"))
        for c in bench.cases
    }
    missing = sorted(
        f"{files[c.id]}#{i}" for c in bench.cases for i in range(RUNS) if (c.id, i) not in kept
    )
    assert sorted(launches(count)[before:]) == missing
    rows = result_rows(run_dir)
    assert len(rows) == total and len({(r["case_id"], r["run_index"]) for r in rows}) == total
    started = [e for e in events(ws, run_dir.name) if e["kind"] == "started"]
    assert len(started) == 2 and started[1]["resumed"] is True
    assert started[1]["todo"] == total - len(kept)

    # no second snapshot for the round, and the session says where it resumed
    session = str(state["session_id"])
    notes = [s.note for s in list_snapshots(ws) if s.note.startswith(f"optimizer {session}")]
    assert len(notes) == 1
    (resumed,) = [e for e in events(ws, session) if e.get("stage") == "resumed"]
    assert (resumed["at"], resumed["run_id"]) == ("applied", run_dir.name)
