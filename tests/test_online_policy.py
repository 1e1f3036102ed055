"""The review policy's signals and thresholds, read from real transcript files."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.config import OnlineConfig
from engine.core.errors import FormatError
from engine.core.fsutil import append_jsonl
from engine.core.transcripts import Message, read_transcript
from engine.loops.online import ReviewPolicy, scan
from engine.loops.online.policy import looks_like_correction
from tests.online_helpers import CLAUDE, CLAUDE_FOLLOWUP, PLAIN, append, copy_session


def _session(path: Path, *lines: dict[str, object]) -> list[Message]:
    for line in lines:
        append_jsonl(path, line)
    return read_transcript(path).messages


def _calls(n: int, name: str = "grep") -> list[dict[str, str]]:
    return [{"id": f"t{i}", "name": name, "args": f"pattern {i}"} for i in range(n)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("No, that's wrong, try again", True),
        ("Actually the report needs Fahrenheit.", True),
        ("Going forward, use this workflow for every report by default.", True),
        ("不对，改成摄氏度", True),
        ("这个清单挺好，谢谢", False),
        ("Thanks, that is what I needed.", False),
        ("Next time is fine.", False),  # a future marker alone is no workflow feedback
    ],
)
def test_correction_phrases(text: str, expected: bool) -> None:
    assert looks_like_correction(text) is expected


def test_real_transcripts_give_their_signals(tmp_path: Path) -> None:
    claude = read_transcript(CLAUDE)
    plain = read_transcript(PLAIN)
    assert (claude.format, plain.format) == ("claude-transcript", "session")

    signals = scan(claude.messages)
    assert (signals.tool_calls, signals.recovered_error, signals.user_correction) == (
        8,
        True,
        False,
    )
    assert scan(plain.messages).tool_calls == 5
    assert scan(plain.messages).recovered_error

    session = copy_session(CLAUDE, tmp_path)
    append(session, CLAUDE_FOLLOWUP)
    grown = read_transcript(session).messages
    new = [m for m in grown if m.line > 21]
    # the correction opens the new segment: it answers the assistant the old one ended with
    assert scan(new, [m for m in grown if m.line <= 21]).user_correction
    assert not scan(new).user_correction


def test_thresholds_are_configurable(tmp_path: Path) -> None:
    messages = _session(
        tmp_path / "s.jsonl",
        {"type": "user", "content": "Find the config loader."},
        {"type": "assistant", "content": "Searching.", "tool_calls": _calls(3)},
        {"type": "assistant", "content": "It is in config.py."},
    )
    signals = scan(messages)
    assert signals.tool_calls == 3
    assert ReviewPolicy().reason(signals) is None
    assert ReviewPolicy(min_tool_calls=3).reason(signals) == "3 tool calls (≥ 3)"
    assert ReviewPolicy(min_tool_calls=0).reason(signals) is None
    cfg = OnlineConfig(min_tool_calls=2, user_correction=False)
    assert ReviewPolicy.from_config(cfg) == ReviewPolicy(2, False, True)


def test_error_counts_only_when_the_assistant_carries_on(tmp_path: Path) -> None:
    ask = {"type": "user", "content": "Run the tests."}
    call = {"type": "assistant", "content": "Running.", "tool_calls": _calls(1, "Bash")}
    failed = {"type": "tool", "tool_name": "Bash", "result": "Traceback (most recent call last)"}
    stuck = _session(tmp_path / "a.jsonl", ask, call, failed)
    assert not scan(stuck).recovered_error
    recovered = _session(
        tmp_path / "b.jsonl", ask, call, failed, {"type": "assistant", "content": "Fixed it."}
    )
    assert scan(recovered).recovered_error
    assert ReviewPolicy().reason(scan(recovered)) == "the agent recovered from an error"
    assert ReviewPolicy(recovered_error=False).reason(scan(recovered)) is None


def test_correction_must_answer_the_assistant(tmp_path: Path) -> None:
    opening = _session(
        tmp_path / "a.jsonl",
        {"type": "user", "content": "Actually, list the files instead."},
        {"type": "assistant", "content": "Here they are."},
    )
    assert not scan(opening).user_correction
    answered = _session(
        tmp_path / "b.jsonl",
        {"type": "user", "content": "List the files."},
        {"type": "assistant", "content": "a.py b.py"},
        {"type": "user", "content": "That's wrong, try again with hidden files."},
    )
    assert scan(answered).user_correction
    assert ReviewPolicy(user_correction=False).reason(scan(answered)) is None


def test_skill_writes_are_recognised(tmp_path: Path) -> None:
    def wrote(name: str, args: str) -> bool:
        path = tmp_path / f"{len(list(tmp_path.iterdir()))}.jsonl"
        call = [{"id": "t", "name": name, "args": args}]
        return scan(
            _session(path, {"type": "assistant", "content": "x", "tool_calls": call})
        ).wrote_skill

    assert wrote("Write", "/repo/.claude/skills/weather/SKILL.md")
    assert wrote("Bash", "cat > skills/weather/SKILL.md <<'EOF'")
    assert not wrote("Read", "skills/weather/SKILL.md")
    assert not wrote("Bash", "grep -n steps skills/weather/SKILL.md")
    assert not wrote("Write", "/repo/weather.md")


def test_bad_lines_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type": "user", "content": "hi"}\nnot json\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"bad\.jsonl:2: line is not valid JSON"):
        read_transcript(path)
    path.write_text('{"type": "assistant", "content": "x", "tool_calls": [3]}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"bad\.jsonl:1: field 'tool_calls\[0\]'"):
        read_transcript(path)
