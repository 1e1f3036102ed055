"""A candidate's paths are checked against the skill's tree before anything is written, and a
publish whose live write fails is undone whole (issue 26 Build 4).

The hostile pass approved a candidate whose folder patch created ``SKILL.md/x``: v1 was published
and ``current`` moved before writing the live folder failed, and from then on every command said
the workspace could not be opened. Here the same candidate is refused at the queue and at
approval with nothing written, and a live write that really fails (the skills folder mounted
read-only by bubblewrap around a real ``skillsmith`` process) leaves ``current``, the versions and
the live folder as they were, the workspace opening, and the candidate approvable once the folder
is writable again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine.cli import main
from engine.core.errors import SkillsmithError
from engine.core.queue import CandidateQueue, content_hash
from engine.core.skill_folder import Resource, file_diff
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from tests.candidate_helpers import add_skill, skill_text
from tests.store_helpers import tree

ROOT = Path(__file__).resolve().parents[1]
SKILL = "csv-report"
REF = "reference/columns.md"
UNDER_SKILL_MD = "--- /dev/null\n+++ b/SKILL.md/x\n@@ -0,0 +1 @@\n+planted\n"


@pytest.fixture
def live(workspace: Workspace) -> Path:
    """A two-file skill, adopted as v0."""
    add_skill(
        workspace,
        SKILL,
        skill_text(
            "csv-report",
            description="Summarise a CSV file. Use when asked for a report on a CSV.",
            steps=("Read the columns described in reference/columns.md.", "Write report.md."),
        ),
    )
    folder = workspace.skill_path(SKILL).parent
    (folder / "reference").mkdir()
    (folder / REF).write_text("# Columns\n\n- date: ISO 8601\n", encoding="utf-8")
    assert SkillStore(workspace, SKILL).ensure_adopted() == "v0"
    return folder


def reference_edit(folder: Path) -> str:
    old = (folder / REF).read_bytes()
    return file_diff(REF, old, old + b"- amount: a decimal, never rounded\n")


def queue_edit(ws: Workspace, folder: Path, patch: str) -> str:
    return (
        CandidateQueue(ws)
        .submit(
            SKILL,
            (folder / "SKILL.md").read_text(encoding="utf-8"),
            patch,
            source="manual",
            operation="update",
            status="pending_approval",
            parent_version="v0",
            summary="document the amount column",
        )
        .id
    )


def plant(ws: Workspace, cand_id: str, patch: str) -> None:
    """Rewrite a queued candidate's patch on disk and its hash to match, as an attacker with
    write access to candidates/ would: the hash check alone cannot tell."""
    cand = CandidateQueue(ws).get(cand_id)
    (cand.dir / "patch.diff").write_text(patch, encoding="utf-8")
    record = yaml.safe_load((cand.dir / "candidate.yaml").read_text(encoding="utf-8"))
    record["content_hash"] = content_hash(
        (cand.dir / "SKILL.md").read_bytes(), patch.encode("utf-8"), record["operation"]
    )
    (cand.dir / "candidate.yaml").write_text(yaml.safe_dump(record), encoding="utf-8")
    assert CandidateQueue(ws).get(cand_id).disk_hash() == record["content_hash"]


def test_the_queue_refuses_a_patch_creating_a_file_under_skill_md(
    workspace: Workspace, live: Path
) -> None:
    with pytest.raises(SkillsmithError, match=r"SKILL\.md/x: under the file SKILL\.md"):
        queue_edit(workspace, live, reference_edit(live) + UNDER_SKILL_MD)
    assert CandidateQueue(workspace).list() == []


@pytest.mark.parametrize(
    "planted",
    [
        UNDER_SKILL_MD,
        f"--- /dev/null\n+++ b/{REF}/deeper.md\n@@ -0,0 +1 @@\n+planted\n",
        "--- /dev/null\n+++ b/../escaped.md\n@@ -0,0 +1 @@\n+planted\n",
    ],
    ids=["under-SKILL.md", "under-a-reference", "outside-the-folder"],
)
def test_a_planted_candidate_is_refused_before_anything_is_written(
    workspace: Workspace, live: Path, planted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cand_id = queue_edit(workspace, live, reference_edit(live))
    plant(workspace, cand_id, reference_edit(live) + planted)
    before = tree(workspace.root)

    code = main(["-w", str(workspace.root), "queue", "approve", cand_id])

    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert tree(workspace.root) == before
    reopened = Workspace.at(workspace.root)
    assert SkillStore(reopened, SKILL).current() == "v0"
    assert CandidateQueue(reopened).get(cand_id).status == "pending_approval"


def test_a_publish_whose_live_write_fails_is_undone_and_the_workspace_opens(
    workspace: Workspace, live: Path
) -> None:
    cand_id = queue_edit(workspace, live, reference_edit(live))
    store = SkillStore(workspace, SKILL)
    live_before = tree(live)
    history_before = tree(store.root)
    skills = str(workspace.skills_dir)
    # a real skillsmith process whose skills/ folder is read-only: the live write fails with
    # EROFS after the version is staged and `current` has moved
    sandbox = ["bwrap", "--bind", "/", "/", "--ro-bind", skills, skills]
    command = [sys.executable, "-m", "engine.cli", "-w", str(workspace.root)]
    approve = subprocess.run(
        [*sandbox, "--dev", "/dev", "--proc", "/proc", *command, "queue", "approve", cand_id],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert approve.returncode == 1, approve.stdout + approve.stderr
    assert "cannot write the skill folder" in approve.stderr
    assert "left at v0" in approve.stderr
    reopened = Workspace.at(workspace.root)  # opens: no half-done publish to replay
    store = SkillStore(reopened, SKILL)
    assert store.current() == "v0"
    assert [v.version for v in store.versions()] == ["v0"]
    assert tree(live) == live_before
    assert tree(store.root).keys() - history_before.keys() <= {"timeline.jsonl"}
    assert CandidateQueue(reopened).get(cand_id).status == "pending_approval"
    # once the folder is writable the same candidate publishes as the next version
    assert CandidateQueue(reopened).approve(cand_id) == "v1"
    assert b"never rounded" in (live / REF).read_bytes()


def test_a_file_replaced_by_a_folder_of_the_same_name_publishes(
    workspace: Workspace, live: Path
) -> None:
    """The live write removes what the new version drops before it writes what it adds."""
    store = SkillStore(workspace, SKILL)
    text = (live / "SKILL.md").read_text(encoding="utf-8")
    files = {"reference": Resource(b"one file\n", 0o644)}
    store.publish(text, why="a flat reference", resources=files)
    assert (live / "reference").is_file()

    nested = {"reference/columns.md": Resource(b"# Columns\n", 0o644)}
    assert store.publish(text, why="a reference folder", resources=nested) == "v2"

    assert (live / "reference" / "columns.md").read_bytes() == b"# Columns\n"


def test_an_operation_edited_in_candidate_yaml_breaks_its_content_hash(
    workspace: Workspace, live: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a person approves includes what approving does: an update turned into a delete (an
    archive of the whole skill) on disk is refused like an edited patch."""
    cand_id = queue_edit(workspace, live, reference_edit(live))
    cand = CandidateQueue(workspace).get(cand_id)
    shown = cand.content_hash
    record = yaml.safe_load((cand.dir / "candidate.yaml").read_text(encoding="utf-8"))
    record["operation"] = "delete"
    (cand.dir / "candidate.yaml").write_text(yaml.safe_dump(record), encoding="utf-8")

    code = main(["-w", str(workspace.root), "queue", "approve", cand_id, "--expect", shown])

    assert code == 1
    assert "changed on disk" in capsys.readouterr().err
    assert live.is_dir() and SkillStore(workspace, SKILL).current() == "v0"


