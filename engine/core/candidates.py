"""A candidate's record (``candidate.yaml``) and the listing index of all of them.

A queue of thousands must list at once, so a listing reads one compact file,
``candidates/.index.jsonl``, instead of every candidate.yaml — as git reads its index before any
file. Each entry is a record this module parsed and checked, keyed by its candidate.yaml's mtime
and size: a listing stats every candidate.yaml (a hand edit shows at once), parses only those
that changed, and rewrites the index when anything did. Its first line holds each candidate's
head (what a listing line shows), its second the whole records, so a listing of lines never
decodes histories. The index is a cache: unreadable or missing it is rebuilt, and a folder that
cannot take it is listed from the files each time.

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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.core.errors import FormatError, SkillsmithError
from engine.core.fsutil import atomic_write_bytes, settled_since
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

INDEX = ".index.jsonl"
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
# A head: what a listing shows and sorts by. The index's first line holds only heads, so a
# listing of thousands decodes less than the whole records (its second line holds those) and
# formats nothing: ``line`` is the listing's text up to its flags, ``brief`` the summary
# cut to fit a line. The rest is what those flags need (whether the candidate is stale).
HEAD_FIELDS = (
    "id",
    "created_at",
    "status",
    "skill",
    "operation",
    "parent_version",
    "line",
    "brief",
)
COLUMN = {name: at for at, name in enumerate(HEAD_FIELDS, start=2)}  # after [mtime_ns, size]
BRIEF = 60  # characters of a summary on a listing line; `queue show` prints it whole
UNSETTLED = (-1, -1)  # the stamp of a candidate.yaml indexed too soon after it changed
_CREATED, _ID = FIELDS.index("created_at"), FIELDS.index("id")
_HEAD_CREATED, _HEAD_ID = COLUMN["created_at"], COLUMN["id"]


def _head(stamp: list[Any], values: list[Any]) -> list[Any]:
    """A candidate's index head from its stamp and its record's values (in ``FIELDS`` order)."""
    record = dict(zip(FIELDS, values, strict=True))
    delta, parent, summary = record["delta_score"], record["parent_version"], record["summary"]
    line = (
        f"{record['id']}  {record['status']:<16} {record['skill']:<20} "
        f"{record['operation']:<6} {parent or '-':<5} "
        f"{'' if delta is None else f'{delta:+.3f}':>7} {record['content_hash'][:12]}"
        f"{' unproven' if record['unproven'] else ''}"
    )
    if len(summary) > BRIEF or "\n" in summary:
        from textwrap import shorten  # here: most summaries fit

        summary = shorten(summary, BRIEF, placeholder=" …")
    return [
        *stamp,
        *(record[name] for name in HEAD_FIELDS[:-2]),
        line,
        summary,
    ]


def load_record(folder: Path) -> CandidateRecord:
    """A candidate folder's candidate.yaml, checked (one-line errors naming file and field)."""
    path = folder / RECORD
    record = from_mapping(CandidateRecord, load_yaml(path), path)
    if record.id != folder.name:
        raise FormatError(path, "id", f"expected {folder.name!r} (the folder name)")
    return record


def listing(folder: Path, errors: list[str] | None = None) -> list[Record]:
    """Every candidate's record (as :meth:`CandidateRecord.record` gives it), oldest first.
    With ``errors``, a candidate.yaml that cannot be read is named there and left out; without,
    its error stops the listing."""
    found = _indexed(folder, records=True, errors=errors)
    return [dict(zip(FIELDS, values, strict=True)) for values in found]


def refresh_index(folder: Path) -> list[str]:
    """Bring the index up to date with the files, leaving out (and naming, one line each) any
    candidate.yaml that cannot be read: a viewer shows the rest and the error."""
    errors: list[str] = []
    rows(folder, errors)
    return errors


def rows(folder: Path, errors: list[str] | None = None) -> list[list[Any]]:
    """Every candidate's head, oldest first: its candidate.yaml's ``[mtime_ns, size]`` then the
    values of ``HEAD_FIELDS`` (``COLUMN`` finds one). A listing of thousands that shows a few
    fields reads no more than those. ``errors``: as for :func:`listing`."""
    return _indexed(folder, records=False, errors=errors)


def _indexed(folder: Path, *, records: bool, errors: list[str] | None = None) -> list[list[Any]]:
    """Heads, or whole records' values, of every candidate, oldest first.

    The index is two JSON lines: ``{"fields": HEAD_FIELDS, "candidates": {folder: head}}``, each
    head keyed by its candidate.yaml's time and size, then ``{"fields": FIELDS, "records":
    {folder: [values]}}``. Values in the order of the fields rather than one mapping each halve
    the time to read it (a key costs as much to decode as its value), and another order of
    fields is rebuilt. A listing of heads reads the first line only.
    """
    if not folder.is_dir():
        return []
    with _collector_paused():
        return _read_through(folder, records, errors)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The index's lists hold no cycles: the collector's passes over thousands of them as they
    are decoded cost a fifth of a listing, and find nothing."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def indexed_records(folder: Path) -> dict[str, tuple[int, int, Record]]:
    """What the index holds for each candidate folder: its candidate.yaml's ``(mtime_ns, size,
    record)`` when indexed. Nothing is parsed or written: a viewer that stats the files itself
    takes a record whose stamp still matches and parses only the rest, one error per bad file
    (a listing's one bad file would stop it)."""
    with _collector_paused():
        heads, stored = _read_index(folder / INDEX, records=True)
        found: dict[str, tuple[int, int, Record]] = {}
        for name, values in (stored or {}).items():
            head = heads.get(name)
            whole = type(values) is list and len(values) == len(FIELDS)
            if whole and type(head) is list and len(head) >= 2:
                found[name] = (head[0], head[1], dict(zip(FIELDS, values, strict=True)))
        return found


