"""Accepting a candidate that passed every gate: queue it once, publish it once.

It enters the queue through the door of every loop (``engine.evaluation.gates.submission``), so
Spec and
Safety judge it as they judge any other candidate, and its outcome gates travel as evidence.

Both steps survive a kill: the candidate id is checkpointed right after queueing, and a restart
finds a candidate it queued but never recorded by its content hash; a version published from it
is found again by the candidate id in its provenance. What the version keeps — metrics.json with
F1/precision/recall, guardrail and holdout figures and the Verify calibration, provenance.json with
root causes, proposer, model, tokens, parent, run ids and seed — travels with the candidate, so
an approval by hand records the same evidence as ``--auto-approve``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from engine.core.errors import SkillsmithError
from engine.core.queue import Candidate, CandidateQueue, content_hash
from engine.core.store import SkillStore
from engine.evaluation.gates.candidate import TaskOutcome
from engine.evaluation.gates.outcome import quality, verify_calibration
from engine.evaluation.gates.result import GateResult
from engine.evaluation.gates.submission import submit_candidate
from engine.evaluation.metrics import metrics
from engine.evaluation.verify import verify_score
from engine.loops.evolve.checkpoint import VersionRecord, text_sha

if TYPE_CHECKING:
    from engine.loops.evolve.stages import Evolution, Rows


HELD = "evolve publishes a candidate only with --auto-approve or a person's approval"


def submit(evo: Evolution, results: list[GateResult], golden: Rows) -> Candidate:
    """Queue the candidate once, through the door every loop uses (Spec and Safety run there);
    after a kill, the one already queued is found again. A candidate the door rejects comes back
    with status ``rejected`` and its reason."""
    queue = CandidateQueue(evo.ws)
    cand = evo.pending.candidate
    assert cand is not None
    if evo.pending.candidate_id is not None:
        return queue.get(evo.pending.candidate_id)
    text = evo.candidate_text()
    wanted = content_hash(text.encode("utf-8"), cand.diff.encode("utf-8"), "update")
    for known in queue.list():
        if (
            known.content_hash == wanted
            and known.skill == evo.pending.skill
            and known.parent_version == evo.pending.parent_version
            and known.source == "evolve"
            and known.status in ("rejected", "pending_approval", "approved", "published")
        ):
            evo.pending.candidate_id = known.id
            evo.save()
            return known
    figures = version_figures(evo, results, golden)
    selection = figures["selection"]
    queued, _decision = submit_candidate(
        evo.ws,
        evo.pending.skill,
        text,
        source="evolve",
        operation="update",
        parent_version=evo.pending.parent_version,
        summary=cand.summary,
        patch=cand.diff,
        outcome=TaskOutcome(
            status="success",
            notes=f"selection {selection['parent_value']:.3f} → {selection['value']:.3f}",
            evaluator=f"evolve:{evo.pending.session_id} round {evo.pending.round}",
        ),
        evidence=results,
        approval_required=HELD,
        shadow=False,
        delta_score=selection["delta"],
        root_causes=[f"{cand.direction} + {cand.rule_id}"],
        rule_id=cand.taboo_rule,
        metrics=figures,
        provenance=provenance(evo),
    )
    evo.pending.candidate_id = queued.id
    evo.save()
    return queued


def publish(evo: Evolution, queued: Candidate) -> str:
    queue = CandidateQueue(evo.ws)
    current = queue.get(queued.id)
    if current.status == "pending_approval":
        why = f"evolve {evo.pending.session_id} round {evo.pending.round}: gates passed"
        version = queue.approve(queued.id, why=why)
    else:
        version = _version_of_candidate(evo.store, queued.id)
    text = evo.store.read(version)
    figures = json.loads((evo.store.dir / version / "metrics.json").read_bytes())
    if evo.pending.version_record(version) is None:
        evo.pending.versions.append(
            VersionRecord(
                version=version,
                sha=text_sha(text),
                round=evo.pending.round,
                verify=verify_score(text).score,
                selection_f1=figures["selection"]["value"],
                holdout_f1=figures["holdout"]["value"],
                golden_f1=figures["golden"]["value"],
            )
        )
    evo.pending.version = version
    evo.log.emit("published", skill=evo.pending.skill, version=version, candidate=queued.id)
    return version


def version_figures(evo: Evolution, results: list[GateResult], golden: Rows) -> dict[str, Any]:
    """metrics.json of the version this candidate becomes (F1, guardrail, holdout, …)."""
    positive = evo.bench.positive_label
    parent, text = evo.parent_text(), evo.candidate_text()
    selection = evo.rows_of(text_sha(text), "selection")
    before = evo.rows_of(text_sha(parent), "selection")
    m = metrics(selection, positive)
    measure, value = quality(selection, positive)
    was = quality(before, positive)[1]
    by_gate = {r.gate: r for r in results}
    holdout = evo.pending.evaluation(text_sha(text), "holdout")
    golden_run = evo.pending.evaluation(text_sha(text), "golden")
    golden_value = quality(golden, positive)[1] if golden else None  # none: no golden case
    verify = verify_score(text).score
    points = [(v.verify, v.golden_f1) for v in evo.pending.versions if v.golden_f1 is not None]

    return {
        "f1": m.f1,
        "precision": m.precision,
        "recall": m.recall,
        "pass_rate": m.pass_rate,
        "measure": measure,
        "selection": {
            "run_id": evo.selection_run(text),
            "value": value,
            "parent_value": was,
            "delta": round(value - was, 6),
            "tp": m.tp,
            "fp": m.fp,
            "tn": m.tn,
            "fn": m.fn,
        },
        "target": by_gate["target"].figures,
        "guardrail": by_gate["guardrail"].figures,
        "holdout": {
            "checked": by_gate["holdout"].verdict != "held",
            "value": None if holdout is None else holdout.value,
            "run_id": None if holdout is None else holdout.run_id,
            "figures": by_gate["holdout"].figures,
        },
        "golden": {
            "value": golden_value,
            "run_id": None if golden_run is None else golden_run.run_id,
        },
        "verify": {"score": verify, "parent_score": verify_score(parent).score},
        "verify_calibration": verify_calibration(
            points if golden_value is None else [*points, (verify, golden_value)]
        ),
        "session_id": evo.pending.session_id,
        "round": evo.pending.round,
    }


def provenance(evo: Evolution) -> dict[str, Any]:
    cand = evo.pending.candidate
    assert cand is not None
    proposal = evo.read("propose")
    return {
        "proposer": evo.pending.proposer,
        "model": proposal.get("model"),
        "tokens": proposal.get("usage"),
        "cost_usd": proposal.get("cost_usd"),
        "attempts": proposal.get("attempts"),
        "root_causes": [f"{cand.direction} + {cand.rule_id}"],
        "targeted_cases": cand.case_ids,
        "signature": proposal.get("signature"),
        "parent": evo.pending.parent_version,
        "run_ids": dict(evo.pending.run_ids)
        | {"parent_selection": evo.selection_run(evo.parent_text())},
        "seed": evo.pending.seed,
        "session_id": evo.pending.session_id,
        "round": evo.pending.round,
        "gt_flagged": evo.read("audit").get("flagged_case_ids", []),
    }


def _version_of_candidate(store: SkillStore, candidate_id: str) -> str:
    for info in reversed(store.versions()):
        prov = json.loads((info.path / "provenance.json").read_bytes())
        if prov.get("candidate") == candidate_id:
            return info.version
    raise SkillsmithError(f"{store.dir}: no version was published from {candidate_id}")


__all__ = ["provenance", "publish", "submit", "version_figures"]
