"""Finishing what a killed process left half-done, once, when a workspace is opened.

Three writers keep intent journals (engine.core.journal): a restore (``.restore.json``), each
skill's store (``history/<skill>/.pending.json``) and the queue (``candidates/.pending.json``).
A restore killed between its two renames of ``skillsmith.yaml`` leaves no configuration at all,
and then no command would get as far as using anything; a store or queue change left half-way
would be read as it stands. So opening a workspace (``Workspace.at``) replays every journal it
finds and removes the temp files of writes that never committed, before anything reads; the
check there is a few directory listings when nothing is pending. Constructors never recover: a
store or queue opened to be read changes nothing on disk.
"""

from __future__ import annotations

from engine.core.errors import FormatError, LockError, SkillsmithError
from engine.core.journal import is_leftover, remove_leftovers
from engine.core.queue import CandidateQueue
from engine.core.snapshots import recover
from engine.core.store import stores_of
from engine.core.workspace import CONFIG_NAME, IMPORT_STAGE, Workspace


def recover_workspace(ws: Workspace) -> None:
    """Replay every journal of ``ws``: the restore first (it brings the configuration back),
    then each store, then the queue (whose decisions publish through the stores).

    Without a configuration a restore is half-way: wait for the lock like any writer (its holder
    may be that restore, alive). Otherwise a held lock means a live writer that finishes its own
    change, and opening goes on. A queue decision that is still refused (a secret the snapshot
    will not carry) stays pending and does not stop the workspace from opening: the next
    decision reports it. A journal that fails its check stops opening with one line naming it.
    """
    missing = not (ws.root / CONFIG_NAME).is_file()
    try:
        with ws.lock("recover", wait_s=None if missing else 0):
            recover(ws)
            if not (ws.root / CONFIG_NAME).is_file():
                return  # not a workspace after all; Workspace.at says so
            for store in stores_of(ws):
                store.recover()
            # an import stages under the lock we hold: any stage left is a killed one's
            remove_leftovers(
                stage
                for folder in (ws.benchmarks_dir, ws.runs_dir)
                if folder.is_dir()
                for stage in folder.iterdir()
                if stage.name.startswith(IMPORT_STAGE)
            )
            # a publish killed while writing history/workspace.json (under the lock we hold)
            if ws.history_dir.is_dir():
                remove_leftovers(
                    p for p in ws.history_dir.iterdir() if p.is_file() and is_leftover(p.name)
                )
            try:
                CandidateQueue(ws).recover()
            except FormatError:
                raise
            except SkillsmithError:
                pass  # refused again; the decision stays pending for the next one to report
    except LockError:
        if missing:
            raise
