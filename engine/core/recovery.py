"""Finishing what a killed process left half-done, once, when a workspace is opened.

Three writers keep intent journals: a restore (``.restore.json``), each skill's store
(``history/<skill>/.pending.json``) and the queue (``candidates/.pending.json``). Each one rolls its
own change forward when it is next used, but a restore killed between its two renames of
``skillsmith.yaml`` leaves no configuration at all, and then no command would get as far as using
anything. So opening a workspace (``Workspace.at``) replays every journal it finds first; the
check there is a few ``stat`` calls when nothing is pending.
"""

from __future__ import annotations

from engine.core.errors import LockError
from engine.core.queue import CandidateQueue
from engine.core.snapshots import recover
from engine.core.store import stores_of
from engine.core.workspace import CONFIG_NAME, Workspace


def recover_workspace(ws: Workspace) -> None:
    """Replay every journal of ``ws``: the restore first (it brings the configuration back).

    Without a configuration a restore is half-way: wait for the lock like any writer (its holder
    may be that restore, alive). Otherwise a held lock means a live writer that finishes its own
    change, and opening goes on.
    """
    missing = not (ws.root / CONFIG_NAME).is_file()
    try:
        with ws.lock("recover", wait_s=None if missing else 0):
            recover(ws)
            if not (ws.root / CONFIG_NAME).is_file():
                return  # not a workspace after all; Workspace.at says so
            for _store in stores_of(ws):
                pass  # opening a store finishes its interrupted change
            CandidateQueue(ws)  # and so does opening the queue
    except LockError:
        if missing:
            raise