def test_a_skill_folder_that_is_a_link_is_never_written_through(
    workspace: Workspace, live: Path, tmp_path: Path
) -> None:
    """Adopting, publishing and rolling back write the live folder; through a link they would
    write outside the project, so each is refused and the folder behind the link is untouched."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SKILL.md").write_text(skill_text("linked"), encoding="utf-8")
    linked = workspace.skills_dir / "linked"
    linked.symlink_to(outside, target_is_directory=True)
    before = tree(outside)
    with pytest.raises(SkillsmithError, match=r"a link to .*replace the link"):
        SkillStore(workspace, "linked").ensure_adopted()
    assert not (workspace.history_dir / "linked").exists()

    store = SkillStore(workspace, SKILL)
    text = (live / "SKILL.md").read_text(encoding="utf-8")
    store.publish(text + "\nOne more line.\n", why="v1 before the swap")
    moved = tmp_path / "moved"
    live.rename(moved)
    live.symlink_to(outside, target_is_directory=True)
    with pytest.raises(SkillsmithError, match="replace the link"):
        store.publish(text + "\nv2\n", why="through a link")
    with pytest.raises(SkillsmithError, match="replace the link"):
        store.rollback("v0", why="through a link")
    assert tree(outside) == before
    assert store.current() == "v1"
