"""A finished session as the reviewer reads it: ordered messages, each tied to its file line.

Diagnosis (``engine.evaluation.traces``) compresses a whole run into tool calls; online review
needs the
conversation itself — who said what, in order — because a user correction is only a correction
when it answers the assistant, and an error only counts as recovered when the assistant carries
on after it. And it needs line numbers, because the review cursor hands out only the lines after
the last reviewed one.

The file may still be growing (a live Claude Code transcript, a watched folder), so only
complete lines — those ending in a newline — are read; a half-written last line waits for the
next look. The format is told apart exactly as ``engine.evaluation.traces`` does it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine.core.errors import FormatError
from engine.evaluation.traces import (
    DETECT_LINES,
    TraceFormat,
    detect_line,
    summarise_input,
    text_of,
)

Role = Literal["user", "assistant", "tool"]


class NotATranscript(FormatError):
    """The file is one of Skillsmith's own event logs (``sessions/<id>.jsonl``)."""


@dataclass(frozen=True)
class CallRef:
    """A tool call the assistant made: the tool and its one-line argument summary."""

    name: str
    args: str


@dataclass(frozen=True)
class Message:
    """One conversational message; ``line`` is the file line it came from (1-based)."""

    role: Role
    text: str
    line: int
    tool_name: str | None = None
    calls: tuple[CallRef, ...] = ()
    is_error: bool = False


@dataclass(frozen=True)
class Transcript:
    """The complete lines of a transcript file, parsed.

    ``size`` is the byte length of the complete lines (what a cursor may consume); ``lines``
    how many there are.
    """

    path: Path
    format: TraceFormat
    messages: list[Message]
    size: int
    lines: int
    data: bytes


def read_complete(path: Path) -> bytes:
    """The bytes of ``path`` up to and including its last newline."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FormatError(path, None, "session file not found") from None
    except OSError as exc:
        raise FormatError(path, None, f"cannot read ({exc.strerror or exc})") from None
    return data[: data.rfind(b"\n") + 1]


def _objects(path: Path, data: bytes) -> list[tuple[int, dict[str, Any]]]:
    found: list[tuple[int, dict[str, Any]]] = []
    for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
            raise FormatError(path, None, f"line is not valid JSON ({msg})", line=number) from None
        if not isinstance(value, dict):
            raise FormatError(path, None, "line must be a JSON object", line=number)
        found.append((number, value))
    return found


def _format(objs: list[tuple[int, dict[str, Any]]]) -> TraceFormat:
    for _number, obj in objs[:DETECT_LINES]:
        found = detect_line(obj)
        if found is not None:
            return found
    return "session"


def read_transcript(path: Path | str) -> Transcript:
    """Parse the complete lines of a session file in any of the three transcript formats."""
    path = Path(path)
    data = read_complete(path)
    objs = _objects(path, data)
    if objs and "session_kind" in objs[0][1]:
        raise NotATranscript(path, None, "a Skillsmith event log, not an agent transcript")
    fmt = _format(objs)
    messages = _session(objs, path) if fmt == "session" else _claude(objs, path)
    return Transcript(path, fmt, messages, len(data), data.count(b"\n"), data)


def _text(value: Any, path: Path, line: int, key: str) -> str:
    if value is not None and not isinstance(value, (str, list)):
        raise FormatError(path, key, "expected a string or a list of text blocks", line=line)
    return text_of(value)


def _session(objs: list[tuple[int, dict[str, Any]]], path: Path) -> list[Message]:
    messages: list[Message] = []
    for line, obj in objs:
        kind = obj.get("type")
        if kind == "user":
            messages.append(Message("user", _text(obj.get("content"), path, line, "content"), line))
        elif kind == "assistant":
            calls = obj.get("tool_calls") or []
            if not isinstance(calls, list):
                raise FormatError(path, "tool_calls", "expected a list", line=line)
            refs: list[CallRef] = []
            for position, call in enumerate(calls):
                if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                    raise FormatError(
                        path, f"tool_calls[{position}]", "expected a mapping with a name", line=line
                    )
                args = call.get("args", "")
                summary = args if isinstance(args, str) else json.dumps(args)
                refs.append(CallRef(call["name"], summary))
            text = _text(obj.get("content"), path, line, "content")
            messages.append(Message("assistant", text, line, calls=tuple(refs)))
        elif kind == "tool":
            output = obj.get("result", obj.get("content"))
            name = obj.get("tool_name")
            messages.append(
                Message(
                    "tool",
                    text_of(output),
                    line,
                    tool_name=name if isinstance(name, str) else None,
                    is_error=obj.get("is_error") is True,
                )
            )
    return messages


def _claude(objs: list[tuple[int, dict[str, Any]]], path: Path) -> list[Message]:
    """Claude Code lines: one content block per assistant line, tool results on user lines."""
    messages: list[Message] = []
    names: dict[str, str] = {}  # tool_use id → tool name, to name the result
    seen: set[tuple[str, str]] = set()  # (message id, block) already taken: lines repeat blocks
    for line, obj in objs:
        kind = obj.get("type")
        if kind not in ("user", "assistant"):
            continue
        if obj.get("isSidechain") is True or obj.get("parent_tool_use_id") or obj.get("isMeta"):
            continue
        message = obj.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks: list[Any] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        )
        if not isinstance(blocks, list):
            raise FormatError(path, "message.content", "expected a string or blocks", line=line)
        if kind == "user":
            messages.extend(_claude_user(blocks, names, line))
            continue
        message_id = str(message.get("id") or obj.get("uuid") or f"line{line}")
        texts: list[str] = []
        calls: list[CallRef] = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                mark = (message_id, "text:" + str(block["text"]))
                if mark not in seen:
                    seen.add(mark)
                    texts.append(str(block["text"]))
            elif block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                call_id = str(block.get("id") or "")
                mark = (message_id, "tool:" + call_id)
                if call_id and mark in seen:
                    continue
                seen.add(mark)
                names[call_id] = block["name"]
                summary = summarise_input(block["name"], block.get("input"))
                calls.append(CallRef(block["name"], summary))
        if texts or calls:
            messages.append(Message("assistant", "\n".join(texts), line, calls=tuple(calls)))
    return messages


def _claude_user(blocks: list[Any], names: dict[str, str], line: int) -> list[Message]:
    found: list[Message] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            call_id = str(block.get("tool_use_id") or "")
            found.append(
                Message(
                    "tool",
                    text_of(block.get("content")),
                    line,
                    tool_name=names.get(call_id),
                    is_error=block.get("is_error") is True,
                )
            )
        elif block.get("type") == "text" and block.get("text"):
            found.append(Message("user", str(block["text"]), line))
    return found
