"""Curate's proposals are carried out once approved: the merge publishes the umbrella skill and
the archive moves the absorbed skill's folder into the store (a snapshot first); ``queue undo``
moves it back byte for byte."""

from __future__ import annotations

import pytest

from engine.core.errors import SkillsmithError
from engine.core.queue import CandidateQueue
from engine.core.snapshots import list_snapshots
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.loops.curation import curate
from tests.store_helpers import run, tar_members, tree
from tests.test_curation_report import REPORT, WEATHER, _skill


def _merge_proposed(ws: Workspace) -> tuple[str, str]:
    """Two overlapping skills; curate proposes the merge and the archive of the absorbed one."""
    _skill(ws, "weather-multi-city", WEATHER)
    _skill(ws, "weather-report", REPORT)
    (ws.skills_dir / "weather-report" / "scripts").mkdir()
    (ws.skills_dir / "weather-report" / "scripts" / "fetch.sh").write_text("#!/bin/sh\nwx\n")
    (ws.skills_dir / "weather-report" / "scripts" / "fetch.sh").chmod(0o755)
    report = curate(ws)
    (merge,) = [p for p in report.proposals if p.kind == "merge"]
    update, delete = merge.candidates
    assert (update["operation"], delete["operation"]) == ("update", "delete")
    return str(update["id"]), str(delete["id"])


def test_approving_a_merge_and_its_archive_carries_both_out(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    merge, archive = _merge_proposed(workspace)
    live = workspace.skills_dir / "weather-report"
    before = tree(live)
    version = workspace.version()
    assert run(workspace, capsys, "queue", "approve", merge).returncode == 0
    assert "Format the report" in workspace.skill_path("weather-multi-city").read_text()

    done = run(workspace, capsys, "queue", "approve", archive, "--why", "merged")
    assert done.returncode == 0, done.stderr
    store = SkillStore(workspace, "weather-report")
    assert "weather-report (v0) is archived into" in done.stdout
    assert not live.exists() and "weather-report" not in workspace.skill_names()
    assert tree(store.archive_dir) == before  # moved whole, scripts and all
    assert (store.archive_dir / "scripts" / "fetch.sh").stat().st_mode & 0o111
    assert workspace.version() == version + 2  # the merge, then the archive
    # the snapshot was taken before the folder moved: it still holds the skill
    (snap,) = [s for s in list_snapshots(workspace) if "before archiving" in s.note]
    assert "skills/weather-report/SKILL.md" in tar_members(snap.path)
    assert CandidateQueue(workspace).get(archive).status == "published"
    assert [t["op"] for t in store.timeline()][-2:] == ["archive", "candidate"]

    undone = run(workspace, capsys, "queue", "undo")
    assert undone.stdout.strip() == (
        f"undid the approval of {archive}: skill 'weather-report' is back in skills/ at v0"
    )
    assert tree(live) == before and not store.archive_dir.exists()
    assert CandidateQueue(workspace).get(archive).status == "pending_approval"


def test_an_archive_refuses_a_hand_edited_folder_and_changes_nothing(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    _, archive = _merge_proposed(workspace)
    workspace.skill_path("weather-report").write_text("edited by hand\n")
    with pytest.raises(SkillsmithError, match="edited by hand"):
        CandidateQueue(workspace).approve(archive)
    assert workspace.skill_path("weather-report").read_text() == "edited by hand\n"
    assert not SkillStore(workspace, "weather-report").archive_dir.exists()
    assert CandidateQueue(workspace).get(archive).status == "pending_approval"
    assert not (workspace.candidates_dir / ".pending.json").exists()
    assert list_snapshots(workspace) == []  # refused before a snapshot was spent on it
