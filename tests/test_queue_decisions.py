"""The approval queue: submit, approve (publish + snapshot), reject (taboo), undo, and refusals."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from typing import Any

import pytest
import yaml

from engine.cli import main
from engine.core.errors import FormatError, SkillsmithError
from engine.core.queue import CandidateQueue
from engine.core.snapshots import list_snapshots
from engine.core.store import SkillStore, diff_hash
from engine.core.workspace import Workspace
from tests.store_helpers import make_skill, run

V0 = "---\nname: audit\ndescription: Audits code.\n---\n## Steps\n1. run `grep -rn eval src/`\n"
V1 = V0 + "2. run `grep -rn exec src/`\n"
PATCH = "--- a/SKILL.md\n+++ b/SKILL.md\n@@ -6,0 +7 @@\n+2. run `grep -rn exec src/`\n"
GATES = [
    {
        "gate": "target",
        "verdict": "pass",
        "figures": {"fixed": 2},
        "reasons": ["2 of 5 fixed"],
        "case_ids": ["c1", "c2"],
        "fixed": ["c1", "c2"],
        "newly_broken": [],
    }
]


def _queue(ws: Workspace) -> tuple[CandidateQueue, SkillStore]:
    make_skill(ws, "audit", V0)
    store = SkillStore(ws, "audit")
    store.ensure_adopted()
    return CandidateQueue(ws), store


def _submit(queue: CandidateQueue, text: str = V1, patch: str = PATCH, **kw: object) -> str:
    fields: dict[str, object] = {
        "source": "evolve",
        "operation": "update",
        "status": "pending_approval",
        "parent_version": "v0",
        "summary": "grep for exec too",
        "gates": GATES,
        "delta_score": 0.12,
        "root_causes": ["premature_conclusion"],
        "rule_id": "premature_conclusion",
    }
    fields.update(kw)
    return queue.submit("audit", text, patch, **fields).id  # type: ignore[arg-type]


def test_submit_writes_the_candidate_folder(workspace: Workspace) -> None:
    queue, _ = _queue(workspace)
    cid = _submit(queue)
    folder = workspace.candidates_dir / cid
    assert sorted(p.name for p in folder.iterdir()) == [
        "SKILL.md",
        "candidate.yaml",
        "gates.json",
        "patch.diff",
    ]
    record = yaml.safe_load((folder / "candidate.yaml").read_text())
    assert record["status"] == "pending_approval" and record["parent_version"] == "v0"
    assert (
        record["content_hash"]
        == hashlib.sha256((V1 + PATCH + "\0operation=update").encode()).hexdigest()
    )
    assert [h["status"] for h in record["history"]] == ["pending_approval"]
    assert json.loads((folder / "gates.json").read_text()) == GATES
    cand = queue.get(cid)
    assert cand.skill_text() == V1 and cand.patch_text() == PATCH and cand.gates() == GATES
    assert [c.id for c in queue.list()] == [cid]
    with pytest.raises(FormatError, match="field 'source': expected one of"):
        queue.submit(
            "audit", V1, PATCH, source="robot", operation="update", status="proposed",
            parent_version="v0", summary="x",
        )  # fmt: skip
    assert [c.id for c in queue.list()] == [cid]


def test_approve_publishes_snapshots_and_undo_rolls_back(workspace: Workspace) -> None:
    queue, store = _queue(workspace)
    cid = _submit(queue)
    assert queue.approve(cid, expected_hash=queue.get(cid).content_hash[:12]) == "v1"

    assert workspace.skill_path("audit").read_text() == V1
    assert store.current() == "v1" and workspace.version() == 1
    vdir = workspace.history_dir / "audit" / "v1"
    assert (vdir / "patch.diff").read_text() == PATCH
    assert json.loads((vdir / "gate_verdict.json").read_text())["gates"] == GATES
    prov = json.loads((vdir / "provenance.json").read_text())
    assert prov["candidate"] == cid and prov["root_causes"] == ["premature_conclusion"]
    cand = queue.get(cid)
    assert cand.status == "published"
    assert [h.status for h in cand.history] == ["pending_approval", "approved", "published"]
    snaps = list_snapshots(workspace)
    assert [(s.version, s.note) for s in snaps] == [(1, f"audit v1: approved {cid}")]
    [decision] = queue.decisions()
    assert decision["action"] == "approve" and decision["version"] == "v1"
    assert decision["previous_version"] == "v0"
    moves = [(t["op"], t.get("to_status")) for t in store.timeline()]
    assert ("candidate", "published") in moves and ("snapshot", None) in moves

    message = queue.undo_last()
    assert message == f"undid the approval of {cid}: skill 'audit' back at v0"
    assert store.current() == "v0" and workspace.skill_path("audit").read_text() == V0
    assert (vdir / "SKILL.md").read_text() == V1  # nothing deleted
    cand = queue.get(cid)
    assert cand.status == "pending_approval"
    assert [h.status for h in cand.history][-1] == "pending_approval"
    assert [d["action"] for d in queue.decisions()] == ["approve", "undo"]
    with pytest.raises(SkillsmithError, match="no decision to undo"):
        queue.undo_last()
    # the undone candidate can be approved again: its parent is current once more
    assert queue.approve(cid) == "v2"


def test_reject_adds_taboo_and_undo_takes_it_back(workspace: Workspace) -> None:
    queue, store = _queue(workspace)
    cid = _submit(queue)
    manual = _submit(queue, text=V0 + "x\n", patch="+x\n", rule_id=None, status="pending_eval")
    entry = queue.reject(cid, why="guardrail regressed on c7")
    assert (entry.rule_id, entry.diff_hash) == ("premature_conclusion", diff_hash(PATCH))
    assert queue.reject(manual, why="not useful").rule_id == "manual"
    taboo = json.loads((workspace.history_dir / "audit" / "taboo.json").read_text())
    assert [(e["rule_id"], e["reason"]) for e in taboo] == [
        ("premature_conclusion", "guardrail regressed on c7"),
        ("manual", "not useful"),
    ]
    cand = queue.get(cid)
    assert cand.status == "rejected" and cand.reason == "guardrail regressed on c7"
    assert store.current() == "v0" and list_snapshots(workspace) == []
    with pytest.raises(SkillsmithError, match="is already rejected"):
        queue.reject(cid, why="again")

    assert "its taboo entry is removed" in queue.undo_last()
    assert queue.get(manual).status == "pending_eval"  # back to where it was, reason cleared
    assert queue.get(manual).reason is None
    # the undone rejection no longer blocks its patch; the other rejection still stands
    assert [e.rule_id for e in store.taboo().entries()] == ["premature_conclusion"]
    assert not store.taboo().contains("manual", "+x\n")
    undo = [t for t in store.timeline() if t["op"] == "undo"]
    assert undo[-1]["taboo_kept"] is False and undo[-1]["candidate"] == manual
    assert [t["why"] for t in store.timeline() if t["op"] == "taboo_remove"] == [
        f"undo reject {queue.decisions()[1]['id']}"
    ]


def test_undoing_a_rejection_keeps_a_taboo_entry_it_did_not_add(workspace: Workspace) -> None:
    """Two candidates with the same patch: the first rejection adds the entry, the second finds
    it; undoing the second must leave the first's lesson in place."""
    queue, store = _queue(workspace)
    first, second = _submit(queue), _submit(queue)
    queue.reject(first, why="regressed")
    queue.reject(second, why="same patch again")
    assert "was on the taboo list before and stays" in queue.undo_last()
    assert queue.get(second).status == "pending_approval"
    assert [e.reason for e in store.taboo().entries()] == ["regressed"]


