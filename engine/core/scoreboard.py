"""The scoreboard: one record per evaluation, in ``benchmarks/<id>/scoreboard.yaml``.

The fields are PenguinHarness': a timestamp, the runtime (provider, model), a summary title and
summary, scores on 0–100 with two decimals (case = mean of its runs, evaluation = mean of its
cases), cost averages with six decimals that ignore unknown (null) costs, integer durations, and
per-run rows that link back to the session and run that produced them (DESIGN principle 8).

The file is history, kept as an append-only YAML block list (``engine.core.yaml_log``): a new record
is validated on its own and appended after the existing bytes, so earlier records are never
rewritten — not even re-read — and an evaluation costs the same in a project's first week as in
its third year. Readers parse record by record and cache by file identity, and a view that
shows only the headline of each record (the scoreboard pane) never parses the per-run rows.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import re
import statistics
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import yaml

from engine.core import yaml_log
from engine.core.errors import FormatError
from engine.core.fsutil import atomic_write_bytes, json_bytes
from engine.core.schema import from_mapping, parse_yaml, to_mapping
from engine.core.stamps import utc_now
from engine.core.workspace import CONFIG_NAME, Workspace

SCOREBOARD_NAME = "scoreboard.yaml"


@dataclass
class Runtime:
    provider: str
    model: str
    thinking_level: str | None = None


@dataclass
class RunEntry:
    score: float
    cost: float | None
    duration_ms: int
    session_id: str
    run_id: str
    run_index: int = 0


@dataclass
class CaseEntry:
    case_id: str
    score: float
    cost: float | None
    duration_ms: int
    runs: list[RunEntry]


@dataclass
class RecordHead:
    """A record without its per-case rows: what a list of evaluations shows."""

    timestamp: str
    runtime: Runtime
    summary_title: str
    summary: str
    score: float
    cost: float | None
    duration_ms: int
    run_id: str | None = None
    variant: str | None = None
    skills: dict[str, str] = field(default_factory=dict)
    # Written by Builder / Optimizer sessions: "formal_baseline" or "accepted" (None for a plain
    # evaluation), the session that wrote the record, and the agent-state version it scored.
    kind: str | None = None
    session_id: str | None = None
    version: int | None = None


@dataclass
class ScoreRecord(RecordHead):
    """One evaluation; its cases are written last so that the headline reads first."""

    cases: list[CaseEntry] = field(kw_only=True)


# -- averages (the one place the rounding rules live) ------------------------------------------


def _score(values: list[float]) -> float:
    return round(statistics.fmean(values), 2)


def _cost(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(math.fsum(known) / len(known), 6) if known else None


def _duration(values: list[int]) -> int:
    return round(statistics.fmean(values))


def record_from_rows(
    rows: list[dict[str, Any]],
    *,
    runtime: Runtime,
    summary_title: str,
    summary: str,
    run_id: str | None = None,
    variant: str | None = None,
    skills: dict[str, str] | None = None,
    timestamp: str | None = None,
    kind: str | None = None,
    session_id: str | None = None,
    version: int | None = None,
) -> ScoreRecord:
    """The record of one evaluation from its valid result rows (invalid units are not scored)."""
    by_case: dict[str, list[RunEntry]] = {}
    for row in rows:
        if row.get("pass_fail") == "invalid":
            continue
        cost = row.get("cost_usd")
        by_case.setdefault(str(row["case_id"]), []).append(
            RunEntry(
                score=round(float(row.get("score") or 0.0) * 100, 2),
                cost=None if cost is None else round(float(cost), 6),
                duration_ms=int(row.get("duration_ms") or 0),
                session_id=str(row.get("session_id") or ""),
                run_id=str(row.get("run_id") or run_id or ""),
                run_index=int(row.get("run_index") or 0),
            )
        )
    if not by_case:
        raise FormatError(SCOREBOARD_NAME, "cases", "no valid result rows to record")
    cases = [
        CaseEntry(
            case_id=case_id,
            score=_score([r.score for r in runs]),
            cost=_cost([r.cost for r in runs]),
            duration_ms=_duration([r.duration_ms for r in runs]),
            runs=sorted(runs, key=lambda r: r.run_index),
        )
        for case_id, runs in sorted(by_case.items())
    ]
    return ScoreRecord(
        timestamp=timestamp or utc_now(),
        runtime=runtime,
        summary_title=summary_title,
        summary=summary,
        score=_score([c.score for c in cases]),
        cost=_cost([c.cost for c in cases]),
        duration_ms=_duration([c.duration_ms for c in cases]),
        cases=cases,
        run_id=run_id,
        variant=variant,
        skills=dict(skills or {}),
        kind=kind,
        session_id=session_id,
        version=version,
    )


# -- validation --------------------------------------------------------------------------------


def _decimals_ok(value: float, places: int) -> bool:
    scaled = value * 10.0**places
    return abs(scaled - round(scaled)) < 1e-6


class _Checker:
    def __init__(self, path: Path, prefix: str) -> None:
        self.path, self.prefix = path, prefix

    def fail(self, name: str, expected: str) -> FormatError:
        return FormatError(self.path, f"{self.prefix}.{name}", expected)

    def score(self, name: str, value: float) -> None:
        if not 0.0 <= value <= 100.0 or not _decimals_ok(value, 2):
            raise self.fail(name, f"expected a score in 0–100 with two decimals, got {value}")

    def cost(self, name: str, value: float | None) -> None:
        if value is not None and (value < 0 or not _decimals_ok(value, 6)):
            raise self.fail(name, f"expected null or a cost ≥ 0 with six decimals, got {value}")

    def duration(self, name: str, value: int) -> None:
        if value < 0:
            raise self.fail(name, f"expected an integer ≥ 0, got {value}")

    def agrees(self, name: str, stored: float | None, wanted: float | None, tol: float) -> None:
        if (stored is None) != (wanted is None) or (
            stored is not None and wanted is not None and abs(stored - wanted) > tol
        ):
            raise self.fail(name, f"expected the average {wanted} of its parts, got {stored}")


def validate_head(head: RecordHead, path: Path, index: int) -> None:
    """The headline's time, ranges and precision (its averages need the cases)."""
    check = _Checker(path, f"[{index}]")
    try:
        dt.datetime.fromisoformat(head.timestamp)
    except ValueError:
        raise check.fail(
            "timestamp", f"expected an ISO-8601 time, got {head.timestamp!r}"
        ) from None
    check.score("score", head.score)
    check.cost("cost", head.cost)
    check.duration("duration_ms", head.duration_ms)


