"""The session registry: one session per loop run (eight kinds, :data:`KINDS`), and what links them.

Every activity that decides something is a session with an id and an append-only event log
``sessions/<id>.jsonl`` (written by :class:`engine.core.events.SessionLog`, so the TUI tails it
live).
An evaluation's own log has the run id as its session id; a session of any other loop names
the runs it started in its events (``run_id``). A scoreboard record names the session that wrote
it, and each of its per-run rows the run and the unit session (``<run-id>/<case>.<run>``), so any
figure walks back to the transcript that produced it (DESIGN principle 8) — and can be recomputed
from that run's ``results.jsonl`` (:func:`verify_record`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.claims import exclusive_claim, is_claimed
from engine.core.errors import FormatError, SkillsmithError
from engine.core.events import Cancelled, Reporter, SessionLog, null_reporter
from engine.core.runs import RunFolder, UnitKey
from engine.core.scoreboard import ScoreRecord, count_records, read_record, record_from_rows
from engine.core.session_logs import list_session_logs, read_tail
from engine.core.vault import remember_vault
from engine.core.workspace import Workspace

KINDS = {
    "eval": "Evaluate",
    "evolve": "Evolve",
    "gepa": "GEPA optimize",
    "agent-optimizer": "Agent Optimizer",
    "build": "Build",
    "review": "Online review",
    "curate": "Curate",
    "triggers": "Tune description",
}
"""One session kind per loop (the first event's ``session_kind``), with the name people read."""
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_HOLD = ".session.lock"


def start_session(
    ws: Workspace, kind: str, *, forward: Reporter = null_reporter, session_id: str | None = None
) -> SessionLog:
    """A new (or, with ``session_id``, a resumed) session of ``kind`` logging to sessions/."""
    if kind not in KINDS:
        raise SkillsmithError(f"session kind {kind!r}: expected one of {', '.join(KINDS)}")
    if session_id is not None:
        _check_id(session_id)
    ws.sessions_dir.mkdir(exist_ok=True)
    remember_vault(ws)  # the loop's prompts and this log mask every vault value from the start
    return SessionLog(ws.sessions_dir, kind, session_id=session_id, forward=forward)


@contextlib.contextmanager
def loop_session(
    ws: Workspace, kind: str, *, reporter: Reporter, **started: Any
) -> Iterator[SessionLog]:
    """Open a loop's session, log ``started`` with its settings, and end the log however the
    body stops (see :func:`ends_logged`); the loop itself logs ``finished`` with its headline.

    This is the set-up every loop shares, so no face (CLI, TUI) has to build a session itself.
    """
    log = start_session(ws, kind, forward=reporter)
    log.emit("started", **started)
    with ends_logged(log):
        yield log


def hold(folder: Path) -> contextlib.AbstractContextManager[None]:
    """Hold a session's working folder (experiments/<id>/) exclusively while the session runs.

    A killed session releases it (:mod:`engine.core.claims`), so "is anyone working here" is
    answered
    by :func:`is_held`, never by a stale pid file.
    """
    return exclusive_claim(folder / _HOLD, f"{folder}: a running session holds this folder")


@contextlib.contextmanager
def ends_logged(log: SessionLog, **fields: Any) -> Iterator[None]:
    """End the session's log when it stops early: an interruption as ``finished`` with status
    ``interrupted``, a refusal as ``error`` — so the registry never shows it as still running.

    ``fields`` (e.g. ``benchmark=…``) go into that last event; the exception is re-raised.
    """
    try:
        yield
    except (Cancelled, KeyboardInterrupt):
        log.emit("finished", **fields, status="interrupted")
        raise
    except SkillsmithError as exc:
        log.emit("error", **fields, message=str(exc))
        raise


def is_held(folder: Path) -> bool:
    return (folder / _HOLD).exists() and is_claimed(folder / _HOLD)


@dataclass(frozen=True)
class SessionInfo:
    session_id: str
    kind: str
    label: str  # the kind as people read it (KINDS; the kind itself when unknown)
    path: Path
    started_at: str | None
    finished_at: str | None
    status: str  # running | finished | failed | interrupted | the finished event's status
    headline: str  # the finished event's one-line result ("" while running)
    events: int
    run_ids: tuple[str, ...]  # runs this session evaluated, in order of first mention
    benchmark: str | None


def _check_id(session_id: str) -> str:
    if not _SESSION_ID.match(session_id):
        raise SkillsmithError(
            f"session id {session_id!r}: expected letters, digits, '.', '_' or '-'"
        )
    return session_id


def session_path(ws: Workspace, session_id: str) -> Path:
    return ws.sessions_dir / f"{_check_id(session_id)}.jsonl"


def read_events(ws: Workspace, session_id: str) -> list[dict[str, Any]]:
    """Every complete event of a session (a line still being written is not yet an event)."""
    path = session_path(ws, session_id)
    if not path.is_file():
        raise SkillsmithError(f"{path}: no such session")
    chunk = read_tail(path)
    if chunk.bad_lines:
        raise FormatError(path, None, "expected one JSON event object", line=chunk.bad_lines[0])
    return chunk.records


def _info(session_id: str, path: Path, events: list[dict[str, Any]]) -> SessionInfo:
    kind = str(events[0].get("session_kind") or "") if events else ""
    runs: list[str] = []
    benchmark: str | None = None
    status = "running"
    headline = ""
    finished_at: str | None = None
    for event in events:
        run_id = event.get("run_id")
        if isinstance(run_id, str) and run_id not in runs:
            runs.append(run_id)
        bench = event.get("benchmark")
        if benchmark is None and isinstance(bench, str):
            benchmark = bench
        if event.get("kind") == "finished":
            status = str(event.get("status") or "finished")
            finished_at = event.get("time")
            headline = str(event.get("headline") or "")
        elif event.get("kind") == "error":
            status, finished_at = "failed", event.get("time")
            headline = str(event.get("message") or "")
    return SessionInfo(
        session_id=session_id,
        kind=kind,
        label=KINDS.get(kind, kind or "unknown"),
        path=path,
        started_at=events[0].get("time") if events else None,
        finished_at=finished_at,
        status=status,
        headline=headline,
        events=len(events),
        run_ids=tuple(runs),
        benchmark=benchmark,
    )


def session_info(ws: Workspace, session_id: str) -> SessionInfo:
    return _info(session_id, session_path(ws, session_id), read_events(ws, session_id))


def list_sessions(ws: Workspace, kind: str | None = None) -> list[SessionInfo]:
    """Every session, oldest first; ``kind`` keeps one kind (builder, optimizer, …)."""
    found: list[SessionInfo] = []
    for log in list_session_logs(ws):
        if kind is not None and log.kind != kind:
            continue
        found.append(_info(log.session_id, log.path, read_tail(log.path).records))
    return found


def owners_of_run(ws: Workspace, run_id: str) -> list[str]:
    """The loop sessions (not evaluations) that started or used run ``run_id``."""
    return [
        info.session_id
        for info in list_sessions(ws)
        if info.kind != "eval" and run_id in info.run_ids
    ]


# -- scoreboard → runs -------------------------------------------------------------------------


@dataclass(frozen=True)
class RunLink:
    """One per-run row of a scoreboard record and what it points at."""

    case_id: str
    run_index: int
    score: float
    session_id: str
    run_id: str
    session_file: Path | None  # the unit's transcript, when it is on disk
    row: dict[str, Any] | None  # the results.jsonl row it came from, when found


@dataclass(frozen=True)
class RecordTrace:
    record: ScoreRecord
    links: list[RunLink]
    owners: list[str]  # sessions that produced the runs (the record's own session first)
    mismatches: list[str] = field(default_factory=list)


def _variant(record: ScoreRecord) -> str:
    return record.variant or "skill"


def _rows_of(ws: Workspace, run_id: str) -> dict[UnitKey, dict[str, Any]]:
    folder = RunFolder(ws.runs_dir / run_id)
    if not folder.results_path.is_file():
        return {}
    return folder.latest_rows()


def trace_record(ws: Workspace, bench_id: str, index: int = -1) -> RecordTrace:
    """Follow record ``index`` of a benchmark's scoreboard to its sessions, runs and rows."""
    count = count_records(ws.benchmarks_dir / bench_id)
    if not count:
        raise SkillsmithError(f"{ws.benchmarks_dir / bench_id}: the scoreboard has no records")
    try:
        record = read_record(ws.benchmarks_dir / bench_id, index)
    except IndexError:
        raise SkillsmithError(
            f"{ws.benchmarks_dir / bench_id}: no scoreboard record {index} (there are {count})"
        ) from None
    links: list[RunLink] = []
    tables: dict[str, dict[UnitKey, dict[str, Any]]] = {}
    for case in record.cases:
        for run in case.runs:
            rows = tables.setdefault(run.run_id, _rows_of(ws, run.run_id))
            row = rows.get(UnitKey(case.case_id, run.run_index, _variant(record)))
            transcript = (
                ws.runs_dir
                / run.run_id
                / UnitKey(case.case_id, run.run_index, _variant(record)).session_file
            )
            links.append(
                RunLink(
                    case_id=case.case_id,
                    run_index=run.run_index,
                    score=run.score,
                    session_id=run.session_id,
                    run_id=run.run_id,
                    session_file=transcript if transcript.is_file() else None,
                    row=row,
                )
            )
    owners = [record.session_id] if record.session_id else []
    for run_id in dict.fromkeys(link.run_id for link in links):
        owners += [s for s in owners_of_run(ws, run_id) if s not in owners]
    return RecordTrace(record, links, owners, verify_record(ws, record))


def verify_record(ws: Workspace, record: ScoreRecord) -> list[str]:
    """Differences between a record and the results rows it links to (empty when they agree).

    The record is rebuilt from the linked rows with the scoreboard's own rules and compared
    figure by figure, so a number that does not trace back exactly is named.
    """
    problems: list[str] = []
    rows: list[dict[str, Any]] = []
    tables: dict[str, dict[UnitKey, dict[str, Any]]] = {}
    for case in record.cases:
        for run in case.runs:
            table = tables.setdefault(run.run_id, _rows_of(ws, run.run_id))
            row = table.get(UnitKey(case.case_id, run.run_index, _variant(record)))
            where = f"{case.case_id}#{run.run_index} in run {run.run_id}"
            if row is None:
                problems.append(f"{where}: no results row")
                continue
            if row.get("pass_fail") == "invalid":
                problems.append(f"{where}: the row is invalid")
                continue
            if str(row.get("session_id") or "") != run.session_id:
                problems.append(f"{where}: session_id {row.get('session_id')!r}≠{run.session_id!r}")
            rows.append({**row, "run_id": run.run_id})
    if problems or not rows:
        return problems or ["the record links to no rows"]
    rebuilt = record_from_rows(
        rows, runtime=record.runtime, summary_title="", summary="", run_id=record.run_id
    )
    if rebuilt.score != record.score:
        problems.append(f"score {record.score} ≠ {rebuilt.score} recomputed")
    if rebuilt.cost != record.cost:
        problems.append(f"cost {record.cost} ≠ {rebuilt.cost} recomputed")
    if rebuilt.duration_ms != record.duration_ms:
        problems.append(f"duration_ms {record.duration_ms} ≠ {rebuilt.duration_ms} recomputed")
    mine = {c.case_id: c for c in record.cases}
    for case in rebuilt.cases:
        stored = mine.get(case.case_id)
        if stored is None:
            problems.append(f"{case.case_id}: missing from the record")
        elif (stored.score, stored.cost, stored.duration_ms) != (
            case.score,
            case.cost,
            case.duration_ms,
        ):
            problems.append(f"{case.case_id}: case figures differ from its runs")
    return problems


__all__ = [
    "KINDS",
    "RecordTrace",
    "RunLink",
    "SessionInfo",
    "ends_logged",
    "hold",
    "is_held",
    "list_sessions",
    "loop_session",
    "owners_of_run",
    "read_events",
    "session_info",
    "session_path",
    "start_session",
    "trace_record",
    "verify_record",
]
