"""Curation: usage from real transcripts, overlap, staleness; proposals wait for a person."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.fsutil import append_jsonl
from engine.core.queue import CandidateQueue
from engine.core.skill import SkillDoc
from engine.core.workspace import Workspace
from engine.loops.curation import curate
from tests.candidate_helpers import add_skill, skill_text

OLD_S = 60 * 86_400  # two months: past the 30-day staleness line

WEATHER = (
    "Geocode each city: `wx geocode`.",
    "Fetch each forecast separately: `wx forecast`.",
    "Check that every city is in the report.",
)
REPORT = (
    "Geocode each city: `wx geocode`.",
    "Fetch each forecast separately: `wx forecast`.",
    "Format the report as a Markdown table.",
)


def _skill(ws: Workspace, folder: str, steps: tuple[str, ...], *, age_s: float = 0) -> None:
    add_skill(
        ws,
        folder,
        skill_text(
            folder,
            description=f"The {folder} method.",
            when_to_use=f"- A task about {folder}.",
            steps=steps,
            pitfalls=[f"A pitfall of {folder}."],
        ),
    )
    if age_s:
        when = time.time() - age_s
        os.utime(ws.skill_path(folder), (when, when))


def _session(ws: Workspace, name: str, *lines: dict[str, object], age_s: float = 0) -> Path:
    path = ws.runs_dir / "run-1" / "sessions" / name
    for line in lines:
        append_jsonl(path, line)
    if age_s:
        when = time.time() - age_s
        os.utime(path, (when, when))
    return path


def _claude_load(ws: Workspace, name: str, skill: str) -> Path:
    """A Claude Code on-disk transcript that loads ``skill`` and does nothing else."""
    common = {"sessionId": "5b2f", "isSidechain": False, "cwd": "/w", "version": "2.1.49"}
    call = {"type": "tool_use", "id": "toolu_01", "name": "Skill", "input": {"skill": skill}}
    return _session(
        ws,
        name,
        common | {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "Go."}},
        common
        | {
            "type": "assistant",
            "uuid": "a1",
            "message": {"id": "msg_1", "role": "assistant", "content": [call]},
        },
        common
        | {
            "type": "user",
            "uuid": "u2",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "ok"}],
            },
        },
    )


def _library(ws: Workspace) -> None:
    _skill(ws, "weather-multi-city", WEATHER, age_s=OLD_S)
    _skill(ws, "weather-report", REPORT, age_s=OLD_S)
    _skill(ws, "recipes", ("Collect the dishes.", "Group them by cuisine."), age_s=OLD_S)
    _skill(ws, "legacy-notes", ("Read the notes.", "Summarise them."), age_s=OLD_S)
    cfg = ws.load_config()
    cfg.pinned_skills = ["legacy-notes"]
    cfg.gates.human = "none"  # curation still waits for a person
    ws.save_config(cfg)
    calls = [
        {"id": "t1", "name": "Skill", "args": "weather-multi-city"},
        {"id": "t2", "name": "Bash", "args": "wx geocode Oslo"},
    ]
    _session(
        ws,
        "case-1.0.jsonl",
        {"type": "user", "content": "Weather for Oslo."},
        {"type": "assistant", "content": "Loading the skill.", "tool_calls": calls},
        {"type": "assistant", "content": "Oslo: 3 °C."},
    )
    _claude_load(ws, "case-2.0.jsonl", "weather-multi-city")
    edit = [{"id": "t1", "name": "Edit", "args": "/w/skills/recipes/SKILL.md"}]
    _session(
        ws,
        "case-3.0.jsonl",
        {"type": "user", "content": "Fix the recipes skill."},
        {"type": "assistant", "content": "Editing.", "tool_calls": edit},
        age_s=OLD_S,
    )


def test_usage_overlap_and_proposals(workspace: Workspace) -> None:
    _library(workspace)

    report = curate(workspace)

    assert report.transcripts == 3 and report.unreadable == []
    usage = {u.skill: u for u in report.usage}
    assert (usage["weather-multi-city"].loaded, usage["weather-multi-city"].used) == (2, 1)
    assert not usage["weather-multi-city"].stale
    assert (usage["recipes"].loaded, usage["recipes"].patched) == (0, 1)
    assert usage["recipes"].stale and usage["recipes"].idle_days is not None
    assert usage["recipes"].idle_days >= 59
    assert usage["legacy-notes"].pinned and usage["legacy-notes"].stale
    [overlap] = report.overlaps
    assert (overlap.a, overlap.b, overlap.shared_steps) == (
        "weather-multi-city",
        "weather-report",
        2,
    )

    kinds = {(p.kind, p.skill): p for p in report.proposals}
    merge = kinds[("merge", "weather-multi-city")]
    assert merge.absorbed == "weather-report"
    assert [(c["skill"], c["operation"], c["status"]) for c in merge.candidates] == [
        ("weather-multi-city", "update", "pending_approval"),
        ("weather-report", "delete", "pending_approval"),
    ]
    assert kinds[("archive", "recipes")].candidates[0]["status"] == "pending_approval"
    assert kinds[("archive", "legacy-notes")].skipped == (
        "a pinned skill is never touched by automation"
    )
    assert ("archive", "weather-report") not in kinds  # already archived by the merge

    queue = CandidateQueue(workspace).list()
    assert {c.source for c in queue} == {"curate"}
    assert all(c.status == "pending_approval" for c in queue)
    assert "legacy-notes" not in {c.skill for c in queue}
    [update] = [c for c in queue if c.operation == "update"]
    doc = SkillDoc.parse(update.skill_text())
    assert [s.text for s in doc.steps] == [*WEATHER, REPORT[2]]
    assert "A pitfall of weather-report." in (doc.section("pitfalls") or "")
    assert update.gates()[-1]["reasons"] == ["curation proposals are always decided by a person"]


def test_pinned_skills_are_never_proposed(workspace: Workspace) -> None:
    _skill(workspace, "weather-multi-city", WEATHER)
    _skill(workspace, "weather-report", REPORT, age_s=OLD_S)
    cfg = workspace.load_config()
    cfg.pinned_skills = ["weather-report"]
    workspace.save_config(cfg)

    report = curate(workspace)

    assert [(p.kind, p.skill, p.skipped) for p in report.proposals] == [
        ("merge", "weather-multi-city", "a pinned skill is never touched by automation"),
        ("archive", "weather-report", "a pinned skill is never touched by automation"),
    ]
    assert CandidateQueue(workspace).list() == []


def test_no_duplicate_and_no_rejected_proposal(workspace: Workspace) -> None:
    _library(workspace)
    curate(workspace)
    queued = len(CandidateQueue(workspace).list())

    again = curate(workspace)

    assert len(CandidateQueue(workspace).list()) == queued
    assert {p.skipped for p in again.proposals if p.kind == "merge"} == {
        "the same proposal is already waiting in the queue"
    }
    queue = CandidateQueue(workspace)
    [merge] = [c for c in queue.list() if c.operation == "update"]
    queue.reject(merge.id, why="keep them apart")
    third = curate(workspace)
    merge_again = next(p for p in third.proposals if p.kind == "merge")
    assert merge_again.skipped == "a person rejected this proposal before (taboo)"
    assert len(CandidateQueue(workspace).list()) == queued


def test_curate_command(workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    _library(workspace)
    extra = workspace.root.parent / "claude-projects"
    extra.mkdir()
    (extra / "broken.jsonl").write_text("{not json\n", encoding="utf-8")
    root = str(workspace.root)

    assert main(["-w", root, "curate", "--no-propose", "--transcripts", str(extra), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["transcripts"] == 3 and len(report["unreadable"]) == 1
    assert "broken.jsonl:1" in report["unreadable"][0]
    assert all(not p["candidates"] for p in report["proposals"])
    assert CandidateQueue(workspace).list() == []

    assert main(["-w", root, "curate"]) == 0
    out = capsys.readouterr().out
    assert "weather-multi-city" in out and "pinned" in out
    assert "overlap weather-multi-city ~ weather-report" in out
    assert len(CandidateQueue(workspace).list()) == 3
