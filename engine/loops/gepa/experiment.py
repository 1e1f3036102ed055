"""The record of one optimization: ``experiments/<id>/``.

Everything an optimization decided can be checked by hand from here: the settings and splits
(``experiment.json``), every candidate with its parent, edited section and rationale
(``candidates/<id>.json``), every evaluation with its per-case scores, feedback and the run it
came from (``evaluations/<seq>-<phase>-<candidate>.json``), every decision in order
(``events.jsonl``: reflections rejected, children kept or dropped, the stop, the pick, the
promotion, the submission) and the outcome (``result.json``).

All of it passes through :func:`engine.core.vault.redact` on the way to disk — these files quote
agent output and model prompts, which is exactly where a leaked key would end up — and every
file is written atomically under the workspace lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.core.fsutil import append_jsonl, atomic_write_json
from engine.core.stamps import new_id, utc_now
from engine.core.vault import redact, redact_tree
from engine.core.workspace import Workspace

STORED_TEXT_CHARS = 16_000  # longer outputs are cut in the middle
_CUT = "\n...[truncated]...\n"


def bounded(text: str, limit: int = STORED_TEXT_CHARS) -> str:
    """``text`` with its middle cut out when longer than ``limit`` (head kept longer)."""
    if len(text) <= limit:
        return text
    budget = limit - len(_CUT)
    head = budget * 3 // 4
    return text[:head] + _CUT + text[len(text) - (budget - head) :]


def scrubbed(value: Any) -> Any:
    """``value`` with every string redacted and bounded, containers rebuilt."""
    return redact_tree(value, lambda text: bounded(redact(text)))


class Experiment:
    """Writes one experiment folder; every write is atomic, redacted and locked."""

    def __init__(self, ws: Workspace, experiment_id: str | None = None) -> None:
        self.ws = ws
        self.id = experiment_id or new_id("exp")
        self.dir = ws.experiments_dir / self.id
        self._seq = 0

    @property
    def events_path(self) -> Path:
        return self.dir / "events.jsonl"

    def write(self, rel: str, data: Mapping[str, Any]) -> Path:
        path = self.dir / rel
        with self.ws.lock(f"experiment {self.id}"):
            atomic_write_json(path, scrubbed(data))
        return path

    def event(self, kind: str, **data: Any) -> None:
        """One decision, appended to events.jsonl."""
        with self.ws.lock(f"experiment {self.id}"):
            append_jsonl(self.events_path, scrubbed({"at": utc_now(), "kind": kind, **data}))

    def candidate(self, cand_id: str, record: Mapping[str, Any]) -> None:
        path = self.dir / "candidates" / f"{cand_id}.json"
        if not path.exists():  # content-addressed: the same candidate is recorded once
            self.write(f"candidates/{cand_id}.json", {"id": cand_id, **record})

    def evaluation(self, phase: str, cand_id: str, record: Mapping[str, Any]) -> str:
        """Store one evaluation; returns its file name (the events refer to it)."""
        self._seq += 1
        name = f"{self._seq:04d}-{phase}-{cand_id}.json"
        self.write(f"evaluations/{name}", {"phase": phase, "candidate_id": cand_id, **record})
        return name


__all__ = ["Experiment", "bounded", "scrubbed"]
