"""Reading the three transcript formats: detection, merging, pairing, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.core.errors import FormatError
from engine.evaluation.traces import detect_format, load_trace, summarise
from tests.diag_helpers import TRACE_DATA, skill_steps, write_jsonl


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("claude_transcript.jsonl", "claude-transcript"),
        ("claude_stream.jsonl", "claude-stream"),
        ("article_session.jsonl", "session"),
    ],
)
def test_format_is_detected_from_the_first_lines(name: str, expected: str) -> None:
    assert detect_format(TRACE_DATA / name) == expected
    assert load_trace(TRACE_DATA / name).format == expected


def test_claude_transcript_merges_messages_pairs_results_and_skips_side_threads() -> None:
    trace = load_trace(TRACE_DATA / "claude_transcript.jsonl")
    assert trace.prompt.startswith("Audit PayController.java")
    # the sidechain's Glob call is a sub-agent's, not the agent's own
    assert [(c.name, c.args) for c in trace.calls] == [
        ("Skill", "vuln-audit"),
        ("Read", "/home/dev/pay-service/src/PayController.java"),
        ("Grep", "campId src"),
        ("Bash", 'grep -rn "ServiceImpl"   src/main/java'),
    ]
    skill, read, grep, bash = trace.calls
    # parallel calls: the Grep result arrived before the Read result, each found its call
    assert grep.result.startswith("src/PayController.java:41") and not grep.is_error
    assert read.is_error and "File does not exist" in read.result
    assert skill.has_result and bash.result.startswith("src/main/java/pay/RewardServiceImpl")
    # usage repeated on every line of a message is counted once per message id
    assert (trace.tokens.input, trace.tokens.output) == (1800, 860)
    assert (trace.tokens.cache_read, trace.tokens.cache_write) == (46500, 3500)
    # the duplicated final line is one text, not two
    assert trace.texts.count(trace.final_text) == 1
    assert trace.final_text.endswith("VERDICT: vulnerable")


def test_claude_transcript_summary_counts_steps_and_benign_errors() -> None:
    summary = summarise(load_trace(TRACE_DATA / "claude_transcript.jsonl"), skill_steps())
    data = summary.to_dict()
    assert data["tool_breakdown"] == {"Bash": 1, "Grep": 1, "Read": 1, "Skill": 1}
    assert (data["errors"], data["benign_errors"]) == (1, 1)  # Read "File does not exist"
    assert data["steps_claimed"] == [1, 2, 3]
    assert data["steps_evidenced"] == [3]  # whitespace-normalised Bash command of step 3
    assert data["steps_missing"] == [1, 2]
    assert data["conclusion"] == "vulnerable"


def test_stream_json_reads_result_line_usage_and_limit() -> None:
    trace = load_trace(TRACE_DATA / "claude_stream.jsonl")
    assert [(c.name, c.args, c.is_error) for c in trace.calls] == [
        ("Read", "Config.java", True),
        ("Bash", "python scan.py --all", True),
    ]
    assert "ModuleNotFoundError" in trace.calls[1].result  # list-of-blocks content
    assert trace.result is not None
    assert trace.result.is_error and trace.result.reason == "error_max_turns"
    assert trace.result.cost_usd == pytest.approx(0.1234)
    assert trace.tokens.total == 12 + 5120 + 88000 + 1450


def test_article_session_without_call_ids_pairs_results_in_order() -> None:
    trace = load_trace(TRACE_DATA / "article_session.jsonl")
    assert [(c.name, c.args, c.result, c.is_error) for c in trace.calls] == [
        ("Read", "PayController.java", "public class PayController {...}", False),
        ("Grep", "campId src/", "0 results found", True),
        ("Grep", "ServiceImpl src/", "src/RewardServiceImpl.java:12", False),
    ]
    summary = summarise(trace)
    assert summary.stats.benign_errors == 1
    assert summary.progress.claimed == [1, 2, 3]  # "STEPS DONE: 1-3"
    assert not summary.progress.steps_known
    assert summary.conclusion == "true"
    assert (trace.tokens.input, trace.tokens.output) == (120000, 3400)


def test_step_mentions_count_as_claims_without_a_steps_done_line(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {"type": "assistant", "content": "Step 1 done. Now STEP 3: tracing. 步骤 4 完成"},
            {"type": "assistant", "content": "VERDICT: safe"},
        ],
    )
    assert summarise(load_trace(path)).progress.claimed == [1, 3, 4]


def test_unknown_types_and_keys_are_ignored(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {"type": "telemetry", "weird": [1, 2]},
            {"type": "user", "content": "go", "extra": {"x": 1}},
            {"type": "assistant", "content": "VERDICT: safe", "mood": "calm"},
        ],
    )
    trace = load_trace(path)
    assert trace.format == "session" and trace.calls == [] and trace.final_text == "VERDICT: safe"


def test_openai_style_tool_calls_are_read(tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "-rn x"}}
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {"type": "assistant", "content": None, "tool_calls": [call]},
            {"type": "tool", "tool_call_id": "c1", "tool_name": "grep", "result": "hit"},
        ],
    )
    (only,) = load_trace(path).calls
    assert (only.name, only.args, only.result) == ("grep", "-rn x", "hit")


def test_a_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    good = json.dumps({"type": "user", "content": "hi"})
    path.write_text(f"{good}\n\n{good}\n{{not json\n{good}\n", encoding="utf-8")
    with pytest.raises(FormatError) as info:
        load_trace(path)
    message = str(info.value)
    assert message.startswith(f"{path}:4:") and "not valid JSON" in message
    assert "\n" not in message


def test_a_non_object_line_and_a_bad_field_are_format_errors(tmp_path: Path) -> None:
    path = tmp_path / "list.jsonl"
    path.write_text('{"type": "user", "content": "x"}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"list\.jsonl:2: line must be a JSON object"):
        load_trace(path)
    bad = write_jsonl(
        tmp_path / "bad.jsonl",
        [{"type": "user", "content": "x"}, {"type": "assistant", "tool_calls": "grep"}],
    )
    with pytest.raises(FormatError, match=r"bad\.jsonl:2: field 'tool_calls': expected a list"):
        load_trace(bad)
    nameless = write_jsonl(
        tmp_path / "nameless.jsonl", [{"type": "assistant", "tool_calls": [{"args": "x"}]}]
    )
    with pytest.raises(FormatError, match=r"field 'tool_calls\[0\]\.name'"):
        load_trace(nameless)


def test_claude_content_must_be_blocks(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [{"type": "assistant", "sessionId": "s", "message": {"role": "assistant", "content": 7}}],
    )
    with pytest.raises(FormatError, match=r"c\.jsonl:1: field 'message\.content'"):
        load_trace(path)


def test_missing_session_file_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="session file not found"):
        load_trace(tmp_path / "nope.jsonl")


def test_claude_input_summary_keeps_what_tells_calls_apart(tmp_path: Path) -> None:
    def use(n: int, name: str, tool_input: dict[str, object]) -> dict[str, object]:
        message = {
            "id": f"msg_{n}",
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": tool_input}
            ],
        }
        return {"type": "assistant", "sessionId": "s", "message": message}

    path = write_jsonl(
        tmp_path / "c.jsonl",
        [
            use(1, "Read", {"file_path": "Big.java", "offset": 2000, "limit": 2000}),
            use(2, "Read", {"file_path": "Big.java", "offset": 4000, "limit": 2000}),
            use(3, "Grep", {"pattern": "campId", "path": "src", "-n": True, "-C": 3}),
            use(4, "Edit", {"file_path": "A.java", "old_string": "x" * 500, "new_string": "y"}),
            use(5, "Bash", {"command": "ls  -la", "description": "list", "timeout": 5000}),
        ],
    )
    trace = load_trace(path)
    assert [c.args for c in trace.calls] == [
        "Big.java offset=2000 limit=2000",
        "Big.java offset=4000 limit=2000",
        "campId src",
        "A.java",
        "ls  -la",
    ]
    assert summarise(trace).stats.max_repeat == 1  # two chunks of one file are not a loop


def test_session_content_may_be_text_blocks_but_not_a_number(tmp_path: Path) -> None:
    blocks = [{"type": "text", "text": "Found it."}, {"type": "text", "text": "VERDICT: safe"}]
    path = write_jsonl(tmp_path / "s.jsonl", [{"type": "assistant", "content": blocks}])
    assert load_trace(path).final_text == "Found it.\nVERDICT: safe"
    bad = write_jsonl(tmp_path / "b.jsonl", [{"type": "user", "content": 42}])
    with pytest.raises(FormatError, match=r"b\.jsonl:1: field 'content': expected a string"):
        load_trace(bad)
