"""Read-only loaders for views of a live workspace (the TUI's panes, or any other reader).

A workspace is written while it is watched, so these loaders tolerate what is half-done: a
candidate folder still being filled, a store entry mid-publish. The session-log tail they build
on is engine.core.session_logs, a floor below, because the session registry reads it too.
Nothing here writes to the workspace.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.core.errors import SkillsmithError
from engine.core.journal import is_leftover
from engine.core.workspace import Workspace

# A viewer builds these loaders before it first paints and calls them from its workers: the
# queue, the run folders and the store are imported by the calls, off the paint's path.
if TYPE_CHECKING:
    from engine.core.queue import Candidate
    from engine.core.scoreboard import RecordHead


def transcript_path(
    ws: Workspace,
    run_id: str,
    case_id: str,
    run_index: int | None = None,
    variant: str | None = None,
) -> Path | None:
    """The session file of one case run (``runs/<run>/sessions/<unit stem>.jsonl``).

    The ids come from event logs, which any process may write, so ids that would leave the
    workspace's runs/ folder resolve to nothing. Without a run index, the case's first unit.
    """
    from engine.core.runs import SESSIONS, UnitKey

    if not _is_plain_name(run_id) or not _is_plain_name(case_id):
        return None
    run_dir = ws.runs_dir / run_id
    if run_index is not None:
        unit = UnitKey(case_id, run_index, variant or "skill")
        if (run_dir / unit.session_file).is_file():
            return run_dir / unit.session_file
    sessions = run_dir / SESSIONS
    exact = sessions / f"{case_id}.jsonl"
    if exact.is_file():
        return exact
    matches = sorted(sessions.glob(f"{case_id}.*.jsonl"))
    return matches[0] if matches else None


@dataclass(frozen=True)
class RunFigures:
    """Figures of one evaluation that the scoreboard record does not carry."""

    pass_rate: float | None
    tokens: int
    f1: float | None


def run_figures(ws: Workspace, run_id: str, variant: str = "skill") -> RunFigures | None:
    """Pass rate, tokens and F1 of one variant of a run, from its results (None if absent)."""
    from engine.core.runs import RunFolder

    if not _is_plain_name(run_id):
        return None
    folder = RunFolder(ws.runs_dir / run_id)
    if not folder.results_path.is_file():
        return None
    rows = [r for r in folder.latest_rows().values() if r.get("variant", "skill") == variant]
    from engine.evaluation.metrics import metrics  # grading and statistics: only for these figures

    figures = metrics(rows)
    return RunFigures(figures.pass_rate, figures.tokens_input + figures.tokens_output, figures.f1)


def _is_plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


@dataclass(frozen=True)
class CandidateView:
    """A queued candidate with its gate records, as a viewer shows it."""

    candidate: Candidate
    gates: list[dict[str, Any]]
    gates_error: str | None = None


Signature = tuple[int, int, int, int]
# More candidates than this unknown to a load: read the listing index rather than each file.
FROM_INDEX_AFTER = 32


def _signature(folder: Path) -> Signature | None:
    """Identity of a candidate's decision-relevant files: the yaml and the gate verdicts."""
    try:
        meta = os.stat(folder / "candidate.yaml")
    except FileNotFoundError:
        return None
    try:
        gates = os.stat(folder / "gates.json")
        gate_sig = (gates.st_mtime_ns, gates.st_size)
    except FileNotFoundError:
        gate_sig = (0, -1)
    return (meta.st_mtime_ns, meta.st_size, *gate_sig)


