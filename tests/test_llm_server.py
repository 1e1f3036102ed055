"""The local Messages-API server speaks the wire protocol the SDK and the `claude` CLI expect."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anthropic
import pytest

from tests.llm_server import MessagesServer, Reply, ToolUse, request_text, tool_results

KEY = "sk-ant-api03-serverTESTkey0123456789abcdefghij"
MODEL = "claude-haiku-4-5"


def sdk(server: MessagesServer, max_retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=KEY, base_url=server.url, max_retries=max_retries)


def post(
    server: MessagesServer, path: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[http.client.HTTPResponse, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request(
        "POST", path, body=body, headers={"content-type": "application/json", **(headers or {})}
    )
    response = conn.getresponse()
    return response, response.read()


def sse_events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for frame in raw.decode().split("\n\n"):
        if not frame.strip():
            continue
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_sse_event_sequence_with_text_and_tool_use(messages_server: MessagesServer) -> None:
    messages_server.reply(
        Reply(
            text="Checking the query builder for string concatenation.",
            tool_uses=[ToolUse("grep", {"pattern": "execute(", "paths": ["a.py", "b.py"]})],
        )
    )
    body = {
        "model": MODEL,
        "max_tokens": 50,
        "stream": True,
        "messages": [{"role": "user", "content": "go"}],
    }

    response, raw = post(messages_server, "/v1/messages?beta=true", json.dumps(body).encode())

    assert response.status == 200
    assert response.getheader("content-type", "").startswith("text/event-stream")
    events = sse_events(raw)
    names = [name for name, _ in events]
    assert all(name == data["type"] for name, data in events)
    text_deltas = names.index("content_block_stop")
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert set(names[3:text_deltas]) == {"content_block_delta"}
    assert names[text_deltas + 1] == "content_block_start"
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]

    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None
    assert start["usage"]["input_tokens"] > 0
    blocks: dict[int, str] = {}
    for name, data in events:
        if name == "content_block_delta":
            delta = data["delta"]
            blocks[data["index"]] = blocks.get(data["index"], "") + delta.get(
                "text", delta.get("partial_json", "")
            )
    assert blocks[0] == "Checking the query builder for string concatenation."
    assert json.loads(blocks[1]) == {"pattern": "execute(", "paths": ["a.py", "b.py"]}
    tool_start = events[text_deltas + 1][1]["content_block"]
    assert tool_start["type"] == "tool_use" and tool_start["name"] == "grep"
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"]["output_tokens"] > 1


def test_sdk_parses_the_raw_stream(messages_server: MessagesServer) -> None:
    messages_server.reply(
        Reply(text="hi", tool_uses=[ToolUse("read", {"path": "x"}, id="toolu_fixed")])
    )
    stream = sdk(messages_server).messages.create(
        model=MODEL, max_tokens=20, stream=True, messages=[{"role": "user", "content": "q"}]
    )
    types = [event.type for event in stream]
    assert types[0] == "message_start"
    assert types[-2:] == ["message_delta", "message_stop"]
    assert types.count("content_block_start") == 2


def test_count_tokens_grows_with_the_prompt(messages_server: MessagesServer) -> None:
    client = sdk(messages_server)
    short = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    long = client.messages.count_tokens(
        model=MODEL, system="be brief " * 50, messages=[{"role": "user", "content": "hi"}]
    )
    assert 0 < short.input_tokens < long.input_tokens
    assert [r.path for r in messages_server.requests] == ["/v1/messages/count_tokens"] * 2


def test_unknown_routes_and_bad_bodies(messages_server: MessagesServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", messages_server.port, timeout=10)
    conn.request("GET", "/v1/models")
    response = conn.getresponse()
    body = json.loads(response.read())
    assert response.status == 404
    assert body["type"] == "error" and body["error"]["type"] == "not_found_error"

    response, raw = post(messages_server, "/v1/messages", b"{not json")
    assert response.status == 400
    assert json.loads(raw)["error"]["type"] == "invalid_request_error"

    response, raw = post(messages_server, "/v1/messages", json.dumps({"messages": []}).encode())
    assert response.status == 400
    assert "max_tokens" in json.loads(raw)["error"]["message"]


def test_a_script_that_ran_dry_fails_loudly_and_once(messages_server: MessagesServer) -> None:
    with pytest.raises(anthropic.BadRequestError, match="no scripted reply left"):
        sdk(messages_server, max_retries=2).messages.create(
            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "q"}]
        )
    assert len(messages_server.message_requests) == 1


def test_a_failing_responder_is_kept_and_not_retried(messages_server: MessagesServer) -> None:
    def broken(req: dict[str, Any]) -> str:
        raise ValueError("bug in the test script")

    messages_server.respond_with(broken)
    with pytest.raises(anthropic.InternalServerError, match="bug in the test script"):
        sdk(messages_server, max_retries=2).messages.create(
            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "q"}]
        )
    assert len(messages_server.message_requests) == 1
    [error] = messages_server.responder_errors
    assert isinstance(error, ValueError)


def test_injected_errors_have_the_anthropic_shape(messages_server: MessagesServer) -> None:
    messages_server.fail_next(1, status=429, retry_after_s=2.0)
    messages_server.fail_next(1, status=529, retry_after_s=None)
    body = json.dumps({"model": MODEL, "max_tokens": 5, "messages": []}).encode()

    limited, raw_limited = post(messages_server, "/v1/messages", body)
    overloaded, raw_overloaded = post(messages_server, "/v1/messages", body)
    messages_server.reply("recovered")
    ok, raw_ok = post(messages_server, "/v1/messages", body)

    assert limited.status == 429
    assert limited.getheader("retry-after") == "2"
    assert limited.getheader("retry-after-ms") == "2000"
    error = json.loads(raw_limited)
    assert error["type"] == "error"
    assert error["error"]["type"] == "rate_limit_error"
    assert error["request_id"] == limited.getheader("request-id")
    assert overloaded.status == 529
    assert overloaded.getheader("retry-after") is None
    assert json.loads(raw_overloaded)["error"]["type"] == "overloaded_error"
    assert ok.status == 200
    assert json.loads(raw_ok)["content"] == [{"type": "text", "text": "recovered"}]


def test_credentials_are_never_recorded(messages_server: MessagesServer) -> None:
    messages_server.reply("a", "b")
    body = json.dumps({"model": MODEL, "max_tokens": 5, "messages": []}).encode()
    post(messages_server, "/v1/messages", body, {"x-api-key": KEY})
    sdk(messages_server).messages.create(
        model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "q"}]
    )
    for request in messages_server.requests:
        assert request.has_credentials
        assert "x-api-key" not in request.headers
        assert "authorization" not in request.headers
        assert KEY not in json.dumps(request.headers)


def test_required_key_rejects_others() -> None:
    with MessagesServer(api_key=KEY) as server:
        server.reply("secret answer")
        body = json.dumps({"model": MODEL, "max_tokens": 5, "messages": []}).encode()
        denied, raw = post(server, "/v1/messages", body, {"x-api-key": "sk-other"})
        allowed, _ = post(server, "/v1/messages", body, {"x-api-key": KEY})
    assert denied.status == 401
    assert json.loads(raw)["error"]["type"] == "authentication_error"
    assert allowed.status == 200


def test_chunked_request_bodies_are_read(messages_server: MessagesServer) -> None:
    messages_server.reply("chunked ok")
    conn = http.client.HTTPConnection("127.0.0.1", messages_server.port, timeout=10)
    body = json.dumps(
        {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    )
    parts = iter([body[:10].encode(), body[10:].encode()])
    conn.request("POST", "/v1/messages", body=parts, encode_chunked=True)
    response = conn.getresponse()
    assert response.status == 200
    assert json.loads(response.read())["content"][0]["text"] == "chunked ok"
    assert messages_server.message_requests[0].json["messages"][0]["content"] == "x"


def test_cache_follows_a_moving_marker(messages_server: MessagesServer) -> None:
    """Claude Code marks the newest message each turn; the older prefix must still be read."""
    messages_server.reply("one", "two")
    client = sdk(messages_server)
    system: Any = [
        {
            "type": "text",
            "text": "You are an auditor. " * 60,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    turn1: Any = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}}],
        }
    ]
    first = client.messages.create(model=MODEL, max_tokens=5, system=system, messages=turn1)
    turn2: Any = [
        {"role": "user", "content": [{"type": "text", "text": "look"}]},
        {"role": "assistant", "content": "one"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}],
        },
    ]
    second = client.messages.create(model=MODEL, max_tokens=5, system=system, messages=turn2)

    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation_input_tokens
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens


def test_request_helpers_see_text_and_tool_results() -> None:
    req = {
        "system": [{"type": "text", "text": "SKILL: security-audit"}],
        "messages": [
            {"role": "user", "content": "audit"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t", "name": "grep", "input": {"q": "eval"}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "a.py:3"}],
            },
        ],
    }
    text = request_text(req)
    assert "SKILL: security-audit" in text and '"q": "eval"' in text and "a.py:3" in text
    assert tool_results(req) == [{"type": "tool_result", "tool_use_id": "t", "content": "a.py:3"}]


def _claude_bin() -> str | None:
    configured = os.environ.get("SKILLSMITH_CLAUDE_BIN")
    local = Path(__file__).resolve().parents[1] / ".ci/node/node_modules/.bin/claude"
    for candidate in (configured, str(local), shutil.which("claude")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.mark.e2e
def test_real_claude_cli_runs_a_tool_against_the_server(
    messages_server: MessagesServer, tmp_path: Path
) -> None:
    claude = _claude_bin()
    if claude is None:
        if os.environ.get("SKILLSMITH_REQUIRE_E2E"):
            pytest.fail("the claude CLI is required (SKILLSMITH_REQUIRE_E2E) but not installed")
        pytest.skip("claude CLI not installed (.ci/run installs it)")

    def script(req: dict[str, Any]) -> Reply:
        results = tool_results(req)
        if not req.get("tools"):
            return Reply(text="side request")
        if not results:
            return Reply(
                tool_uses=[ToolUse("Bash", {"command": "cat marker.txt", "description": "read"})]
            )
        return Reply(text=f"VERDICT: seen {results[0]['content']}")

    messages_server.respond_with(script)
    (tmp_path / "marker.txt").write_text("canary-42\n")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / ".home"),
        "ANTHROPIC_BASE_URL": messages_server.url,
        "ANTHROPIC_API_KEY": KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    proc = subprocess.run(
        [
            claude,
            "-p",
            "read the marker",
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools",
            "Bash",
            "--max-turns",
            "3",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert proc.returncode == 0, proc.stderr[-500:]
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    result = lines[-1]
    assert result["type"] == "result" and not result["is_error"]
    assert "VERDICT: seen canary-42" in result["result"]
    assert result["usage"]["cache_read_input_tokens"] > 0
    streamed = [r for r in messages_server.message_requests if r.json.get("tools")]
    assert len(streamed) == 2
    assert all(r.json["stream"] is True and r.query == {"beta": ["true"]} for r in streamed)
    assert not messages_server.responder_errors
