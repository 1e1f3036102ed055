"""Which pane a changed workspace file concerns.

The workbench watches the whole workspace (watchfiles; bursts are coalesced by its debounce) and
maps each batch of changed paths to the areas to reload, so a CLI process writing a candidate
refreshes the queue and nothing else. Lock files, temp files of atomic writes and the agents'
run folders (hundreds of files per evaluation, shown through their session logs instead) are
ignored before they reach Python.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from watchfiles import Change, DefaultFilter

Area = Literal["queue", "skills", "sessions", "scoreboard", "snapshots", "config"]

_TOP_LEVEL_AREAS: dict[str, tuple[Area, ...]] = {
    "candidates": ("queue",),
    "history": ("skills",),
    "skills": ("skills",),
    "sessions": ("sessions",),
    "benchmarks": ("scoreboard",),
    "snapshots": ("snapshots", "skills"),
    "skillsmith.yaml": ("config", "skills"),
}
_IGNORED_TOP = {"runs", "vault", "experiments", ".skillsmith.lock"}


def _is_temporary(name: str) -> bool:
    """Names of half-written files (fsutil's ``.<name>.*.tmp``, the store's ``.tmp-*``)."""
    return name.startswith(".") and (
        name.endswith(".tmp") or name.startswith((".tmp-", ".current."))
    )


def relevant(root: Path, path: Path) -> bool:
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return False
    if not parts or parts[0] in _IGNORED_TOP:
        return False
    return not _is_temporary(parts[-1])


def areas_of(root: Path, paths: Iterable[Path]) -> set[Area]:
    """The panes to reload for a batch of changed paths."""
    areas: set[Area] = set()
    for path in paths:
        if not relevant(root, path):
            continue
        top = path.relative_to(root).parts[0]
        areas.update(_TOP_LEVEL_AREAS.get(top, ()))
    return areas


def candidates_of(root: Path, paths: Iterable[Path]) -> set[str]:
    """The candidate folders a batch touched (the queue re-reads only those)."""
    found = set()
    for path in paths:
        if relevant(root, path):
            parts = path.relative_to(root).parts
            if len(parts) >= 2 and parts[0] == "candidates":
                found.add(parts[1])
    return found


class WorkspaceFilter(DefaultFilter):
    """watchfiles' default ignores (.git, editor swap files …) plus the workspace's own noise."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def __call__(self, change: Change, path: str) -> bool:
        return super().__call__(change, path) and relevant(self.root, Path(path))
