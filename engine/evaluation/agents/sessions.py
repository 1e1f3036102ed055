"""Turning what an agent printed into session lines (the brief's session format).

Two dialects arrive here: agents that already print session JSONL (the demo agent and ``command``
agents) and ``claude -p --output-format stream-json``. The second is converted by the one Claude
fold, :func:`engine.core.transcripts.claude_session` (assistant lines merged by ``message.id``,
tool results paired with their ``tool_use``); here the runner adds the prompt, the final answer
and the closing ``result`` line, and refuses a stream that is garbage or reports an API failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.core.errors import FormatError
from engine.core.strict_json import Refused, load_line
from engine.core.transcripts import claude_session

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
    for number, raw in enumerate(text_lines(stdout), start=1):
        if not raw.strip():
            continue
        try:
            value = load_line(raw)
        except Refused as exc:
            raise OutputError(
                f"garbage output: stdout line {number} {exc}: {clip(raw, 60)!r}"
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


def text_lines(data: bytes) -> list[str]:
    return data.decode("utf-8", errors="replace").splitlines()


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


def stream_objects(stdout: bytes, what: str) -> list[tuple[int, dict[str, Any]]]:
    """The JSON objects of a CLI's JSONL stdout with their line numbers; any other non-empty
    line is garbage, named by ``what`` ("claude stream line") and its number."""
    objs: list[tuple[int, dict[str, Any]]] = []
    for number, raw in enumerate(text_lines(stdout), start=1):
        if not raw.strip():
            continue
        try:
            obj = load_line(raw)
        except Refused as exc:
            raise OutputError(f"garbage output: {what} {number} {exc}") from None
        if not isinstance(obj, dict):
            raise OutputError(f"garbage output: {what} {number} is not an object")
        objs.append((number, obj))
    return objs


def parse_claude_stream(stdout: bytes, prompt: str) -> ParsedSession:
    """Convert ``claude -p`` stream-json into session lines, or say why it is unusable."""
    objs = stream_objects(stdout, "claude stream line")
    try:
        claude = claude_session(objs, "claude stream")
    except FormatError as exc:
        raise OutputError(f"garbage output: {exc}") from None
    result = claude.result
    if result is None:
        raise OutputError("claude stream ended without a result line")
    subtype = _str(result.get("subtype")) or "unknown"
    if result.get("is_error") and subtype not in _AGENT_LIMIT_SUBTYPES:
        status = result.get("api_error_status")
        detail = _str(result.get("result")) or "; ".join(map(str, result.get("errors") or []))
        where = f"API status {status}" if status else subtype
        raise OutputError(f"claude reported an error ({where}): {clip(detail, 160)}")
    # The session opens with the prompt the runner gave; a user text the stream echoes is that.
    said = [line for line in claude.lines if line["type"] != "user"]
    lines: list[dict[str, Any]] = [{"type": "user", "content": prompt}, *said]
    final = _str(result.get("result"))
    last = lines[-1]
    if final and not (last["type"] == "assistant" and "tool_calls" not in last):
        lines.append({"type": "assistant", "content": final})
    parsed = ParsedSession(lines=lines, agent_session_id=claude.session_id)
    usage = claude.usage
    parsed.tokens = {
        "input": usage["input_tokens"]
        + usage["cache_creation_input_tokens"]
        + usage["cache_read_input_tokens"],
        "output": usage["output_tokens"],
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


def claude_retry_note(stdout: bytes) -> str | None:
    """What ``claude`` was still retrying when it ran out of time (its last ``api_retry`` line).

    A wrong key or a dead endpoint shows up as a timeout; naming the API error saves a guess.
    """
    note = None
    for raw in text_lines(stdout):
        if '"api_retry"' not in raw:
            continue
        try:
            obj = load_line(raw)
        except Refused:
            continue
        if isinstance(obj, dict) and obj.get("subtype") == "api_retry":
            note = (
                f"claude was retrying API status {obj.get('error_status')} "
                f"{obj.get('error') or ''}".rstrip()
                + f", attempt {obj.get('attempt')}/{obj.get('max_retries')}"
            )
    return note
