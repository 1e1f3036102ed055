"""A bounded job queue with worker threads that never drops a job.

Review is background work: the caller (a watcher noticing a finished session, a batch of files)
hands a job over and goes on. The queues are bounded so a burst cannot pile up unbounded model
calls; when a queue is full — or the workers are not running — the job runs *inline*, in the
caller's thread, instead of being dropped (tRPC-Agent-Go's fallback): learning may then delay the
caller, but no session goes unreviewed. Inline runs are counted, because a steady stream of them
says the workers are undersized.

Jobs with the same key (the session file) always go to the same worker, so their order is kept.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

J = TypeVar("J")
R = TypeVar("R")

_STOP = object()


def fnv1a_32(text: str) -> int:
    """A stable hash (Python's ``hash`` of a str changes per process)."""
    value = 0x811C9DC5
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


@dataclass
class WorkerStats:
    submitted: int = 0
    queued: int = 0
    inline: int = 0
    completed: int = 0
    failed: int = 0

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


class BoundedWorkers(Generic[J, R]):
    """``workers`` threads, each with its own queue of at most ``queue_size`` jobs.

    ``on_done(job, result, error)`` is called once per job, from whichever thread ran it; an
    exception escaping ``handle`` is counted as failed and passed as ``error``, never raised.
    """

    def __init__(
        self,
        handle: Callable[[J], R],
        *,
        workers: int = 1,
        queue_size: int = 10,
        key: Callable[[J], str] = str,
        on_done: Callable[[J, R | None, BaseException | None], None] | None = None,
    ) -> None:
        self._handle = handle
        self._key = key
        self._on_done = on_done
        self._queues: list[queue.Queue[object]] = [
            queue.Queue(maxsize=max(1, queue_size)) for _ in range(max(1, workers))
        ]
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.stats = WorkerStats()
        self._running = False

    def start(self) -> BoundedWorkers[J, R]:
        with self._lock:
            if self._running:
                return self
            self._running = True
            self._threads = [
                threading.Thread(target=self._loop, args=(q,), name=f"review-{i}", daemon=True)
                for i, q in enumerate(self._queues)
            ]
        for thread in self._threads:
            thread.start()
        return self

    def __enter__(self) -> BoundedWorkers[J, R]:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, job: J) -> bool:
        """Queue ``job``; True when queued, False when it ran inline (queue full or stopped)."""
        with self._lock:
            self.stats.submitted += 1
            target = self._queues[fnv1a_32(self._key(job)) % len(self._queues)]
            if self._running:
                try:
                    target.put_nowait(job)
                    self.stats.queued += 1
                    return True
                except queue.Full:
                    pass
            self.stats.inline += 1
        self._run(job)
        return False

    def close(self) -> None:
        """Let the queued jobs finish, then stop the threads."""
        with self._lock:
            if not self._running:
                return
            self._running = False
        for q in self._queues:
            q.put(_STOP)
        for thread in self._threads:
            thread.join()

    def _loop(self, jobs: queue.Queue[object]) -> None:
        while True:
            job = jobs.get()
            if job is _STOP:
                return
            self._run(job)  # type: ignore[arg-type]

    def _run(self, job: J) -> None:
        result: R | None = None
        error: BaseException | None = None
        try:
            result = self._handle(job)
        except Exception as exc:
            error = exc
        with self._lock:
            if error is None:
                self.stats.completed += 1
            else:
                self.stats.failed += 1
        if self._on_done is not None:
            self._on_done(job, result, error)
