"""Crash-safe changes that span several files: the intent journal every writer shares.

A publish (version folder, pointer, live SKILL.md, workspace version, log lines), a queue
decision (candidate status, store publish, snapshot, decision line) and a restore (four items
swapped in) each touch several files, and a kill can land between any two of them. So each is
first written down whole, as one JSON intent in a journal file; then applied step by step, every
step safe to run twice; then the journal is unlinked. A kill leaves either no journal (the old
state, plus temp files nobody points at) or a journal that replaying rolls forward to the new
state — never a mix.

Replaying happens once, when a workspace is opened (engine.core.recovery), and by a writer that
finds a journal under the lock it just took (another process died after this one opened the
workspace). Never in a constructor: opening a store or the queue to read it changes nothing.

A journal is replayed without a person looking, so it is read back like untrusted input: each
writer passes the check that refuses an intent whose fields would move anything outside its own
folder, and a refused journal stays on disk for a person to look at.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from engine.core.errors import FormatError
from engine.core.fsutil import atomic_write_json, fsync_dir

Intent = dict[str, Any]
T = TypeVar("T")


def is_leftover(name: str) -> bool:
    """The temporary names of crash-safe writes (stages, pointer links, atomic-write temps):
    what a killed writer leaves behind and recovery removes; anything else belongs to someone."""
    return name.startswith((".tmp-", ".current.")) or (
        name.startswith(".") and name.endswith(".tmp")
    )


def remove_leftovers(paths: Iterable[Path]) -> None:
    """Delete what killed writers left (call with the workspace lock held: a live writer's
    stage looks the same)."""
    for path in list(paths):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


@dataclass(frozen=True)
class Journal:
    """One intent file and the check its content must pass before it is replayed.

    ``check(path, data)`` returns the intent or raises a :class:`FormatError` naming the field;
    it ends "remove the file if you did not write it", since only a person can tell a planted
    journal from a torn one.
    """

    path: Path
    check: Callable[[Path, Any], Intent]

    def pending(self) -> bool:
        return self.path.exists()

    def read(self) -> Intent | None:
        """The checked intent waiting here, or None when no change is pending."""
        try:
            data = json.loads(self.path.read_bytes().decode("utf-8"))
        except FileNotFoundError:
            return None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FormatError(
                self.path,
                None,
                f"expected a JSON intent ({exc}); remove the file if you did not write it",
            ) from None
        return self.check(self.path, data)

    def commit(self, intent: Intent, apply: Callable[[Intent], T]) -> T:
        """Write ``intent`` durably, apply it, then drop the journal.

        When ``apply`` raises, the journal stays: the change is then as far along as a kill at
        that point would have left it, and the writer settles it like one (replay or report).
        """
        atomic_write_json(self.path, intent)
        result = apply(intent)
        self.close()
        return result

    def replay(self, resume: Callable[[Intent], object]) -> bool:
        """Finish the change a killed writer left here; False when none was pending."""
        intent = self.read()
        if intent is None:
            return False
        resume(intent)
        self.close()
        return True

    def close(self) -> None:
        """The change is complete: unlink the journal and make the unlink durable."""
        self.path.unlink(missing_ok=True)
        fsync_dir(self.path.parent)