def validate_record(record: ScoreRecord, path: Path, index: int) -> None:
    """Field ranges, precision and the averages; errors name the record index and field."""
    check = _Checker(path, f"[{index}]")
    validate_head(record, path, index)
    if not record.cases:
        raise check.fail("cases", "expected at least one case")
    for i, case in enumerate(record.cases):
        at = f"cases[{i}]"
        if not case.runs:
            raise check.fail(f"{at}.runs", "expected at least one run")
        for j, run in enumerate(case.runs):
            check.score(f"{at}.runs[{j}].score", run.score)
            check.cost(f"{at}.runs[{j}].cost", run.cost)
            check.duration(f"{at}.runs[{j}].duration_ms", run.duration_ms)
        check.score(f"{at}.score", case.score)
        check.cost(f"{at}.cost", case.cost)
        check.duration(f"{at}.duration_ms", case.duration_ms)
        check.agrees(f"{at}.score", case.score, _score([r.score for r in case.runs]), 0.0051)
        check.agrees(f"{at}.cost", case.cost, _cost([r.cost for r in case.runs]), 2e-6)
        check.agrees(
            f"{at}.duration_ms", case.duration_ms, _duration([r.duration_ms for r in case.runs]), 1
        )
    check.agrees("score", record.score, _score([c.score for c in record.cases]), 0.0051)
    check.agrees("cost", record.cost, _cost([c.cost for c in record.cases]), 2e-6)
    check.agrees(
        "duration_ms", record.duration_ms, _duration([c.duration_ms for c in record.cases]), 1
    )


# -- reading -----------------------------------------------------------------------------------

# The cases block as the writer lays it out: ``  cases:`` at the record's indentation, up to
# the next key at that indentation (none when cases come last, as they are written now).
_CASES = re.compile(r"  cases:[ \t]*(?:#.*)?$", re.M)
_NEXT_KEY = re.compile(r"\n  [^\s#-]")
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
T = TypeVar("T", RecordHead, ScoreRecord)


class _Cut(Exception):
    """An item did not parse on its own: let a parse of the whole file decide."""


def _without_cases(text: str) -> str | None:
    at = text.find("\n  cases:")
    found = _CASES.match(text, at + 1) if at >= 0 else None
    if found is None:
        return None
    after = _NEXT_KEY.search(text, found.end())
    return text[: found.start()] + (text[after.start() + 1 :] if after else "")


def _item_mapping(path: Path, text: str, first_line: int) -> Any:
    try:
        data = parse_yaml(text, path, first_line)
    except FormatError:
        raise _Cut from None
    if not (isinstance(data, list) and len(data) == 1):
        raise _Cut
    return data[0]


def _head(path: Path, item: yaml_log.Item) -> RecordHead:
    mapping: Any = None
    stripped = _without_cases(item.text)
    if stripped is not None:
        with contextlib.suppress(_Cut):
            mapping = _item_mapping(path, stripped, item.first_line)
        if not isinstance(mapping, dict) or "cases" in mapping:
            mapping = None
    if mapping is None:
        mapping = _item_mapping(path, item.text, item.first_line)
        if isinstance(mapping, dict):
            mapping = {k: v for k, v in mapping.items() if k != "cases"}
    head = from_mapping(RecordHead, mapping, path, f"[{item.index}]")
    validate_head(head, path, item.index)
    return head


