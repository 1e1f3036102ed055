"""Candidate gates and lifecycle: Spec, Effectiveness, Human, shadow mode, stale updates, timeout.

Everything runs on a real workspace: candidates land in candidates/<id>/, approvals publish
through the version store, and every status change must show up in candidate.yaml and in the
skill's timeline.jsonl.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import cast

import pytest

from engine.cli import main
from engine.core.config import GatesConfig
from engine.core.errors import SkillsmithError
from engine.core.queue import CandidateQueue
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation.gates.candidate import (
    CandidateGates,
    Operation,
    StaleCandidate,
    TaskOutcome,
    count_sibling_of,
    family_key,
    run_candidate_gates,
)
from engine.evaluation.gates.expiry import expire_pending, sweep_expired
from engine.evaluation.gates.result import GateResult
from engine.evaluation.gates.submission import submit_candidate
from tests.candidate_helpers import add_skill, skill_text
from tests.conftest import REAL_STYLE


def _gates(human: str = "always", shadow: bool = False) -> CandidateGates:
    return CandidateGates.from_config(GatesConfig(human=human, shadow=shadow))  # type: ignore[arg-type]


@pytest.fixture
def ws(workspace: Workspace) -> Workspace:
    add_skill(workspace, "audit", skill_text("audit"))
    add_skill(workspace, "weather-multi-city", skill_text("Weather - Multi-City"))
    return workspace


def _update(ws: Workspace, text: str, **kwargs):  # type: ignore[no-untyped-def]
    parent = SkillStore(ws, "audit").ensure_adopted()
    return run_candidate_gates(
        ws, "audit", text, operation="update", parent_version=parent, **kwargs
    )


# a description that does not say when to use the skill: with no section either, Spec fails
NO_USE_WHEN = "Audit one file for problems."

# -- Spec ----------------------------------------------------------------------------------------


def test_spec_reports_every_missing_field_at_once(ws: Workspace) -> None:
    text = skill_text("", description=None, when_to_use=None, steps=["Only one step."])
    decision = _update(ws, text)
    spec = decision.results[0]
    assert spec.gate == "spec" and spec.failed
    assert spec.reasons == [
        "empty skill name",
        "missing description",
        "missing when_to_use",
        "needs at least 2 steps, got 1",
    ]
    assert decision.status == "rejected"


def test_spec_passes_two_steps_and_all_fields(ws: Workspace) -> None:
    decision = _update(ws, skill_text("audit", steps=["One: `ls`.", "Two."]))
    assert decision.results[0].passed
    assert decision.results[0].figures["steps"] == 2


def test_spec_unparsable_frontmatter_is_a_rejection(ws: Workspace) -> None:
    decision = _update(ws, "---\nname: [unclosed\n---\n\n## Steps\n\n1. a\n2. b\n")
    assert decision.status == "rejected"
    assert "does not parse" in decision.results[0].reasons[0]


@pytest.mark.parametrize(
    ("folder", "name", "parent"),
    [
        ("audit-2", "Audit", "audit"),  # the same name, other spelling
        ("audit", "Something new", "audit"),  # the same folder
        ("weather-copy", "weather_multi_city", "weather-multi-city"),
    ],
)
def test_create_duplicating_an_existing_skill_must_be_an_update(
    ws: Workspace, folder: str, name: str, parent: str
) -> None:
    decision = run_candidate_gates(
        ws, folder, skill_text(name), operation="create", parent_version=None
    )
    assert decision.status == "rejected"
    assert decision.reason is not None
    assert f"duplicate of existing skill {parent!r}" in decision.reason
    assert "should be an update" in decision.reason


def test_count_specific_sibling_must_be_an_update(ws: Workspace) -> None:
    decision = run_candidate_gates(
        ws,
        "weather-3-cities",
        skill_text("Weather - 3 Cities"),
        operation="create",
        parent_version=None,
    )
    assert decision.status == "rejected"
    assert decision.reason == (
        "spec: count-specific sibling of generic skill 'Weather - Multi-City'; should be an update"
    )


@pytest.mark.parametrize(
    ("folder", "name"),
    [
        ("weather-extended", "Weather Extended"),  # a different method
        ("forecast-3-days", "Forecast - 3 Days"),  # a count, but no generic sibling
    ],
)
def test_genuinely_new_creates_pass_spec(ws: Workspace, folder: str, name: str) -> None:
    decision = run_candidate_gates(
        ws, folder, skill_text(name), operation="create", parent_version=None
    )
    assert decision.results[0].passed, decision.results[0].reasons


def test_two_count_specific_siblings_are_left_alone() -> None:
    assert count_sibling_of("Weather - 3 Cities", ["Weather - 5 Cities"]) is None
    assert count_sibling_of("Weather - Multi-City", ["Weather - 3 Cities"]) is None


@pytest.mark.parametrize(
    ("candidate", "generic"),
    [
        ("Weather Monitor - 3 Cities with APIs", "Weather Monitor - Multi-City with APIs"),
        ("Recipe Cookbook - 5 Dishes", "Recipe Cookbook - Multi-Dish"),
        ("Economic Snapshot - 3 Countries", "Economic Snapshot - Multiple Countries"),
        ("Inventory - 12 items", "inventory-several-items"),
    ],
)
def test_count_families(candidate: str, generic: str) -> None:
    assert family_key(candidate) == family_key(generic)
    assert count_sibling_of(candidate, ["unrelated", generic]) == generic


# -- Effectiveness -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        (TaskOutcome(status="success", score=0.8), "pending_approval"),  # exactly at the threshold
        (TaskOutcome(status="success", score=0.7999), "pending_eval"),
        (TaskOutcome(status="partial", score=0.9), "pending_approval"),
        (TaskOutcome(status="fail"), "pending_eval"),
        (TaskOutcome(status="agent_error", score=1.0), "pending_eval"),
        (TaskOutcome(score=0.8), "pending_approval"),
    ],
)
def test_effectiveness_threshold(ws: Workspace, outcome: TaskOutcome, status: str) -> None:
    decision = _update(ws, skill_text("audit"), outcome=outcome, gates=_gates())
    effectiveness = next(r for r in decision.results if r.gate == "effectiveness")
    assert decision.status == status
    assert effectiveness.failed == (status == "pending_eval")
    assert decision.unproven is False
    if status == "pending_eval":  # the Human gate is not asked about an unproven method
        assert [r.gate for r in decision.results][-1] == "effectiveness"


def test_no_outcome_passes_but_marks_unproven(ws: Workspace) -> None:
    decision = _update(ws, skill_text("audit"), gates=_gates(human="none"))
    effectiveness = next(r for r in decision.results if r.gate == "effectiveness")
    assert effectiveness.passed and effectiveness.figures["unproven"] is True
    assert decision.unproven is True
    assert decision.status == "approved"


def test_outcome_score_must_be_in_range() -> None:
    with pytest.raises(SkillsmithError, match=r"in \[0, 1\]"):
        TaskOutcome(score=80.0)


# -- Human ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "operation", "status"),
    [
        ("none", "update", "approved"),
        ("none", "create", "approved"),
        ("create-only", "create", "pending_approval"),
        ("create-only", "update", "approved"),
        ("always", "update", "pending_approval"),
        ("always", "create", "pending_approval"),
        ("none", "delete", "pending_approval"),
    ],
)
def test_human_policy(ws: Workspace, policy: str, operation: str, status: str) -> None:
    if operation == "create":
        decision = run_candidate_gates(
            ws,
            "lint",
            skill_text("lint"),
            operation="create",
            parent_version=None,
            gates=_gates(policy),
        )
    else:
        text = None if operation == "delete" else skill_text("audit")
        parent = SkillStore(ws, "audit").ensure_adopted()
        decision = run_candidate_gates(
            ws,
            "audit",
            text,
            operation=cast(Operation, operation),
            parent_version=parent,
            gates=_gates(policy),
        )
    assert decision.status == status
    human = decision.results[-1]
    assert human.gate == "human"
    assert human.verdict == ("held" if status == "pending_approval" else "pass")


def test_approval_required_holds_whatever_the_policy(ws: Workspace) -> None:
    decision = _update(
        ws, skill_text("audit"), gates=_gates("none"), approval_required="offline candidates wait"
    )
    assert decision.status == "pending_approval"
    assert decision.reason == "human: offline candidates wait"


# -- the lifecycle through the queue -------------------------------------------------------------


def _timeline(ws: Workspace, skill: str) -> list[tuple[str | None, str]]:
    return [
        (t["from_status"], t["to_status"])
        for t in SkillStore(ws, skill).timeline()
        if t["op"] == "candidate"
    ]


def test_human_none_publishes_and_records_every_transition(ws: Workspace) -> None:
    parent = SkillStore(ws, "audit").ensure_adopted()
    text = skill_text("audit", steps=["List: `ls`.", "Read: `read <file>`.", "Answer."])
    cand, decision = submit_candidate(
        ws,
        "audit",
        text,
        source="manual",
        operation="update",
        parent_version=parent,
        summary="add a list step",
        gates=_gates("none"),
    )
    assert decision.status == "approved"
    assert [h.status for h in cand.history] == [
        "proposed",
        "pending_approval",
        "approved",
        "published",
    ]
    assert cand.status == "published"
    assert SkillStore(ws, "audit").current() == "v1"
    assert ws.skill_path("audit").read_text(encoding="utf-8") == text
    assert _timeline(ws, "audit") == [
        (None, "proposed"),
        ("proposed", "pending_approval"),
        ("pending_approval", "published"),
    ]
    gates = json.loads((cand.dir / "gates.json").read_text(encoding="utf-8"))
    assert [g["gate"] for g in gates] == ["spec", "safety", "effectiveness", "human"]


def test_rejected_candidate_is_queued_with_its_reason(ws: Workspace) -> None:
    parent = SkillStore(ws, "audit").ensure_adopted()
    cand, decision = submit_candidate(
        ws,
        "audit",
        skill_text("audit", steps=["Wipe: `rm -rf ~`.", "Answer."]),
        source="review",
        operation="update",
        parent_version=parent,
        summary="wipe first",
    )
    assert cand.status == "rejected" and decision.status == "rejected"
    assert cand.reason is not None and "destructive.rm_rf" in cand.reason
    assert [(h.status, h.why) for h in cand.history] == [
        ("proposed", "wipe first"),
        ("rejected", cand.reason),
    ]
    assert _timeline(ws, "audit") == [(None, "proposed"), ("proposed", "rejected")]
    assert SkillStore(ws, "audit").current() == "v0"  # nothing published
    with pytest.raises(SkillsmithError, match="only pending_approval"):
        CandidateQueue(ws).approve(cand.id)


def test_pending_eval_is_never_published(ws: Workspace) -> None:
    parent = SkillStore(ws, "audit").ensure_adopted()
    cand, _ = submit_candidate(
        ws,
        "audit",
        skill_text("audit", steps=["a", "b", "c"]),
        source="review",
        operation="update",
        parent_version=parent,
        summary="from a failed task",
        outcome=TaskOutcome(status="fail", notes="wrong answer"),
        gates=_gates("none"),
    )
    assert cand.status == "pending_eval"
    assert cand.reason == "effectiveness: task outcome is 'fail'; held for evaluation"
    assert SkillStore(ws, "audit").current() == "v0"


def test_failed_evidence_rejects_even_in_shadow_mode(ws: Workspace) -> None:
    failed = GateResult(gate="holdout", verdict="fail", reasons=["holdout F1 dropped"])
    decision = _update(ws, skill_text("audit"), evidence=[failed], gates=_gates(shadow=True))
    assert decision.status == "rejected"
    assert decision.reason == "holdout: holdout F1 dropped"


def test_shadow_mode_records_gates_without_enforcing(ws: Workspace) -> None:
    parent = SkillStore(ws, "audit").ensure_adopted()
    text = skill_text(
        "audit",
        description=NO_USE_WHEN,
        when_to_use=None,
        steps=["Reset: `DROP TABLE users;`", "Answer."],
    )
    cand, decision = submit_candidate(
        ws,
        "audit",
        text,
        source="review",
        operation="update",
        parent_version=parent,
        summary="shadowed",
        outcome=TaskOutcome(status="fail"),
        gates=_gates("always", shadow=True),
    )
    assert decision.shadow and decision.enforced == "rejected"
    assert cand.status == "pending_approval"  # the Human gate still decides
    gates = {g["gate"]: g for g in cand.gates()}
    assert list(gates) == ["spec", "safety", "effectiveness", "human"]  # every gate ran
    assert gates["spec"]["verdict"] == "fail" and gates["spec"]["figures"]["shadow"] is True
    assert gates["safety"]["verdict"] == "fail"
    assert gates["effectiveness"]["verdict"] == "fail"
    assert "shadow mode: not enforced" in gates["safety"]["reasons"]
    assert "would be rejected" in (cand.history[-1].why or "")


def test_explicit_no_shadow_enforces(ws: Workspace) -> None:
    decision = _update(
        ws,
        skill_text("audit", description=NO_USE_WHEN, when_to_use=None),
        gates=_gates(shadow=True),
        shadow=False,
    )
    assert decision.status == "rejected" and not decision.shadow


# -- stale updates -------------------------------------------------------------------------------


def test_stale_update_is_refused_and_nothing_is_queued(ws: Workspace) -> None:
    store = SkillStore(ws, "audit")
    v0 = store.ensure_adopted()
    store.publish(skill_text("audit", steps=["x", "y", "z"]), why="moved on")
    with pytest.raises(StaleCandidate, match=r"made against v0 but skill 'audit' is now at v1"):
        submit_candidate(
            ws,
            "audit",
            skill_text("audit"),
            source="optimize",
            operation="update",
            parent_version=v0,
            summary="old news",
        )
    assert CandidateQueue(ws).list() == []


def test_update_of_a_missing_skill_is_refused(ws: Workspace) -> None:
    with pytest.raises(SkillsmithError, match="no such skill to update"):
        run_candidate_gates(
            ws, "ghost", skill_text("ghost"), operation="update", parent_version=None
        )


# -- approval timeout ----------------------------------------------------------------------------


def test_approval_timeout_promotes_and_rejects_the_stale(ws: Workspace) -> None:
    parent = SkillStore(ws, "audit").ensure_adopted()
    first, _ = submit_candidate(
        ws,
        "audit",
        skill_text("audit", steps=["a", "b", "c"]),
        source="review",
        operation="update",
        parent_version=parent,
        summary="first",
    )
    second, _ = submit_candidate(
        ws,
        "audit",
        skill_text("audit", steps=["d", "e", "f"]),
        source="review",
        operation="update",
        parent_version=parent,
        summary="second",
    )
    assert first.status == second.status == "pending_approval"
    now = dt.datetime.now(dt.UTC)
    assert expire_pending(ws, 3600, now=now) == []  # not due yet
    done = dict(expire_pending(ws, 3600, now=now + dt.timedelta(hours=2)))
    # The first one due is published; the other was made against v0 and is stale now.
    assert sorted(done.values()) == ["published v1", "rejected (stale)"]
    queue = CandidateQueue(ws)
    winner = next(c for c, what in done.items() if what == "published v1")
    loser = next(c for c in (first.id, second.id) if c != winner)
    assert queue.get(winner).status == "published"
    assert "pending_approval timeout (3600s" in (queue.get(winner).history[-1].why or "")
    assert queue.get(loser).status == "rejected"
    assert "stale after the approval timeout" in (queue.get(loser).reason or "")
    assert SkillStore(ws, "audit").current() == "v1"


def test_a_configured_timeout_is_swept_when_the_next_candidate_arrives(ws: Workspace) -> None:
    parent = SkillStore(ws, "audit").ensure_adopted()
    first, _ = submit_candidate(
        ws,
        "audit",
        skill_text("audit", steps=["a", "b", "c"]),
        source="review",
        operation="update",
        parent_version=parent,
        summary="waits",
    )
    assert sweep_expired(ws) == []  # no timeout configured: nothing expires
    cfg = ws.load_config()
    cfg.gates.approval_timeout_s = 0.5
    ws.save_config(cfg)
    time.sleep(1.1)  # candidate times have one-second resolution
    # The sweep runs before the next candidate is gated: the first is published, so the second,
    # made against v0 too, is stale now.
    with pytest.raises(StaleCandidate, match="now at v1"):
        submit_candidate(
            ws,
            "audit",
            skill_text("audit", steps=["d", "e", "f"]),
            source="review",
            operation="update",
            parent_version=parent,
            summary="too late",
        )
    assert CandidateQueue(ws).get(first.id).status == "published"


def test_listing_the_queue_sweeps_a_configured_timeout(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = SkillStore(ws, "audit").ensure_adopted()
    waiting, _ = submit_candidate(
        ws,
        "audit",
        skill_text("audit", steps=["a", "b", "c"]),
        source="review",
        operation="update",
        parent_version=parent,
        summary="waits",
    )
    time.sleep(1.1)  # candidate times have one-second resolution
    assert main(["queue", "-w", str(ws.root), "--json"]) == 0  # no timeout configured
    listed = capsys.readouterr()
    assert [c["status"] for c in json.loads(listed.out)] == ["pending_approval"]
    assert listed.err == ""
    cfg = ws.load_config()
    cfg.gates.approval_timeout_s = 0.5
    ws.save_config(cfg)
    assert main(["queue", "-w", str(ws.root)]) == 0
    listed = capsys.readouterr()
    assert listed.err == f"approval timeout: {waiting.id} published v1\n"
    assert waiting.id in listed.out and "published" in listed.out
    assert CandidateQueue(ws).get(waiting.id).status == "published"
    assert SkillStore(ws, "audit").current() == "v1"


def test_spec_takes_when_to_use_from_the_description_as_real_skills_write_it(ws: Workspace) -> None:
    """Anthropic's skills say when to use them in the description, with no section for it."""
    says = "Build MCP servers. Use when integrating an external API through tools."
    decision = _update(ws, skill_text("audit", description=says, when_to_use=None))
    assert decision.results[0].passed
    silent = "Build MCP servers with good tools."
    decision = _update(ws, skill_text("audit", description=silent, when_to_use=None))
    assert decision.results[0].reasons == ["missing when_to_use"]


