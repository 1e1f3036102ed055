"""One Claude fold behind every reader: diagnosis and online review see the same calls, and a
message still being written is offered again whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.core.transcripts import load_trace, read_transcript
from tests.diag_helpers import TRACE_DATA
from tests.online_helpers import CLAUDE


def test_diagnosis_and_online_review_read_the_same_calls() -> None:
    for path in (
        TRACE_DATA / "claude_transcript.jsonl",
        TRACE_DATA / "claude_stream.jsonl",
        CLAUDE,
    ):
        trace = load_trace(path)
        conversation = read_transcript(path)
        said = [(c.name, c.args) for m in conversation.messages for c in m.calls]
        assert said == [(c.name, c.args) for c in trace.calls], path.name
        errors = [m.is_error for m in conversation.messages if m.role == "tool"]
        paired = [c.is_error for c in trace.calls if c.has_result]
        assert sorted(errors) == sorted(paired), path.name
        users = [m.text for m in conversation.messages if m.role == "user"]
        assert users[:1] == ([trace.prompt] if trace.prompt else []), path.name


def _line(block: dict[str, Any], uuid: str) -> str:
    message = {"id": "msg_01Half", "type": "message", "role": "assistant", "content": [block]}
    row = {"type": "assistant", "sessionId": "s1", "uuid": uuid, "message": message}
    return json.dumps(row) + "\n"


def test_a_message_written_over_several_lines_counts_at_its_last_line(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    ask = {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "Audit a.py"}}
    path.write_text(
        json.dumps(ask) + "\n" + _line({"type": "text", "text": "Reading it."}, "u2"),
        encoding="utf-8",
    )
    [_, early] = read_transcript(path).messages
    assert (early.line, early.text, early.calls) == (2, "Reading it.", ())

    with path.open("a", encoding="utf-8") as fh:
        tool = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}}
        fh.write(_line(tool, "u3"))
        fh.write('{"type": "user", "sessionId": "s1", "message": {"role": "us')  # half written

    transcript = read_transcript(path)
    [_, whole] = transcript.messages  # one message, not a second copy of its text
    assert (whole.line, whole.text) == (3, "Reading it.")
    assert [(c.name, c.args) for c in whole.calls] == [("Read", "a.py")]
    assert transcript.lines == 3  # the half-written line waits
