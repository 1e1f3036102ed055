"""The verdict every gate returns, outcome gates and candidate gates alike.

One shape for all gates so the queue, the TUI gate pane and ``gate_verdict.json`` read any
verdict the same way; it serialises to exactly one entry of ``candidates/<id>/gates.json``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from engine.core.errors import FormatError

Verdict = Literal["pass", "fail", "held"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "held")


@dataclass(frozen=True)
class GateResult:
    """One gate's verdict with the numbers and the case ids that decided it.

    ``held`` means the gate did not judge this time (e.g. Holdout off-round, or no evidence yet):
    it neither accepts nor rejects, so a held gate never blocks and never proves anything.
    """

    gate: str
    verdict: Verdict
    figures: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    case_ids: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    newly_broken: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def failed(self) -> bool:
        return self.verdict == "fail"

    def to_json(self) -> dict[str, Any]:
        """The gates.json entry (keys in the documented order)."""
        return {
            "gate": self.gate,
            "verdict": self.verdict,
            "figures": dict(self.figures),
            "reasons": list(self.reasons),
            "case_ids": list(self.case_ids),
            "fixed": list(self.fixed),
            "newly_broken": list(self.newly_broken),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: Path | None = None) -> GateResult:
        """Read one gates.json entry back; a malformed entry names the field it lacks."""
        where = path if path is not None else Path("gates.json")
        gate = data.get("gate")
        if not isinstance(gate, str) or not gate:
            raise FormatError(where, "gate", "a non-empty gate name")
        verdict = data.get("verdict")
        if verdict not in VERDICTS:
            raise FormatError(where, f"{gate}.verdict", "one of pass, fail, held")
        figures = data.get("figures", {})
        if not isinstance(figures, dict):
            raise FormatError(where, f"{gate}.figures", "a mapping")
        lists: dict[str, list[str]] = {}
        for key in ("reasons", "case_ids", "fixed", "newly_broken"):
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise FormatError(where, f"{gate}.{key}", "a list of strings")
            lists[key] = list(value)
        return cls(
            gate=gate,
            verdict=cast(Verdict, verdict),
            figures=dict(figures),
            reasons=lists["reasons"],
            case_ids=lists["case_ids"],
            fixed=lists["fixed"],
            newly_broken=lists["newly_broken"],
        )


def all_passed(results: Iterable[GateResult]) -> bool:
    """A candidate survives when no gate failed (held gates neither block nor prove)."""
    return not any(r.failed for r in results)


def first_failure(results: Iterable[GateResult]) -> GateResult | None:
    """The gate that rejects, in gate order: its reasons become the rejection reason."""
    return next((r for r in results if r.failed), None)


def gates_json(results: Iterable[GateResult]) -> list[dict[str, Any]]:
    """The whole gates.json list."""
    return [r.to_json() for r in results]
