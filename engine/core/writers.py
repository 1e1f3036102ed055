"""Files written on threads beside the reader that produces them.

A restore reads one tar stream in order on its main thread: parsing and checking each header is
Python, creating and writing each file is system calls. On one thread the parsing waits for the
writes and the writes for the parsing, and on a busy machine that one thread gets one share of
the CPU, where ``tar -xz`` and its gzip are two processes with a share each. System calls release
the GIL, so writes handed to a few threads overlap the parsing (and each other) the way tar's
writes overlap gzip's inflating.

Memory stays bounded: at most ``max_bytes`` of file contents wait for a thread; past that the
reader waits for the oldest write. The first write that fails is raised to the reader, at its
next hand-over or when it leaves; leaving always waits for every write, so nothing is written
into a folder after the reader has moved on (a refused restore deletes its staging folder).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

THREADS = 2
MAX_BYTES = 32 * 1024 * 1024


class Writers:
    """Run writes on a few threads; use as a context manager."""

    def __init__(self, threads: int = THREADS, max_bytes: int = MAX_BYTES) -> None:
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="write")
        self._waiting: deque[tuple[Future[None], int]] = deque()
        self._held = 0
        self._max = max_bytes

    def __enter__(self) -> Writers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is None:
                while self._waiting:
                    self._settle()
        finally:  # on an error, the writes not begun are dropped and the running ones finish
            self._pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, write: Callable[[], None], size: int) -> None:
        """Run ``write`` (holding ``size`` bytes) on a thread; raises an earlier write's error."""
        while self._waiting and (self._held + size > self._max or self._waiting[0][0].done()):
            self._settle()
        self._waiting.append((self._pool.submit(write), size))
        self._held += size

    def _settle(self) -> None:
        future, size = self._waiting.popleft()
        self._held -= size
        future.result()
