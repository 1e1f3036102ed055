"""Watch a folder of session transcripts and hand every new or grown file to the reviewer.

Point it at ``~/.claude/projects/<project>/`` or at an agent's export folder: each ``*.jsonl``
that appears or grows becomes a review job. The watcher does not need to know whether a session
is finished — the review cursor hands out only the lines added since the last review, and only
complete lines — so a transcript that is still being written is simply reviewed in segments.
Files already present when watching starts are offered once up front.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from watchfiles import Change, watch

from engine.core.errors import SkillsmithError

SUFFIX = ".jsonl"
TICK_MS = 500  # how often an idle watcher wakes (to notice ``stop`` and do its first scan)


def session_files(root: Path) -> Iterator[Path]:
    """Every transcript under ``root`` (a file is itself), in a stable order."""
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise SkillsmithError(f"{root}: no such session file or folder")
    yield from sorted(p for p in root.rglob(f"*{SUFFIX}") if p.is_file())


def _wanted(change: Change, path: str) -> bool:
    # a new folder is wanted too: files created in it before its watch was set up send no event
    return change != Change.deleted and (path.endswith(SUFFIX) or change == Change.added)


def watch_folder(
    folder: Path,
    submit: Callable[[Path], object],
    *,
    stop: threading.Event,
    initial: bool = True,
    debounce_ms: int = 800,
    poll: bool | None = None,
) -> int:
    """Submit changed transcripts under ``folder`` until ``stop`` is set; returns how many.

    ``debounce_ms`` groups the bursts of writes an agent makes into one look; ``poll`` forces
    polling (network and container file systems do not deliver events).
    """
    if not folder.is_dir():
        raise SkillsmithError(f"{folder}: not a folder to watch")
    count = 0
    pending_scan = initial
    # The first (possibly empty) batch arrives once the watcher runs: scanning then, not before,
    # leaves no gap in which a new file is neither scanned nor watched. A file seen by both is
    # offered twice, and its cursor makes the second offer a no-op.
    for changes in watch(
        folder,
        watch_filter=_wanted,
        debounce=debounce_ms,
        stop_event=stop,
        force_polling=poll,
        poll_delay_ms=200,
        rust_timeout=TICK_MS,
        yield_on_timeout=True,
        raise_interrupt=False,
    ):
        if pending_scan:
            pending_scan = False
            for path in session_files(folder):
                submit(path)
                count += 1
        for changed in sorted({Path(p) for _change, p in changes}):
            found = session_files(changed) if changed.is_dir() else iter([changed])
            for path in found:
                if path.is_file() and path.name.endswith(SUFFIX):
                    submit(path)
                    count += 1
    return count
