"""A stale candidate (made against a version the skill moved on from) is no dead end: the CLI
re-proposes it against the current version or dismisses it, neither adds a taboo entry, and
``queue undo`` takes a dismissal back."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from functools import partial

import pytest

from engine.core.queue import CandidateQueue
from engine.core.store import SkillStore, unified_diff
from engine.core.workspace import Workspace
from tests.candidate_helpers import add_skill, skill_text
from tests.store_helpers import run

STEPS = ("Read the input: `read <file>`.", "Write the verdict line.")
V0 = skill_text("audit", steps=STEPS)
MORE_STEPS = skill_text("audit", steps=(*STEPS, "Check the callers: `grep -rn <name>`."))
WHEN = "- A task asks to audit a file or a diff."
WIDER = skill_text("audit", steps=STEPS, when_to_use=WHEN)
REWORDED = skill_text("audit", steps=("Read the whole input: `read <file>`.", STEPS[1]))


def _queued(queue: CandidateQueue, text: str, summary: str) -> str:
    return queue.submit(
        "audit", text, unified_diff(V0, text), source="evolve", operation="update",
        status="pending_approval", parent_version="v0", summary=summary, rule_id="r1",
    ).id  # fmt: skip


Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli(workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> Cli:
    return partial(run, workspace, capsys)


@pytest.fixture
def stale(workspace: Workspace) -> tuple[CandidateQueue, dict[str, str]]:
    """v0 → v1 by one approval; two more candidates were made against v0."""
    add_skill(workspace, "audit", V0)
    SkillStore(workspace, "audit").ensure_adopted()
    queue = CandidateQueue(workspace)
    ids = {
        "steps": _queued(queue, MORE_STEPS, "check the callers"),
        "wider": _queued(queue, WIDER, "diffs too"),
        "reworded": _queued(queue, REWORDED, "read the whole input"),
    }
    queue.approve(ids["steps"])
    return queue, ids


def test_approving_a_stale_candidate_names_the_way_on(
    stale: tuple[CandidateQueue, dict[str, str]], cli: Cli
) -> None:
    _, ids = stale
    cid = ids["wider"]
    done = cli("queue", "approve", cid)
    assert done.returncode == 1
    assert f"re-propose it against v1 (skillsmith queue repropose {cid})" in done.stderr
    assert f"(skillsmith queue dismiss {cid})" in done.stderr
    listing = cli("queue").stdout
    (line,) = [ln for ln in listing.splitlines() if ln.startswith(cid)]
    assert f"stale (skill at v1: queue repropose {cid})" in line
    (fresh,) = [ln for ln in listing.splitlines() if ln.startswith(ids["steps"])]
    assert "stale" not in fresh  # published, and the version it made


def test_repropose_applies_the_patch_to_the_current_version_and_gates_it_anew(
    workspace: Workspace, stale: tuple[CandidateQueue, dict[str, str]], cli: Cli
) -> None:
    queue, ids = stale
    store = SkillStore(workspace, "audit")
    taboo_before = store.taboo().entries()
    done = cli("queue", "repropose", ids["wider"], "--json")
    assert done.returncode == 0, done.stderr
    new = json.loads(done.stdout)["new"]
    assert new["parent_version"] == "v1" and new["summary"] == "diffs too"
    # both changes at once: v1's extra step and the candidate's wider use
    expected = skill_text(
        "audit", steps=(*STEPS, "Check the callers: `grep -rn <name>`."), when_to_use=WHEN
    )
    assert queue.get(new["id"]).skill_text() == expected
    # its old evidence measured the change against another parent: none carries over
    assert new["status"] == "pending_approval" and new["unproven"] is True
    old = queue.get(ids["wider"])
    assert old.status == "dismissed"
    assert old.history[-1].why == f"re-proposed against v1 as {new['id']}"
    assert store.taboo().entries() == taboo_before
    assert store.current() == "v1"

    text = cli("queue", "repropose", ids["reworded"]).stdout
    assert "against v1 as cand-" in text and f"{ids['reworded']} is dismissed" in text
    assert "next: skillsmith queue show cand-" in text and "(unproven: the old evidence" in text
    again = cli("queue", "repropose", ids["steps"])
    assert again.returncode == 1 and "is published against v0, not stale" in again.stderr


def test_a_patch_that_no_longer_applies_is_dismissed_and_undo_brings_it_back(
    workspace: Workspace, stale: tuple[CandidateQueue, dict[str, str]], cli: Cli
) -> None:
    queue, ids = stale
    store = SkillStore(workspace, "audit")
    store.publish(REWORDED.replace("whole", "entire"), why="by hand, the same line")
    cid = ids["reworded"]
    refused = cli("queue", "repropose", cid)
    assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1
    assert "does not apply to audit v2" in refused.stderr
    assert f"dismiss it (skillsmith queue dismiss {cid})" in refused.stderr
    assert queue.get(cid).status == "pending_approval"

    done = cli("queue", "dismiss", cid)
    assert done.returncode == 0
    assert done.stdout.strip() == (
        f"dismissed {cid} (stale: made against v0, audit is at v2); no taboo entry; "
        "queue undo brings it back"
    )
    assert queue.get(cid).status == "dismissed" and store.taboo().entries() == []
    undone = cli("queue", "undo")
    assert undone.stdout.strip() == f"undid the dismissal of {cid}: it is pending_approval again"
    assert queue.get(cid).status == "pending_approval"
    twice = cli("queue", "dismiss", ids["steps"])
    assert twice.returncode == 1 and "is already published" in twice.stderr
