"""The one intent journal: a change killed mid-way is finished when the workspace is opened,
and only then — opening a store or the queue to read it changes nothing on disk.

The kills are real: a child process publishes (or decides) and SIGKILLs itself at the step
named, after its journal is written and before it is unlinked.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.errors import FormatError
from engine.core.journal import Journal
from engine.core.queue import CandidateQueue
from engine.core.snapshots import list_snapshots
from engine.core.store import SkillStore, stores_of
from engine.core.workspace import Workspace
from tests.store_helpers import REPO, leftovers, make_skill, tree

V0 = "---\nname: alpha\ndescription: Audit code. Use for audits.\n---\nstep one\n"
V1 = V0 + "step two\n"

# Publish V1, dying when the store mirrors the new version into the live folder: the version
# folder is renamed into place and the pointer moved, SKILL.md and the logs are not yet written.
KILL_IN_PUBLISH = r"""
import os, signal, sys
from engine.core.store import SkillStore
from engine.core.workspace import Workspace

def die(self, version_dir):
    os.kill(os.getpid(), signal.SIGKILL)

SkillStore._mirror = die
SkillStore(Workspace.at(sys.argv[1]), "alpha").publish(sys.argv[2], why="two")
"""

# Approve a candidate, dying when its snapshot is taken: the version is published and the
# candidate says so, the snapshot and the decision line are not yet written.
KILL_IN_APPROVE = r"""
import os, signal, sys
import engine.core.snapshots
from engine.core.queue import CandidateQueue
from engine.core.workspace import Workspace

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

engine.core.snapshots.create_snapshot = die
CandidateQueue(Workspace.at(sys.argv[1])).approve(sys.argv[2])
"""


def _killed(script: str, *args: str) -> None:
    child = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=REPO, capture_output=True, timeout=120
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-400:]


def test_a_publish_killed_mid_way_is_finished_when_the_workspace_opens(
    workspace: Workspace,
) -> None:
    make_skill(workspace, "alpha", V0)
    SkillStore(workspace, "alpha").ensure_adopted()
    _killed(KILL_IN_PUBLISH, str(workspace.root), V1)
    journal = workspace.history_dir / "alpha" / ".pending.json"
    assert json.loads(journal.read_text())["op"] == "publish"
    before = tree(workspace.root)

    # reading through stores and the queue replays nothing: every byte stays as the kill left it
    store = SkillStore(workspace, "alpha")
    assert store.current() == "v1"  # the pointer had moved
    assert [s.name for s in stores_of(workspace)] == ["alpha"]
    CandidateQueue(workspace).list()
    assert tree(workspace.root) == before
    assert workspace.skill_path("alpha").read_text() == V0  # the live folder had not

    opened = Workspace.at(workspace.root)
    assert not journal.exists() and leftovers(opened) == []
    assert opened.skill_path("alpha").read_text() == V1
    store = SkillStore(opened, "alpha")
    assert [line["to"] for line in store.audit()] == ["v0", "v1"]  # one line per move, no twin
    assert opened.version() == 1


def test_an_approval_killed_mid_way_is_finished_when_the_workspace_opens(
    workspace: Workspace,
) -> None:
    make_skill(workspace, "alpha", V0)
    SkillStore(workspace, "alpha").ensure_adopted()
    queue = CandidateQueue(workspace)
    cand = queue.submit(
        "alpha",
        V1,
        "--- a/SKILL.md\n+++ b/SKILL.md\n@@ -5 +5,2 @@\n step one\n+step two\n",
        source="evolve",
        operation="update",
        status="pending_approval",
        parent_version="v0",
        summary="a second step",
    )
    _killed(KILL_IN_APPROVE, str(workspace.root), cand.id)
    assert (workspace.candidates_dir / ".pending.json").exists()
    before = tree(workspace.root)
    assert CandidateQueue(workspace).decisions() == []
    assert list_snapshots(workspace) == []
    assert tree(workspace.root) == before

    opened = Workspace.at(workspace.root)
    queue = CandidateQueue(opened)
    assert queue.get(cand.id).status == "published"
    assert [(d["action"], d["candidate"]) for d in queue.decisions()] == [("approve", cand.id)]
    assert SkillStore(opened, "alpha").current() == "v1"
    assert [s.note for s in list_snapshots(opened)] == [f"alpha v1: approved {cand.id}"]
    assert leftovers(opened) == []


def test_a_torn_journal_is_refused_with_one_line_and_left_for_a_person(tmp_path: Path) -> None:
    path = tmp_path / ".pending.json"
    path.write_text('{"op": "publ')
    journal = Journal(path, lambda _path, data: data)
    with pytest.raises(FormatError) as err:
        journal.replay(lambda _intent: pytest.fail("a torn intent must not be applied"))
    message = str(err.value)
    assert str(path) in message and "remove the file if you did not write it" in message
    assert len(message.splitlines()) == 1
    assert path.exists()


def test_a_commit_whose_apply_fails_keeps_its_intent_for_the_replay(tmp_path: Path) -> None:
    journal = Journal(tmp_path / ".pending.json", lambda _path, data: data)

    def half_way(_intent: dict[str, object]) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError):
        journal.commit({"op": "x", "n": 1}, half_way)
    assert journal.read() == {"op": "x", "n": 1}
    done: list[dict[str, object]] = []
    assert journal.replay(done.append) is True
    assert done == [{"op": "x", "n": 1}] and not journal.pending()
    assert journal.replay(done.append) is False
