"""The agent runs a decision's reruns caused, counted where they are asked for, by kind.

A verdict's ``extra_runs`` counts the runs *its* adaptive sampling added; a gate may ask for
more (the Guardrail reruns the cases that broke to confirm them, queue eval screens and
confirms), and those runs cost as much. Counting them at the rerun callback every gate is given
leaves no run out, whatever the gate does with the rows: a gate's figures carry
``agent_runs`` (kind → agent runs, both variants), and a decision's total is their sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.evaluation.verdict import Rerun, Rows

VARIANTS = 2  # a rerun runs the cases on both sides (parent and candidate)


@dataclass
class CountedRuns:
    """Wraps a rerun callback; each :meth:`kind` counts the runs asked through it.

    ``runs`` maps a kind (``rerun``, ``confirm``, ``screen`` …) to agent runs, both variants:
    ``VARIANTS`` × cases × runs each, what the rerun launches when no recorded run stands in.
    """

    rerun: Rerun | None
    runs: dict[str, int] = field(default_factory=dict)

    def kind(self, kind: str) -> Rerun | None:
        """The rerun, counting under ``kind`` (None when there is no rerun to count)."""
        inner = self.rerun
        if inner is None:
            return None

        def counted(cases: Sequence[str], runs: int) -> tuple[Rows, Rows]:
            self.runs[kind] = self.runs.get(kind, 0) + VARIANTS * len(cases) * runs
            return inner(cases, runs)

        return counted

    def by_kind(self, *kinds: str) -> dict[str, int]:
        """The figure a gate records: each of its kinds, 0 when it ran none."""
        return {kind: self.runs.get(kind, 0) for kind in kinds}

    @property
    def total(self) -> int:
        return sum(self.runs.values())

    @property
    def per_variant(self) -> int:
        """Case-runs of each side: the unit a verdict's ``extra_runs`` is in."""
        return self.total // VARIANTS


__all__ = ["VARIANTS", "CountedRuns"]
