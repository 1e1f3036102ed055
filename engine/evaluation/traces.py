"""Execution traces: read an agent's transcript and compress it into three layers.

A raw session runs to hundreds of thousands of tokens; diagnosis needs only what the agent *did*.
The outcome-driven article compresses a trace ~100:1 into (a) a tool-call skeleton (tool and a
short argument summary, results dropped), (b) stage statistics (calls per tool, errors, retries,
tokens) and (c) a progress cross-check (the skill steps the agent claims against the steps its
tool calls evidence). Rules then read the summary, never the raw text, so diagnosis stays cheap
and reproducible.

Three transcript formats are read and told apart from their first lines, so users never name
the format: the session JSONL of the article (and of our runner), the stdout of
``claude -p --output-format stream-json`` and Claude Code's on-disk transcripts
(``~/.claude/projects/**/*.jsonl``). Claude Code writes one assistant line per content block, so
lines are merged by ``message.id`` (usage counted once per message) and every ``tool_use`` is
paired with its later ``tool_result``. Unknown line types are ignored; a line that is not a JSON
object is a :class:`FormatError` naming the file and line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from engine.core.config import DiagnosisConfig
from engine.core.errors import FormatError
from engine.evaluation.grading import extract_verdict

TraceFormat = Literal["session", "claude-transcript", "claude-stream"]

# How much of a tool's output is kept: enough to classify an error, never the whole file read.
RESULT_KEEP = 400
# Lines scanned before an undecided file is taken for the plain session format.
DETECT_LINES = 50

_TRANSCRIPT_KEYS = frozenset(
    {"parentUuid", "sessionId", "isSidechain", "leafUuid", "toolUseResult"}
)
_STREAM_KEYS = frozenset({"session_id", "parent_tool_use_id", "tool_use_result"})
_TRANSCRIPT_TYPES = frozenset({"summary", "file-history-snapshot", "queue-operation"})
_STREAM_TYPES = frozenset({"stream_event"})
_SESSION_TYPES = frozenset({"user", "assistant", "tool"})
_BLOCK_TYPES = frozenset({"text", "thinking", "redacted_thinking", "tool_use", "tool_result"})

# Keys of a Claude Code tool input that say nothing about *what* was done (flags, long bodies).
_NOISY_INPUT_KEYS = frozenset(
    {
        "description",
        "output_mode",
        "head_limit",
        "timeout",
        "run_in_background",
        "content",
        "old_string",
        "new_string",
        "new_source",
        "replace_all",
        "-n",
        "-i",
        "-A",
        "-B",
        "-C",
        "multiline",
        "type",
    }
)
_ARG_VALUE_KEEP = 300


# ---------------------------------------------------------------------------------------------
# The parsed trace
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Helpers shared by the parsers and the rules
# ---------------------------------------------------------------------------------------------

_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Collapse whitespace so a command logged with other spacing still counts as the same."""
    return _WS.sub(" ", text).strip()


