"""What ``publish`` and ``queue approve`` refuse to make active, and readers that meet garbage.

Each refusal is one line naming the file, exit status 1, and leaves the skill's history as it
was; no reader shows a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.cli import main
from engine.core.queue import CandidateQueue, content_hash
from engine.core.snapshots import create_snapshot
from engine.core.store import SkillStore, unified_diff
from engine.core.vault import write_secret
from engine.core.workspace import Workspace
from tests.store_helpers import make_skill

GOOD = "---\nname: x\ndescription: Do x. Use when x is asked for.\n---\n1. Do x.\n"


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "the file is empty"),
        (b"1. Do x.\n", "no YAML frontmatter"),
        (b"---\nname: x\ndescription: [unclosed\n---\nbody\n", "new.md:"),
        (b"---\nname: 12345\ndescription: Do x. Use for x.\n---\nbody\n", "name"),
        (b"---\nname: y\ndescription: Do x. Use for x.\n---\nbody\n", "name"),
        (GOOD.encode() + b"padding line of a huge skill\n" * 180_000, "bytes; a skill may hold"),
        (b"\xff\xfe\x00binary", "expected UTF-8 text"),
    ],
    ids=["empty", "no-frontmatter", "broken-yaml", "numeric-name", "other-name", "5mb", "bin"],
)
def test_publish_refuses_what_lint_calls_an_error(
    workspace: Workspace,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: bytes,
    expected: str,
) -> None:
    make_skill(workspace, "x", GOOD)
    store = SkillStore(workspace, "x")
    store.ensure_adopted()
    before = [v.version for v in store.versions()]
    new = tmp_path / "new.md"
    new.write_bytes(content)

    code = main(["publish", "x", str(new), "--why", "w", "-w", str(workspace.root)])

    line = _one_line(capsys)
    assert code == 1
    assert str(new) in line and expected in line
    assert [v.version for v in store.versions()] == before
    assert workspace.skill_path("x").read_text() == GOOD


def _hand_edited(ws: Workspace, skill_md: bytes, patch: bytes) -> str:
    """A pending candidate whose files were replaced by hand, content hash updated to match."""
    store = SkillStore(ws, "x")
    current = store.ensure_adopted()
    text = GOOD + "2. Check x.\n"
    cand = CandidateQueue(ws).submit(
        "x",
        text,
        unified_diff(GOOD, text),
        source="manual",
        operation="update",
        status="pending_approval",
        parent_version=current,
        summary="hand edited",
    )
    (cand.dir / "SKILL.md").write_bytes(skill_md)
    (cand.dir / "patch.diff").write_bytes(patch)
    record = yaml.safe_load((cand.dir / "candidate.yaml").read_text())
    record["content_hash"] = content_hash(skill_md, patch, record["operation"])
    (cand.dir / "candidate.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
    return cand.id


@pytest.mark.parametrize(
    ("skill_md", "patch", "expected"),
    [
        (GOOD.encode() + b"2. ok\n", b"\x89PNG\r\n\x1a\n\x00\x00binary", "patch.diff: not a diff"),
        (GOOD.encode() + b"2. ok\n", b"this is prose, not a diff\n", "patch.diff:1: not a diff"),
        (b"---\nname: 12345\n---\nbody\n", b"+body\n", "SKILL.md:"),
        (b"", b"", "SKILL.md: the file is empty"),
    ],
    ids=["binary-patch", "prose-patch", "bad-skill", "empty-skill"],
)
def test_queue_approve_refuses_a_hand_edited_candidate(
    workspace: Workspace,
    capsys: pytest.CaptureFixture[str],
    skill_md: bytes,
    patch: bytes,
    expected: str,
) -> None:
    make_skill(workspace, "x", GOOD)
    cand_id = _hand_edited(workspace, skill_md, patch)
    versions = [v.version for v in SkillStore(workspace, "x").versions()]

    code = main(["queue", "approve", cand_id, "-w", str(workspace.root)])

    line = _one_line(capsys)
    assert code == 1 and expected in line
    assert [v.version for v in SkillStore(workspace, "x").versions()] == versions
    assert CandidateQueue(workspace).get(cand_id).status == "pending_approval"
    assert workspace.skill_path("x").read_text() == GOOD


def test_queue_approve_refuses_a_candidate_holding_a_vault_value(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    make_skill(workspace, "x", GOOD)
    value = "vault-" + "Q7m2Zx9w"
    write_secret(workspace, "deploy_token", value)
    text = GOOD + f"2. Log in with {value}.\n"
    cand_id = _hand_edited(workspace, text.encode(), unified_diff(GOOD, text).encode())

    assert main(["queue", "approve", cand_id, "-w", str(workspace.root)]) == 1

    line = _one_line(capsys)
    assert "SKILL.md:6:" in line and "secret.vault_value" in line and value not in line
    assert [v.version for v in SkillStore(workspace, "x").versions()] == ["v0"]
    assert CandidateQueue(workspace).get(cand_id).status == "pending_approval"
    create_snapshot(workspace)  # nothing publishable blocks a snapshot


@pytest.mark.parametrize(
    ("damaged", "argv"),
    [
        ("skills/x/SKILL.md", ["queue", "approve"]),  # the live file the approval replaces
        ("history/x/v0/SKILL.md", ["queue", "approve"]),  # the parent version it compares with
        ("candidates/{id}/patch.diff", ["queue", "show"]),
    ],
    ids=["live-skill", "parent-version", "shown-patch"],
)
def test_a_binary_file_under_a_queue_command_is_one_line(
    workspace: Workspace, capsys: pytest.CaptureFixture[str], damaged: str, argv: list[str]
) -> None:
    make_skill(workspace, "x", GOOD)
    text = GOOD + "2. Check x.\n"
    cand_id = _hand_edited(workspace, text.encode(), unified_diff(GOOD, text).encode())
    path = workspace.root / damaged.format(id=cand_id)
    path.write_bytes(b"\x00\xff\xfe binary")

    assert main([*argv, cand_id, "-w", str(workspace.root)]) == 1

    line = _one_line(capsys)
    assert f"{path}: expected UTF-8 text" in line
    assert [v.version for v in SkillStore(workspace, "x").versions()] == ["v0"]
    assert CandidateQueue(workspace).get(cand_id).status == "pending_approval"
    path.write_bytes(
        GOOD.encode() if path.name == "SKILL.md" else unified_diff(GOOD, text).encode()
    )
    assert CandidateQueue(workspace).approve(cand_id) == "v1"  # mended, the approval goes through


def test_queue_approve_takes_a_valid_candidate(workspace: Workspace) -> None:
    make_skill(workspace, "x", GOOD)
    text = GOOD + "2. Check x.\n"
    cand_id = _hand_edited(workspace, text.encode(), unified_diff(GOOD, text).encode())
    assert CandidateQueue(workspace).approve(cand_id) == "v1"
    assert workspace.skill_path("x").read_text() == text


def _run_folder(ws: Workspace, results: bytes) -> Path:
    run = ws.runs_dir / "run-1"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"run_id": "run-1", "benchmark": "b"}))
    (run / "results.jsonl").write_bytes(results)
    return run


ROW = {"case_id": "a", "run_index": 0, "variant": "skill", "pass_fail": "pass", "score": 1.0}


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        (b"\x00\x9f\x92\x96\xff garbage\n" + json.dumps(ROW).encode() + b"\n", ":1: line is not"),
        (
            json.dumps(ROW).encode() + b"\n" + json.dumps({**ROW, "score": "high"}).encode(),
            ":2: field 'score': expected a number, got 'high'",
        ),
    ],
    ids=["binary", "score-high"],
)
def test_diagnose_on_garbage_results_says_one_line(
    workspace: Workspace, capsys: pytest.CaptureFixture[str], results: bytes, expected: str
) -> None:
    run = _run_folder(workspace, results)
    code = main(["diagnose", str(run), "-w", str(workspace.root)])
    line = _one_line(capsys)
    assert code == 1
    assert str(run / "results.jsonl") in line and expected in line
