"""The scoreboard: one record per evaluation, in ``benchmarks/<id>/scoreboard.yaml``.

The fields are PenguinHarness': a timestamp, the runtime (provider, model), a summary title and
summary, scores on 0–100 with two decimals (case = mean of its runs, evaluation = mean of its
cases), cost averages with six decimals that ignore unknown (null) costs, integer durations, and
per-run rows that link back to the session and run that produced them (DESIGN principle 8).

The file is history: a new record is appended *textually* after the existing bytes, so earlier
records are never rewritten — not even re-serialised — and the append is verified before the
atomic rename. Records are validated on write and on read.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.errors import FormatError
from engine.events import utc_now
from engine.fsutil import atomic_write_text
from engine.schema import from_mapping, load_yaml, to_mapping
from engine.workspace import CONFIG_NAME, Workspace

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
class ScoreRecord:
    timestamp: str
    runtime: Runtime
    summary_title: str
    summary: str
    score: float
    cost: float | None
    duration_ms: int
    cases: list[CaseEntry]
    run_id: str | None = None
    variant: str | None = None
    skills: dict[str, str] = field(default_factory=dict)
    # Written by Builder / Optimizer sessions: "formal_baseline" or "accepted" (None for a plain
    # evaluation), the session that wrote the record, and the agent-state version it scored.
    kind: str | None = None
    session_id: str | None = None
    version: int | None = None


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


def validate_record(record: ScoreRecord, path: Path, index: int) -> None:
    """Field ranges, precision and the averages; errors name the record index and field."""
    check = _Checker(path, f"[{index}]")
    try:
        dt.datetime.fromisoformat(record.timestamp)
    except ValueError:
        raise check.fail(
            "timestamp", f"expected an ISO-8601 time, got {record.timestamp!r}"
        ) from None
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
    check.score("score", record.score)
    check.cost("cost", record.cost)
    check.duration("duration_ms", record.duration_ms)
    check.agrees("score", record.score, _score([c.score for c in record.cases]), 0.0051)
    check.agrees("cost", record.cost, _cost([c.cost for c in record.cases]), 2e-6)
    check.agrees(
        "duration_ms", record.duration_ms, _duration([c.duration_ms for c in record.cases]), 1
    )


def _parse_records(data: Any, path: Path) -> list[ScoreRecord]:
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


def read_records(bench_dir: Path) -> list[ScoreRecord]:
    """Every record of a benchmark's scoreboard (none when it has no scoreboard yet)."""
    path = Path(bench_dir) / SCOREBOARD_NAME
    if not path.exists():
        return []
    return _parse_records(load_yaml(path), path)


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


def append_record(bench_dir: Path, record: ScoreRecord | dict[str, Any]) -> ScoreRecord:
    """Validate ``record`` and append it after the existing bytes of scoreboard.yaml."""
    path = Path(bench_dir) / SCOREBOARD_NAME
    if isinstance(record, dict):
        record = from_mapping(ScoreRecord, record, path, "[new]")
    with _workspace_lock(bench_dir):
        old_text = path.read_text(encoding="utf-8") if path.exists() else ""
        old_data = load_yaml(path) if old_text.strip() else None
        old = _parse_records(old_data, path)
        validate_record(record, path, len(old))
        piece = yaml.safe_dump([to_mapping(record)], sort_keys=False, allow_unicode=True)
        if not old:
            new_text = piece
        else:
            new_text = old_text + ("" if old_text.endswith("\n") else "\n") + piece
        try:
            appended = yaml.safe_load(new_text) == [*(old_data or []), to_mapping(record)]
        except yaml.YAMLError:
            appended = False
        if not appended:
            raise FormatError(
                path,
                None,
                "cannot append without rewriting earlier records (expected a block list)",
            )
        atomic_write_text(path, new_text)
        if old and (
            not path.read_text(encoding="utf-8").startswith(old_text)
            or read_records(bench_dir)[:-1] != old
        ):
            atomic_write_text(path, old_text)
            raise FormatError(path, None, "earlier records changed during the append; restored")
    return record


__all__ = [
    "SCOREBOARD_NAME",
    "CaseEntry",
    "RunEntry",
    "Runtime",
    "ScoreRecord",
    "append_record",
    "read_records",
    "record_from_rows",
    "validate_record",
]
