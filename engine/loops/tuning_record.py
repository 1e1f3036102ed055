"""What a description tuning has finished, so a stopped one resumes without paying twice.

A tuning that stops at its budget, is cancelled or is killed has already paid for agent runs
that are still good: a run's outcome depends only on the skill, the description, the query, the
run number's seed and the agent. Each finished run is appended to ``units.jsonl`` in the
experiment the moment it ends, and each proposal the proposer made to ``proposals.jsonl``. The
same command run again finds that experiment by its identity (:func:`identity`, kept in
``experiment.json``) and replays the loop: a run on record is read back instead of made, a
round's proposal is the one on record, so every decision comes out as before and the tuning
goes on from where it stopped. What the earlier attempts spent is the sum of the runs on record
(tokens and dollars as the agent reported them), so a budget counts the whole tuning.

A run in flight when the process died has no line and runs again; a tuning still running
holds its folder (:func:`engine.core.sessions.hold`) and is never resumed by another process.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.core.budget import Budget, Spent
from engine.core.fsutil import append_jsonl, read_jsonl
from engine.core.sessions import is_held
from engine.core.workspace import Workspace
from engine.loops.gepa.experiment import scrubbed

UNITS = "units.jsonl"
PROPOSALS = "proposals.jsonl"
KIND = "trigger-tuning"


def text_key(text: str) -> str:
    """A text's key in the record: its SHA-256 (the SKILL.md a run saw, a proposal's parent
    description; the texts themselves are in the results)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def identity(**parts: Any) -> str:
    """The hash of everything a run's outcome and the loop's order depend on (JSON-able)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class RecordedRun:
    """One finished agent run: did it load the skill, its transcript, why it was invalid."""

    loaded: bool
    session: str | None
    invalid: str | None
    tokens: int = 0
    cost_usd: float = 0.0


class TuningRecord:
    """The finished runs and proposals of one tuning's folder, read once and appended to."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._units: dict[tuple[str, str, int], RecordedRun] = {}
        for row in read_jsonl(folder / UNITS):
            try:
                key = (str(row["text"]), str(row["query"]), int(row["run"]))
                self._units[key] = RecordedRun(
                    bool(row["loaded"]),
                    row.get("session"),
                    row.get("invalid"),
                    int(row.get("tokens") or 0),
                    float(row.get("cost_usd") or 0.0),
                )
            except (KeyError, TypeError, ValueError):
                continue  # a line this version cannot read: that run is made again
        self._proposals: dict[tuple[int, str], str | None] = {}
        for row in read_jsonl(folder / PROPOSALS):
            proposed = row.get("proposed")
            if isinstance(row.get("round"), int) and isinstance(row.get("parent"), str):
                self._proposals[(row["round"], row["parent"])] = (
                    proposed if isinstance(proposed, str) else None
                )
        self.on_record = len(self._units)
        self.reused = 0  # runs read back by this attempt

    def spent(self) -> Spent:
        """What the runs on record cost: the earlier attempts' spending."""
        units = list(self._units.values())
        return Spent(
            runs=len(units),
            tokens=sum(u.tokens for u in units),
            usd=sum(u.cost_usd for u in units),
        )

    def runs_on_record(self, first_rerun: int) -> tuple[int, int]:
        """(measuring runs, held-out reruns) on record: reruns are numbered from
        ``first_rerun``, the runs a query has per description."""
        reruns = sum(run >= first_rerun for _text, _query, run in self._units)
        return len(self._units) - reruns, reruns

    def unit(self, text: str, query: str, run: int) -> RecordedRun | None:
        """The run of ``query`` numbered ``run`` with the skill ``text``, if it is on record."""
        found = self._units.get((text_key(text), query, run))
        if found is not None:
            with self._lock:
                self.reused += 1
        return found

    def add_unit(self, text: str, query: str, run: int, unit: RecordedRun) -> None:
        key = (text_key(text), query, run)
        row = {"text": key[0], "query": query, "run": run, **asdict(unit)}
        with self._lock:
            append_jsonl(self.folder / UNITS, scrubbed(row))
            self._units[key] = unit

    def proposal(self, round_: int, parent: str) -> tuple[bool, str | None]:
        """(on record?, the description proposed in round ``round_`` from ``parent``)."""
        key = (round_, text_key(parent))
        return key in self._proposals, self._proposals.get(key)

    def add_proposal(self, round_: int, parent: str, proposed: str | None) -> None:
        row = {"round": round_, "parent": text_key(parent), "proposed": proposed}
        append_jsonl(self.folder / PROPOSALS, scrubbed(row))
        self._proposals[(round_, text_key(parent))] = proposed


def resumable(ws: Workspace, wanted: str) -> Path | None:
    """The newest tuning folder of identity ``wanted`` that did not finish: stopped at its
    budget, cancelled or killed, and not held by a running tuning."""
    root = ws.experiments_dir
    if not root.is_dir():
        return None
    # newest first by when experiment.json was written (once, at the start): two ids of one
    # second sort by their random part
    started: list[tuple[int, Path]] = []
    for folder in root.glob("triggers-*"):
        try:
            started.append(((folder / "experiment.json").stat().st_mtime_ns, folder))
        except OSError:
            continue
    for _at, folder in sorted(started, reverse=True):
        setup = _json(folder / "experiment.json")
        if setup.get("kind") != KIND or setup.get("identity") != wanted or is_held(folder):
            continue
        result = _json(folder / "result.json")
        if not result or result.get("stop_reason") == "budget":
            return folder
    return None


def _json(path: Path) -> Mapping[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def kept_budget(folder: Path) -> Budget:
    """The budget a stopped attempt ran under (none when it had none, or was killed)."""
    kept = _json(folder / "result.json").get("budget")
    if not isinstance(kept, dict):
        return Budget()
    runs, usd, tokens = (kept.get(name) for name in ("runs", "usd", "tokens"))
    return Budget(
        runs if isinstance(runs, int) else None,
        float(usd) if isinstance(usd, (int, float)) else None,
        tokens if isinstance(tokens, int) else None,
    )


__all__ = [
    "KIND",
    "PROPOSALS",
    "UNITS",
    "RecordedRun",
    "TuningRecord",
    "identity",
    "kept_budget",
    "resumable",
    "text_key",
]