def _record(path: Path, item: yaml_log.Item) -> ScoreRecord:
    mapping = _item_mapping(path, item.text, item.first_line)
    record = from_mapping(ScoreRecord, mapping, path, f"[{item.index}]")
    validate_record(record, path, item.index)
    return record


# Parsed items by (file, kind, index, digest of the item's text): a file that grew re-parses
# only its new records, and one read again unchanged parses nothing.
_parsed: dict[tuple[Path, str, int, tuple[int, int]], Any] = {}
_parsed_lock = threading.Lock()
_PARSED_MAX = 20000


def _cached(path: Path, item: yaml_log.Item, kind: type[T], parse: Callable[..., T]) -> T:
    key = (path, kind.__name__, item.index, item.digest)
    hit = _parsed.get(key)
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    value = parse(path, item)
    with _parsed_lock:
        if len(_parsed) >= _PARSED_MAX:
            _parsed.clear()
        _parsed[key] = value
    return value


def _whole(path: Path, listing: yaml_log.Listing) -> list[ScoreRecord]:
    """The file parsed as one document: for layouts the item scan does not cover, and to name
    a syntax error with the line the whole file puts it on."""
    data = parse_yaml(listing.text, path)
    if data is None:
        return []
    if not isinstance(data, list):
        raise FormatError(path, None, "expected a YAML list of evaluation records")
    records = []
    for i, item in enumerate(data):
        record = from_mapping(ScoreRecord, item, path, f"[{i}]")
        validate_record(record, path, i)
        records.append(record)
    return records


def _each(bench_dir: Path, kind: type[T], parse: Callable[..., T]) -> list[T]:
    path = Path(bench_dir) / SCOREBOARD_NAME
    listing = yaml_log.read(path)
    if listing is None:
        return []
    if listing.plain:
        try:
            return [_cached(path, item, kind, parse) for item in listing.items]
        except _Cut:
            pass
    return list(_whole(path, listing))


def read_records(bench_dir: Path) -> list[ScoreRecord]:
    """Every record of a benchmark's scoreboard (none when it has no scoreboard yet)."""
    return _each(bench_dir, ScoreRecord, _record)


# -- the heads index ---------------------------------------------------------------------------
# Every view that lists evaluations needs only the headlines. Parsing them still means reading
# the whole history (17 MB after nine evolve sessions), so the headlines are kept beside it in
# a small JSON index keyed by the scoreboard's size and mtime: appended with each record, and
# rebuilt from the history whenever the key does not match (a copy, a restore, a hand edit).


