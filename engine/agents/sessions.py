"""Turning what an agent printed into session lines (the brief's session format).

Two dialects arrive here: agents that already print session JSONL (the demo agent and ``command``
agents) and ``claude -p --output-format stream-json``. The second is converted: one API response
arrives as several ``assistant`` lines sharing a ``message.id`` (merged, usage counted once),
tool results come back as ``user`` lines (paired with their ``tool_use`` by id), unknown line
types are ignored, and usage and cost come from the final ``result`` line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

RESULT_CHARS = 4000
ARGS_CHARS = 2000
# The argument that best names what a Claude Code tool call did; diagnosis matches skill-step
# commands against it, so Bash must be the exact command string and Skill the skill name.
_CLAUDE_ARG_KEYS = {
    "Bash": "command",
    "Skill": "skill",
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "Glob": "pattern",
    "Grep": "pattern",
}
# Result subtypes that mean the harness or the API failed, not the agent's reasoning; max-turns
# and budget limits are the agent's own failure and stay valid units (budget_exhaustion).
_AGENT_LIMIT_SUBTYPES = {"error_max_turns", "error_max_budget_usd"}


class OutputError(Exception):
    """The agent's output is unusable; the message is the invalid unit's reason."""


@dataclass
class ParsedSession:
    lines: list[dict[str, Any]]
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})
    cost_usd: float | None = None
    agent_session_id: str | None = None


def parse_session_jsonl(stdout: bytes) -> ParsedSession:
    """Session lines printed by a demo/command agent; any non-JSON-object line is garbage."""
    lines: list[dict[str, Any]] = []
    for number, raw in enumerate(_text_lines(stdout), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            raise OutputError(
                f"garbage output: stdout line {number} is not JSON: {_clip(raw, 60)!r}"
            ) from None
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            raise OutputError(
                f"garbage output: stdout line {number} is not a session line (no 'type')"
            )
        lines.append(value)
    parsed = ParsedSession(lines=lines)
    for line in lines:
        if line["type"] == "result":
            parsed.tokens = _tokens(line.get("tokens"))
            cost = line.get("cost_usd")
            parsed.cost_usd = float(cost) if isinstance(cost, (int, float)) else None
    return parsed


def _tokens(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        return {"input": 0, "output": 0}
    return {"input": _int(value.get("input")), "output": _int(value.get("output"))}


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _text_lines(data: bytes) -> list[str]:
    return data.decode("utf-8", errors="replace").splitlines()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


def parse_claude_stream(stdout: bytes, prompt: str) -> ParsedSession:
    """Convert ``claude -p`` stream-json into session lines, or say why it is unusable."""
    lines: list[dict[str, Any]] = [{"type": "user", "content": prompt}]
    by_message: dict[str, dict[str, Any]] = {}
    usage_by_message: dict[str, dict[str, Any]] = {}
    tool_names: dict[str, str] = {}
    result: dict[str, Any] | None = None
    session_id: str | None = None
    for number, raw in enumerate(_text_lines(stdout), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            raise OutputError(f"garbage output: claude stream line {number} is not JSON") from None
        if not isinstance(obj, dict):
            raise OutputError(f"garbage output: claude stream line {number} is not an object")
        kind = obj.get("type")
        session_id = session_id or _str(obj.get("session_id"))
        message = obj.get("message")
        if kind == "assistant" and isinstance(message, dict):
            _merge_assistant(message, lines, by_message, usage_by_message, tool_names)
        elif kind == "user" and isinstance(message, dict):
            _append_tool_results(message, lines, tool_names)
        elif kind == "result":
            result = obj
    if result is None:
        raise OutputError("claude stream ended without a result line")
    subtype = _str(result.get("subtype")) or "unknown"
    if result.get("is_error") and subtype not in _AGENT_LIMIT_SUBTYPES:
        status = result.get("api_error_status")
        detail = _str(result.get("result")) or "; ".join(map(str, result.get("errors") or []))
        where = f"API status {status}" if status else subtype
        raise OutputError(f"claude reported an error ({where}): {_clip(detail, 160)}")
    final = _str(result.get("result"))
    last = lines[-1]
    if final and not (last["type"] == "assistant" and "tool_calls" not in last):
        lines.append({"type": "assistant", "content": final})
    parsed = ParsedSession(lines=lines, agent_session_id=session_id)
    usage = result.get("usage")
    if not isinstance(usage, dict):
        usage = _sum_usage(usage_by_message.values())
    parsed.tokens = {
        "input": _int(usage.get("input_tokens"))
        + _int(usage.get("cache_creation_input_tokens"))
        + _int(usage.get("cache_read_input_tokens")),
        "output": _int(usage.get("output_tokens")),
    }
    cost = result.get("total_cost_usd")
    parsed.cost_usd = float(cost) if isinstance(cost, (int, float)) else None
    lines.append(
        {
            "type": "result",
            "tokens": parsed.tokens,
            "cost_usd": parsed.cost_usd,
            "duration_ms": _int(result.get("duration_ms")),
            "is_error": bool(result.get("is_error")),
            "subtype": subtype,
            "num_turns": _int(result.get("num_turns")),
        }
    )
    return parsed


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _merge_assistant(
    message: dict[str, Any],
    lines: list[dict[str, Any]],
    by_message: dict[str, dict[str, Any]],
    usage_by_message: dict[str, dict[str, Any]],
    tool_names: dict[str, str],
) -> None:
    """Fold one assistant stream line into the session line of its API message."""
    message_id = _str(message.get("id")) or f"anonymous-{len(lines)}"
    line = by_message.get(message_id)
    if line is None:
        line = {"type": "assistant", "content": ""}
        by_message[message_id] = line
        lines.append(line)
    if isinstance(message.get("usage"), dict):
        usage_by_message[message_id] = message["usage"]  # repeated per line: keep one, never sum
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            text = block["text"]
            if text and not line["content"].endswith(text):
                line["content"] = f"{line['content']}\n{text}" if line["content"] else text
        elif block.get("type") == "tool_use":
            call_id = _str(block.get("id")) or f"call-{len(tool_names) + 1}"
            calls: list[dict[str, Any]] = line.setdefault("tool_calls", [])
            if any(call["id"] == call_id for call in calls):
                continue
            name = _str(block.get("name")) or "unknown"
            tool_names[call_id] = name
            calls.append({"id": call_id, "name": name, "args": _args(name, block.get("input"))})


def _args(name: str, tool_input: Any) -> str:
    if not isinstance(tool_input, dict):
        return _clip(str(tool_input), ARGS_CHARS)
    key = _CLAUDE_ARG_KEYS.get(name)
    if key and isinstance(tool_input.get(key), str):
        text = tool_input[key]
        if name == "Grep" and isinstance(tool_input.get("path"), str):
            text = f"{text} {tool_input['path']}"
        return _clip(text, ARGS_CHARS)
    return _clip(json.dumps(tool_input, sort_keys=True, ensure_ascii=False), ARGS_CHARS)


def _append_tool_results(
    message: dict[str, Any], lines: list[dict[str, Any]], tool_names: dict[str, str]
) -> None:
    content = message.get("content")
    if not isinstance(content, list):
        return  # a plain user message (e.g. an expanded skill body), not a tool result
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        call_id = _str(block.get("tool_use_id")) or ""
        lines.append(
            {
                "type": "tool",
                "tool_name": tool_names.get(call_id, "unknown"),
                "tool_call_id": call_id,
                "result": _clip(_result_text(block.get("content")), RESULT_CHARS),
                "is_error": bool(block.get("is_error")),
            }
        )


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
        return "\n".join(parts)
    return "" if content is None else str(content)


def _sum_usage(usages: Any) -> dict[str, int]:
    total: dict[str, int] = {}
    for usage in usages:
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            total[key] = total.get(key, 0) + _int(usage.get(key))
        total["output_tokens"] = total.get("output_tokens", 0) + _int(usage.get("output_tokens"))
    return total


def claude_retry_note(stdout: bytes) -> str | None:
    """What ``claude`` was still retrying when it ran out of time (its last ``api_retry`` line).

    A wrong key or a dead endpoint shows up as a timeout; naming the API error saves a guess.
    """
    note = None
    for raw in _text_lines(stdout):
        if '"api_retry"' not in raw:
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and obj.get("subtype") == "api_retry":
            note = (
                f"claude was retrying API status {obj.get('error_status')} "
                f"{obj.get('error') or ''}".rstrip()
                + f", attempt {obj.get('attempt')}/{obj.get('max_retries')}"
            )
    return note
