"""The Optimizer's own file: ``experiments/<session-id>/state.json``.

A round has stages (proposed → snapshotted → applied → deciding → accepted / rolled back, or
invalid), and the state file records each one before the next begins, together with the run ids
and the seed the evaluations will use (the parent's fresh evaluation, the candidate's, and every
rerun adaptive sampling asks for). A killed Optimizer therefore restarts exactly where it
stopped: the same candidate, the same snapshot, the same runs — whose finished units the runner
keeps — and no round is counted twice. The file is also the experiment's record: every
candidate, its scores, the paired verdict with its figures, the hypothesis check and the
decision.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.budget import Budget, Spent
from engine.core.fsutil import atomic_write_json
from engine.core.schema import from_mapping, to_mapping
from engine.core.workspace import Workspace

STATE_FILE = "state.json"
OPEN_STAGES = ("proposed", "snapshotted", "applied", "deciding")
HELD_FOR_A_PERSON = ("queued", "held")


@dataclass
class Attempt:
    """One candidate: a valid round once decided, or an invalid evaluation (not a round)."""

    number: int
    round: int
    candidate: dict[str, Any]
    stage: str
    version_before: int
    reference_score: float
    snapshot: str | None = None
    run_id: str | None = None
    seed: int | None = None  # both evaluations of the round draw their unit seeds from it
    parent_run_id: str | None = None  # the parent state's fresh evaluation, paired with run_id
    parent_score: float | None = None
    reruns: list[dict[str, Any]] = field(default_factory=list)  # cases, runs, seed, run ids
    verdict: dict[str, Any] | None = None  # the paired verdict's figures
    repairs: int = 0
    launched: int = 0
    score: float | None = None
    delta: float | None = None
    decision: str | None = None  # accepted | queued | held | rolled_back | invalid
    hypothesis: dict[str, Any] | None = None
    version_after: int | None = None
    record_index: int | None = None
    reason: str | None = None
    candidate_id: str | None = None  # the queued candidate of a kept skill edit

    @property
    def open(self) -> bool:
        return self.stage in OPEN_STAGES


@dataclass
class Reference:
    """The last kept evaluation: where the session stands (and what ``--target-score`` reads).

    A candidate is not compared with it — that record was drawn with other seeds — but with a
    fresh evaluation of the parent state on the candidate's seeds."""

    score: float
    run_id: str
    version: int
    record_index: int
    cases: dict[str, float]
    source: str  # formal_baseline | round <n>


@dataclass
class OptimizerState:
    session_id: str
    benchmark: str
    runs: int
    rounds: int
    target_score: float | None
    jobs: int | None
    baseline: Reference
    reference: Reference
    status: str = "running"  # running | finished
    stop_reason: str | None = None
    valid_rounds: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    auto_approve: bool = False  # a kept round is applied without a person's approval
    # --seed: every evaluation's seed follows from it (None: each draws a fresh one)
    seed: int | None = None
    # the session's budget (kept across resumes unless a new one is given) and what it spent
    budget: Budget = field(default_factory=Budget)
    spent: Spent = field(default_factory=Spent)

    def awaiting(self) -> Attempt | None:
        """The kept round that waits for a person (the session stops there, as evolve does)."""
        return next((a for a in self.attempts if a.decision in HELD_FOR_A_PERSON), None)

    def open_attempt(self) -> Attempt | None:
        return next((a for a in self.attempts if a.open), None)

    def tried(self) -> list[str]:
        return [str(a.candidate.get("diff_sha")) for a in self.attempts]

    def save(self, folder: Path) -> None:
        atomic_write_json(folder / STATE_FILE, to_mapping(self))

    @classmethod
    def load(cls, folder: Path) -> OptimizerState:
        path = folder / STATE_FILE
        return from_mapping(cls, json.loads(path.read_text(encoding="utf-8")), path)


def find_unfinished(ws: Workspace, bench_id: str) -> tuple[Path, OptimizerState] | None:
    """The newest Optimizer session of ``bench_id`` that stopped before finishing.

    The caller asks :func:`engine.core.sessions.is_held` whether a live process still runs it.
    """
    if not ws.experiments_dir.is_dir():
        return None
    found: list[tuple[Path, OptimizerState]] = []
    for folder in sorted(ws.experiments_dir.iterdir()):
        if not (folder / STATE_FILE).is_file():
            continue
        state = OptimizerState.load(folder)
        if state.benchmark == bench_id and state.status == "running":
            found.append((folder, state))
    return found[-1] if found else None


__all__ = ["STATE_FILE", "Attempt", "OptimizerState", "Reference", "find_unfinished"]
