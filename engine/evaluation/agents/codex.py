"""The OpenAI Codex CLI as a target agent: ``codex exec --json``, skills in ``.agents/skills``.

Codex reads its model endpoint from a provider table, not from ``OPENAI_BASE_URL``: every run is
given one provider, ``skillsmith``, on the command line (``-c``), pointed at ``$OPENAI_BASE_URL``
(default the OpenAI API) and told to read its key from ``OPENAI_API_KEY`` in the run's
environment, so the user's own ``~/.codex/config.toml`` never decides where a measurement goes.
Codex's own sandbox is switched off (``--dangerously-bypass-approvals-and-sandbox``, made for
"environments that are externally sandboxed"): the run is already sealed by Skillsmith's, and
a second namespace sandbox inside bubblewrap cannot start.

Its ``--json`` stdout is a stream of thread/turn/item events; :func:`parse_codex_stream` folds it
into session lines: an ``agent_message`` is an assistant line, a ``command_execution`` (or a file
change, an MCP call, a web search) an assistant tool call with its ``tool`` result, and the
``turn.completed`` usage the tokens. Codex reports no cost, so ``cost_usd`` stays None.
"""

from __future__ import annotations

import json
from typing import Any

from engine.evaluation.agents.sessions import OutputError, ParsedSession, clip, stream_objects

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PROVIDER = "skillsmith"
KEY_ENV = "OPENAI_API_KEY"  # what the provider table tells codex to read its key from
BASE_URL_ENV = "OPENAI_BASE_URL"
CODEX_HOME = ".codex"  # inside the room's HOME: codex refuses to start without it


def codex_argv(
    command: tuple[str, ...], prompt: str, *, model: str | None, base_url: str | None
) -> list[str]:
    """``codex exec --json`` with the one provider every run uses, then the prompt."""
    provider = (
        f"model_providers.{PROVIDER}={{name={json.dumps(PROVIDER)}, "
        f"base_url={json.dumps(base_url or DEFAULT_BASE_URL)}, "
        f'env_key="{KEY_ENV}", wire_api="responses"}}'
    )
    argv = [*command, "exec", "--json", "--color", "never", "--skip-git-repo-check"]
    argv += ["--dangerously-bypass-approvals-and-sandbox", "--ephemeral"]
    argv += ["-c", f'model_provider="{PROVIDER}"', "-c", provider]
    if model:
        argv += ["--model", model]
    return [*argv, "--", prompt]


def parse_codex_stream(stdout: bytes, prompt: str) -> ParsedSession:
    """Convert ``codex exec --json`` events into session lines, or say why they are unusable."""
    lines: list[dict[str, Any]] = [{"type": "user", "content": prompt}]
    tokens = {"input": 0, "output": 0}
    thread: str | None = None
    turns = 0
    failure: str | None = None
    last_error = ""
    for _, event in stream_objects(stdout, "codex event line"):
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            thread = event["thread_id"]
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            lines.extend(_item_lines(event["item"]))
        elif kind == "turn.completed":
            turns += 1
            usage = event.get("usage")
            usage = usage if isinstance(usage, dict) else {}
            tokens["input"] += _count(usage.get("input_tokens"))
            tokens["output"] += _count(usage.get("output_tokens"))
        elif kind == "turn.failed":
            error = event.get("error")
            failure = _message(error.get("message") if isinstance(error, dict) else error)
        elif kind == "error":
            last_error = _message(event.get("message"))
    if failure is not None:
        raise OutputError(f"codex reported an error: {clip(failure, 160)}")
    if turns == 0:
        said = f" (last error: {clip(last_error, 160)})" if last_error else ""
        raise OutputError("codex stream ended without turn.completed" + said)
    return ParsedSession(lines=lines, tokens=tokens, agent_session_id=thread)


def _item_lines(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The session lines of one finished item; reasoning, plans and notices have none."""
    kind = item.get("type")
    if kind == "agent_message":
        return [{"type": "assistant", "content": _message(item.get("text"))}]
    call_id = str(item.get("id") or "")
    if kind == "command_execution":
        code = item.get("exit_code")
        failed = item.get("status") == "failed" or (isinstance(code, int) and code != 0)
        return _call(
            call_id,
            "exec_command",
            _message(item.get("command")),
            _message(item.get("aggregated_output")),
            failed,
        )
    if kind == "file_change":
        changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
        args = "; ".join(f"{c.get('kind')} {c.get('path')}" for c in changes)
        failed = item.get("status") == "failed"
        return _call(call_id, "apply_patch", args, _message(item.get("status")), failed)
    if kind == "mcp_tool_call":
        name = f"mcp__{item.get('server')}__{item.get('tool')}"
        arguments = json.dumps(item.get("arguments"), sort_keys=True)
        error = item.get("error")
        result = _message(error.get("message") if isinstance(error, dict) else None) or (
            json.dumps(item.get("result"))
        )
        return _call(call_id, name, arguments, result, error is not None)
    if kind == "web_search":
        return _call(call_id, "web_search", _message(item.get("query")), "", False)
    return []


def _call(call_id: str, name: str, args: str, result: str, failed: bool) -> list[dict[str, Any]]:
    return [
        {
            "type": "assistant",
            "content": "",
            "tool_calls": [{"id": call_id, "name": name, "args": args}],
        },
        {
            "type": "tool",
            "tool_name": name,
            "tool_call_id": call_id,
            "result": result,
            "is_error": failed,
        },
    ]


def _message(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0
