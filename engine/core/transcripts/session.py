"""The session format — the brief's transcript JSONL, and what every other format is folded into.

One line per event: ``user`` (``content``), ``assistant`` (``content`` and ``tool_calls``),
``tool`` (``tool_name``, ``tool_call_id``, ``result`` or ``content``, ``is_error``) and a closing
``result`` (``tokens``, ``cost_usd``, how the run ended). Exporters differ in details this reader
accepts: content as a list of text blocks, OpenAI-style calls (``{"function": {"name",
"arguments"}}``), a call's input as ``args`` or ``input``, no call ids at all. Each line is read
into an :class:`Entry` and checked here once, so diagnosis and online review refuse the same
lines with the same one-line error naming the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.core.errors import FormatError
from engine.core.transcripts.content import str_or_none, summarise_input, text_of
from engine.core.transcripts.lines import Numbered

Kind = Literal["user", "assistant", "tool", "result"]


@dataclass(frozen=True)
class Call:
    """A tool call as the assistant line lists it; ``args`` is its one-line summary."""

    call_id: str | None
    name: str
    args: str


@dataclass(frozen=True)
class Entry:
    """One checked session line; ``line`` is the file line it came from (1-based)."""

    kind: Kind
    line: int
    text: str = ""  # what the user or assistant said; a tool's output
    calls: tuple[Call, ...] = ()
    tool_name: str | None = None
    call_id: str | None = None
    is_error: bool = False
    raw: dict[str, Any] = field(default_factory=dict, compare=False)  # the line as written


def entries(objs: Iterable[Numbered], path: Path | str) -> Iterator[Entry]:
    """The session lines of ``objs`` as entries; lines of other types are skipped."""
    for line, obj in objs:
        kind = obj.get("type")
        if kind == "user":
            yield Entry("user", line, _content(obj, path, line), raw=obj)
        elif kind == "assistant":
            calls = _require(obj, "tool_calls", list, path, line, "a list") or []
            parsed = tuple(_call(call, path, line, n) for n, call in enumerate(calls))
            yield Entry("assistant", line, _content(obj, path, line), parsed, raw=obj)
        elif kind == "tool":
            yield Entry(
                "tool",
                line,
                text_of(obj.get("result", obj.get("content"))),
                tool_name=str_or_none(obj.get("tool_name")),
                call_id=str_or_none(obj.get("tool_call_id")),
                is_error=obj.get("is_error") is True,
                raw=obj,
            )
        elif kind == "result":
            _require(obj, "tokens", dict, path, line, "a mapping")
            yield Entry("result", line, raw=obj)


def _require(
    obj: dict[str, Any],
    key: str,
    kinds: type | tuple[type, ...],
    path: Path | str,
    line: int,
    what: str,
) -> Any:
    value = obj.get(key)
    if value is not None and not isinstance(value, kinds):
        raise FormatError(path, key, f"expected {what}, got {type(value).__name__}", line=line)
    return value


def _content(obj: dict[str, Any], path: Path | str, line: int) -> str:
    """A line's ``content``: a string, or (as some exporters write) a list of text blocks."""
    content = _require(obj, "content", (str, list), path, line, "a string")
    return text_of(content) if content is not None else ""


def _call(call: Any, path: Path | str, line: int, position: int) -> Call:
    where = f"tool_calls[{position}]"
    if not isinstance(call, dict):
        raise FormatError(path, where, "expected a mapping with name and args", line=line)
    function = call.get("function")
    if isinstance(function, dict):  # OpenAI style {"function": {"name", "arguments"}}
        name, args = function.get("name"), function.get("arguments", "")
    else:
        name, args = call.get("name"), call.get("args", call.get("input", ""))
    if not isinstance(name, str) or not name:
        raise FormatError(path, f"{where}.name", "expected a tool name string", line=line)
    summary = args if isinstance(args, str) else summarise_input(name, args)
    return Call(str_or_none(call.get("id")), name, summary)
