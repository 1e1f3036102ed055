"""The version store on disk: every file of history/<name>/ after a realistic sequence."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from engine.core.errors import SkillsmithError
from engine.core.store import SkillStore, diff_hash
from engine.core.workspace import Workspace
from tests.store_helpers import make_skill

ORIGINAL = "---\r\nname: demo\r\ndescription: Finds things.\r\n---\r\n# Demo\r\n\r\n## Steps\r\n"
TEXTS = [ORIGINAL + "".join(f"{n}. step {n}\r\n" for n in range(1, i + 1)) for i in range(1, 4)]
BRANCH_TEXT = TEXTS[0] + "2. try the branch idea\r\n"
PATCH_A = "--- a/SKILL.md\n+++ b/SKILL.md\n@@ -7,0 +8 @@\n+2. retry `grep -r` until it works\n"
PATCH_A_NOISY = (
    "diff --git a/SKILL.md b/SKILL.md\r\nindex 3b18e51..a3f7c9e 100644\r\n"
    "--- a/SKILL.md\t2026-05-27 14:30:00.000000000 +0800\r\n"
    "+++ b/SKILL.md\t2026-05-27 14:31:00.000000000 +0800\r\n"
    "@@ -7,0 +8 @@   \r\n+2. retry `grep -r` until it works  \r\n"
)
PATCH_B = "--- a/SKILL.md\n+++ b/SKILL.md\n@@ -7,0 +8 @@\n+2. stop after the first hit\n"


def _applies(tmp: Path, old: str, diff: str, new: str) -> bool:
    """Check a stored patch.diff with the real `patch` program: old + diff == new."""
    target = tmp / "SKILL.md"
    target.write_bytes(old.encode())
    subprocess.run(
        ["patch", "--binary", "-s", str(target)], input=diff.encode(), check=True, cwd=tmp
    )
    return target.read_bytes() == new.encode()


def test_publish_rollback_fork_taboo_leave_exact_layout(
    workspace: Workspace, tmp_path: Path
) -> None:
    ws = workspace
    make_skill(ws, "demo", ORIGINAL)
    store = SkillStore(ws, "demo")
    published = [
        store.publish(
            text,
            why=f"fix {i}",
            metrics={"f1": 0.5 + i / 10},
            gate_verdict={"verdict": "accepted", "gates": [{"gate": "target", "verdict": "pass"}]},
            provenance={"source": "evolve", "root_causes": [f"cause-{i}"]},
        )
        for i, text in enumerate(TEXTS, start=1)
    ]
    assert published == ["v1", "v2", "v3"]
    assert ws.version() == 3
    store.rollback("v1", why="v3 regressed the guardrail")
    branch = store.fork("exp")
    assert branch.publish(BRANCH_TEXT, why="experiment") == "v2"
    first = branch.taboo().add("redundant_retry", PATCH_A, "guardrail gate failed")
    second = branch.taboo().add("premature_conclusion", PATCH_B, "holdout F1 dropped")
    again = branch.taboo().add("redundant_retry", PATCH_A_NOISY, "same edit, git-formatted")

    root = ws.history_dir / "demo"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    version_files = [
        "SKILL.md",
        "files",  # the rest of the skill folder (none here)
        "gate_verdict.json",
        "metrics.json",
        "patch.diff",
        "provenance.json",
    ]
    expected = sorted(
        [
            "branches",
            "branches/exp",
            "branches/exp/current",
            *[f"branches/exp/{v}" for v in ("v1", "v2")],
            *[f"branches/exp/{v}/{f}" for v in ("v1", "v2") for f in version_files],
            "current",
            "edit_audit.jsonl",
            "taboo.json",
            "timeline.jsonl",
            *[f"v{n}" for n in range(4)],
            *[f"v{n}/{f}" for n in range(4) for f in version_files],
        ]
    )
    assert files == expected

    # the versions: exact text (CRLF kept), a patch that really turns the parent into the child
    texts = [ORIGINAL, *TEXTS]
    for n, text in enumerate(texts):
        vdir = root / f"v{n}"
        assert (vdir / "SKILL.md").read_bytes() == text.encode()
        prov = json.loads((vdir / "provenance.json").read_text())
        assert prov["version"] == f"v{n}" and prov["parent"] == (f"v{n - 1}" if n else None)
        if n:
            assert prov["why"] == f"fix {n}" and prov["root_causes"] == [f"cause-{n}"]
            assert json.loads((vdir / "metrics.json").read_text()) == {"f1": 0.5 + n / 10}
            verdict = json.loads((vdir / "gate_verdict.json").read_text())
            assert verdict["gates"][0]["gate"] == "target"
            work = tmp_path / f"apply{n}"
            work.mkdir()
            assert _applies(work, texts[n - 1], (vdir / "patch.diff").read_bytes().decode(), text)
        else:
            assert prov["why"] == "adopted from skills/demo/SKILL.md"
            assert (vdir / "patch.diff").read_text() == ""

    # pointers: main back at v1 (a symlink), the branch at its own v2; the branch started as v1
    assert os.readlink(root / "current") == "v1"
    assert os.readlink(root / "branches/exp/current") == "v2"
    for f in version_files[:1] + version_files[2:]:
        assert (root / "branches/exp/v1" / f).read_bytes() == (root / "v1" / f).read_bytes()
    assert (root / "branches/exp/v2/SKILL.md").read_bytes() == BRANCH_TEXT.encode()
    # the active skill follows main only; rollbacks and branch publishes do not bump the version
    assert ws.skill_path("demo").read_bytes() == TEXTS[0].encode()
    assert ws.version() == 3

    # one shared taboo list; the same edit in git's spelling is recognised, not added twice
    assert again == first
    taboo = json.loads((root / "taboo.json").read_text())
    assert [(e["rule_id"], e["diff_hash"], e["reason"]) for e in taboo] == [
        ("redundant_retry", diff_hash(PATCH_A), "guardrail gate failed"),
        ("premature_conclusion", diff_hash(PATCH_B), "holdout F1 dropped"),
    ]
    assert all(len(e["diff_hash"]) == 16 and e["recorded_at"].endswith("Z") for e in taboo)
    assert second.diff_hash != first.diff_hash
    assert store.taboo().contains("redundant_retry", PATCH_A)  # main sees the branch's lesson
    assert not store.taboo().contains("tool_loop", PATCH_A)  # the rule is part of the signature

    # one audit line per pointer move, in order
    audit = [json.loads(line) for line in (root / "edit_audit.jsonl").read_text().splitlines()]
    moves = [(a["branch"], a["from"], a["to"], a["why"]) for a in audit]
    assert moves == [
        (None, None, "v0", "adopted from skills/demo/SKILL.md"),
        (None, "v0", "v1", "fix 1"),
        (None, "v1", "v2", "fix 2"),
        (None, "v2", "v3", "fix 3"),
        (None, "v3", "v1", "v3 regressed the guardrail"),
        ("exp", None, "v1", "fork of main at v1"),
        ("exp", "v1", "v2", "experiment"),
    ]
    assert all(a["when"].endswith("Z") for a in audit)
    ops = [(t["op"], t["branch"]) for t in store.timeline()]
    assert ops == [
        *[("publish", None)] * 4,
        ("rollback", None),
        ("fork", "exp"),
        ("publish", "exp"),
        ("taboo_append", "exp"),
        ("taboo_append", "exp"),
    ]

    # a rollback never clears the taboo list; nothing is deleted by moving the pointer
    store.rollback("v3", why="try again")
    assert len(store.taboo().entries()) == 2
    assert [v.version for v in store.versions()] == ["v0", "v1", "v2", "v3"]
    assert ws.skill_path("demo").read_bytes() == TEXTS[2].encode()


def test_plain_file_pointer_is_read_and_replaced(workspace: Workspace) -> None:
    """Where symlinks fail, ``current`` is a plain file naming the version."""
    make_skill(workspace, "demo", ORIGINAL)
    store = SkillStore(workspace, "demo")
    store.publish(TEXTS[0], why="one")
    pointer = workspace.history_dir / "demo" / "current"
    pointer.unlink()
    pointer.write_text("v0\n")
    assert SkillStore(workspace, "demo").current() == "v0"
    workspace.skill_path("demo").write_bytes(ORIGINAL.encode())
    store.rollback("v1", why="forward")
    assert store.current() == "v1" and os.readlink(pointer) == "v1"


def test_refusals_name_the_problem_and_change_nothing(workspace: Workspace) -> None:
    make_skill(workspace, "demo", ORIGINAL)
    store = SkillStore(workspace, "demo")
    store.publish(TEXTS[0], why="one")
    before = sorted(p.name for p in (workspace.history_dir / "demo").iterdir())

    with pytest.raises(SkillsmithError, match="identical to v1"):
        store.publish(TEXTS[0], why="again")
    with pytest.raises(SkillsmithError, match=r"no version v7 \(have: v0, v1\)"):
        store.rollback("v7", why="x")
    with pytest.raises(SkillsmithError, match="already at v1"):
        store.rollback("v1", why="x")
    with pytest.raises(SkillsmithError, match="expected vN"):
        store.rollback("latest", why="x")
    with pytest.raises(SkillsmithError, match=r"skill name '\.\./etc'"):
        SkillStore(workspace, "../etc")
    with pytest.raises(SkillsmithError, match="no branch 'nope'"):
        SkillStore(workspace, "demo", "nope")
    store.fork("exp")
    with pytest.raises(SkillsmithError, match="branch 'exp' already exists"):
        store.fork("exp")

    # a hand edit of the active SKILL.md is never overwritten silently
    workspace.skill_path("demo").write_text("hand edit\n")
    with pytest.raises(SkillsmithError, match="edited by hand since v1; publish it first"):
        store.rollback("v0", why="x")
    with pytest.raises(SkillsmithError, match="edited by hand"):
        store.publish(TEXTS[1], why="x")
    assert store.publish("hand edit\n", why="keep the hand edit") == "v2"
    after = sorted(p.name for p in (workspace.history_dir / "demo").iterdir())
    assert after == sorted([*before, "v2", "branches"])


def test_first_publish_of_a_new_skill_creates_it(workspace: Workspace) -> None:
    store = SkillStore(workspace, "fresh")
    assert store.ensure_adopted() is None
    assert store.publish("---\nname: fresh\n---\n", why="created") == "v0"
    assert workspace.skill_path("fresh").read_text() == "---\nname: fresh\n---\n"
    assert store.versions()[0].parent is None
    assert workspace.version() == 1