def _clip(text: str, keep: int) -> str:
    return text if len(text) <= keep else text[: keep - 1] + "…"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def text_of(content: Any) -> str:
    """Text of a tool_result ``content``: a string or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        ]
        return "\n".join(parts)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


def summarise_input(name: str, data: Any) -> str:
    """A one-line summary of a Claude Code tool input: what it ran or looked at, no bodies.

    ``Bash`` keeps its whole command (skill steps are evidenced by it), ``Skill`` just the skill
    name (a load is recognised by it); other tools keep the scalar values of their meaningful
    keys in the input's own order.
    """
    if not isinstance(data, dict):
        return "" if data is None else str(data)
    command = data.get("command")
    if isinstance(command, str):
        return command
    if name == "Skill" and isinstance(data.get("skill"), str):
        return str(data["skill"])
    # Numbers keep their key: a chunked read (offset=2000) is another call, not a loop.
    parts = [
        _clip(value, _ARG_VALUE_KEEP) if isinstance(value, str) else f"{key}={value}"
        for key, value in data.items()
        if key not in _NOISY_INPUT_KEYS
        and isinstance(value, (str, int, float))
        and not isinstance(value, bool)
        and value != ""
    ]
    if parts:
        return " ".join(parts)
    return _clip(json.dumps(data, ensure_ascii=False, sort_keys=True), _ARG_VALUE_KEEP)


# ---------------------------------------------------------------------------------------------
# Format detection
# ---------------------------------------------------------------------------------------------


def detect_line(obj: dict[str, Any]) -> TraceFormat | None:
    """The format one parsed line proves, or None when the line could belong to either."""
    kind = obj.get("type")
    keys = obj.keys()
    if kind == "result" and "tokens" in obj and "message" not in obj:
        return "session"  # our runner's closing line (it may carry a Claude ``subtype``)
    if not _STREAM_KEYS.isdisjoint(keys) or kind in _STREAM_TYPES:
        return "claude-stream"
    if kind == "system" and "subtype" in obj:
        return "claude-stream"
    if kind == "result" and ("subtype" in obj or "total_cost_usd" in obj):
        return "claude-stream"
    if not _TRANSCRIPT_KEYS.isdisjoint(keys) or kind in _TRANSCRIPT_TYPES:
        return "claude-transcript"
    message = obj.get("message")
    if isinstance(message, dict) and message.get("role") in ("user", "assistant"):
        content = message.get("content")
        if isinstance(content, str) or (
            isinstance(content, list)
            and all(isinstance(b, dict) and b.get("type") in _BLOCK_TYPES for b in content)
        ):
            return "claude-transcript"
    if (
        "message" not in obj
        and kind in _SESSION_TYPES
        and ("content" in obj or "tool_calls" in obj or "tool_name" in obj)
    ):
        return "session"
    return None


def _iter_objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
                raise FormatError(
                    path, None, f"line is not valid JSON ({msg})", line=number
                ) from None
            if not isinstance(value, dict):
                raise FormatError(path, None, "line must be a JSON object", line=number)
            yield number, value


def detect_format(path: Path | str) -> TraceFormat:
    """Name the transcript format from the first lines that decide it (session when none does)."""
    path = Path(path)
    for scanned, (_number, obj) in enumerate(_iter_objects(path), start=1):
        found = detect_line(obj)
        if found is not None:
            return found
        if scanned >= DETECT_LINES:
            break
    return "session"


# ---------------------------------------------------------------------------------------------
# Parsers
# ---------------------------------------------------------------------------------------------


class _Builder:
    """Accumulates calls and pairs results with them; shared by both dialects."""

    def __init__(self, trace: Trace, path: Path) -> None:
        self.trace = trace
        self.path = path
        self._open: dict[str, int] = {}  # call id → index of a call still waiting for its result
        self._pending: list[int] = []  # indices of calls without a result, in order

    def add_call(self, call_id: str | None, name: str, args: str, line: int) -> None:
        index = len(self.trace.calls)
        self.trace.calls.append(ToolCall(index, call_id, name, args, line))
        if call_id:
            self._open[call_id] = index
        self._pending.append(index)

    def add_result(
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
            result=_clip(output, RESULT_KEEP),
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


def _parse_session(objs: Iterable[tuple[int, dict[str, Any]]], b: _Builder) -> None:
    trace, path = b.trace, b.path
    for line, obj in objs:
        kind = obj.get("type")
        if kind == "user":
            content = _session_text(obj, path, line)
            if content and not trace.prompt:
                trace.prompt = content
        elif kind == "assistant":
            content = _session_text(obj, path, line)
            calls = _require(obj, "tool_calls", list, path, line, "a list") or []
            if content:
                trace.texts.append(content)
                trace.final_text = content
            for position, call in enumerate(calls):
                name, args, cid = _session_call(call, path, line, position)
                b.add_call(cid, name, args, line)
        elif kind == "tool":
            output = obj.get("result", obj.get("content"))
            b.add_result(
                _str_or_none(obj.get("tool_call_id")),
                _str_or_none(obj.get("tool_name")),
                text_of(output),
                obj.get("is_error") is True,
            )
        elif kind == "result":
            tokens = _require(obj, "tokens", dict, path, line, "a mapping") or {}
            trace.tokens = Tokens(
                input=_int(tokens.get("input")),
                output=_int(tokens.get("output")),
                cache_read=_int(tokens.get("cache_read")),
                cache_write=_int(tokens.get("cache_write")),
            )
            trace.result = _result_of(obj, obj.get("cost_usd"))


def _session_text(obj: dict[str, Any], path: Path, line: int) -> str:
    """A line's ``content``: a string, or (as some exporters write) a list of text blocks."""
    content = _require(obj, "content", (str, list), path, line, "a string")
    return text_of(content) if content is not None else ""


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _session_call(call: Any, path: Path, line: int, position: int) -> tuple[str, str, str | None]:
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
    return name, summary, _str_or_none(call.get("id"))


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


