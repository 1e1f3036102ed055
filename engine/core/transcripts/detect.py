"""Which transcript format a file is, told from its first lines so that users never name it.

Three formats: the session JSONL of the article (and of our runner), the stdout of
``claude -p --output-format stream-json`` and Claude Code's on-disk transcripts
(``~/.claude/projects/**/*.jsonl``). A line proves a format by its keys and types; the first line
that proves one decides, and a file none of whose first :data:`DETECT_LINES` lines does is taken
for the plain session format.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from engine.core.transcripts.lines import Numbered, iter_objects

TraceFormat = Literal["session", "claude-transcript", "claude-stream"]

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


def format_of(objs: Iterable[Numbered]) -> TraceFormat:
    """The format the first deciding line of ``objs`` proves (session when none does)."""
    for scanned, (_number, obj) in enumerate(objs, start=1):
        found = detect_line(obj)
        if found is not None:
            return found
        if scanned >= DETECT_LINES:
            break
    return "session"


def detect_format(path: Path | str) -> TraceFormat:
    """Name the transcript format of the file at ``path``."""
    return format_of(iter_objects(Path(path)))
