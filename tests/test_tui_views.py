"""engine/views/rows: the read-only loaders behind the live panes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.core.benchmark import benchmark_ids
from engine.core.events import SessionLog
from engine.core.queue import CandidateQueue
from engine.core.runs import RunFolder
from engine.core.session_logs import list_session_logs, read_tail
from engine.core.workspace import Workspace
from engine.views.rows import CandidateCache, run_figures, transcript_path
from tests.tui_workspace import BENCH, SKILL, build_workspace, submit_candidate


def test_read_tail_consumes_whole_lines_only(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_bytes(b'{"kind": "started"}\n{"kind": "prog')  # a line still being written
    first = read_tail(log)
    assert [r["kind"] for r in first.records] == ["started"]
    assert first.offset == len(b'{"kind": "started"}\n')
    with log.open("ab") as fh:
        fh.write(b'ress"}\nnot json\n[1]\n')
    second = read_tail(log, first.offset, first.next_line)
    assert [r["kind"] for r in second.records] == ["progress"]
    assert second.bad_lines == [3, 4]
    assert read_tail(log, second.offset, second.next_line).records == []


def test_read_tail_starts_over_when_the_file_was_replaced(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text('{"n": 1}\n{"n": 2}\n')
    chunk = read_tail(log)
    log.write_text('{"n": 9}\n')
    again = read_tail(log, chunk.offset, chunk.next_line)
    assert [r["n"] for r in again.records] == [9]
    assert read_tail(tmp_path / "missing.jsonl").records == []


def test_session_logs_are_listed_oldest_first_with_their_kind(workspace: Workspace) -> None:
    SessionLog(workspace.sessions_dir, "optimize", "optimize-20260302-080000-aaaaaa").emit(
        "started"
    )
    SessionLog(workspace.sessions_dir, "eval", "run-20260301-080000-bbbbbb").emit("started")
    (workspace.sessions_dir / ".half.jsonl.x.tmp").write_text("")
    logs = list_session_logs(workspace)
    assert [(i.session_id, i.kind) for i in logs] == [
        ("run-20260301-080000-bbbbbb", "eval"),
        ("optimize-20260302-080000-aaaaaa", "optimize"),
    ]


def test_listing_rereads_only_the_logs_that_changed(workspace: Workspace) -> None:
    done = SessionLog(workspace.sessions_dir, "eval", "run-20260301-080000-bbbbbb")
    done.emit("started")
    done.emit("finished", status="finished", headline="all done")
    live = SessionLog(workspace.sessions_dir, "evolve", "evolve-20260302-080000-aaaaaa")
    live.emit("started")
    assert [(i.kind, i.state) for i in list_session_logs(workspace)] == [
        ("eval", "finished"),
        ("evolve", "running"),
    ]
    # a log whose size, mtime and inode did not move is described from memory, not re-read:
    # the same bytes with another ending, given back its old mtime, still list as before
    stat = done.path.stat()
    text = done.path.read_bytes()
    done.path.write_bytes(text.replace(b"all done", b"NOT READ"))
    os.utime(done.path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    live.emit("finished", status="finished", headline="grew since the last listing")
    assert [(i.kind, i.state, i.headline) for i in list_session_logs(workspace)] == [
        ("eval", "finished", "all done"),
        ("evolve", "finished", "grew since the last listing"),
    ]
    os.utime(done.path)  # touched: read again
    assert list_session_logs(workspace)[0].headline == "NOT READ"


def test_transcript_path_stays_inside_runs(workspace: Workspace) -> None:
    sessions = workspace.runs_dir / "r1" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "case-a.0.jsonl").write_text("{}\n")
    (sessions / "case-a.1.baseline.jsonl").write_text("{}\n")
    assert transcript_path(workspace, "r1", "case-a", 0) == sessions / "case-a.0.jsonl"
    assert transcript_path(workspace, "r1", "case-a", 1, "baseline") == (
        sessions / "case-a.1.baseline.jsonl"
    )
    assert transcript_path(workspace, "r1", "case-a") == sessions / "case-a.0.jsonl"
    assert transcript_path(workspace, "..", "case-a") is None
    assert transcript_path(workspace, "r1", "../../etc/passwd") is None
    assert transcript_path(workspace, "r1", "case-b") is None


def test_benchmarks_and_run_figures(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    assert benchmark_ids(ws) == [BENCH]
    folder = RunFolder(ws.runs_dir / "r1")
    folder.path.mkdir(parents=True)
    rows = [
        {"case_id": "a", "pass_fail": "pass", "tokens": {"input": 10, "output": 5}},
        {"case_id": "b", "pass_fail": "fail", "tokens": {"input": 20, "output": 5}},
        {"case_id": "b", "pass_fail": "fail", "variant": "baseline", "tokens": {"input": 1}},
    ]
    for row in rows:
        base = {"run_index": 0, "variant": "skill", "score": 1.0, "duration_ms": 1}
        folder.append_row({**base, **row})
    figures = run_figures(ws, "r1")
    assert figures is not None
    assert (figures.pass_rate, figures.tokens) == (0.5, 40)
    assert run_figures(ws, "no-such-run") is None
    assert run_figures(ws, "../r1") is None


def test_candidate_cache_rereads_only_what_changed_and_reports_bad_files(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    cache = CandidateCache(ws)
    first, errors = cache.load()
    assert errors == [] and len(first) == 3
    assert [v.candidate.id for v in first] == [c.id for c in CandidateQueue(ws).list()]
    changed, kept, broken = first
    CandidateQueue(ws).reject(changed.candidate.id, why="changed for the cache test")
    (broken.candidate.dir / "candidate.yaml").write_text("id: [unclosed\n")
    second, errors = cache.load()
    by_id = {v.candidate.id: v for v in second}
    assert by_id[kept.candidate.id] is kept  # untouched: served from the cache
    assert by_id[changed.candidate.id].candidate.status == "rejected"
    assert broken.candidate.id not in by_id
    (error,) = errors
    assert "candidate.yaml" in error and "\n" not in error


def test_a_full_load_takes_unchanged_candidates_from_the_listing_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workbench's first load of a long queue parses no candidate.yaml the listing index
    holds as it is on disk (thousands of YAML parses took seconds), whichever view loads first
    (the overview's loads are incremental); a file edited since, and only that one, is read
    again; a broken one is named once while the rest still show."""
    import engine.core.candidates as candidates
    from engine.core import fsutil
    from engine.views.rows import FROM_INDEX_AFTER

    # files just written are read again until they settle (engine.core.candidates): a queue
    # opened in the workbench has been there a while
    monkeypatch.setattr(fsutil, "SETTLED_AFTER_S", 0.0)
    ws = build_workspace(tmp_path / "ws", candidates=FROM_INDEX_AFTER + 1)
    parsed: list[str] = []
    real = candidates.load_record

    def counted(folder: Path) -> candidates.CandidateRecord:
        parsed.append(folder.name)
        return real(folder)

    monkeypatch.setattr(candidates, "load_record", counted)
    monkeypatch.setattr("engine.core.queue.load_record", counted)
    first, errors = CandidateCache(ws).load()  # no index yet: each file once, to build it
    assert errors == [] and sorted(parsed) == sorted(v.candidate.id for v in first)
    parsed.clear()
    again, errors = CandidateCache(ws).load(incremental=True)  # a new workbench's overview
    assert errors == [] and parsed == []
    assert [v.candidate for v in again] == [v.candidate for v in first]
    assert [v.gates for v in again] == [v.gates for v in first]
    edited_id, broken_id = first[0].candidate.id, first[1].candidate.id
    path = ws.candidates_dir / edited_id / "candidate.yaml"
    path.write_text(path.read_text().replace("status: pending_approval", "status: dismissed"))
    (ws.candidates_dir / broken_id / "candidate.yaml").write_text("id: [unclosed\n")
    parsed.clear()
    third, errors = CandidateCache(ws).load()
    by_id = {v.candidate.id: v.candidate for v in third}
    assert by_id[edited_id].status == "dismissed" and broken_id not in by_id
    assert len(by_id) == len(first) - 1
    (error,) = errors
    assert broken_id in error and "candidate.yaml" in error
    assert sorted(set(parsed)) == sorted([edited_id, broken_id])


def test_incremental_loads_look_only_at_touched_and_new_candidates(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    cache = CandidateCache(ws)
    first, _ = cache.load()
    changed, kept, _unproven = first
    queue = CandidateQueue(ws)
    queue.reject(changed.candidate.id, why="the watcher saw this one")
    queue.reject(kept.candidate.id, why="the watcher was not told of this one")
    # Not touched: an incremental load trusts its cache and re-reads nothing.
    assert cache.load(incremental=True)[0] == first
    cache.touched([changed.candidate.id])
    by_id = {v.candidate.id: v for v in cache.load(incremental=True)[0]}
    assert by_id[changed.candidate.id].candidate.status == "rejected"
    assert by_id[kept.candidate.id] is kept
    # A new folder moves the queue folder's mtime: found without being touched.
    text = ws.skill_path(SKILL).read_text()
    new = submit_candidate(queue, text, "Arrived later", "v1")
    assert new.id in {v.candidate.id for v in cache.load(incremental=True)[0]}
    # A full load checks every candidate's files again.
    by_id = {v.candidate.id: v for v in cache.load()[0]}
    assert by_id[kept.candidate.id].candidate.status == "rejected"
