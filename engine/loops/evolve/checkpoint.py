"""``.pending_round.json``: how far an evolution got, so a killed one resumes where it stopped.

The file exists from the first stage of an evolution session until its last. It names the round,
the stage in progress and the stages already finished, the run ids of the evaluations the round
started (the runner fills only the missing units of a named run), the paths of the artifacts
finished stages wrote, and the candidate diff. It also carries the session-wide state the next
rounds depend on (stagnation, evaluations by text, versions, round records), so a restart makes
exactly the decisions an uninterrupted run would. Every write is atomic: after a crash the file
describes the last stage boundary that was reached, never half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from engine.core.errors import FormatError, SkillsmithError
from engine.core.fsutil import atomic_write_json
from engine.core.schema import from_mapping, to_mapping
from engine.core.workspace import Workspace

# Stages of one round, in order; "baseline" (round 0) and "final" frame the session.
ROUND_STAGES = (
    "evaluate",
    "diagnose",
    "audit",
    "propose",
    "filter",
    "evaluate_candidate",
    "gate",
    "decide",
)
STAGES = ("baseline", *ROUND_STAGES, "final")
_LOCK = ".evolve.lock"


@dataclass
class Evaluation:
    """One evaluation of one SKILL.md text on one split."""

    run_id: str
    split: str
    f1: float | None = None
    pass_rate: float | None = None

    @property
    def value(self) -> float:
        """The headline figure: F1 on a labelled benchmark, else the pass rate."""
        return self.f1 if self.f1 is not None else (self.pass_rate or 0.0)


@dataclass
class VersionRecord:
    """A version this session started from or published, with what is known of its quality."""

    version: str
    sha: str
    round: int
    verify: float
    selection_f1: float | None = None
    holdout_f1: float | None = None
    golden_f1: float | None = None


@dataclass
class CandidateDraft:
    """The round's proposed patch: the diff, the text it gives, the root cause it answers."""

    rule_id: str
    direction: str
    taboo_rule: str
    diff: str
    sha: str
    text_path: str
    summary: str
    case_ids: list[str] = field(default_factory=list)


@dataclass
class RoundRecord:
    """How one round ended; the final table and the determinism checks read these."""

    round: int
    parent: str
    outcome: str  # accepted | queued | rejected | no_patch
    reason: str
    increment: float
    stagnation: float
    rule_id: str | None = None
    version: str | None = None
    candidate: str | None = None
    gates: dict[str, str] = field(default_factory=dict)
    folder: str = ""
    agent_runs: dict[str, int] = field(default_factory=dict)  # the round's, by kind


@dataclass
class PendingRound:
    """The whole of ``.pending_round.json``."""

    session_id: str
    skill: str
    bench: str
    seed: int
    proposer: str
    auto_approve: bool
    max_rounds: int
    started_at: str
    round: int = 0
    stage: str = "baseline"
    done: list[str] = field(default_factory=list)
    parent_version: str | None = None
    run_ids: dict[str, str] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    candidate: CandidateDraft | None = None
    candidate_id: str | None = None
    version: str | None = None
    stagnation: float = 0.0
    slim: bool = False
    evaluations: dict[str, dict[str, Evaluation]] = field(default_factory=dict)
    # text sha → split → the run of a fresh evaluation a gate compared against (never the rows
    # diagnosis read), kept so a parent that stays current is not measured afresh every round
    paired: dict[str, dict[str, str]] = field(default_factory=dict)
    versions: list[VersionRecord] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    stop_reason: str | None = None
    # the session's budget (None: no limit) and what it has spent, kept across resumes
    budget_runs: int | None = None
    budget_usd: float | None = None
    budget_tokens: int | None = None
    spent_runs: int = 0
    spent_tokens: int = 0
    spent_usd: float = 0.0
    # the agent runs launched, by kind (the role of the evaluation; a gate's reruns: ``rerun``):
    # the session's, and the open round's (its record takes them when it closes)
    agent_runs: dict[str, int] = field(default_factory=dict)
    round_runs: dict[str, int] = field(default_factory=dict)
    # run id → its rows counted above: rows a killed process wrote after its last checkpoint
    # are the ones past this, counted when the evaluation resumes
    run_rows: dict[str, int] = field(default_factory=dict)

    def finished(self, stage: str) -> bool:
        return stage in self.done

    def evaluation(self, sha: str, split: str) -> Evaluation | None:
        return self.evaluations.get(sha, {}).get(split)

    def remember(self, sha: str, evaluation: Evaluation) -> None:
        self.evaluations.setdefault(sha, {})[evaluation.split] = evaluation

    def version_record(self, version: str) -> VersionRecord | None:
        return next((v for v in self.versions if v.version == version), None)


def text_sha(text: str) -> str:
    """Evaluations are remembered by the text they measured, whatever version it became."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load(ws: Workspace) -> PendingRound | None:
    path = ws.pending_round_path
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(path, None, f"expected the interrupted round as JSON ({exc})") from None
    pending = from_mapping(PendingRound, data, path)
    if pending.stage not in STAGES:
        raise FormatError(path, "stage", f"expected one of {', '.join(STAGES)}")
    return pending


def save(ws: Workspace, pending: PendingRound) -> None:
    with ws.lock("evolve checkpoint"):
        atomic_write_json(ws.pending_round_path, to_mapping(pending))


def clear(ws: Workspace) -> None:
    with ws.lock("evolve checkpoint"):
        ws.pending_round_path.unlink(missing_ok=True)
        _drop_temp_files(ws)


def _drop_temp_files(ws: Workspace) -> None:
    """Temp files of a checkpoint write that a kill interrupted (fsutil's ``.<name>.*.tmp``)."""
    name = ws.pending_round_path.name
    for leftover in ws.root.glob(f".{name}.*.tmp"):
        leftover.unlink(missing_ok=True)


@contextlib.contextmanager
def exclusive(ws: Workspace) -> Iterator[None]:
    """One evolution per workspace at a time; a killed one releases the claim with its process."""
    ws.experiments_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(ws.experiments_dir / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SkillsmithError(
                f"{ws.experiments_dir / _LOCK}: another evolution is running in this workspace"
            ) from None
        try:
            with ws.lock("evolve checkpoint"):
                _drop_temp_files(ws)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


__all__ = [
    "ROUND_STAGES",
    "STAGES",
    "CandidateDraft",
    "Evaluation",
    "PendingRound",
    "RoundRecord",
    "VersionRecord",
    "clear",
    "exclusive",
    "load",
    "save",
    "text_sha",
]