def _prose(ws: Workspace, name: str) -> tuple[str, str]:
    """A corpus skill (no numbered steps, "This skill should be used when …") adopted as v0."""
    text = (REAL_STYLE / name / "SKILL.md").read_text(encoding="utf-8")
    add_skill(ws, name, text)
    return text, str(SkillStore(ws, name).ensure_adopted())


def test_spec_judges_the_change_not_what_the_parent_already_lacked(ws: Workspace) -> None:
    """Acceptance (issue 25): a prose skill with no steps may still be improved; the missing
    steps are advice, and the "This skill should be used when …" phrasing says when."""
    text, parent = _prose(ws, "pdf-workbench")
    child = text.replace("## Forms\n", "## Forms\n\nList the fields with `pdftk dump_data`.\n")
    decision = run_candidate_gates(
        ws, "pdf-workbench", child, operation="update", parent_version=parent
    )
    spec = decision.results[0]
    assert spec.passed and decision.status == "pending_approval"
    assert spec.figures["advice"] == ["needs at least 2 steps, got 0 (the parent too)"]
    assert spec.reasons == [
        "nothing the parent met is broken; advice: needs at least 2 steps, got 0 (the parent too)"
    ]
    # what the parent had and the child loses is refused: the description's trigger sentence
    silent = child.replace("This skill should be used when the user wants to", "Helps")
    decision = run_candidate_gates(
        ws, "pdf-workbench", silent, operation="update", parent_version=parent
    )
    assert decision.status == "rejected"
    assert decision.results[0].reasons == ["missing when_to_use"]