def _read_through(folder: Path, records: bool, errors: list[str] | None) -> list[list[Any]]:
    """:func:`_indexed`'s work; with ``errors``, a candidate.yaml that cannot be read is named
    there and left out, else its error stops the listing."""
    path = folder / INDEX
    heads, stored = _read_index(path, records=records)
    on_disk: list[str] = []
    changed: dict[str, list[Any]] = {}  # the stamps of candidate.yaml files changed since indexed
    width = len(HEAD_FIELDS) + 2
    for name, st in _records_on_disk(folder):
        on_disk.append(name)
        hit = heads.get(name)
        if (
            type(hit) is not list
            or len(hit) != width
            or hit[0] != st.st_mtime_ns
            or hit[1] != st.st_size
        ):
            # A file written a moment ago may be written again within its timestamp's tick,
            # size and all ("racy git"): it is indexed under a stamp no file has, so it is read
            # again until it settles. Judged by its mtime, which a copy that keeps file times
            # keeps too, so a copied queue is not read twice.
            calm = settled_since(st.st_mtime_ns)
            changed[name] = [st.st_mtime_ns, st.st_size] if calm else list(UNSETTLED)
    if not (records or changed or len(on_disk) != len(heads)):
        found = list(heads.values())
        found.sort(key=_head_order)  # one pass over an index written in order
        return found
    if stored is None:
        stored = _read_index(path, records=True)[1] or {}
    fresh: dict[str, list[Any]] = {}
    whole: dict[str, list[Any]] = {}
    parsed = False
    for name in on_disk:
        stamp = changed.get(name)
        values = stored.get(name) if stamp is None else None
        if type(values) is not list or len(values) != len(FIELDS):  # changed, or edited by hand
            try:
                values = list(load_record(folder / name).record().values())
            except SkillsmithError as exc:
                if errors is None:
                    raise
                errors.append(str(exc))
                continue
            parsed = True
            fresh[name] = _head(stamp or heads[name][:2], values)
        else:
            fresh[name] = heads[name]
        whole[name] = values
    if parsed or fresh.keys() != heads.keys():
        _write_index(path, fresh, whole)
    found = list(whole.values()) if records else list(fresh.values())
    found.sort(key=_record_order if records else _head_order)
    return found


def _records_on_disk(folder: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Each candidate folder's name and its candidate.yaml's stat (one call each, relative to
    the open folder: a full path per candidate costs a tenth more)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in os.listdir(fd):
            # a candidate's name starts with a letter or digit; a dot-name is a stage or a temp
            if name[0] == ".":
                continue
            try:
                yield name, os.stat(f"{name}/{RECORD}", dir_fd=fd)
            except (FileNotFoundError, NotADirectoryError):
                continue
    finally:
        os.close(fd)


def _write_index(path: Path, heads: dict[str, list[Any]], records: dict[str, list[Any]]) -> None:
    order = sorted(records, key=lambda name: _record_order(records[name]))
    # compact: at thousands of candidates, indentation alone doubles the time to read it
    lines = (
        {"fields": HEAD_FIELDS, "candidates": {name: heads[name] for name in order}},
        {"fields": FIELDS, "records": {name: records[name] for name in order}},
    )
    text = "".join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines
    )
    with contextlib.suppress(OSError):  # a folder that cannot take it is listed from the files
        atomic_write_bytes(path, text.encode("utf-8"), sync_dir=False)
        (path.parent / ".index.json").unlink(missing_ok=True)  # the earlier one-line index


def _head_order(head: list[Any]) -> tuple[Any, Any]:
    return head[_HEAD_CREATED], head[_HEAD_ID]


def _record_order(values: list[Any]) -> tuple[Any, Any]:
    return values[_CREATED], values[_ID]


def _read_index(path: Path, *, records: bool) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The index's heads by candidate folder, and its records when asked: empty when
    unreadable or when its fields are not this version's."""
    try:
        with path.open("rb") as fh:
            head_line = fh.readline()
            record_line = fh.readline() if records else None
        heads = _section(head_line, HEAD_FIELDS, "candidates")
        stored = None if record_line is None else _section(record_line, FIELDS, "records")
    except (OSError, ValueError):
        return {}, {} if records else None
    return heads, stored


def _section(line: bytes, fields: tuple[str, ...], key: str) -> dict[str, Any]:
    data = json.loads(line)
    if not isinstance(data, dict) or data.get("fields") != list(fields):
        return {}
    entries = data.get(key)
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
