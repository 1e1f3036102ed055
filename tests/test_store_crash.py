"""SIGKILL in the middle of publish, snapshot, restore and approve: old or new state, never half.

No test hooks in the product: a child process runs the real operation in a loop on a large skill
(so each operation spends its time in file writes and fsyncs) and is killed after a random short
delay. After every kill, opening the store must leave it consistent and the next operation must
work.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from engine.core.queue import CandidateQueue
from engine.core.snapshots import create_snapshot, list_snapshots
from engine.core.store import RESOURCES_DIR, VERSION_FILES, SkillStore
from engine.core.workspace import Workspace
from tests.store_helpers import REPO, leftovers, make_skill, state, tar_members, untar

CHILD = r"""
import itertools, os, sys
from pathlib import Path
from engine.core.queue import CandidateQueue
from engine.core.snapshots import create_snapshot, restore
from engine.core.store import SkillStore
from engine.core.workspace import Workspace

ws = Workspace.at(sys.argv[1])
mode, base = sys.argv[2], Path(sys.argv[3]).read_text()
store = SkillStore(ws, "big")
queue = CandidateQueue(ws)
print("ready", flush=True)
for i in itertools.count():
    tag = f"{os.getpid()}-{i}"
    if mode == "publish":
        store.publish(base + f"round {tag}\n", why=tag)
    elif mode == "snapshot":
        create_snapshot(ws, note=tag)
    elif mode == "restore":
        restore(ws, sys.argv[4], yes=True)
    else:
        cand = queue.submit(
            "big", base + f"candidate {tag}\n", f"+candidate {tag}\n", source="manual",
            operation="update", status="pending_approval", parent_version=store.current(),
            summary=tag,
        )
        queue.approve(cand.id)
"""

MODES = ("publish", "snapshot", "restore", "approve")


def _check_store(ws: Workspace) -> str:
    """Open the workspace (which recovers) and prove store and queue whole; returns the current
    version."""
    ws = Workspace.at(ws.root)
    store = SkillStore(ws, "big")
    assert leftovers(ws) == [], leftovers(ws)
    current = store.current()
    assert current is not None
    versions = store.versions()
    for info in versions:
        assert sorted(p.name for p in info.path.iterdir()) == sorted(
            [*VERSION_FILES, RESOURCES_DIR]
        ), info.path
        for name in ("metrics.json", "gate_verdict.json", "provenance.json"):
            json.loads((info.path / name).read_text())
    assert ws.skill_path("big").read_bytes() == (store.dir / current / "SKILL.md").read_bytes()
    audit = store.audit()
    assert audit[-1]["to"] == current
    assert len(audit) == len(versions)  # adoption + one move per publish, no lost or double line
    publishes = [t for t in store.timeline() if t["op"] == "publish"]
    assert len(publishes) == len(versions)
    assert ws.version() == int(current[1:])  # bumped exactly once per publish
    return current


def _check_new_snapshots(ws: Workspace, seen: set[str]) -> None:
    """Each snapshot is a complete archive (real tar reads it) without temp files or intents."""
    for snap in list_snapshots(ws):
        if snap.path.name not in seen:
            names = [m.rsplit("/", 1)[-1] for m in tar_members(snap.path)]
            assert not [
                n
                for n in names
                if n.startswith((".tmp-", ".current."))
                or n.endswith(".tmp")
                or n == ".pending.json"
            ], snap.path
            seen.add(snap.path.name)


def _check_candidates(ws: Workspace, ids: set[str]) -> int:
    """Candidates of one approve child: pending and unpublished, or published completely."""
    queue = CandidateQueue(ws)
    store = SkillStore(ws, "big")
    by_candidate = {
        json.loads((v.path / "provenance.json").read_text()).get("candidate"): v.version
        for v in store.versions()
    }
    decided = {d["candidate"]: d for d in queue.decisions() if d["action"] == "approve"}
    notes = {s.note for s in list_snapshots(ws)}
    published = 0
    for cand in (queue.get(i) for i in ids):
        if cand.status == "published":
            version = by_candidate[cand.id]
            assert decided[cand.id]["version"] == version
            assert f"big {version}: approved {cand.id}" in notes
            assert [h.status for h in cand.history] == [
                "pending_approval",
                "approved",
                "published",
            ]
            published += 1
        else:
            assert cand.status == "pending_approval" and cand.id not in by_candidate
            assert cand.id not in decided
    return published


def test_sigkill_at_random_points_leaves_a_consistent_store(
    workspace: Workspace, tmp_path: Path
) -> None:
    ws = workspace
    # a skill approve accepts (frontmatter lint passes), big enough for kills to land inside writes
    base = "---\nname: big\ndescription: Search the code. Use for every search.\n---\n" + "".join(
        f"{i}. run `grep -rn pattern{i} src/` and note every hit\n" for i in range(12_000)
    )
    base_file = tmp_path / "base.md"
    base_file.write_text(base)
    make_skill(ws, "big", base)
    SkillStore(ws, "big").publish(base + "first\n", why="first")
    target = create_snapshot(ws, note="restore target")
    target_state = state(untar(target, tmp_path / "target"))
    rng = random.Random(20260527)
    interrupted, published, seen = 0, 0, set[str]()
    kills = 32
    for k in range(kills):
        mode = MODES[k % len(MODES)]
        before = state(ws.root)
        ids_before = {c.id for c in CandidateQueue(ws).list()}
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(ws.root), mode, str(base_file), str(target)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        # an approval lints the whole candidate before it publishes (engine.core.admission): give
        # that loop long enough to publish now and then, and still die inside its writes
        time.sleep(rng.uniform(0.01, 0.3) + (2.5 if mode == "approve" else 0.0))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
        interrupted += bool(leftovers(ws))

        _check_store(ws)
        _check_new_snapshots(ws, seen)
        if mode == "restore":
            assert state(ws.root) in (before, target_state)
        if mode == "approve":
            new_ids = {c.id for c in CandidateQueue(ws).list()} - ids_before
            published += _check_candidates(ws, new_ids)

    # the kills really landed inside operations, and the approve loop really published
    assert interrupted >= kills // 3, interrupted
    assert published >= 1
    # after all that, the next operations simply work
    store = SkillStore(ws, "big")
    nxt = store.publish(base + "after the storm\n", why="after")
    assert _check_store(ws) == nxt
    snap = create_snapshot(ws, note="after")
    _check_new_snapshots(ws, seen)
    assert snap.exists()


def test_opening_removes_a_workspace_version_temp_a_killed_publish_left(
    workspace: Workspace,
) -> None:
    """A publish killed inside the write of history/workspace.json leaves its temp beside it (the
    random kills above hit this about once in thirty runs): opening the workspace removes it and
    keeps the version that was committed."""
    ws = workspace
    make_skill(ws, "big", "---\nname: big\ndescription: Search the code. Use for search.\n---\n")
    SkillStore(ws, "big").publish(
        "---\nname: big\ndescription: Search. Use for search.\n---\nx\n", why="t"
    )
    version = ws.version()
    temp = ws.history_dir / ".workspace.json.k1ll3d0a.tmp"
    temp.write_text('{"version": 9')
    reopened = Workspace.at(ws.root)
    assert not temp.exists()
    assert leftovers(reopened) == []
    assert reopened.version() == version