# ---------------------------------------------------------------------------------------------
# Claude Code lines → session lines (the runner converts ``claude -p`` output with this too)
# ---------------------------------------------------------------------------------------------

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
    """Claude Code's lines (stream-json or an on-disk transcript) as session lines."""

    lines: list[dict[str, Any]] = field(default_factory=list)  # assistant and tool lines
    numbers: list[int] = field(default_factory=list)  # the file line each one began at
    prompt: str = ""  # the first user text
    usage: dict[str, int] = field(default_factory=dict)  # _USAGE_KEYS, each counted once
    result: dict[str, Any] | None = None  # the closing ``result`` line as Claude wrote it
    session_id: str | None = None

    def add(self, line: dict[str, Any], number: int) -> None:
        self.lines.append(line)
        self.numbers.append(number)


def claude_session(objs: Iterable[tuple[int, dict[str, Any]]], path: Path | str) -> ClaudeSession:
    """Fold Claude Code's lines into session lines: one assistant line per API message (Claude
    Code writes a line per content block, repeating blocks and usage), and each ``tool_result``
    as a tool line named after its ``tool_use``. Usage is the result line's, else each message's
    once. Sub-agent threads and meta lines are not the agent's own steps and are left out; a
    malformed message is a FormatError naming ``path`` and the line.
    """
    session = ClaudeSession()
    by_message: dict[str, dict[str, Any]] = {}
    usage_by_message: dict[str, dict[str, Any]] = {}
    tool_names: dict[str, str] = {}
    for number, obj in objs:
        kind = obj.get("type")
        session.session_id = session.session_id or _str_or_none(obj.get("session_id"))
        if kind == "result":
            session.result = obj
            continue
        if kind not in ("user", "assistant"):
            continue
        if obj.get("isSidechain") is True or obj.get("parent_tool_use_id") or obj.get("isMeta"):
            continue
        message = _require(obj, "message", dict, path, number, "a mapping")
        if message is None:
            continue
        blocks = _claude_blocks(message, path, number)
        if kind == "user":
            _claude_user(blocks, session, tool_names, number)
            continue
        message_id = str(message.get("id") or obj.get("uuid") or f"line{number}")
        if isinstance(message.get("usage"), dict):
            usage_by_message[message_id] = message["usage"]  # repeated per line: keep one
        line = by_message.get(message_id)
        if line is None:
            line = by_message[message_id] = {"type": "assistant", "content": ""}
            session.add(line, number)
        _claude_assistant(blocks, line, tool_names, path, number)
    final = session.result.get("usage") if session.result is not None else None
    usages = [final] if isinstance(final, dict) else list(usage_by_message.values())
    session.usage = {key: sum(_int(u.get(key)) for u in usages) for key in _USAGE_KEYS}
    return session


def _claude_blocks(message: dict[str, Any], path: Path | str, line: int) -> list[dict[str, Any]]:
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


def _claude_user(
    blocks: list[dict[str, Any]], session: ClaudeSession, tool_names: dict[str, str], line: int
) -> None:
    for block in blocks:
        if block.get("type") == "tool_result":
            call_id = _str_or_none(block.get("tool_use_id")) or ""
            output = _tool_output(block.get("content"))
            tool = {
                "type": "tool",
                "tool_name": tool_names.get(call_id, "unknown"),
                "tool_call_id": call_id,
                "result": _cut(output, CLAUDE_RESULT_CHARS),
                "is_error": bool(block.get("is_error")),
            }
            session.add(tool, line)
        elif block.get("type") == "text" and not session.prompt:
            session.prompt = str(block.get("text") or "")


