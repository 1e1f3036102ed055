"""AnthropicLLM through the real anthropic SDK against the local Messages-API server."""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

import pytest

from engine.core.config import ModelConfig
from engine.core.errors import SkillsmithError
from engine.evaluation.llm import AnthropicLLM, Completion, TokenUsage, cost_usd, price_for
from tests.llm_server import (
    MessagesServer,
    Reply,
    ToolUse,
    last_user_text,
    tool_results,
)

KEY = "sk-ant-api03-Zq8RtestKEYvalue0123456789abcdefXYZ"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def client(server: MessagesServer, **cfg: Any) -> AnthropicLLM:
    model_cfg = ModelConfig(provider="anthropic", model="claude-sonnet-4-6", timeout_s=10.0)
    for name, value in cfg.items():
        setattr(model_cfg, name, value)
    return AnthropicLLM(model_cfg, api_key=KEY, base_url=server.url)


def retry_counts(server: MessagesServer) -> list[str]:
    return [r.headers["x-stainless-retry-count"] for r in server.message_requests]


def test_non_streaming_text_and_request_shape(messages_server: MessagesServer) -> None:
    messages_server.respond_with(lambda req: Reply(text="echo: " + last_user_text(req)))
    llm = client(messages_server, max_tokens=321)

    out = llm.complete("You review skills.", [{"role": "user", "content": "hello there"}])

    assert out.text == "echo: hello there"
    assert out.stop_reason == "end_turn"
    assert out.model == "claude-sonnet-4-6"
    assert out.retries == 0
    [sent] = messages_server.message_requests
    assert sent.has_credentials
    assert sent.json["max_tokens"] == 321
    assert sent.json["model"] == "claude-sonnet-4-6"
    assert not sent.json.get("stream")
    assert "temperature" not in sent.json
    assert sent.json["system"] == [
        {"type": "text", "text": "You review skills.", "cache_control": {"type": "ephemeral"}}
    ]


def test_max_tokens_argument_overrides_config(messages_server: MessagesServer) -> None:
    messages_server.reply("short")
    client(messages_server).complete("s", [{"role": "user", "content": "q"}], max_tokens=7)
    assert messages_server.message_requests[0].json["max_tokens"] == 7


def test_streaming_delivers_text_in_pieces(messages_server: MessagesServer) -> None:
    text = "The skill misses step 3: it never greps for eval( before concluding."
    messages_server.reply(Reply(text=text, input_tokens=50, output_tokens=20))
    pieces: list[str] = []

    out = client(messages_server).complete(
        "sys", [{"role": "user", "content": "why?"}], on_text=pieces.append
    )

    assert len(pieces) > 1
    assert "".join(pieces) == text == out.text
    assert out.usage.input_tokens == 50
    assert out.usage.output_tokens == 20
    assert messages_server.message_requests[0].json["stream"] is True


def test_large_max_tokens_streams_without_a_sink(messages_server: MessagesServer) -> None:
    messages_server.reply("long answer")
    out = client(messages_server, max_tokens=32_000).complete(
        "s", [{"role": "user", "content": "q"}]
    )
    assert out.text == "long answer"
    assert messages_server.message_requests[0].json["stream"] is True


@pytest.mark.parametrize("stream", [False, True])
def test_tool_use_round_trip(messages_server: MessagesServer, stream: bool) -> None:
    def script(req: dict[str, Any]) -> Reply:
        results = tool_results(req)
        if not results:
            return Reply(text="Let me look.", tool_uses=[ToolUse("grep", {"pattern": "eval("})])
        return Reply(text=f"found: {results[0]['content']}")

    messages_server.respond_with(script)
    tools = [
        {
            "name": "grep",
            "description": "search the code",
            "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}},
        }
    ]
    llm = client(messages_server)
    sink: list[str] | None = [] if stream else None
    history: list[dict[str, Any]] = [{"role": "user", "content": "audit app.py"}]

    first = llm.complete_tools(
        "sys", history, tools, on_text=sink.append if sink is not None else None
    )

    assert first.stop_reason == "tool_use"
    assert first.text == "Let me look."
    [call] = first.tool_calls
    assert call.name == "grep"
    assert call.input == {"pattern": "eval("}
    assert call.id.startswith("toolu_")
    history += [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": first.text},
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "app.py:12"}],
        },
    ]
    second = llm.complete_tools("sys", history, tools, tool_choice={"type": "auto"})

    assert second.text == "found: app.py:12"
    assert second.tool_calls == ()
    first_req, second_req = messages_server.message_requests
    assert first_req.json["tools"] == tools
    assert second_req.json["tool_choice"] == {"type": "auto"}
    assert bool(first_req.json.get("stream")) is stream
    assert llm.calls == 2


