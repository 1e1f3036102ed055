"""Writers in several threads of one process (the TUI runs engine jobs in workers).

``Workspace.lock`` excludes other threads of the process as it does other processes; if it
did not, one worker's half-built version folder would look like a crash leftover to another
thread opening the store, which would delete it mid-publish.
"""

from __future__ import annotations

import threading

from engine.core.queue import CandidateQueue
from engine.core.snapshots import create_snapshot, list_snapshots
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from tests.store_helpers import leftovers, make_skill


def test_publishers_readers_and_snapshots_in_threads(workspace: Workspace) -> None:
    base = "".join(f"{i}. run `grep -n x{i}`\n" for i in range(3000))
    make_skill(workspace, "t", base)
    SkillStore(workspace, "t").ensure_adopted()
    errors: list[BaseException] = []
    stop = threading.Event()

    def guarded(work: object) -> object:
        def run() -> None:
            try:
                work()  # type: ignore[operator]
            except BaseException as exc:  # reported below, with the thread's traceback
                errors.append(exc)
                stop.set()

        return run

    def publisher() -> None:
        store = SkillStore(workspace, "t")
        for n in range(15):
            store.publish(base + f"round {n}\n", why=f"round {n}")
        stop.set()

    def reader() -> None:
        while not stop.is_set():
            store = SkillStore(workspace, "t")  # opening checks for leftovers every time
            current = store.current()
            assert current is not None
            assert store.read(current).startswith(base)
            CandidateQueue(workspace).list()

    def snapshotter() -> None:
        while not stop.is_set():
            create_snapshot(workspace, note="thread")

    threads = [
        threading.Thread(target=guarded(f)) for f in (publisher, reader, reader, snapshotter)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    store = SkillStore(workspace, "t")
    assert store.current() == "v15" and workspace.version() == 15
    assert len(store.audit()) == 16 and leftovers(workspace) == []
    assert workspace.skill_path("t").read_text() == base + "round 14\n"
    assert list_snapshots(workspace)