def test_changed_on_disk_and_stale_candidates_are_refused(workspace: Workspace) -> None:
    queue, store = _queue(workspace)
    first, second, edited = _submit(queue), _submit(queue), _submit(queue)

    (workspace.candidates_dir / edited / "SKILL.md").write_text(V1 + "sneaky\n")
    with pytest.raises(SkillsmithError, match="changed on disk after it was queued"):
        queue.approve(edited)
    with pytest.raises(SkillsmithError, match="changed on disk since it was shown"):
        queue.approve(first, expected_hash="0123456789ab")
    assert store.current() == "v0" and list_snapshots(workspace) == []

    assert queue.approve(first) == "v1"
    with pytest.raises(SkillsmithError, match="stale: made against v0 but skill 'audit' is now"):
        queue.approve(second)
    assert queue.get(second).status == "pending_approval"
    with pytest.raises(SkillsmithError, match="is published; only pending_approval"):
        queue.approve(first)
    # a manual publish after the approval makes the approval impossible to undo silently
    store.publish(V1 + "3. hand change\n", why="by hand")
    with pytest.raises(SkillsmithError, match="moved from v1 to v2 since"):
        queue.undo_last()


def test_create_candidate_makes_a_new_skill(workspace: Workspace) -> None:
    queue = CandidateQueue(workspace)
    text = "---\nname: fresh\ndescription: New.\n---\n"
    cid = queue.submit(
        "fresh", text, "+new\n", source="curate", operation="create",
        status="pending_approval", parent_version=None, summary="new skill",
    ).id  # fmt: skip
    assert queue.approve(cid) == "v0"
    assert workspace.skill_path("fresh").read_text() == text
    with pytest.raises(SkillsmithError, match="a creation cannot be undone here"):
        queue.undo_last()