class CandidateCache:
    """The approval queue for a live view: only candidates whose files changed are re-read.

    A watched workspace reloads its queue on every change; parsing hundreds of candidate.yaml
    files each time would make the view lag seconds behind a single new candidate. A bad
    candidate is reported and left out instead of hiding the whole queue.

    A watcher that knows which candidates changed says so (:meth:`touched`); the next
    ``load(incremental=True)`` then looks only at those and, when the queue folder's mtime
    moved, at the folders that appeared or went — a refresh costs the same with ten candidates
    as with a thousand. A plain ``load()`` checks every candidate's files.
    """

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._cache: dict[str, tuple[Signature, CandidateView]] = {}
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._listed: tuple[int, list[str]] | None = None  # (folder mtime_ns, names)

    def touched(self, candidate_ids: Iterable[str]) -> None:
        """Note candidates whose files changed, for the next incremental load."""
        with self._lock:
            self._pending.update(candidate_ids)

    def _names(self, folder: Path) -> list[str]:
        try:
            mtime = os.stat(folder).st_mtime_ns
        except FileNotFoundError:
            return []
        if self._listed is not None and self._listed[0] == mtime:
            return self._listed[1]
        names = [
            entry.name
            for entry in os.scandir(folder)
            if not is_leftover(entry.name) and entry.is_dir()
        ]
        self._listed = (mtime, names)
        return names

    def load(self, *, incremental: bool = False) -> tuple[list[CandidateView], list[str]]:
        """(every readable candidate oldest first, one line per unreadable one)."""
        from engine.core.candidates import Record, indexed_records, refresh_index
        from engine.core.queue import CandidateQueue

        with self._lock:
            queue = CandidateQueue(self.ws)
            changed, self._pending = self._pending, set()
            if not incremental:
                self._listed = None
            fresh: dict[str, tuple[Signature, CandidateView]] = {}
            errors: list[str] = []
            names = self._names(queue.dir)
            # A folder made within the listing's mtime tick: the watcher saw it, the mtime not.
            late = [
                n
                for n in sorted(changed - set(names))
                if not is_leftover(n) and (queue.dir / n).is_dir()
            ]
            if late:
                self._listed = None
            # Many candidates new to this cache (the first load, whichever view asks first)
            # are taken from the listing index, one file, rather than parsing as many
            # candidate.yaml files: the index is brought up to date first, naming a bad file.
            indexed: dict[str, tuple[int, int, Record]] = {}
            if sum(name not in self._cache for name in names) > FROM_INDEX_AFTER:
                errors += refresh_index(queue.dir)
                indexed = indexed_records(queue.dir)
            reported = set(errors)
            for name in names + late:
                cached = self._cache.get(name)
                if incremental and cached is not None and name not in changed:
                    fresh[name] = cached
                    continue
                signature = _signature(queue.dir / name)
                if signature is None:
                    continue
                if cached is not None and cached[0] == signature:
                    fresh[name] = cached
                    continue
                hit = indexed.get(name)
                try:
                    if hit is not None and hit[:2] == signature[:2]:
                        candidate = queue.from_record(hit[2], queue.dir / name)
                    else:
                        candidate = queue.get(name)
                except SkillsmithError as exc:
                    if str(exc) not in reported:
                        errors.append(str(exc))
                    continue
                try:
                    view = CandidateView(candidate, candidate.gates())
                except SkillsmithError as exc:
                    view = CandidateView(candidate, [], str(exc))
                fresh[name] = (signature, view)
            self._cache = fresh
        views = sorted(
            (view for _, view in fresh.values()),
            key=lambda v: (v.candidate.created_at, v.candidate.id),
        )
        return views, sorted(errors)


def current_versions(ws: Workspace, skills: list[str]) -> dict[str, str]:
    """Each skill's current version for a header; a skill not yet in history is at v0 (its
    first use records it so), one whose history cannot be read shows "?"."""
    from engine.core.store import SkillStore

    found: dict[str, str] = {}
    for name in skills:
        try:
            found[name] = SkillStore(ws, name).current() or "v0"
        except SkillsmithError:
            found[name] = "?"
    return found


def compact_count(n: int) -> str:
    """A count in at most five characters that never drops digits silently: 2689124 → 2.69M."""
    if abs(n) < 1000:
        return str(n)
    value = float(n)
    for suffix in ("k", "M", "G"):
        value /= 1000
        text = f"{value:.3g}"
        if abs(float(text)) < 1000:  # 999999 rounds up to "1e+03": say 1M instead
            return text + suffix
    return f"{value / 1000:,.0f}T"


def record_versions(record: RecordHead) -> str:
    """Which skill versions produced a scoreboard record: ``name@vN`` for each skill it ran
    with (a baseline without skills says so, rather than looking unrecorded)."""
    shown = ", ".join(f"{name}@{version}" for name, version in sorted(record.skills.items()))
    if shown:
        return shown
    return "no skill (baseline)" if record.variant == "baseline" else "versions not recorded"
