"""Online review of real-format transcripts through the real anthropic SDK (local server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.core.events import SessionLog
from engine.core.fsutil import append_jsonl
from engine.core.queue import CandidateQueue
from engine.core.skill import SkillDoc
from engine.core.vault import write_secret
from engine.core.workspace import Workspace
from engine.loops.online import CursorStore, OnlineLearner
from tests.llm_server import MessagesServer, Reply
from tests.online_helpers import (
    CLAUDE,
    CLAUDE_FOLLOWUP,
    PLAIN,
    add_weather_skill,
    append,
    copy_session,
    decision,
    model_reviewer,
    weather_spec,
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def prompt_of(server: MessagesServer, index: int) -> str:
    content = server.message_requests[index].json["messages"][0]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def test_claude_transcript_each_segment_once_and_count_sibling_becomes_update(
    workspace: Workspace, messages_server: MessagesServer, tmp_path: Path
) -> None:
    add_weather_skill(workspace)
    session = copy_session(CLAUDE, tmp_path / "claude-projects")
    messages_server.reply(Reply(text=decision(skills=[weather_spec("Weather - 3 Cities")])))
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))

    first = learner.review(session)

    assert first.status == "reviewed", first.reason
    assert (first.first_line, first.last_line, first.advanced) == (1, 21, True)
    assert first.signals == {
        "tool_calls": 8,
        "user_correction": False,
        "recovered_error": True,
        "wrote_skill": False,
    }
    [event] = first.events
    assert event["kind"] == "rewrite_quantified_sibling_to_update"
    assert (event["original"], event["target"]) == ("Weather - 3 Cities", "weather-multi-city")
    [row] = first.candidates
    assert (row["skill"], row["operation"], row["status"]) == (
        "weather-multi-city",
        "update",
        "pending_approval",
    )
    cand = CandidateQueue(workspace).get(row["id"])
    assert (cand.source, cand.operation, cand.parent_version) == ("review", "update", "v0")
    doc = SkillDoc.parse(cand.skill_text())
    assert doc.name == "Weather - Multi-City"  # the existing skill keeps its name
    assert [s.text for s in doc.steps] == weather_spec("x")["steps"]
    assert "retry only that city" in cand.patch_text()
    assert not (workspace.skills_dir / "weather-3-cities").exists()
    sent = prompt_of(messages_server, 0)
    assert "- Weather - Multi-City: Collect current weather" in sent
    assert "geocoding-api.open-meteo.com/v1/search?name=Berlin" in sent
    assert "Operation timed out" in sent
    assert "You review one finished agent session" in json.dumps(
        messages_server.message_requests[0].json["system"]
    )

    again = learner.review(session)
    assert again.status == "unchanged"
    assert len(messages_server.message_requests) == 1

    append(session, CLAUDE_FOLLOWUP)
    messages_server.reply(Reply(text=decision(skip_reason="a unit preference, not a method")))
    third = learner.review(session)

    assert third.status == "skipped" and third.advanced
    assert (third.first_line, third.last_line) == (22, 26)
    assert third.signals is not None and third.signals["user_correction"] is True
    assert third.reason == "reviewer: a unit preference, not a method"
    sent = prompt_of(messages_server, 1)
    assert "Fahrenheit" in sent and "- lines: 22-26" in sent
    assert "name=Berlin" not in sent  # the reviewed segment is not sent again
    assert learner.review(session).status == "unchanged"
    assert len(messages_server.message_requests) == 2
    assert len(CandidateQueue(workspace).list()) == 1


def test_plain_session_create_extending_a_name_becomes_update(
    workspace: Workspace, messages_server: MessagesServer, tmp_path: Path
) -> None:
    add_weather_skill(workspace)
    session = copy_session(PLAIN, tmp_path / "export")
    messages_server.reply(Reply(text=decision(skills=[weather_spec("Weather - Multi-City (EU)")])))
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))

    result = learner.review(session)

    assert result.status == "reviewed", result.reason
    assert (result.first_line, result.last_line) == (1, 11)
    assert result.signals is not None and result.signals["tool_calls"] == 5
    assert [e["kind"] for e in result.events] == ["rewrite_superset_to_update"]
    [row] = result.candidates
    assert (row["skill"], row["operation"]) == ("weather-multi-city", "update")
    assert "upstream timeout (504)" in prompt_of(messages_server, 0)
    assert learner.review(session).status == "unchanged"
    assert len(messages_server.message_requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        "Sure! Here is my decision: {skills: [ {name: 'Weather'",  # not JSON
        decision(skills=[{**weather_spec("Weather Digest"), "when_to_use": ""}]),  # invalid spec
        decision(skip_reason="nothing", skills=[weather_spec("Weather Digest")]),  # contradictory
        json.dumps({"skills": [], "verdict": "fine"}),  # unknown key
    ],
)
def test_malformed_reply_never_advances_the_cursor(
    workspace: Workspace, messages_server: MessagesServer, tmp_path: Path, reply: str
) -> None:
    session = copy_session(CLAUDE, tmp_path / "s")
    messages_server.reply(Reply(text=reply))
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))

    failed = learner.review(session)

    assert failed.status == "error" and not failed.advanced
    assert "(reviewer reply)" in failed.reason and "\n" not in failed.reason
    assert CursorStore(workspace).get(session) is None
    assert CandidateQueue(workspace).list() == []

    messages_server.reply(Reply(text=decision(skip_reason="nothing reusable")))
    retried = learner.review(session)
    assert retried.status == "skipped" and retried.advanced
    assert (retried.first_line, retried.last_line) == (1, 21)
    assert prompt_of(messages_server, 1) == prompt_of(messages_server, 0)


def test_server_error_never_advances_the_cursor(
    workspace: Workspace, messages_server: MessagesServer, tmp_path: Path
) -> None:
    session = copy_session(PLAIN, tmp_path / "s")
    messages_server.fail_next(1, status=500)
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))

    failed = learner.review(session)

    assert failed.status == "error"
    assert "reviewer model failed" in failed.reason
    assert CursorStore(workspace).get(session) is None
    messages_server.reply(Reply(text=decision(skip_reason="nothing reusable")))
    assert learner.review(session).advanced
    cursor = CursorStore(workspace).get(session)
    assert cursor is not None and (cursor.line, cursor.reviews) == (11, 1)


def test_half_written_line_waits_and_a_rewritten_file_starts_over(
    workspace: Workspace, messages_server: MessagesServer, tmp_path: Path
) -> None:
    session = copy_session(CLAUDE, tmp_path / "s")
    followup = CLAUDE_FOLLOWUP.read_text(encoding="utf-8")
    with session.open("a", encoding="utf-8") as fh:
        fh.write(followup[:120])  # the agent is still writing this line
    messages_server.respond_with(lambda req: Reply(text=decision(skip_reason="nothing")))
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))

    first = learner.review(session)
    assert (first.first_line, first.last_line) == (1, 21)

    with session.open("a", encoding="utf-8") as fh:
        fh.write(followup[120:])
    second = learner.review(session)
    assert (second.first_line, second.last_line) == (22, 26)

    session.write_text(PLAIN.read_text(encoding="utf-8"), encoding="utf-8")
    third = learner.review(session)
    assert (third.first_line, third.last_line) == (1, 11)
    assert third.events[0]["kind"] == "file_rewritten"


def test_policy_and_self_written_skill_advance_without_a_model_call(
    workspace: Workspace, messages_server: MessagesServer, tmp_path: Path
) -> None:
    quick = tmp_path / "quick.jsonl"
    append_jsonl(quick, {"type": "user", "content": "What is 2 + 2?"})
    append_jsonl(quick, {"type": "assistant", "content": "4"})
    wrote = tmp_path / "wrote.jsonl"
    append_jsonl(wrote, {"type": "user", "content": "Save what you did as a skill."})
    calls = [{"id": f"t{i}", "name": "Bash", "args": f"step {i}"} for i in range(3)]
    calls.append(
        {"id": "t9", "name": "Write", "args": ".claude/skills/weather/SKILL.md"},
    )
    append_jsonl(wrote, {"type": "assistant", "content": "Saving.", "tool_calls": calls})
    append_jsonl(wrote, {"type": "assistant", "content": "Saved the skill."})
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))

    skipped = learner.review(quick)
    assert (skipped.status, skipped.advanced) == ("skipped", True)
    assert skipped.reason.startswith("policy:")
    own = learner.review(wrote)
    assert (own.status, own.advanced) == ("skipped", True)
    assert "wrote a SKILL.md" in own.reason
    assert messages_server.message_requests == []


def test_own_event_logs_are_not_reviewed(
    workspace: Workspace, messages_server: MessagesServer
) -> None:
    log = SessionLog(workspace.sessions_dir, "review")
    log.emit("started", sessions=[])
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server), log=log)

    result = learner.review(log.path)

    assert (result.status, result.advanced) == ("skipped", False)
    assert "a Skillsmith event log" in result.reason
    assert messages_server.message_requests == []


def test_segment_without_conversation_waits(
    workspace: Workspace, messages_server: MessagesServer, tmp_path: Path
) -> None:
    session = tmp_path / "tools-only.jsonl"
    for i in range(5):
        append_jsonl(session, {"type": "tool", "tool_name": "grep", "result": f"hit {i}"})
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))

    result = learner.review(session)

    assert (result.status, result.advanced) == ("waiting", False)
    assert CursorStore(workspace).get(session) is None


def test_reviewer_input_is_redacted(
    workspace: Workspace, messages_server: MessagesServer, tmp_path: Path
) -> None:
    write_secret(workspace, "weather_api_key", "wx-8f3k2m9q7z1t")
    session = tmp_path / "secrets.jsonl"
    ask = "Fetch the weather; the key is wx-8f3k2m9q7z1t"
    append_jsonl(session, {"type": "user", "content": ask})
    commands = [
        "export WEATHER_API_TOKEN=plainTokenValue42",
        'curl -H "Authorization: Bearer abcdefghijklmnop1234" https://api.example.test',
        "wx fetch --password hunter2hunter2",
        "echo sk-ant-api03-AAAABBBBCCCCDDDDEEEE",
    ]
    calls = [{"id": f"t{i}", "name": "Bash", "args": c} for i, c in enumerate(commands)]
    append_jsonl(session, {"type": "assistant", "content": "Fetching.", "tool_calls": calls})
    append_jsonl(session, {"type": "assistant", "content": "Done."})
    messages_server.reply(Reply(text=decision(skip_reason="nothing")))
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))

    assert learner.review(session).status == "skipped"

    sent = json.dumps(messages_server.message_requests[0].json)
    for secret in (
        "wx-8f3k2m9q7z1t",
        "plainTokenValue42",
        "abcdefghijklmnop1234",
        "hunter2hunter2",
        "AAAABBBBCCCCDDDD",
    ):
        assert secret not in sent
    assert "WEATHER_API_TOKEN=[REDACTED]" in sent
    assert "--password [REDACTED]" in sent


def test_run_outcome_reaches_the_effectiveness_gate(
    workspace: Workspace, messages_server: MessagesServer
) -> None:
    add_weather_skill(workspace)
    run_dir = workspace.runs_dir / "run-1"
    session = copy_session(PLAIN, run_dir / "sessions")
    append_jsonl(
        run_dir / "results.jsonl",
        {"case_id": "weather", "session_file": f"sessions/{session.name}", "pass_fail": "fail"}
        | {"score": 0.25, "invalid_reason": None},
    )
    messages_server.reply(Reply(text=decision(skills=[weather_spec("Weather - 3 Cities")])))
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))

    result = learner.review(session)

    [row] = result.candidates
    assert row["status"] == "pending_eval"
    assert "'fail'" in row["reason"] and "0.250" in row["reason"]
    sent = prompt_of(messages_server, 0)
    assert "## Session outcome\n- status: fail\n- score: 0.2500" in sent


def test_pinned_skills_are_never_written_by_review(
    workspace: Workspace, messages_server: MessagesServer, tmp_path: Path
) -> None:
    add_weather_skill(workspace)
    cfg = workspace.load_config()
    cfg.pinned_skills = ["weather-multi-city"]
    workspace.save_config(cfg)
    session = copy_session(CLAUDE, tmp_path / "s")
    update = {"name": "Weather - Multi-City", "new_spec": weather_spec("x"), "reason": "r"}
    messages_server.reply(
        Reply(
            text=decision(
                skills=[weather_spec("Weather - 3 Cities")],
                updates=[update],
            )
        )
    )
    learner = OnlineLearner(workspace, reviewer=model_reviewer(messages_server))

    result = learner.review(session)

    assert result.candidates == []
    assert {e["kind"] for e in result.events} == {"skip_pinned"}
    assert CandidateQueue(workspace).list() == []
    assert result.advanced


def test_offline_reviewer_adds_the_recovered_error_as_a_pitfall(
    workspace: Workspace, tmp_path: Path
) -> None:
    add_weather_skill(workspace)
    session = tmp_path / "demo.jsonl"
    append_jsonl(session, {"type": "user", "content": "Weather for Rome and Oslo, please."})
    load = [{"id": "t1", "name": "Skill", "args": "weather-multi-city"}]
    append_jsonl(session, {"type": "assistant", "content": "Loading.", "tool_calls": load})
    append_jsonl(session, {"type": "tool", "tool_name": "Skill", "result": "(skill text)"})
    fetch = [{"id": "t2", "name": "forecast", "args": "lat=41.9,59.9 lon=12.5,10.7"}]
    append_jsonl(session, {"type": "assistant", "content": "", "tool_calls": fetch})
    append_jsonl(
        session,
        {"type": "tool", "tool_name": "forecast", "result": "error: 504", "is_error": True},
    )
    append_jsonl(session, {"type": "assistant", "content": "Retrying Oslo alone."})
    learner = OnlineLearner(workspace)  # models.reviewer is offline by default

    result = learner.review(session)

    assert result.status == "reviewed", result.reason
    [row] = result.candidates
    cand = CandidateQueue(workspace).get(row["id"])
    assert (cand.skill, cand.operation) == ("weather-multi-city", "update")
    lines = cand.patch_text().splitlines()
    added = [ln for ln in lines if ln.startswith("+") and not ln.startswith("+++")]
    assert any("`lat=41.9,59.9 lon=12.5,10.7` failed with" in ln for ln in added)
    removed = [ln for ln in lines if ln.startswith("-") and not ln.startswith("---")]
    assert removed == []  # only the pitfall is added; every other line stays