def test_queue_from_the_command_line(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    def cli(ws: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
        return run(ws, capsys, *args)

    queue, store = _queue(workspace)
    good, bad = _submit(queue), _submit(queue, text=V0 + "y\n", patch="+y\n")
    listing = json.loads(cli(workspace, "queue", "--json").stdout)
    assert sorted((c["id"], c["status"]) for c in listing) == sorted(
        [(good, "pending_approval"), (bad, "pending_approval")]
    )
    text = cli(workspace, "queue").stdout
    assert good in text and "+0.120" in text and queue.get(good).content_hash[:12] in text

    done = cli(workspace, "queue", "reject", bad, "--why", "noise")
    assert done.returncode == 0 and "taboo entry premature_conclusion" in done.stdout
    done = cli(workspace, "queue", "approve", good, "--expect", "deadbeefdead")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert "changed on disk since it was shown" in done.stderr
    done = cli(workspace, "queue", "approve", good, "--expect", queue.get(good).content_hash[:12])
    assert done.returncode == 0 and done.stdout.strip() == f"approved {good}: audit is now at v1"
    assert store.current() == "v1"
    done = cli(workspace, "queue", "undo")
    assert done.returncode == 0 and "back at v0" in done.stdout
    done = cli(workspace, "queue", "approve", "cand-missing")
    assert done.returncode == 1 and "no such candidate" in done.stderr
    assert cli(workspace, "queue", "reject", good).returncode == 2  # --why is required


def test_a_refusal_half_way_leaves_no_pending_decision(workspace: Workspace) -> None:
    queue, store = _queue(workspace)
    cid = _submit(queue)
    workspace.skill_path("audit").write_text("edited by hand\n")
    with pytest.raises(SkillsmithError, match="edited by hand since v0"):
        queue.approve(cid)
    assert not (workspace.candidates_dir / ".pending.json").exists()
    assert queue.get(cid).status == "pending_approval" and queue.decisions() == []
    assert store.current() == "v0" and list_snapshots(workspace) == []

    # published, but the snapshot refuses to carry a secret: the decision stands (the version
    # is out) and says in a warning which file kept the snapshot from being taken
    store.publish("edited by hand\n", why="keep the hand edit")
    second = _submit(queue, text=V1, parent_version="v1")
    (workspace.vault_dir / "token").write_text("vault-secret-value-42")
    # (in AGENTS.md: a file added to the skill folder would be a hand edit of the skill)
    workspace.agents_md.write_text("vault-secret-value-42")
    assert queue.approve(second) == "v2"
    [warning] = queue.warnings
    assert f"audit v2 is published, but {workspace.agents_md}:1: holds a secret" in warning
    assert not (workspace.candidates_dir / ".pending.json").exists()
    assert [d["candidate"] for d in queue.decisions()] == [second]
    assert store.current() == "v2" and list_snapshots(workspace) == []
    assert [h.status for h in queue.get(second).history] == [
        "pending_approval",
        "approved",
        "published",
    ]


def _index(workspace: Workspace) -> tuple[dict[str, Any], dict[str, Any]]:
    """The listing index's two lines: heads (what a listing line shows), then whole records."""
    heads, records = (workspace.candidates_dir / ".index.jsonl").read_text().splitlines()
    return json.loads(heads), json.loads(records)


def test_the_listing_index_follows_every_change_to_a_candidate(workspace: Workspace) -> None:
    """`queue` lists from candidates/.index.jsonl, but a candidate whose candidate.yaml changed
    (a decision), one added, one removed and a broken index are each listed as on disk."""
    queue, _ = _queue(workspace)
    first, second = _submit(queue), _submit(queue, summary="second")
    index = workspace.candidates_dir / ".index.jsonl"
    assert [c.status for c in queue.list()] == ["pending_approval"] * 2
    heads, records = _index(workspace)
    assert sorted(heads["candidates"]) == sorted(records["records"]) == sorted([first, second])
    queue.reject(second, why="not needed")
    assert sorted((c.id, c.status) for c in queue.list()) == sorted(
        [(first, "pending_approval"), (second, "rejected")]
    )
    listed = sorted(queue.list(), key=lambda c: c.id)
    assert listed == sorted([queue.get(first), queue.get(second)], key=lambda c: c.id)
    third = _submit(queue, summary="third")
    (workspace.candidates_dir / first / "candidate.yaml").unlink()
    # (listed oldest first; made within one second, two candidates are ordered by their ids)
    assert sorted(c.id for c in queue.list()) == sorted([second, third])
    index.write_text("[broken")
    assert sorted(c.summary for c in queue.list()) == ["second", "third"]
    heads, records = _index(workspace)
    assert sorted(heads["candidates"]) == sorted(records["records"]) == sorted([second, third])


def test_a_hand_edit_and_a_tampered_index_entry_are_listed_as_on_disk(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """The index is keyed by each candidate.yaml's mtime and size, so an edit in place (an
    editor, a script) shows at the next listing; an entry that is not a whole record or head (an
    index edited by hand, or one of another layout) is read from the candidate's own file."""
    queue, _ = _queue(workspace)
    cid = _submit(queue)
    index = workspace.candidates_dir / ".index.jsonl"
    assert [c.summary for c in queue.list()] == ["grep for exec too"]
    path = workspace.candidates_dir / cid / "candidate.yaml"
    record = yaml.safe_load(path.read_text(encoding="utf-8"))
    record["summary"] = "grep for exec and eval"
    path.write_text(yaml.safe_dump(record, sort_keys=False), encoding="utf-8")
    assert [c.summary for c in queue.list()] == ["grep for exec and eval"]
    heads, records = _index(workspace)
    records["records"][cid] = [cid, "published"]
    index.write_text(json.dumps(heads) + "\n" + json.dumps(records) + "\n")
    assert queue.list() == [queue.get(cid)]
    heads, records = _index(workspace)
    assert dict(zip(records["fields"], records["records"][cid], strict=True)) == (
        queue.get(cid).record()
    )
    heads["candidates"][cid] = [*heads["candidates"][cid][:2], "published"]
    index.write_text(json.dumps(heads) + "\n" + json.dumps(records) + "\n")
    assert main(["-w", str(workspace.root), "queue"]) == 0
    assert capsys.readouterr().out.startswith(f"{cid}  pending_approval ")
    heads, records = _index(workspace)
    records["fields"].reverse()  # another layout of the entries: each is read from its file
    index.write_text(json.dumps(heads) + "\n" + json.dumps(records) + "\n")
    assert queue.list() == [queue.get(cid)]


def test_approving_twice_does_not_say_evaluate_it_first(workspace: Workspace) -> None:
    """Only a candidate waiting for its evaluation is told to get one; a published one is not."""
    queue, _ = _queue(workspace)
    published = _submit(queue)
    queue.approve(published)
    with pytest.raises(SkillsmithError) as refused:
        queue.approve(published)
    assert "is published; only pending_approval" in str(refused.value)
    assert "evaluate" not in str(refused.value)
    waiting = _submit(queue, V1 + "3. one more\n", status="pending_eval", parent_version="v1")
    with pytest.raises(SkillsmithError, match=r"evaluate it first: skillsmith queue eval"):
        queue.approve(waiting)


def test_approve_exits_0_when_it_published_and_warns_of_a_refused_snapshot(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reference the skill already shipped holds a password that is not an example: the
    approval publishes (it adds no secret) and says in one warning which file kept the snapshot
    from being taken."""
    make_skill(workspace, "audit", V0)
    notes = workspace.skill_path("audit").parent / "notes.md"
    notes.write_text("Connect with `mysql --password=Tr0ub4dor88 -u app`.\n")
    queue, store = _queue(workspace)
    cid = _submit(queue)
    done = run(workspace, capsys, "queue", "approve", cid, "--why", "ok")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"approved {cid}: audit is now at v1\n"
    [warning] = done.stderr.splitlines()
    assert warning.startswith(f"warning: audit v1 is published, but {notes}:1: holds a secret")
    assert "Tr0ub4dor88" not in warning
    assert store.current() == "v1" and list_snapshots(workspace) == []


def test_one_unreadable_candidate_does_not_hide_the_queue(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """`queue` lists every readable candidate and names the unreadable file on stderr, one line
    each, exiting 1; `--json` likewise. Fixed, the candidate is listed again."""
    queue, _ = _queue(workspace)
    good, bad = _submit(queue), _submit(queue, summary="second")
    path = workspace.candidates_dir / bad / "candidate.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text("id: [unclosed\n", encoding="utf-8")
    for argv in (["queue"], ["queue", "--json"]):
        assert main(["-w", str(workspace.root), *argv]) == 1
        out, err = capsys.readouterr()
        assert good in out and bad not in out
        (line,) = err.splitlines()
        assert line.startswith("skillsmith: error: ") and f"{bad}/candidate.yaml" in line
    assert [c["id"] for c in json.loads(_listed(workspace, capsys))] == [good]
    path.write_text(text, encoding="utf-8")
    assert main(["-w", str(workspace.root), "queue"]) == 0
    out, err = capsys.readouterr()
    assert bad in out and err == ""


def _listed(workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> str:
    main(["-w", str(workspace.root), "queue", "--json"])
    return capsys.readouterr().out


def test_an_edit_within_the_same_clock_tick_is_still_seen(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate.yaml changed a moment ago could change again within its timestamp's tick
    and keep its size ("racy git"), so the index holds it under a stamp no file has until it
    settles: the second edit shows. Once settled, the index keeps its real stamp."""
    from engine.core import fsutil

    queue, _ = _queue(workspace)
    cid = _submit(queue, summary="first words")
    assert [c.summary for c in queue.list()] == ["first words"]
    path = workspace.candidates_dir / cid / "candidate.yaml"
    before = path.stat()
    path.write_text(path.read_text().replace("first words", "other words"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same tick, the same size
    assert path.stat().st_size == before.st_size
    assert [c.summary for c in queue.list()] == ["other words"]
    monkeypatch.setattr(fsutil, "SETTLED_AFTER_S", 0.0)
    queue.list()
    heads, _ = _index(workspace)
    assert heads["candidates"][cid][:2] == [path.stat().st_mtime_ns, path.stat().st_size]