def _log_key(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    if yaml_log.intent_path(path).exists():
        return None  # an append is unfinished: only the history itself says where it stops
    return [st.st_size, st.st_mtime_ns]


def _index_mappings(path: Path, key: list[int]) -> list[Any] | None:
    """The index's head mappings, None when it does not match the history or does not read."""
    try:
        data = json.loads(yaml_log.index_path(path).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    heads = data.get("heads")
    return heads if isinstance(heads, list) else None


def _indexed(path: Path, key: list[int]) -> list[RecordHead] | None:
    raw = _index_mappings(path, key)
    if raw is None:
        return None
    index = yaml_log.index_path(path)
    try:
        return [from_mapping(RecordHead, m, index, f"[{i}]") for i, m in enumerate(raw)]
    except FormatError:
        return None


def _write_index(path: Path, key: list[int] | None, heads: list[RecordHead]) -> None:
    if key is None:
        return
    body = {"key": key, "heads": [to_mapping(h) for h in heads]}
    # the index is a cache: a folder that cannot take it (read-only) is read from the history
    with contextlib.suppress(OSError):
        atomic_write_bytes(yaml_log.index_path(path), json_bytes(body), sync_dir=False)


def _as_head(record: RecordHead) -> RecordHead:
    return RecordHead(**{f.name: getattr(record, f.name) for f in fields(RecordHead)})


def read_heads(bench_dir: Path) -> list[RecordHead]:
    """Every record's headline, from the heads index when it matches the history, else parsed
    without the per-case rows (and the index rewritten)."""
    path = Path(bench_dir) / SCOREBOARD_NAME
    key = _log_key(path)
    if key is not None:
        found = _indexed(path, key)
        if found is not None:
            return found
    heads = _each(bench_dir, RecordHead, _head)
    if heads and _log_key(path) == key:  # unchanged while it was read
        _write_index(path, key, heads)
    return heads


def latest_head(bench_dir: Path) -> tuple[int, RecordHead | None]:
    """How many evaluations a benchmark has and the newest one's headline (what the Overview
    shows), converting one head of the index rather than all of them."""
    path = Path(bench_dir) / SCOREBOARD_NAME
    key = _log_key(path)
    raw = _index_mappings(path, key) if key is not None else None
    if raw:
        with contextlib.suppress(FormatError):
            last = len(raw) - 1
            return len(raw), from_mapping(
                RecordHead, raw[last], yaml_log.index_path(path), f"[{last}]"
            )
    heads = read_heads(bench_dir)
    return len(heads), (heads[-1] if heads else None)


def count_records(bench_dir: Path) -> int:
    return len(read_heads(bench_dir))


def read_record(bench_dir: Path, index: int) -> ScoreRecord:
    """Record ``index`` (negative counts from the end) parsed alone; IndexError past the end."""
    path = Path(bench_dir) / SCOREBOARD_NAME
    listing = yaml_log.read(path)
    if listing is not None and listing.plain:
        item = listing.items[index]
        with contextlib.suppress(_Cut):
            return _cached(path, item, ScoreRecord, _record)
    return read_records(bench_dir)[index]


# -- appending ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _workspace_lock(bench_dir: Path) -> Iterator[None]:
    """Hold the lock of the workspace the benchmark lives in (if it lives in one)."""
    for parent in Path(bench_dir).resolve().parents:
        if (parent / CONFIG_NAME).is_file():
            with Workspace.at(parent).lock("scoreboard append"):
                yield
            return
    yield


@dataclass(frozen=True)
class PreparedRecord:
    """A record validated and dumped to the exact YAML it is appended as, so that appending it is
    only the write: the runner prepares a run's record while the run's last rows are synced."""

    record: ScoreRecord
    piece: str


def prepare_record(bench_dir: Path, record: ScoreRecord | dict[str, Any]) -> PreparedRecord:
    """Validate ``record`` alone and dump it; refused when it would not read back as written."""
    path = Path(bench_dir) / SCOREBOARD_NAME
    if isinstance(record, dict):
        record = from_mapping(ScoreRecord, record, path, "[new]")
    try:
        validate_record(record, path, 0)
    except FormatError:  # only a refusal needs the record's index: count then
        listing = yaml_log.read(path)
        validate_record(record, path, len(listing.items) if listing else 0)
        raise
    mapping = to_mapping(record)
    piece = yaml.dump([mapping], Dumper=_Dumper, sort_keys=False, allow_unicode=True)
    if yaml_log.count(piece) != 1 or parse_yaml(piece, path) != [mapping]:
        raise FormatError(path, None, "the record does not read back as written; not appended")
    return PreparedRecord(record, piece)


def _check_last(path: Path) -> None:
    """Refuse to append after a last item that is not YAML of a record's shape (garbage a
    crash, a bad merge or a hand edit left at the end): the new record would be glued to it
    and no reader could tell them apart. One item is parsed, not the file; a record whose
    values break a rule is for the readers to name, as anywhere in the history."""
    listing = yaml_log.read(path)
    if listing is None or not listing.plain or not listing.items:
        return
    last = listing.items[-1]
    try:
        mapping = _item_mapping(path, last.text, last.first_line)
    except _Cut:
        mapping = None
    if not isinstance(mapping, dict):
        raise FormatError(
            path,
            None,
            f"the last record (from line {last.first_line}) is not a YAML mapping; "
            "repair or remove it, nothing was appended",
        )


def append_record(
    bench_dir: Path, record: ScoreRecord | dict[str, Any] | PreparedRecord
) -> ScoreRecord:
    """Append ``record`` (prepared here unless it already is) after the existing bytes of
    scoreboard.yaml."""
    path = Path(bench_dir) / SCOREBOARD_NAME
    with _workspace_lock(bench_dir):
        yaml_log.recover(path)
        size, head, tail = yaml_log.ends(path)
        if not yaml_log.appendable(head.decode("utf-8", errors="ignore")):
            raise FormatError(
                path,
                None,
                "cannot append without rewriting earlier records (expected a block list)",
            )
        _check_last(path)
        if not isinstance(record, PreparedRecord):
            record = prepare_record(bench_dir, record)
        before = _log_key(path)
        heads = _indexed(path, before) if before is not None else None
        yaml_log.append(path, size, tail, record.piece)
        if heads is not None:
            _write_index(path, _log_key(path), [*heads, _as_head(record.record)])
    return record.record


__all__ = [
    "SCOREBOARD_NAME",
    "CaseEntry",
    "PreparedRecord",
    "RecordHead",
    "RunEntry",
    "Runtime",
    "ScoreRecord",
    "append_record",
    "count_records",
    "latest_head",
    "prepare_record",
    "read_heads",
    "read_record",
    "read_records",
    "record_from_rows",
    "validate_head",
    "validate_record",
]