def test_429_then_success_counts_the_retries(messages_server: MessagesServer) -> None:
    messages_server.fail_next(2, status=429, retry_after_s=0.01)
    messages_server.reply("finally")
    llm = client(messages_server, max_retries=3)

    out = llm.complete("s", [{"role": "user", "content": "q"}])

    assert out.text == "finally"
    assert out.retries == 2
    assert llm.total_retries == 2
    assert llm.calls == 1
    assert retry_counts(messages_server) == ["0", "1", "2"]


def test_429_retry_counted_when_streaming(messages_server: MessagesServer) -> None:
    messages_server.fail_next(1, status=429)
    messages_server.reply("streamed")
    out = client(messages_server).complete("s", [{"role": "user", "content": "q"}], on_text=print)
    assert out.text == "streamed"
    assert out.retries == 1


def test_500_exhausted_gives_one_line(messages_server: MessagesServer) -> None:
    messages_server.fail_next(3, status=500, message="database on fire")
    llm = client(messages_server, max_retries=2)

    with pytest.raises(SkillsmithError) as err:
        llm.complete("s", [{"role": "user", "content": "q"}])

    message = str(err.value)
    assert "\n" not in message
    assert "server error 500 after 3 attempts" in message
    assert "database on fire" in message
    assert retry_counts(messages_server) == ["0", "1", "2"]
    assert llm.calls == 0


def test_529_overloaded_is_retried_then_succeeds(messages_server: MessagesServer) -> None:
    messages_server.fail_next(1, status=529)
    messages_server.reply("ok now")
    out = client(messages_server).complete("s", [{"role": "user", "content": "q"}])
    assert out.text == "ok now"
    assert out.retries == 1


def test_529_overloaded_exhausted(messages_server: MessagesServer) -> None:
    messages_server.fail_next(2, status=529)
    with pytest.raises(SkillsmithError, match=r"API overloaded \(after 2 attempts\)"):
        client(messages_server, max_retries=1).complete("s", [{"role": "user", "content": "q"}])
    assert len(messages_server.message_requests) == 2


def test_overloaded_mid_stream(messages_server: MessagesServer) -> None:
    messages_server.fail_next(1, status=529, during_stream=True)
    messages_server.fail_next(1, status=500, during_stream=True, message="stream reset")
    messages_server.reply("never finished", "never finished either")
    llm = client(messages_server)
    with pytest.raises(SkillsmithError, match=r"API overloaded \(mid-answer\)"):
        llm.complete("s", [{"role": "user", "content": "q"}], on_text=print)
    with pytest.raises(SkillsmithError) as err:
        llm.complete("s", [{"role": "user", "content": "q"}], on_text=print)
    assert str(err.value).endswith("the answer broke off (api_error): stream reset")
    assert llm.calls == 0


def test_bad_request_is_not_retried(messages_server: MessagesServer) -> None:
    messages_server.fail_next(1, status=400, message="messages: roles must alternate")
    with pytest.raises(SkillsmithError) as err:
        client(messages_server).complete("s", [{"role": "user", "content": "q"}])
    assert str(err.value) == (
        "anthropic (claude-sonnet-4-6): request refused (400 invalid_request_error): "
        "messages: roles must alternate"
    )
    assert len(messages_server.message_requests) == 1


def test_wrong_key_fails_once_without_showing_it() -> None:
    with MessagesServer(api_key="sk-ant-api03-theRIGHTkey0000000000000000000000") as server:
        server.reply("unreachable")
        with pytest.raises(SkillsmithError) as err:
            client(server).complete("s", [{"role": "user", "content": "q"}])
    message = str(err.value)
    assert "authentication failed (401)" in message
    assert "ANTHROPIC_API_KEY" in message
    assert KEY not in message
    assert len(server.message_requests) == 1


def test_right_key_is_accepted() -> None:
    with MessagesServer(api_key=KEY) as server:
        server.reply("welcome")
        assert client(server).complete("s", [{"role": "user", "content": "q"}]).text == "welcome"


