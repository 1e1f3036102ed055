"""A transcript as diagnosis reads it: the tool calls with their results, the texts, the tokens.

Any of the three formats (:mod:`engine.core.transcripts.detect`) is read into one
:class:`Trace`: Claude's lines through the one fold (:mod:`engine.core.transcripts.claude`), then
every session line through the one session reader (:mod:`engine.core.transcripts.session`). Each
tool call is paired with its later result — by call id, or, for exports without ids, with the
oldest call of that tool still waiting. What is made of a trace (stage statistics, the progress
cross-check, the summary) lives in ``engine.evaluation.traces``, apart from parsing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.errors import FormatError
from engine.core.transcripts.claude import claude_session
from engine.core.transcripts.content import clip, int_of, normalise
from engine.core.transcripts.detect import TraceFormat, detect_format
from engine.core.transcripts.lines import iter_objects
from engine.core.transcripts.session import Entry, entries

# How much of a tool's output is kept: enough to classify an error, never the whole file read.
RESULT_KEEP = 400


@dataclass(frozen=True)
class ToolCall:
    """One tool invocation; ``args`` is the argument summary that step evidence is matched in."""

    index: int
    call_id: str | None
    name: str
    args: str
    line: int
    result: str = ""
    is_error: bool = False
    has_result: bool = False

    @property
    def key(self) -> tuple[str, str]:
        """Identity of a call for repeat detection: the tool and its whitespace-normalised args."""
        return (self.name, normalise(self.args))


@dataclass
class Tokens:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def to_dict(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "total": self.total,
        }


@dataclass(frozen=True)
class TraceResult:
    """The closing ``result`` line: how the run ended (max turns, budget, API error …)."""

    is_error: bool
    reason: str | None
    cost_usd: float | None
    duration_ms: int | None


@dataclass
class Trace:
    source: str
    format: TraceFormat
    size_bytes: int
    prompt: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    final_text: str = ""
    tokens: Tokens = field(default_factory=Tokens)
    result: TraceResult | None = None


class _Builder:
    """Accumulates calls and pairs results with them."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._open: dict[str, int] = {}  # call id → index of a call still waiting for its result
        self._pending: list[int] = []  # indices of calls without a result, in order

    def add(self, entry: Entry) -> None:
        trace = self.trace
        if entry.kind == "user":
            if entry.text and not trace.prompt:
                trace.prompt = entry.text
        elif entry.kind == "assistant":
            if entry.text:
                trace.texts.append(entry.text)
                trace.final_text = entry.text
            for call in entry.calls:
                self._add_call(call.call_id, call.name, call.args, entry.line)
        elif entry.kind == "tool":
            self._add_result(entry.call_id, entry.tool_name, entry.text, entry.is_error)
        else:
            tokens = entry.raw.get("tokens") or {}
            trace.tokens = Tokens(
                input=int_of(tokens.get("input")),
                output=int_of(tokens.get("output")),
                cache_read=int_of(tokens.get("cache_read")),
                cache_write=int_of(tokens.get("cache_write")),
            )
            trace.result = _result_of(entry.raw, entry.raw.get("cost_usd"))

    def _add_call(self, call_id: str | None, name: str, args: str, line: int) -> None:
        index = len(self.trace.calls)
        self.trace.calls.append(ToolCall(index, call_id, name, args, line))
        if call_id:
            self._open[call_id] = index
        self._pending.append(index)

    def _add_result(
        self, call_id: str | None, name: str | None, output: str, is_error: bool
    ) -> None:
        index = self._match(call_id, name)
        if index is None:
            return
        old = self.trace.calls[index]
        self.trace.calls[index] = ToolCall(
            old.index,
            old.call_id,
            old.name,
            old.args,
            old.line,
            result=clip(output, RESULT_KEEP),
            is_error=is_error,
            has_result=True,
        )

    def _match(self, call_id: str | None, name: str | None) -> int | None:
        index: int | None = None
        if call_id and call_id in self._open:
            index = self._open.pop(call_id)
        elif not call_id:
            # The article's export has no ids: pair with the oldest waiting call of that tool.
            candidates = [
                i for i in self._pending if name is None or self.trace.calls[i].name == name
            ]
            index = candidates[0] if candidates else (self._pending[0] if self._pending else None)
            if index is not None:
                cid = self.trace.calls[index].call_id
                if cid:
                    self._open.pop(cid, None)
        if index is not None and index in self._pending:
            self._pending.remove(index)
        return index


def _result_of(obj: dict[str, Any], cost: Any) -> TraceResult:
    reason = obj.get("reason") or obj.get("error")
    subtype = obj.get("subtype")
    if isinstance(subtype, str) and subtype != "success":
        reason = subtype
    elif isinstance(obj.get("terminal_reason"), str) and obj.get("is_error") is True:
        reason = reason or obj["terminal_reason"]
    duration = obj.get("duration_ms")
    return TraceResult(
        is_error=obj.get("is_error") is True,
        reason=str(reason) if reason else None,
        cost_usd=float(cost) if isinstance(cost, (int, float)) else None,
        duration_ms=duration if isinstance(duration, int) else None,
    )


def _fill(builder: _Builder, objs: Iterable[tuple[int, dict[str, Any]]], path: Path) -> None:
    for entry in entries(objs, path):
        builder.add(entry)


def load_trace(path: Path | str, *, source: str | None = None) -> Trace:
    """Parse one transcript file in whichever of the three formats it is."""
    path = Path(path)
    if not path.is_file():
        raise FormatError(path, None, "session file not found")
    fmt = detect_format(path)
    trace = Trace(source=source or str(path), format=fmt, size_bytes=path.stat().st_size)
    builder = _Builder(trace)
    if fmt == "session":
        _fill(builder, iter_objects(path), path)
        return trace
    claude = claude_session(iter_objects(path), path)
    _fill(builder, zip(claude.numbers, claude.lines, strict=True), path)
    trace.prompt = claude.prompt
    usage = claude.usage
    trace.tokens = Tokens(
        input=usage["input_tokens"],
        output=usage["output_tokens"],
        cache_read=usage["cache_read_input_tokens"],
        cache_write=usage["cache_creation_input_tokens"],
    )
    result = claude.result
    if result is not None:
        trace.result = _result_of(result, result.get("total_cost_usd", result.get("cost_usd")))
        if isinstance(result.get("result"), str) and result["result"]:
            trace.final_text = result["result"]
    return trace


def session_trace(lines: Iterable[dict[str, Any]], *, source: str) -> Trace:
    """The trace of session lines held in memory (a unit's, before its file is written)."""
    objs = list(enumerate(lines, start=1))
    trace = Trace(source=source, format="session", size_bytes=0)
    _fill(_Builder(trace), objs, Path(source))
    return trace
