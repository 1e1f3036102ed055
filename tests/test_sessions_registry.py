"""The session registry: kinds, statuses, events, and scoreboard numbers traced to their runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.errors import FormatError, SkillsmithError
from engine.core.scoreboard import read_records
from engine.core.sessions import (
    hold,
    is_held,
    list_sessions,
    owners_of_run,
    read_events,
    session_info,
    start_session,
    trace_record,
    verify_record,
)
from engine.core.workspace import Workspace
from engine.evaluation.runner import run_evaluation
from tests.runner_helpers import command_workspace, mode_benchmark

ROOT = Path(__file__).resolve().parents[1]


def test_sessions_of_every_kind_are_listed_with_status_and_runs(workspace: Workspace) -> None:
    builder = start_session(workspace, "build")
    builder.emit("started", benchmark="b")
    builder.emit("message", stage="pilot", run_id="run-1")
    builder.emit("message", stage="pilot", run_id="run-2")
    builder.emit("finished", status="frozen", run_id="run-1", headline="b frozen at pilot 1")
    optimizer = start_session(workspace, "agent-optimizer")
    optimizer.emit("started", benchmark="b")
    optimizer.emit("message", stage="applied", run_id="run-3")
    reviewer = start_session(workspace, "review")
    reviewer.emit("started")
    reviewer.emit("error", message="boom")

    infos = {i.session_id: i for i in list_sessions(workspace)}
    b, o, r = infos[builder.session_id], infos[optimizer.session_id], infos[reviewer.session_id]
    assert (b.label, b.status, b.run_ids, b.benchmark) == (
        "Build",
        "frozen",
        ("run-1", "run-2"),
        "b",
    )
    assert (o.label, o.status, o.run_ids, o.finished_at) == (
        "Agent Optimizer",
        "running",
        ("run-3",),
        None,
    )
    assert (r.label, r.status, r.headline) == ("Online review", "failed", "boom")
    assert b.headline == "b frozen at pilot 1" and o.headline == ""
    optimizers = list_sessions(workspace, "agent-optimizer")
    assert [i.session_id for i in optimizers] == [optimizer.session_id]
    assert owners_of_run(workspace, "run-1") == [builder.session_id]
    assert session_info(workspace, builder.session_id).events == 4

    resumed = start_session(workspace, "agent-optimizer", session_id=optimizer.session_id)
    resumed.emit("finished", status="finished")
    assert session_info(workspace, optimizer.session_id).status == "finished"


def test_bad_kinds_ids_and_lines_are_refused(workspace: Workspace) -> None:
    with pytest.raises(SkillsmithError, match="session kind 'wizard': expected one of"):
        start_session(workspace, "wizard")
    with pytest.raises(SkillsmithError, match=r"session id '\.\./x'"):
        read_events(workspace, "../x")
    with pytest.raises(SkillsmithError, match="no such session"):
        read_events(workspace, "build-none")
    log = start_session(workspace, "build")
    log.emit("started")
    with log.path.open("a") as fh:
        fh.write('{"kind": "message", "time": "t", "half')  # a line still being written
    assert [e["kind"] for e in read_events(workspace, log.session_id)] == ["started"]
    with log.path.open("a") as fh:
        fh.write('": 1}\nnot json\n{"kind": "finished"}\n')
    with pytest.raises(FormatError, match=r"\.jsonl:3: expected one JSON event object"):
        read_events(workspace, log.session_id)


def test_a_scoreboard_record_traces_to_its_runs_and_a_changed_row_is_caught(
    tmp_path: Path,
) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {"c1": ("answer", "eval(x)", "vulnerable"), "c2": ("answer", "y", "safe")},
                   runs=2)  # fmt: skip
    result = run_evaluation(ws, "b", jobs=2)
    trace = trace_record(ws, "b", 0)
    assert trace.mismatches == [] and len(trace.links) == 4
    for link in trace.links:
        assert link.run_id == result.run_id and link.row is not None
        assert link.session_file is not None and link.session_file.is_file()
        assert link.session_id == link.row["session_id"]
        assert link.score == round(link.row["score"] * 100, 2)

    results = result.run_dir / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rows[0]["score"] = 0.5
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    record = read_records(ws.benchmarks_dir / "b")[0]
    problems = verify_record(ws, record)
    assert any(p.startswith("score ") and "recomputed" in p for p in problems)
    assert any("case figures differ" in p for p in problems)
    results.write_text("".join(json.dumps(r) + "\n" for r in rows[1:]))
    assert any("no results row" in p for p in verify_record(ws, record))
    with pytest.raises(SkillsmithError, match="no scoreboard record 5"):
        trace_record(ws, "b", 5)


def test_a_held_session_folder_is_seen_from_another_process(tmp_path: Path) -> None:
    folder = tmp_path / "experiments" / "optimizer-x"
    script = (
        "import sys, time; from pathlib import Path; from engine.core.sessions import hold\n"
        f"with hold(Path({str(folder)!r})):\n"
        "    print('held', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
        assert is_held(folder)
        with (
            pytest.raises(SkillsmithError, match="a running session holds this folder"),
            hold(folder),
        ):
            pass
    finally:
        proc.kill()
        proc.wait()
    assert not is_held(folder)  # a killed holder releases it
    with hold(folder):
        assert (folder / ".session.lock").exists()
