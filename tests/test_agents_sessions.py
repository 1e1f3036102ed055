"""Agent output → session lines: the plain JSONL dialect and ``claude -p`` stream-json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.evaluation.agents import OutputError, parse_claude_stream, parse_session_jsonl
from engine.evaluation.agents.sessions import claude_retry_note
from engine.evaluation.traces import load_trace, summarise


def _stream(*objs: dict[str, Any]) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


def _assistant(msg_id: str, block: dict[str, Any], usage: dict[str, int]) -> dict[str, Any]:
    message = {"id": msg_id, "role": "assistant", "content": [block], "usage": usage}
    return {"type": "assistant", "message": message, "session_id": "sess-1"}


def _tool_result(call_id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if is_error:
        block["is_error"] = True
    return {"type": "user", "message": {"role": "user", "content": [block]}}


USAGE = {"input_tokens": 3, "output_tokens": 7, "cache_read_input_tokens": 100}
RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "result": "STEPS DONE: 1\nVERDICT: vulnerable",
    "total_cost_usd": 0.0421,
    "duration_ms": 1234,
    "num_turns": 3,
    "usage": {
        "input_tokens": 5,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 300,
        "output_tokens": 40,
    },
}


def test_claude_stream_merges_messages_pairs_tools_and_reads_the_result_line() -> None:
    raw = _stream(
        {"type": "system", "subtype": "init", "session_id": "sess-1", "tools": ["Bash"]},
        _assistant(
            "m1",
            {"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "audit"}},
            USAGE,
        ),
        _tool_result("t1", "Launching skill: audit"),
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": "# Audit body"}]},
        },
        _assistant("m2", {"type": "text", "text": "Running step 1."}, USAGE),
        _assistant(
            "m2",
            {
                "type": "tool_use",
                "id": "t2",
                "name": "Bash",
                "input": {"command": "grep -n 'eval(' code.txt", "description": "s"},
            },
            USAGE,
        ),
        _assistant(
            "m2",
            {"type": "tool_use", "id": "t3", "name": "Read", "input": {"file_path": "/r/a.py"}},
            USAGE,
        ),
        {"type": "stream_event", "event": {"type": "ping"}},
        {"type": "brand-new-kind", "whatever": 1},
        _tool_result("t2", [{"type": "text", "text": "1:x = eval(y)"}]),
        _tool_result("t3", "<tool_use_error>File does not exist.</tool_use_error>", is_error=True),
        _assistant("m3", {"type": "thinking", "thinking": "hmm"}, USAGE),
        _assistant("m3", {"type": "text", "text": "STEPS DONE: 1\nVERDICT: vulnerable"}, USAGE),
        RESULT,
    )
    parsed = parse_claude_stream(raw, "# Task\nAudit.")
    assert parsed.lines == [
        {"type": "user", "content": "# Task\nAudit."},
        {
            "type": "assistant",
            "content": "",
            "tool_calls": [{"id": "t1", "name": "Skill", "args": "audit"}],
        },
        {
            "type": "tool",
            "tool_name": "Skill",
            "tool_call_id": "t1",
            "result": "Launching skill: audit",
            "is_error": False,
        },
        {
            "type": "assistant",
            "content": "Running step 1.",
            "tool_calls": [
                {"id": "t2", "name": "Bash", "args": "grep -n 'eval(' code.txt"},
                {"id": "t3", "name": "Read", "args": "/r/a.py"},
            ],
        },
        {
            "type": "tool",
            "tool_name": "Bash",
            "tool_call_id": "t2",
            "result": "1:x = eval(y)",
            "is_error": False,
        },
        {
            "type": "tool",
            "tool_name": "Read",
            "tool_call_id": "t3",
            "result": "<tool_use_error>File does not exist.</tool_use_error>",
            "is_error": True,
        },
        {"type": "assistant", "content": "STEPS DONE: 1\nVERDICT: vulnerable"},
        {
            "type": "result",
            "tokens": {"input": 505, "output": 40},
            "cost_usd": 0.0421,
            "duration_ms": 1234,
            "is_error": False,
            "subtype": "success",
            "num_turns": 3,
        },
    ]
    assert parsed.tokens == {"input": 505, "output": 40}
    assert parsed.cost_usd == 0.0421
    assert parsed.agent_session_id == "sess-1"


def test_chunked_reads_keep_their_offsets_and_sub_agent_lines_are_not_the_agents_own(
    tmp_path: Path,
) -> None:
    def read(call_id: str, offset: int) -> dict[str, Any]:
        tool_input = {"file_path": "Big.java", "offset": offset, "limit": 2000}
        return _assistant(
            "m1", {"type": "tool_use", "id": call_id, "name": "Read", "input": tool_input}, USAGE
        )

    sub_agent = _assistant(
        "m9", {"type": "tool_use", "id": "t9", "name": "Glob", "input": {"pattern": "**"}}, USAGE
    )
    raw = _stream(
        read("t1", 1),
        read("t2", 2001),
        {**sub_agent, "parent_tool_use_id": "t0"},
        _tool_result("t1", "class Big {"),
        _tool_result("t2", "}"),
        RESULT,
    )
    parsed = parse_claude_stream(raw, "p")
    calls = [call for line in parsed.lines for call in line.get("tool_calls", [])]
    assert [(c["name"], c["args"]) for c in calls] == [
        ("Read", "Big.java offset=1 limit=2000"),
        ("Read", "Big.java offset=2001 limit=2000"),
    ]
    # diagnosis reads the runner's session file and the raw stream alike: one Claude parser
    stream_file = tmp_path / "raw.stream.jsonl"
    stream_file.write_bytes(raw)
    session_file = tmp_path / "session.jsonl"
    session_file.write_text("".join(json.dumps(line) + "\n" for line in parsed.lines))
    seen = [
        [(c.name, c.args, c.result, c.is_error) for c in load_trace(path).calls]
        for path in (stream_file, session_file)
    ]
    assert seen[0] == seen[1] and len(seen[0]) == 2
    assert summarise(load_trace(session_file)).stats.max_repeat == 1


def test_usage_is_counted_once_per_message_when_the_result_has_none() -> None:
    result = {k: v for k, v in RESULT.items() if k != "usage"}
    raw = _stream(
        _assistant("m1", {"type": "text", "text": "a"}, USAGE),
        _assistant("m1", {"type": "text", "text": "b"}, USAGE),  # same message: same usage
        _assistant("m2", {"type": "text", "text": "c"}, USAGE),
        result,
    )
    parsed = parse_claude_stream(raw, "p")
    assert parsed.tokens == {"input": 2 * 103, "output": 2 * 7}
    assert parsed.lines[1]["content"] == "a\nb"


def test_max_turns_is_the_agents_failure_not_an_invalid_unit() -> None:
    result = dict(RESULT, subtype="error_max_turns", is_error=True)
    del result["result"]
    raw = _stream(
        _assistant(
            "m1",
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
            USAGE,
        ),
        _tool_result("t1", "a.py"),
        result,
    )
    parsed = parse_claude_stream(raw, "p")
    assert parsed.lines[-1]["subtype"] == "error_max_turns"
    assert parsed.lines[-2]["type"] == "tool"


@pytest.mark.parametrize(
    ("stream", "reason"),
    [
        (_stream(_assistant("m", {"type": "text", "text": "x"}, USAGE)), "without a result line"),
        (b'{"type": "system"}\nnot json at all\n', "line 2 is not JSON"),
        (
            _stream(dict(RESULT, is_error=True, api_error_status=529, result="Overloaded")),
            "API status 529",
        ),
        (
            _stream(dict(RESULT, is_error=True, subtype="error_during_execution", result="")),
            "error_during_execution",
        ),
    ],
)
def test_unusable_claude_streams_say_why(stream: bytes, reason: str) -> None:
    with pytest.raises(OutputError, match=reason):
        parse_claude_stream(stream, "p")


def test_plain_session_jsonl_takes_usage_from_its_result_line() -> None:
    raw = _stream(
        {"type": "user", "content": "p"},
        {"type": "assistant", "content": "VERDICT: safe", "extra": "kept"},
        {"type": "result", "tokens": {"input": 12, "output": 3}, "cost_usd": 0.5},
    )
    parsed = parse_session_jsonl(raw)
    assert parsed.lines[1] == {"type": "assistant", "content": "VERDICT: safe", "extra": "kept"}
    assert parsed.tokens == {"input": 12, "output": 3}
    assert parsed.cost_usd == 0.5


@pytest.mark.parametrize(
    ("stream", "reason"),
    [
        (b'{"type": "user", "content": "p"}\nhello\n', "stdout line 2 is not JSON: 'hello'"),
        (b"[1, 2]\n", "stdout line 1 is not a session line"),
        (b'{"content": "no type"}\n', "stdout line 1 is not a session line"),
    ],
)
def test_garbage_in_plain_output_is_named_by_line(stream: bytes, reason: str) -> None:
    with pytest.raises(OutputError, match=reason.replace("(", r"\(")):
        parse_session_jsonl(stream)


def test_retry_note_names_the_last_api_error_claude_was_retrying() -> None:
    raw = _stream(
        {"type": "system", "subtype": "init", "session_id": "s"},
        {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10,
         "error_status": 529, "error": "overloaded"},
        {"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 10,
         "error_status": 401, "error": "authentication_failed"},
    )  # fmt: skip
    note = claude_retry_note(raw + b'{"type": "system", "subtype": "api_re')
    assert note == "claude was retrying API status 401 authentication_failed, attempt 2/10"
    assert claude_retry_note(_stream({"type": "system", "subtype": "init"})) is None
