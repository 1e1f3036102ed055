"""skillsmith.yaml is the user's file: publish, rollback, restore and approve leave it as written.

The agent-state version these operations raise is the tool's, kept in history/workspace.json.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.queue import CandidateQueue
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_SKILL, copy_demo
from engine.evaluation.gates.submission import submit_candidate
from tests.store_helpers import run

# A file as a user writes it: a comment of their own, keys in their order (agent after models).
USER_CONFIG = """\
# my notes: keep the proposer offline until the budget is approved
models:
  proposer: {provider: offline}   # cheap while we try things
agent:
  kind: demo
  noise: 0.4
splits: {seed: 7, selection: 0.6, holdout: 0.25, golden: 0.15}
"""


def test_comment_and_key_order_survive_publish_rollback_restore_and_approve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = Workspace.at(copy_demo(tmp_path / "ws"))
    ws.config_path.write_text(USER_CONFIG, encoding="utf-8")
    skill = ws.skill_path(DEMO_SKILL)
    original = skill.read_text(encoding="utf-8")
    edited = tmp_path / "SKILL.md"
    edited.write_text(original + "\n<!-- reviewed -->\n", encoding="utf-8")

    def step(*args: str) -> str:
        done = run(ws, capsys, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert ws.config_path.read_text(encoding="utf-8") == USER_CONFIG, args
        return done.stdout

    step("snapshot")  # of version 0
    step("publish", DEMO_SKILL, str(edited), "--why", "hand edit")
    assert ws.version() == 1 and (ws.root / "history" / "workspace.json").is_file()
    step("rollback", DEMO_SKILL, "v0", "--why", "back")
    assert ws.version() == 1  # a rollback moves the skill's pointer, not the version
    queued, _ = submit_candidate(
        ws,
        DEMO_SKILL,
        original + "\n<!-- approved -->\n",
        source="manual",
        operation="update",
        parent_version="v0",
        summary="a marker line",
        approval_required="a person decides",
    )
    assert queued.status == "pending_approval"
    step("queue", "approve", queued.id, "--why", "looks right")
    assert CandidateQueue(ws).get(queued.id).status == "published" and ws.version() == 2
    step("restore", "v0", "--yes")
    assert ws.version() == 0  # the version came back with the snapshot's history
    assert skill.read_text(encoding="utf-8") == original


def test_a_broken_version_file_is_one_line_naming_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = Workspace.at(copy_demo(tmp_path / "ws"))
    (ws.root / "history").mkdir(exist_ok=True)
    (ws.root / "history" / "workspace.json").write_text('{"version": "two"}')
    done = run(ws, capsys, "snapshot")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"skillsmith: error: {ws.root / 'history' / 'workspace.json'}: field 'version': "
        "expected a whole number ≥ 0, got 'two'"
    ]
