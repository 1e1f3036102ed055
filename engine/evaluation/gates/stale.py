"""Stale candidates: made against a version the skill has moved on from.

Approving one would publish a text nobody compared with the current version, so the queue
refuses it. It is not a dead end: its patch is applied to the current version and the result goes
through the gates again as a new candidate (the old one is dismissed, pointing at it), or the
candidate is dismissed outright. Neither adds a taboo entry: nothing was wrong with the change,
only with where it was made. The old candidate's evidence does not carry over — it measured the
change against the old parent — so the new one is gated without it and is marked unproven.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.core.candidates import behind
from engine.core.errors import SkillsmithError
from engine.core.queue import Candidate, CandidateQueue
from engine.core.store import SkillStore
from engine.core.workspace import Workspace

if TYPE_CHECKING:
    from engine.evaluation.gates.candidate import GateDecision


def stale_against(
    ws: Workspace, cand: Candidate, currents: dict[str, str | None] | None = None
) -> str | None:
    """The version an open update candidate is behind (None: it is not stale). A listing of
    many candidates passes ``currents`` to look each skill's current version up once."""
    return behind(
        ws,
        cand.skill,
        cand.operation,
        cand.status,
        cand.parent_version,
        {} if currents is None else currents,
    )


def repropose(ws: Workspace, candidate_id: str) -> tuple[Candidate, GateDecision]:
    """Apply a stale candidate's patch to the current version and gate the result anew."""
    # imported here: the patches package loads the model SDK, which `queue` alone never needs
    from engine.core.patch_apply import PatchError, apply_patch
    from engine.evaluation.gates.submission import submit_candidate

    queue = CandidateQueue(ws)
    cand = queue.get(candidate_id)
    current = stale_against(ws, cand)
    if current is None:
        raise SkillsmithError(
            f"{cand.dir}: is {cand.status} against {cand.parent_version}, not stale; "
            "nothing to re-propose"
        )
    store = SkillStore(ws, cand.skill)
    try:
        text = apply_patch(store.read(current), cand.patch_text())
    except PatchError as exc:
        raise SkillsmithError(
            f"{cand.dir}: its patch does not apply to {cand.skill} {current} ({exc}); "
            f"dismiss it (skillsmith queue dismiss {cand.id})"
        ) from None
    new, decision = submit_candidate(
        ws,
        cand.skill,
        text,
        source=cand.source,
        operation="update",
        parent_version=current,
        summary=cand.summary,
        root_causes=cand.root_causes,
        rule_id=cand.rule_id,
        provenance={**cand.evidence("provenance.json"), "reproposed_from": cand.id},
    )
    queue.dismiss(cand.id, why=f"re-proposed against {current} as {new.id}")
    return new, decision


def dismiss(ws: Workspace, candidate_id: str, why: str | None = None) -> str:
    """Set a candidate aside (no taboo entry); returns the reason recorded."""
    queue = CandidateQueue(ws)
    cand = queue.get(candidate_id)
    current = stale_against(ws, cand)
    reason = why or (
        f"stale: made against {cand.parent_version}, {cand.skill} is at {current}"
        if current is not None
        else "set aside"
    )
    queue.dismiss(candidate_id, why=reason)
    return reason


__all__ = ["dismiss", "repropose", "stale_against"]
