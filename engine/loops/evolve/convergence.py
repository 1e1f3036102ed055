"""When to stop evolving: convergence, weighted stagnation, slim mode, the round budget.

Stagnation is weighted, not counted (the outcome-driven article): a round that breaks a case that
used to pass weighs 1.0, one whose holdout F1 dropped 0.7, one that merely fixed nothing 0.3.
Breaking old behaviour is over three times worse than failing to add new behaviour, so five idle
rounds (1.5) keep the loop going while three regressions and two stalls (3.6) bring it close to
the 5.0 limit. An accepted patch is progress and resets the count: the limit is about rounds
*in a row* without progress.

Rollback to best looks past the session: every version on the skill's branch whose version record
(``metrics.json``) or this session's checkpoint holds a holdout figure is a candidate, so a
session that stagnated at v3 can go back to a v7 published by an earlier session; a version with
no figure of its own (v0, adopted) takes the mean of what earlier sessions measured of its text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.core.config import LimitsConfig
from engine.core.store import SkillStore, version_number
from engine.evaluation.gates.result import GateResult
from engine.loops.evolve.checkpoint import text_sha

TARGET_WEIGHT = 0.3
GUARDRAIL_WEIGHT = 1.0
HOLDOUT_WEIGHT = 0.7


@dataclass(frozen=True)
class RoundSignal:
    """What a round that produced no accepted patch did wrong."""

    target_not_improved: bool
    guardrail_regression: bool = False
    holdout_drop: bool = False

    @property
    def increment(self) -> float:
        return round(
            TARGET_WEIGHT * self.target_not_improved
            + GUARDRAIL_WEIGHT * self.guardrail_regression
            + HOLDOUT_WEIGHT * self.holdout_drop,
            6,
        )

    @classmethod
    def stall(cls) -> RoundSignal:
        """A round with no candidate to judge (no patch, or one the filters refused)."""
        return cls(target_not_improved=True)

    @classmethod
    def from_gates(cls, results: Sequence[GateResult]) -> RoundSignal:
        """The signal of a rejected candidate. One rejected only by Verify fixed its targets
        but still improved nothing this round: it counts as a stall."""
        verdicts = {r.gate: r.verdict for r in results}
        regression = verdicts.get("guardrail") == "fail"
        drop = verdicts.get("holdout") == "fail"
        return cls(
            target_not_improved=verdicts.get("target") != "pass" or not (regression or drop),
            guardrail_regression=regression,
            holdout_drop=drop,
        )


def stagnation(signals: Iterable[RoundSignal]) -> float:
    """The weighted stagnation of consecutive rounds without an accepted patch."""
    return round(sum(s.increment for s in signals), 6)


# How much a skill may grow past the size it was adopted at before slim mode starts.
SLIM_MARGIN = 0.25


@dataclass(frozen=True)
class Convergence:
    """The stop rules with the workspace's thresholds (``limits:`` in skillsmith.yaml)."""

    target_f1: float = 0.95
    stagnation_limit: float = 5.0
    max_skill_bytes: int = 15_000
    max_rounds: int = 10

    @classmethod
    def from_limits(cls, limits: LimitsConfig, max_rounds: int | None = None) -> Convergence:
        return cls(
            target_f1=limits.convergence_f1,
            stagnation_limit=limits.stagnation_limit,
            max_skill_bytes=limits.max_skill_bytes,
            max_rounds=limits.max_rounds if max_rounds is None else max_rounds,
        )

    def converged(self, f1: float | None) -> bool:
        return f1 is not None and f1 >= self.target_f1

    def stagnated(self, level: float) -> bool:
        return level >= self.stagnation_limit - 1e-9

    def slim_limit(self, adopted_bytes: int | None) -> int:
        """The size line: the skill's size when adopted plus :data:`SLIM_MARGIN`, and never
        below ``max_skill_bytes``. A real skill adopted at 20 KB must still be able to gain a
        line; a 3 KB one may grow to the absolute line as before."""
        if adopted_bytes is None:
            return self.max_skill_bytes
        return max(self.max_skill_bytes, math.ceil(adopted_bytes * (1 + SLIM_MARGIN)))

    def slim(self, skill_text: str, adopted_bytes: int | None = None) -> bool:
        """Over the size line, new rules hide old ones: patches may only merge or delete."""
        return len(skill_text.encode("utf-8")) > self.slim_limit(adopted_bytes)

    def out_of_rounds(self, rounds_done: int) -> bool:
        return rounds_done >= self.max_rounds


