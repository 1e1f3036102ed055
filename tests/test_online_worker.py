"""The bounded review queue (inline when full, never dropped) and the watched folder."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.core.workspace import Workspace
from engine.loops.online import BoundedWorkers, OnlineLearner, ReviewResult, watch_folder
from engine.loops.online.worker import fnv1a_32
from tests.llm_server import MessagesServer, Reply
from tests.online_helpers import CLAUDE, CLAUDE_FOLLOWUP, PLAIN, append, decision, model_reviewer

WAIT_S = 20.0


def test_full_queue_runs_the_job_inline_in_the_caller() -> None:
    started, release = threading.Event(), threading.Event()
    ran: list[tuple[str, str]] = []

    def handle(job: str) -> str:
        ran.append((job, threading.current_thread().name))
        if job == "first":
            started.set()
            assert release.wait(WAIT_S)
        return job.upper()

    done: list[tuple[str, str | None]] = []
    workers = BoundedWorkers(
        handle, workers=1, queue_size=1, on_done=lambda j, r, e: done.append((j, r))
    ).start()
    assert workers.submit("first")
    assert started.wait(WAIT_S)  # the worker is busy with it
    assert workers.submit("second")  # fills the one queue slot
    assert not workers.submit("third")  # full: runs here, now
    assert ran[-1] == ("third", threading.current_thread().name)
    release.set()
    workers.close()

    assert sorted(done) == [("first", "FIRST"), ("second", "SECOND"), ("third", "THIRD")]
    stats = workers.stats.to_dict()
    assert stats == {"submitted": 3, "queued": 2, "inline": 1, "completed": 3, "failed": 0}


def test_stopped_workers_run_inline_and_errors_are_counted() -> None:
    def handle(job: int) -> int:
        if job < 0:
            raise ValueError("negative")
        return job * 2

    errors: list[BaseException | None] = []
    workers: BoundedWorkers[int, int] = BoundedWorkers(
        handle, key=str, on_done=lambda j, r, e: errors.append(e)
    )
    assert not workers.submit(1)  # never started: inline
    assert not workers.submit(-1)
    assert workers.stats.inline == 2 and workers.stats.failed == 1
    assert isinstance(errors[1], ValueError)


def test_one_key_always_goes_to_one_worker() -> None:
    assert fnv1a_32("") == 0x811C9DC5
    assert fnv1a_32("a") == 0xE40C292C  # the published FNV-1a test vector
    seen: dict[str, set[str]] = {}
    lock = threading.Lock()

    def handle(job: str) -> None:
        with lock:
            seen.setdefault(job.split("#")[0], set()).add(threading.current_thread().name)

    with BoundedWorkers(handle, workers=3, queue_size=50, key=lambda j: j.split("#")[0]) as w:
        for n in range(30):
            w.submit(f"session-{n % 5}#{n}")
    assert all(len(threads) == 1 for threads in seen.values())


def test_workers_serialise_reviews_of_one_session(
    workspace: Workspace, messages_server: MessagesServer, tmp_path: Path
) -> None:
    """Many jobs for one file, some inline: the model still sees each segment once."""
    session = tmp_path / CLAUDE.name
    session.write_bytes(CLAUDE.read_bytes())
    messages_server.respond_with(lambda req: Reply(text=decision(skip_reason="nothing")))
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))
    results: list[ReviewResult] = []
    with BoundedWorkers(
        learner.review, workers=2, queue_size=1, on_done=lambda j, r, e: results.append(r)
    ) as workers:
        for _ in range(6):
            workers.submit(session)
    assert len(results) == 6
    assert sorted(r.status for r in results if r) == ["skipped"] + ["unchanged"] * 5
    assert len(messages_server.message_requests) == 1


def test_watched_folder_reviews_new_and_grown_files(
    workspace: Workspace, messages_server: MessagesServer, tmp_path: Path
) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / "old.jsonl").write_bytes(PLAIN.read_bytes())
    messages_server.respond_with(lambda req: Reply(text=decision(skip_reason="nothing")))
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))
    results: list[ReviewResult] = []
    lock = threading.Lock()

    def submit(path: Path) -> None:
        result = learner.review(path)
        with lock:
            results.append(result)

    def reviewed(name: str, lines: tuple[int, int]) -> bool:
        with lock:
            return any(
                Path(r.source).name == name
                and (r.first_line, r.last_line) == lines
                and r.status == "skipped"
                for r in results
            )

    stop = threading.Event()
    thread = threading.Thread(
        target=watch_folder,
        args=(folder, submit),
        kwargs={"stop": stop, "debounce_ms": 100},
    )
    thread.start()
    try:
        _wait(lambda: reviewed("old.jsonl", (1, 11)), results)
        live = folder / "sub" / "live.jsonl"
        live.parent.mkdir()
        live.write_bytes(CLAUDE.read_bytes())
        _wait(lambda: reviewed("live.jsonl", (1, 21)), results)
        append(live, CLAUDE_FOLLOWUP)
        _wait(lambda: reviewed("live.jsonl", (22, 26)), results)
    finally:
        stop.set()
        thread.join(WAIT_S)
    assert not thread.is_alive()
    assert len(messages_server.message_requests) == 3


def _wait(condition: Callable[[], bool], seen: list[ReviewResult]) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    done = [(Path(r.source).name, r.status, r.first_line, r.last_line) for r in seen]
    pytest.fail(f"the watcher did not review the file in time; reviews: {done}")