def test_key_never_in_errors_or_logs(
    messages_server: MessagesServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    messages_server.reply("fine")
    llm = client(messages_server)

    llm.complete("s", [{"role": "user", "content": "q"}])
    messages_server.fail_next(1, status=400, message=f"key {KEY} is not allowed here")
    with pytest.raises(SkillsmithError) as err:
        llm.complete("s", [{"role": "user", "content": "q"}])

    assert "[REDACTED]" in str(err.value)
    assert KEY not in str(err.value)
    assert err.value.__cause__ is None
    assert "llm claude-sonnet-4-6: in=" in caplog.text
    assert KEY not in caplog.text
    for request in messages_server.requests:
        assert KEY not in str(request.headers)


def test_secrets_never_reach_the_api(messages_server: MessagesServer) -> None:
    aws = "AKIAIOSFODNN7EXAMPLE"
    messages_server.reply(Reply(text="ok", tool_uses=[ToolUse("read", {"path": "x"})]), "done")
    llm = client(messages_server)
    history: list[dict[str, Any]] = [{"role": "user", "content": f"trace: token={KEY}"}]
    first = llm.complete(f"skill text, leaked {aws}", history)
    history += [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": aws}]},
    ]
    llm.complete("s", history)

    assert first.text == "ok"
    for request in messages_server.message_requests:
        sent = json.dumps(request.json)
        assert KEY not in sent and aws not in sent
        assert "[REDACTED]" in sent
    assert history[0]["content"] == f"trace: token={KEY}"  # the caller's data is not mutated


def test_timeout_is_one_line(messages_server: MessagesServer) -> None:
    def slow(req: dict[str, Any]) -> str:
        time.sleep(1.0)
        return "too late"

    messages_server.respond_with(slow)
    with pytest.raises(SkillsmithError, match=r"no answer within 0.2s after 1 attempt$"):
        client(messages_server, timeout_s=0.2, max_retries=0).complete(
            "s", [{"role": "user", "content": "q"}]
        )


def test_unreachable_server_is_one_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = ModelConfig(provider="anthropic", model="claude-haiku-4-5", max_retries=0, timeout_s=2.0)
    llm = AnthropicLLM(cfg, api_key=KEY, base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(SkillsmithError, match=rf"cannot reach http://127.0.0.1:{port} after 1"):
        llm.complete("s", [{"role": "user", "content": "q"}])


def test_usage_and_cost_accounting(messages_server: MessagesServer) -> None:
    messages_server.reply(
        Reply(
            "a", input_tokens=1000, output_tokens=500, cache_read_tokens=2000, cache_write_tokens=0
        ),
        Reply("b", input_tokens=10, output_tokens=20, cache_read_tokens=0, cache_write_tokens=4000),
    )
    llm = client(messages_server)

    first = llm.complete("s", [{"role": "user", "content": "q"}])
    second = llm.complete("s", [{"role": "user", "content": "q"}])

    assert first.usage == TokenUsage(1000, 500, cache_read_tokens=2000)
    # sonnet: $3 in, $15 out, cache read 0.1x input, cache write 1.25x input, per MTok
    assert first.cost_usd == pytest.approx((1000 * 3 + 500 * 15 + 2000 * 0.3) / 1e6)
    assert second.cost_usd == pytest.approx((10 * 3 + 20 * 15 + 4000 * 3.75) / 1e6)
    assert llm.calls == 2
    assert llm.total_usage == TokenUsage(1010, 520, 2000, 4000)
    assert llm.total_usage.prompt_tokens == 7010
    assert first.cost_usd is not None and second.cost_usd is not None
    assert llm.total_cost_usd == pytest.approx(first.cost_usd + second.cost_usd)


def test_unknown_model_has_unknown_cost(messages_server: MessagesServer) -> None:
    messages_server.reply("x")
    llm = client(messages_server, model="claude-mythos-5")
    out = llm.complete("s", [{"role": "user", "content": "q"}])
    assert out.cost_usd is None
    assert llm.total_cost_usd is None
    assert llm.total_usage.output_tokens > 0


def test_price_table_matches_dated_ids_and_families() -> None:
    sonnet = price_for("claude-sonnet-4-5-20250929")
    assert sonnet is not None and (sonnet.input, sonnet.output) == (3.0, 15.0)
    opus_old, opus_new = price_for("claude-opus-4-1-20250805"), price_for("claude-opus-4-5")
    assert opus_old is not None and opus_old.input == 15.0
    assert opus_new is not None and opus_new.input == 5.0
    assert price_for("gpt-4o") is None
    assert price_for("claude-sonnet-5-5") is None
    assert price_for("claude-opus-4-20250514") == opus_old
    assert cost_usd("claude-haiku-4-5", TokenUsage(1_000_000, 1_000_000)) == pytest.approx(6.0)


def test_stable_system_prefix_is_read_from_cache(messages_server: MessagesServer) -> None:
    messages_server.reply("one", "two")
    llm = client(messages_server)
    system = "You propose unified diffs to SKILL.md. " * 40

    first: Completion = llm.complete(system, [{"role": "user", "content": "case A"}])
    second = llm.complete(system, [{"role": "user", "content": "case B, longer"}])

    assert first.usage.cache_write_tokens > 0
    assert first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert second.usage.cache_write_tokens == 0
    assert second.cost_usd is not None and first.cost_usd is not None
    assert second.cost_usd < first.cost_usd
    for request in messages_server.message_requests:
        assert request.json["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_no_key_is_one_line() -> None:
    with pytest.raises(SkillsmithError, match=r"no API key; set ANTHROPIC_API_KEY or write"):
        AnthropicLLM(ModelConfig(provider="anthropic"))