@dataclass(frozen=True)
class VersionHoldout:
    """A version of the skill, the holdout figure recorded for it, and where that was recorded."""

    version: str
    holdout: float
    source: str  # "this session", "session <id>" or "its version record"


def standings(store: SkillStore, session: Mapping[str, float]) -> list[VersionHoldout]:
    """Every version on the store's branch with a holdout figure, oldest first.

    ``session`` holds this session's own figures (version → holdout), which win over a version
    record's: they were measured under this session's conditions. A version record without a
    numeric ``holdout.value`` (a hand publish, a GEPA optimizer submission scored by mean) has no
    figure to compare and is left out.
    """
    found: list[VersionHoldout] = []
    measured: dict[str, list[float]] | None = None
    for info in store.versions():
        if info.version in session:
            found.append(VersionHoldout(info.version, session[info.version], "this session"))
            continue
        recorded = _recorded_holdout(info.path / "metrics.json")
        if recorded is not None:
            value, session_id = recorded
            where = f"session {session_id}" if session_id else "its version record"
            found.append(VersionHoldout(info.version, value, where))
            continue
        # no record of its own (v0 is adopted with none): what earlier sessions measured of
        # this very text, averaged — a version that four sessions measured is not unmeasured
        if measured is None:
            measured = _session_holdouts(store)
        figures = measured.get(text_sha(store.read(info.version)), [])
        if figures:
            mean = sum(figures) / len(figures)
            found.append(VersionHoldout(info.version, mean, f"{len(figures)} earlier session(s)"))
    return found


def _session_holdouts(store: SkillStore) -> dict[str, list[float]]:
    """Holdout F1 of every text earlier evolve sessions of this skill measured, by its sha256
    (the summary.json each session leaves in its experiment folder). An unreadable summary is
    skipped, as an unreadable version record is."""
    found: dict[str, list[float]] = {}
    for path in sorted(store.ws.experiments_dir.glob("evolve-*/summary.json")):
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("skill") != store.name:
            continue
        for version in data.get("versions") or []:
            value = version.get("holdout_f1") if isinstance(version, dict) else None
            sha = version.get("sha") if isinstance(version, dict) else None
            if isinstance(sha, str) and isinstance(value, int | float) and math.isfinite(value):
                found.setdefault(sha, []).append(float(value))
    return found


def _recorded_holdout(path: Path) -> tuple[float, str | None] | None:
    """(holdout figure, session id) of a version record; None when it holds no figure.

    A version record that cannot be read is skipped rather than fatal: a rollback that could
    not consider one old version must not stop the session from finishing.
    """
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    holdout = data.get("holdout") if isinstance(data, dict) else None
    value = holdout.get("value") if isinstance(holdout, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    session_id = data.get("session_id")
    return float(value), session_id if isinstance(session_id, str) else None


def best_standing(found: Sequence[VersionHoldout], current: str) -> VersionHoldout | None:
    """The best holdout figure other than ``current``'s; the older version wins a tie (fewer
    changes to carry)."""
    others = [s for s in found if s.version != current]
    return max(others, key=lambda s: (s.holdout, -version_number(s.version)), default=None)


__all__ = [
    "GUARDRAIL_WEIGHT",
    "HOLDOUT_WEIGHT",
    "SLIM_MARGIN",
    "TARGET_WEIGHT",
    "Convergence",
    "RoundSignal",
    "VersionHoldout",
    "best_standing",
    "stagnation",
    "standings",
]
