"""A candidate's record (``candidate.yaml``) and the listing index of all of them.

A queue of thousands must list at once, so a listing reads one compact file,
``candidates/.index.json``, instead of every candidate.yaml — as git reads its index before any
file. Each entry is a record this module parsed and checked, keyed by its candidate.yaml's mtime
and size: a listing stats every candidate.yaml (a hand edit shows at once), parses only those
that changed, and rewrites the index when anything did. The index is a cache: unreadable or
missing it is rebuilt, and a folder that cannot take it is listed from the files each time.

This module holds only what a listing needs (the record, the index, whether an open candidate
is stale), so ``skillsmith queue`` does not load the queue's decision machinery (the version
store, the SKILL.md parser, the secret scanner): at thousands of candidates, loading that cost
more than the listing itself. Decisions live in engine.core.queue.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.core.errors import FormatError
from engine.core.fsutil import atomic_write_bytes
from engine.core.pointer import check_name, read_pointer
from engine.core.schema import from_mapping, load_yaml, to_mapping
from engine.core.workspace import Workspace

Status = Literal[
    "proposed",
    "rejected",
    "pending_eval",
    "pending_approval",
    "approved",
    "published",
    "dismissed",
    "superseded",
]
Source = Literal["evolve", "optimize", "optimize-agent", "review", "manual", "curate"]
Operation = Literal["update", "create", "delete"]
Record = dict[str, Any]

INDEX = ".index.json"
RECORD = "candidate.yaml"
OPEN = ("proposed", "pending_eval", "pending_approval")  # still waiting for a decision


@dataclass
class StatusChange:
    status: Status
    at: str
    why: str | None = None


@dataclass
class CandidateRecord:
    """The fields of ``candidate.yaml`` (the brief's Candidate format)."""

    id: str
    skill: str
    source: Source
    operation: Operation
    status: Status
    parent_version: str | None
    summary: str
    delta_score: float | None = None
    unproven: bool = False
    reason: str | None = None
    root_causes: list[str] = field(default_factory=list)
    rule_id: str | None = None
    created_at: str = ""
    history: list[StatusChange] = field(default_factory=list)
    content_hash: str = ""

    def record(self) -> Record:
        return {
            f.name: to_mapping(getattr(self, f.name)) for f in dataclasses.fields(CandidateRecord)
        }


FIELDS = tuple(f.name for f in dataclasses.fields(CandidateRecord))
COLUMN = {name: at for at, name in enumerate(FIELDS)}
_CREATED, _ID = COLUMN["created_at"], COLUMN["id"]


def load_record(folder: Path) -> CandidateRecord:
    """A candidate folder's candidate.yaml, checked (one-line errors naming file and field)."""
    path = folder / RECORD
    record = from_mapping(CandidateRecord, load_yaml(path), path)
    if record.id != folder.name:
        raise FormatError(path, "id", f"expected {folder.name!r} (the folder name)")
    return record


def listing(folder: Path) -> list[Record]:
    """Every candidate's record (as :meth:`CandidateRecord.record` gives it), oldest first."""
    return [dict(zip(FIELDS, row, strict=True)) for row in rows(folder)]


def rows(folder: Path) -> list[list[Any]]:
    """Every candidate's values in the order of ``FIELDS`` (``COLUMN`` finds one), oldest first:
    a listing of thousands that shows a few fields skips making a mapping of each.

    The index holds ``{"fields": [...], "candidates": {folder: [mtime_ns, size, [values]]}}``:
    values in the order of ``fields`` rather than one mapping each, which halves the time to
    read it (a key costs as much to decode as its value); another order of fields is rebuilt.
    """
    if not folder.is_dir():
        return []
    # The index's lists and records hold no cycles: the collector's passes over thousands of
    # them as they are decoded cost a fifth of the listing, and find nothing.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _rows(folder)
    finally:
        if paused:
            gc.enable()


def _rows(folder: Path) -> list[list[Any]]:
    index = _read_index(folder / INDEX)
    fresh: dict[str, list[Any]] = {}
    changed = False
    width = len(FIELDS)
    with os.scandir(folder) as entries:
        for entry in entries:
            # a candidate's name starts with a letter or digit; a dot-name is a stage or a temp
            if entry.name[0] == "." or not entry.is_dir():
                continue
            try:
                st = os.stat(f"{entry.path}/{RECORD}")  # a Path per candidate costs more
            except FileNotFoundError:
                continue
            hit = index.get(entry.name)
            if (
                type(hit) is list
                and len(hit) == 3
                and hit[0] == st.st_mtime_ns
                and hit[1] == st.st_size
                and type(hit[2]) is list
                and len(hit[2]) == width
            ):
                fresh[entry.name] = hit
                continue
            values = list(load_record(folder / entry.name).record().values())
            fresh[entry.name] = [st.st_mtime_ns, st.st_size, values]
            changed = True
    if changed or len(fresh) != len(index):
        fresh = dict(sorted(fresh.items(), key=lambda item: _oldest_first(item[1][2])))
        # compact: at thousands of candidates, indentation alone doubles the time to read it
        data = {"fields": FIELDS, "candidates": fresh}
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        with contextlib.suppress(OSError):
            atomic_write_bytes(folder / INDEX, text.encode("utf-8"), sync_dir=False)
        index = fresh  # else the index holds the same entries, in the order it was written
    found = [entry[2] for entry in index.values()]
    found.sort(key=_oldest_first)  # one pass over an index written in order
    return found


def _oldest_first(row: list[Any]) -> tuple[Any, Any]:
    return row[_CREATED], row[_ID]


def _read_index(path: Path) -> dict[str, Any]:
    """The index's entries by candidate folder; none when it is unreadable or its fields are
    not this version's."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("fields") != list(FIELDS):
        return {}
    entries = data.get("candidates")
    return entries if isinstance(entries, dict) else {}


def behind(
    ws: Workspace,
    skill: str,
    operation: str,
    status: str,
    parent_version: str | None,
    currents: dict[str, str | None],
) -> str | None:
    """The version an open update candidate is behind (None: it is not stale); ``currents``
    holds each skill's current version once looked up, so a listing reads each pointer once."""
    if operation != "update" or status not in OPEN:
        return None
    if skill not in currents:
        currents[skill] = read_pointer(ws.history_dir / check_name("skill", skill))
    current = currents[skill]
    return current if current != parent_version else None