def _claude_assistant(
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
            call_id = _str_or_none(block.get("id")) or f"call-{len(tool_names) + 1}"
            calls: list[dict[str, Any]] = line.setdefault("tool_calls", [])
            if any(call["id"] == call_id for call in calls):
                continue
            name = block.get("name")
            if not isinstance(name, str) or not name:
                raise FormatError(path, "tool_use.name", "expected a tool name string", line=number)
            tool_names[call_id] = name
            args = _cut(summarise_input(name, block.get("input")), CLAUDE_ARGS_CHARS)
            calls.append({"id": call_id, "name": name, "args": args})


def _tool_output(content: Any) -> str:
    """A tool_result's text, with a ``[image]``-like mark for each block that is not text."""
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type', 'block')}]"
            for b in content
            if isinstance(b, dict)
        )
    if isinstance(content, str):
        return content
    return "" if content is None else str(content)


def _cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, saying how much was cut."""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


def _parse_claude(path: Path, b: _Builder) -> None:
    claude = claude_session(_iter_objects(path), path)
    _parse_session(zip(claude.numbers, claude.lines, strict=True), b)
    trace = b.trace
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


def load_trace(path: Path | str, *, source: str | None = None) -> Trace:
    """Parse one transcript file in whichever of the three formats it is."""
    path = Path(path)
    if not path.is_file():
        raise FormatError(path, None, "session file not found")
    fmt = detect_format(path)
    trace = Trace(source=source or str(path), format=fmt, size_bytes=path.stat().st_size)
    builder = _Builder(trace, path)
    if fmt == "session":
        _parse_session(_iter_objects(path), builder)
    else:
        _parse_claude(path, builder)
    return trace


# ---------------------------------------------------------------------------------------------
# Layer (b): stage statistics
# ---------------------------------------------------------------------------------------------


class BenignErrors:
    """Decides whether a failed call is a normal answer of a search tool ("0 results" …).

    Search tools report "nothing found" as an error; counting those would make every thorough
    search look like an error burst (the article's BENIGN_ERROR_PATTERNS).
    """

    _EXIT_NOISE = re.compile(r"(error:\s*)?(exit code:?\s*1|exited with code 1)\.?", re.IGNORECASE)

    def __init__(self, config: DiagnosisConfig) -> None:
        self._patterns = [re.compile(p, re.IGNORECASE) for p in config.benign_error_patterns]
        self._tools = {t.lower() for t in config.search_tools}
        self._commands = [c.lower() for c in config.search_commands]

    def _is_search(self, call: ToolCall) -> bool:
        if call.name.lower() in self._tools:
            return True
        command = normalise(call.args).lower()
        return any(command == c or command.startswith(c + " ") for c in self._commands)

    def __call__(self, call: ToolCall) -> bool:
        if not call.is_error or not self._is_search(call):
            return False
        if not self._EXIT_NOISE.sub("", call.result).strip():
            return True  # grep exit 1 with no output: nothing matched
        return any(p.search(call.result) for p in self._patterns)


@dataclass(frozen=True)
class StageStats:
    tool_calls_total: int
    tool_breakdown: dict[str, int]
    errors: int
    benign_errors: int
    retries: int
    duplicate_calls: int
    max_repeat: int
    max_repeat_call: str | None
    tokens: Tokens
    result: TraceResult | None


def stage_stats(trace: Trace, benign: BenignErrors) -> StageStats:
    """Counts per tool; a *retry* re-issues, unchanged, a call that failed before."""
    breakdown = Counter(c.name for c in trace.calls)
    seen: Counter[tuple[str, str]] = Counter()
    failed: set[tuple[str, str]] = set()
    retries = duplicates = 0
    for call in trace.calls:
        key = call.key
        if seen[key]:
            duplicates += 1
            if key in failed:
                retries += 1
        seen[key] += 1
        if call.is_error:
            failed.add(key)
    top = seen.most_common(1)
    return StageStats(
        tool_calls_total=len(trace.calls),
        tool_breakdown=dict(sorted(breakdown.items(), key=lambda kv: (-kv[1], kv[0]))),
        errors=sum(1 for c in trace.calls if c.is_error),
        benign_errors=sum(1 for c in trace.calls if benign(c)),
        retries=retries,
        duplicate_calls=duplicates,
        max_repeat=top[0][1] if top else 0,
        max_repeat_call=f"{top[0][0][0]} {_clip(top[0][0][1], 80)}".strip() if top else None,
        tokens=trace.tokens,
        result=trace.result,
    )


# ---------------------------------------------------------------------------------------------
# Layer (c): progress cross-check
# ---------------------------------------------------------------------------------------------


class StepLike(Protocol):
    """A numbered skill step (engine.core.skill.Step): its number and its text."""

    @property
    def number(self) -> int: ...

    @property
    def text(self) -> str: ...


_STEPS_DONE = re.compile(r"STEPS\s+DONE\s*:\s*([^\n]*)", re.IGNORECASE)
_STEP_MENTION = re.compile(r"(?:\bstep\s*#?\s*|步骤\s*)(\d+)", re.IGNORECASE)
_RANGE = re.compile(r"(\d+)\s*(?:-|–|—|\.\.)\s*(\d+)|(\d+)")
_BACKTICKED = re.compile(r"`([^`\n]+)`")


def claimed_steps(texts: Sequence[str]) -> list[int]:
    """Steps the agent says it did: its ``STEPS DONE:`` lines, else any "step N" it mentions."""
    explicit: set[int] = set()
    found_line = False
    for text in texts:
        for match in _STEPS_DONE.finditer(text):
            found_line = True
            for part in _RANGE.finditer(match.group(1)):
                if part.group(3):
                    explicit.add(int(part.group(3)))
                else:
                    low, high = int(part.group(1)), int(part.group(2))
                    explicit.update(range(min(low, high), max(low, high) + 1))
    if found_line:
        return sorted(explicit)
    return sorted({int(m.group(1)) for text in texts for m in _STEP_MENTION.finditer(text)})


def step_commands(text: str) -> list[str]:
    """The backticked commands of a step (normalised); their presence in args evidences it."""
    return [c for c in (normalise(m) for m in _BACKTICKED.findall(text)) if c]


def _evidences(command: str, tool: str, args: str) -> bool:
    """A call evidences a step's command when its arguments hold it, or, for a command written
    the Claude Code way as tool and argument (`` `Read task/X.java` ``), when it is a call of
    that tool whose arguments hold the rest."""
    if command in args:
        return True
    head, _, rest = command.partition(" ")
    return bool(rest) and head.casefold() == tool and rest in args


@dataclass(frozen=True)
class Progress:
    steps_known: bool
    claimed: list[int]
    evidenced: list[int]
    unverifiable: list[int]
    missing: list[int]  # claimed, checkable, but no call evidences them
    skipped: list[int]  # checkable, neither claimed nor evidenced
    evidence: dict[int, int]  # step → index of the first call that evidences it


def progress(trace: Trace, steps: Sequence[StepLike] | None) -> Progress:
    claimed = claimed_steps(trace.texts)
    if not steps:
        return Progress(False, claimed, [], [], [], [], {})
    args = [normalise(c.args) for c in trace.calls]
    names = [c.name.casefold() for c in trace.calls]
    evidence: dict[int, int] = {}
    unverifiable: list[int] = []
    for step in steps:
        commands = step_commands(step.text)
        if not commands:
            unverifiable.append(step.number)
            continue
        for index, arg in enumerate(args):
            if any(_evidences(command, names[index], arg) for command in commands):
                evidence[step.number] = index
                break
    checkable = [s.number for s in steps if s.number not in unverifiable]
    evidenced = sorted(evidence)
    return Progress(
        steps_known=True,
        claimed=claimed,
        evidenced=evidenced,
        unverifiable=unverifiable,
        missing=[n for n in claimed if n in checkable and n not in evidence],
        skipped=[n for n in checkable if n not in evidence and n not in claimed],
        evidence=evidence,
    )


# ---------------------------------------------------------------------------------------------
# The summary (all three layers) and its compact rendering
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceSummary:
    source: str
    format: TraceFormat
    raw_bytes: int
    skeleton: list[str]
    elided_calls: int
    stats: StageStats
    progress: Progress
    conclusion: str | None
    final_excerpt: str

    def _body(self) -> dict[str, Any]:
        s, p = self.stats, self.progress
        result = s.result
        return {
            "source": self.source,
            "format": self.format,
            "tool_calls_total": s.tool_calls_total,
            "tool_breakdown": s.tool_breakdown,
            "errors": s.errors,
            "benign_errors": s.benign_errors,
            "retries": s.retries,
            "duplicate_calls": s.duplicate_calls,
            "max_repeat": s.max_repeat,
            "max_repeat_call": s.max_repeat_call,
            "tokens": s.tokens.to_dict(),
            "result": None
            if result is None
            else {"is_error": result.is_error, "reason": result.reason},
            "steps_known": p.steps_known,
            "steps_claimed": p.claimed,
            "steps_evidenced": p.evidenced,
            "steps_missing": p.missing,
            "steps_skipped": p.skipped,
            "steps_unverifiable": p.unverifiable,
            "conclusion": self.conclusion,
            "final_excerpt": self.final_excerpt,
            "skeleton": self.skeleton,
            "elided_calls": self.elided_calls,
            "raw_bytes": self.raw_bytes,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary with its size and the raw:summary compression ratio."""
        body = self._body()
        size = len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
        body["summary_bytes"] = size
        body["compression_ratio"] = round(self.raw_bytes / size, 1) if size else 0.0
        return body

    @property
    def compression_ratio(self) -> float:
        return float(self.to_dict()["compression_ratio"])

    def render_text(self) -> str:
        """The compact text form handed to people and to the proposer prompt."""
        s, p = self.stats, self.progress
        tools = ", ".join(f"{k} {v}" for k, v in s.tool_breakdown.items()) or "none"
        lines = [
            f"{self.source} [{self.format}] {s.tool_calls_total} calls ({tools}); "
            f"errors {s.errors} ({s.benign_errors} benign); retries {s.retries}; "
            f"tokens {s.tokens.total}",
        ]
        if s.result is not None and s.result.is_error:
            lines.append(f"ended with error: {s.result.reason or 'unknown'}")
        if p.steps_known:
            lines.append(
                f"steps claimed {p.claimed or '-'}; evidenced {p.evidenced or '-'}; "
                f"missing {p.missing or '-'}; skipped {p.skipped or '-'}"
            )
        elif p.claimed:
            lines.append(f"steps claimed {p.claimed} (skill steps unknown)")
        lines.append(f"conclusion: {self.conclusion or '-'} | {self.final_excerpt}")
        lines.extend(f"  {entry}" for entry in self.skeleton)
        return "\n".join(lines)


def skeleton(
    calls: Sequence[ToolCall], *, width: int = 72, max_entries: int = 50
) -> tuple[list[str], int]:
    """Layer (a): one line per call, consecutive repeats folded, the middle elided past a cap.

    Returns the entries and how many calls the elision hid; a failed call is marked ``!``.
    """
    folded: list[tuple[str, int]] = []
    for call in calls:
        mark = "!" if call.is_error else ""
        entry = f"{call.name}{mark} {_clip(normalise(call.args), width)}".rstrip()
        if folded and folded[-1][0] == entry:
            folded[-1] = (entry, folded[-1][1] + 1)
        else:
            folded.append((entry, 1))
    rendered = [entry if n == 1 else f"{entry} ×{n}" for entry, n in folded]
    if len(rendered) <= max_entries:
        return rendered, 0
    head = max_entries * 3 // 5
    tail = max_entries - head
    hidden = sum(n for _, n in folded[head : len(folded) - tail])
    return [*rendered[:head], f"… {hidden} calls elided …", *rendered[-tail:]], hidden


def summarise(
    trace: Trace,
    steps: Sequence[StepLike] | None = None,
    *,
    config: DiagnosisConfig | None = None,
    answer: str | None = None,
    label_pattern: str | None = None,
    labels: Sequence[str] = (),
) -> TraceSummary:
    """Compress a trace into its three layers; ``answer`` overrides the last assistant text.

    The conclusion is read exactly as grading reads the verdict, so both always agree.
    """
    config = config or DiagnosisConfig()
    final = trace.final_text if answer is None else answer
    entries, hidden = skeleton(trace.calls)
    return TraceSummary(
        source=trace.source,
        format=trace.format,
        raw_bytes=trace.size_bytes,
        skeleton=entries,
        elided_calls=hidden,
        stats=stage_stats(trace, BenignErrors(config)),
        progress=progress(trace, steps),
        conclusion=extract_verdict(final, label_pattern or config.label_pattern, list(labels)),
        final_excerpt=_clip(normalise(final), 200),
    )
