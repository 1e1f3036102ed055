"""The one door into the queue: every candidate, from every loop, is gated and queued here.

Evolution, the GEPA optimizer, online review, curation and description tuning all hand their
candidate to :func:`submit_candidate`, which runs Spec and Safety (with the workspace's vault
values, so what passes can always be snapshotted), Effectiveness and Human with the evidence the
loop brings, queues the candidate whatever the verdict (a rejected one with its reason: the queue is
the record of everything proposed), writes each status step to the skill's timeline, and publishes
it when nothing holds it. Nothing else calls ``CandidateQueue.submit``.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.core.queue import Candidate, CandidateQueue
from engine.core.store import SkillStore, unified_diff
from engine.core.workspace import Workspace
from engine.evaluation.gates.candidate import (
    CandidateGates,
    GateDecision,
    Operation,
    TaskOutcome,
    run_candidate_gates,
)
from engine.evaluation.gates.expiry import sweep_expired
from engine.evaluation.gates.result import GateResult, gates_json


def record_transitions(
    ws: Workspace, skill: str, candidate_id: str, steps: Sequence[tuple[str, str]]
) -> None:
    """One timeline line per status change of a candidate (the skill's timeline.jsonl)."""
    store = SkillStore(ws, skill)
    previous: str | None = None
    for status, why in steps:
        store.record(
            "candidate",
            candidate=candidate_id,
            from_status=previous,
            to_status=status,
            why=why,
        )
        previous = status


def submit_candidate(
    ws: Workspace,
    skill: str,
    text: str | None,
    *,
    source: str,
    operation: Operation,
    parent_version: str | None,
    summary: str,
    patch: str | None = None,
    outcome: TaskOutcome | None = None,
    evidence: Sequence[GateResult] = (),
    approval_required: str | None = None,
    shadow: bool | None = None,
    gates: CandidateGates | None = None,
    delta_score: float | None = None,
    root_causes: Sequence[str] = (),
    rule_id: str | None = None,
    metrics: dict[str, object] | None = None,
    provenance: dict[str, object] | None = None,
) -> tuple[Candidate, GateDecision]:
    """Gate a candidate and queue it with its verdicts; publish it when nothing holds it.

    The candidate is queued whatever the verdict (a rejected one with its reason), so the
    queue is the record of everything proposed. ``patch`` defaults to the diff from the
    parent version (or from nothing, for a create).
    """
    queue = CandidateQueue(ws)
    with ws.lock(f"submit candidate for {skill}"):
        sweep_expired(ws)
        decision = run_candidate_gates(
            ws,
            skill,
            text,
            operation=operation,
            parent_version=parent_version,
            outcome=outcome,
            gates=gates,
            evidence=evidence,
            approval_required=approval_required,
            shadow=shadow,
        )
        store = SkillStore(ws, skill)
        parent_text = store.read(parent_version) if parent_version is not None else ""
        body = text if text is not None else ""
        diff = patch if patch is not None else unified_diff(parent_text, body)
        steps = decision.history(summary)
        queued = steps[-1][0]
        cand = queue.submit(
            skill,
            body,
            diff,
            source=source,
            operation=operation,
            status=queued,
            parent_version=parent_version,
            summary=summary,
            gates=gates_json(decision.results),
            delta_score=delta_score,
            unproven=decision.unproven,
            root_causes=list(root_causes),
            rule_id=rule_id,
            reason=decision.reason if queued in ("rejected", "pending_eval") else None,
            metrics=metrics,
            provenance=provenance,
            history=steps,
        )
        record_transitions(ws, skill, cand.id, steps)
        if decision.status == "approved":
            queue.approve(cand.id, why="no gate holds it: " + (decision.reason or "approved"))
            cand = queue.get(cand.id)
    return cand, decision


__all__ = ["record_transitions", "submit_candidate"]
