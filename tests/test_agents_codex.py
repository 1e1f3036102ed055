"""``codex exec --json`` events folded into session lines, and the command line codex is given.

The event lines are written in the shape codex 0.171 prints them (thread/turn/item events; see
tests/test_e2e_codex.py for the real CLI): what matters is that every tool call keeps its
command and output, a failed command is an error, usage adds up over turns, and a stream that
failed or never finished is refused with a reason instead of being graded.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.core.transcripts import entries
from engine.core.workspace import Workspace
from engine.evaluation.agents.codex import DEFAULT_BASE_URL, codex_argv, parse_codex_stream
from engine.evaluation.agents.sessions import OutputError
from tests.bench_helpers import write_benchmark, write_case
from tests.llm_server import MessagesServer
from tests.openai_server import OpenAIServer
from tests.runner_helpers import LABELS

PROMPT = "# Task\n\nAudit code.py.\n"


def _stream(*events: dict[str, Any]) -> bytes:
    return "".join(json.dumps(e) + "\n" for e in events).encode()


def _command(item_id: str, command: str, output: str, code: int) -> dict[str, Any]:
    item = {"id": item_id, "type": "command_execution", "command": command}
    done = item | {"aggregated_output": output, "exit_code": code, "status": "completed"}
    return {"type": "item.completed", "item": done}


USAGE = {"input_tokens": 120, "cached_input_tokens": 100, "output_tokens": 7}
TURN = {"type": "turn.completed", "usage": USAGE | {"reasoning_output_tokens": 0}}


def test_a_codex_stream_becomes_session_lines() -> None:
    stdout = _stream(
        {"type": "thread.started", "thread_id": "thread-1"},
        {"type": "item.completed", "item": {"id": "i0", "type": "error", "message": "metadata"}},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i1", "type": "reasoning", "text": "think"}},
        _command("i2", "/bin/bash -lc 'cat missing'", "cat: missing: No such file\n", 1),
        _command("i3", "/bin/bash -lc \"grep -n 'eval(' code.py\"", "1:x = eval(input())\n", 0),
        {
            "type": "item.completed",
            "item": {
                "id": "i4",
                "type": "file_change",
                "changes": [{"path": "notes.md", "kind": "add"}],
                "status": "completed",
            },
        },
        {"type": "item.completed", "item": {"id": "i5", "type": "agent_message", "text": "Done."}},
        TURN,
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {"id": "i6", "type": "agent_message", "text": "VERDICT: x"},
        },
        TURN,
    )
    parsed = parse_codex_stream(stdout, PROMPT)
    assert parsed.agent_session_id == "thread-1"
    assert parsed.tokens == {"input": 240, "output": 14}
    assert parsed.cost_usd is None
    lines = parsed.lines
    assert lines[0] == {"type": "user", "content": PROMPT}
    assert lines[-1] == {"type": "assistant", "content": "VERDICT: x"}
    calls = [c for line in lines for c in line.get("tool_calls", [])]
    assert [(c["name"], c["args"]) for c in calls] == [
        ("exec_command", "/bin/bash -lc 'cat missing'"),
        ("exec_command", "/bin/bash -lc \"grep -n 'eval(' code.py\""),
        ("apply_patch", "add notes.md"),
    ]
    tools = [line for line in lines if line["type"] == "tool"]
    assert [(t["tool_call_id"], t["is_error"]) for t in tools] == [
        ("i2", True),
        ("i3", False),
        ("i4", False),
    ]
    assert tools[1]["result"] == "1:x = eval(input())\n"
    # the lines are the session format every reader checks
    read = list(entries(enumerate(lines, start=1), "codex"))
    assert [e.kind for e in read].count("tool") == 3


@pytest.mark.parametrize(
    ("events", "reason"),
    [
        (
            [{"type": "turn.started"}, {"type": "turn.failed", "error": {"message": "quota gone"}}],
            "codex reported an error: quota gone",
        ),
        (
            [{"type": "turn.started"}, {"type": "error", "message": "Reconnecting... 5/5"}],
            "codex stream ended without turn.completed (last error: Reconnecting... 5/5)",
        ),
        ([{"type": "thread.started", "thread_id": "t"}], "codex stream ended without"),
    ],
)
def test_a_failed_or_unfinished_stream_is_refused(
    events: list[dict[str, Any]], reason: str
) -> None:
    with pytest.raises(OutputError, match="^" + reason.replace("(", r"\(").replace(")", r"\)")):
        parse_codex_stream(_stream(*events), PROMPT)


def test_garbage_is_refused_with_its_line() -> None:
    stdout = _stream({"type": "thread.started", "thread_id": "t"}) + b"Segmentation fault\n"
    with pytest.raises(OutputError, match="codex event line 2 is not JSON"):
        parse_codex_stream(stdout, PROMPT)
    with pytest.raises(OutputError, match="codex event line 1 is not an object"):
        parse_codex_stream(b"[1, 2]\n", PROMPT)


def test_every_run_gets_its_own_provider_whatever_the_user_config_says() -> None:
    argv = codex_argv(("codex",), "--not-a-flag", model="gpt-test", base_url="http://h:1/v1")
    assert argv[:2] == ["codex", "exec"] and "--json" in argv
    assert argv[-2:] == ["--", "--not-a-flag"]  # the prompt can never be read as a flag
    settings = [argv[i + 1] for i, word in enumerate(argv) if word == "-c"]
    parsed = tomllib.loads("\n".join(settings))
    assert parsed["model_provider"] == "skillsmith"
    assert parsed["model_providers"]["skillsmith"] == {
        "name": "skillsmith",
        "base_url": "http://h:1/v1",
        "env_key": "OPENAI_API_KEY",
        "wire_api": "responses",
    }
    assert argv[argv.index("--model") + 1] == "gpt-test"
    default = codex_argv(("codex",), "p", model=None, base_url=None)
    assert "--model" not in default and DEFAULT_BASE_URL in " ".join(default)


def _workspace(root: Path, kind: str) -> Workspace:
    ws = Workspace.init(root)
    cfg = ws.load_config()
    cfg.agent.kind = kind  # type: ignore[assignment]
    cfg.agent.sandbox = "none"  # the CLI is never started: the pre-flight refuses first
    ws.save_config(cfg)
    bench = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    write_case(bench, "c1", {"expected": "safe"})
    return ws


@pytest.mark.parametrize(
    ("kind", "variable", "refusal"),
    [
        ("codex", "OPENAI_API_KEY", "the OpenAI API at {url} refused the API key (401)"),
        (
            "claude-code",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "the Messages API at {url} refused the OAuth token (401)",
        ),
    ],
)
def test_a_refused_credential_stops_before_any_unit(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    variable: str,
    refusal: str,
) -> None:
    wrong = "sk-wrong-credential-not-real-0123456789"
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, wrong)
    monkeypatch.setenv("SKILLSMITH_CODEX_BIN", __file__)  # any file: never started
    monkeypatch.setenv("SKILLSMITH_CLAUDE_BIN", __file__)
    server = OpenAIServer(api_key="sk-the-right-one") if kind == "codex" else None
    with server or MessagesServer(api_key="sk-the-right-one") as running:
        monkeypatch.setenv("OPENAI_BASE_URL", running.url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", running.url)
        ws = _workspace(tmp_path / "ws", kind)
        assert main(["eval", "b", "-w", str(ws.root)]) == 1
        url = running.url
    err = capsys.readouterr().err
    hint = f"; check {variable} (from ${variable})"
    assert err.strip() == "skillsmith: error: " + refusal.format(url=url) + hint
    assert not any(p.name.startswith("run") for p in ws.runs_dir.iterdir())