def test_spec_refuses_a_new_slogan_in_the_description_or_when_to_use(ws: Workspace) -> None:
    text = (REAL_STYLE / "release-tools/skills/release-notes/SKILL.md").read_text("utf-8")
    add_skill(ws, "release-notes", text)
    parent = str(SkillStore(ws, "release-notes").ensure_adopted())
    said = "about to ship."
    child = text.replace(said, said + " Also use it for tasks that mention anything, wrong.")
    decision = run_candidate_gates(
        ws, "release-notes", child, operation="update", parent_version=parent
    )
    assert decision.status == "rejected"
    assert decision.results[0].reasons == [
        "new slogan in when_to_use: a catch-all trigger ('anything'): "
        "'Also use it for tasks that mention anything, wrong.'"
    ]


@pytest.mark.parametrize(
    "description",
    [
        "This skill should be used when the user asks to audit a file.",
        "Audits one file. Use when a file needs an audit.",
        "Audits one file. Claude should use this skill whenever an audit is asked for.",
        "Audits one file. Triggers on audit requests.",
    ],
)
def test_spec_reads_the_phrasings_real_skills_use(ws: Workspace, description: str) -> None:
    decision = _update(ws, skill_text("audit", description=description, when_to_use=None))
    assert decision.results[0].passed, decision.results[0].reasons


def test_spec_reads_claude_codes_when_to_use_key(ws: Workspace) -> None:
    text = skill_text("audit", description=NO_USE_WHEN, when_to_use=None).replace(
        "description:", "when_to_use: On audit requests.\ndescription:", 1
    )
    assert _update(ws, text).results[0].passed
