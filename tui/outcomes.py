"""What a finished evolve round means to the person who pressed ``v``.

The engine's round record says ``rejected`` and a reason; the person needs the gate that said
no, its figures, what happens next and where the evidence lives. A rejected round creates no
candidate, so its gate verdicts would otherwise show nowhere in the workbench.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.activity import Link
from tui.jobs import JobOutcome

if TYPE_CHECKING:
    from engine.loops.evolve import EvolveResult


def _round_gates(root: Path, folder: str, reason: str) -> list[dict[str, Any]]:
    """The round's gates.json; a round the patch filters stopped has none: its reason instead."""
    path = root / folder / "gates.json" if folder else None
    if path is not None and path.is_file():
        try:
            data = json.loads(path.read_bytes())
        except ValueError:
            data = None
        if isinstance(data, list):
            return [g for g in data if isinstance(g, dict)]
    return [{"gate": "filters", "verdict": "fail", "reasons": [reason]}]


def evolve_outcome(root: Path, result: EvolveResult) -> JobOutcome:
    """The outcome of a one-round ``evolve`` job, naming the next key or command."""
    session = Link("session", result.session_id)
    if result.stop_reason == "budget":
        from engine.core.budget import Budget, Spent

        spent = Spent(**(result.spent or {})).line(Budget(**(result.budget or {})))
        return JobOutcome(
            f"Evolve on {result.skill}: stopped at its budget ({spent}) with "
            f"{len(result.rounds)} round(s) done; start it again with a larger budget to "
            "resume where it stopped.",
            "warning",
            session,
        )
    if not result.rounds:
        return JobOutcome(
            f"Evolve on {result.skill}: no round ran (stopped: {result.stop_reason})",
            "warning",
            session,
        )
    last = result.rounds[-1]
    head = f"Evolve round {last.round} on {result.skill} {last.parent}"
    if last.outcome == "rejected":
        gates = _round_gates(root, last.folder, last.reason)
        return JobOutcome(
            f"{head}: rejected — {last.reason}. Nothing was queued; the patch is on the "
            "taboo list. 3 shows the gates; v tries another round.",
            "rejected",
            session,
            gates,
            f"evolve round {last.round} · {result.skill} · rejected (no candidate)",
        )
    if last.outcome == "queued" and last.candidate:
        return JobOutcome(
            f"{head}: all gates passed; {last.candidate} awaits approval — press 1, then a.",
            "result",
            Link("candidate", last.candidate),
        )
    if last.outcome == "accepted":
        return JobOutcome(
            f"{head}: published {last.version}.", "result", Link("session", result.session_id)
        )
    return JobOutcome(f"{head}: {last.outcome} — {last.reason}", "warning", session)
