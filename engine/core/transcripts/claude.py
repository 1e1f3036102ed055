"""The one Claude fold: Claude Code's lines (stream-json or on-disk JSONL) as session lines.

Claude Code writes one assistant line per content block, repeating the message's other blocks and
its usage, and puts each tool's result on a later user line. Diagnosis, the runner (which
converts ``claude -p`` output into the session files of a run) and online review all read
Claude through this fold, so a tool call, a result or a user's words are the same to each of
them: one assistant line per API message, each ``tool_result`` a tool line named after its
``tool_use``, each user text a user line. Sub-agent threads and meta lines are not the agent's
own steps and are left out; a malformed message is a FormatError naming the file and the line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.errors import FormatError
from engine.core.transcripts.content import (
    cut,
    int_of,
    str_or_none,
    summarise_input,
    tool_output,
)
from engine.core.transcripts.lines import Numbered

# What a session line keeps of a Claude Code tool call's argument summary and of a tool's output.
CLAUDE_ARGS_CHARS = 2000
CLAUDE_RESULT_CHARS = 4000
_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


@dataclass
class ClaudeSession:
    """Claude Code's lines as session lines (``user``, ``assistant`` and ``tool``).

    ``numbers`` holds the file line each session line began at, ``ends`` the last file line that
    added to it (an assistant message spans several), so a reader that goes by lines knows when a
    message is complete.
    """

    lines: list[dict[str, Any]] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    prompt: str = ""  # the first user text
    usage: dict[str, int] = field(default_factory=dict)  # _USAGE_KEYS, each counted once
    result: dict[str, Any] | None = None  # the closing ``result`` line as Claude wrote it
    session_id: str | None = None

    def add(self, line: dict[str, Any], number: int) -> None:
        self.lines.append(line)
        self.numbers.append(number)
        self.ends.append(number)


def claude_session(objs: Iterable[Numbered], path: Path | str) -> ClaudeSession:
    """Fold Claude Code's lines into session lines (see the module docstring). Usage is the
    result line's, else each message's once."""
    session = ClaudeSession()
    by_message: dict[str, int] = {}  # message id → index of its session line
    usage_by_message: dict[str, dict[str, Any]] = {}
    tool_names: dict[str, str] = {}
    for number, obj in objs:
        kind = obj.get("type")
        session.session_id = session.session_id or str_or_none(obj.get("session_id"))
        if kind == "result":
            session.result = obj
            continue
        if kind not in ("user", "assistant"):
            continue
        if obj.get("isSidechain") is True or obj.get("parent_tool_use_id") or obj.get("isMeta"):
            continue
        message = obj.get("message")
        if message is not None and not isinstance(message, dict):
            raise FormatError(
                path, "message", f"expected a mapping, got {type(message).__name__}", line=number
            )
        if message is None:
            continue
        blocks = _blocks(message, path, number)
        if kind == "user":
            _user(blocks, session, tool_names, number)
            continue
        message_id = str(message.get("id") or obj.get("uuid") or f"line{number}")
        if isinstance(message.get("usage"), dict):
            usage_by_message[message_id] = message["usage"]  # repeated per line: keep one
        index = by_message.get(message_id)
        if index is None:
            index = by_message[message_id] = len(session.lines)
            session.add({"type": "assistant", "content": ""}, number)
        session.ends[index] = number
        _assistant(blocks, session.lines[index], tool_names, path, number)
    final = session.result.get("usage") if session.result is not None else None
    usages = [final] if isinstance(final, dict) else list(usage_by_message.values())
    session.usage = {key: sum(int_of(u.get(key)) for u in usages) for key in _USAGE_KEYS}
    return session


def _blocks(message: dict[str, Any], path: Path | str, line: int) -> list[dict[str, Any]]:
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise FormatError(
            path, "message.content", "expected a string or a list of blocks", line=line
        )
    blocks: list[Any] = (
        [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
    )
    for position, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise FormatError(
                path, f"message.content[{position}]", "expected a content block", line=line
            )
    return blocks


def _user(
    blocks: list[dict[str, Any]], session: ClaudeSession, tool_names: dict[str, str], line: int
) -> None:
    for block in blocks:
        if block.get("type") == "tool_result":
            call_id = str_or_none(block.get("tool_use_id")) or ""
            output = tool_output(block.get("content"))
            tool = {
                "type": "tool",
                "tool_name": tool_names.get(call_id, "unknown"),
                "tool_call_id": call_id,
                "result": cut(output, CLAUDE_RESULT_CHARS),
                "is_error": bool(block.get("is_error")),
            }
            session.add(tool, line)
        elif block.get("type") == "text" and block.get("text"):
            text = str(block["text"])
            session.prompt = session.prompt or text
            session.add({"type": "user", "content": text}, line)


def _assistant(
    blocks: list[dict[str, Any]],
    line: dict[str, Any],
    tool_names: dict[str, str],
    path: Path | str,
    number: int,
) -> None:
    """Fold one stream line's blocks into the session line of its API message."""
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text = block["text"]
            if text and not line["content"].endswith(text):
                line["content"] = f"{line['content']}\n{text}" if line["content"] else text
        elif kind == "tool_use":
            call_id = str_or_none(block.get("id")) or f"call-{len(tool_names) + 1}"
            calls: list[dict[str, Any]] = line.setdefault("tool_calls", [])
            if any(call["id"] == call_id for call in calls):
                continue
            name = block.get("name")
            if not isinstance(name, str) or not name:
                raise FormatError(path, "tool_use.name", "expected a tool name string", line=number)
            tool_names[call_id] = name
            args = cut(summarise_input(name, block.get("input")), CLAUDE_ARGS_CHARS)
            calls.append({"id": call_id, "name": name, "args": args})
