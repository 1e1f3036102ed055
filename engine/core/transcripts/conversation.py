"""A finished session as online review reads it: ordered messages, each tied to its file line.

Diagnosis compresses a run into tool calls (:mod:`engine.core.transcripts.trace`); online review
needs the conversation itself — who said what, in order — because a user correction is only a
correction when it answers the assistant, and an error only counts as recovered when the
assistant carries on after it. And it needs line numbers, because the review cursor hands out
only the lines after the last reviewed one.

The file may still be growing (a live Claude Code transcript, a watched folder), so only complete
lines — those ending in a newline — are read; a half-written last line waits for the next look.
An assistant message Claude Code wrote over several lines counts at its last line, so one still
being written is offered again, whole, with the segment that completes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.core.errors import FormatError
from engine.core.transcripts.claude import claude_session
from engine.core.transcripts.detect import TraceFormat, format_of
from engine.core.transcripts.lines import objects_of, read_complete
from engine.core.transcripts.session import Call, Entry, entries

Role = Literal["user", "assistant", "tool"]


class NotATranscript(FormatError):
    """The file is one of Skillsmith's own event logs (``sessions/<id>.jsonl``)."""


@dataclass(frozen=True)
class Message:
    """One conversational message; ``line`` is the file line it came from (1-based)."""

    role: Role
    text: str
    line: int
    tool_name: str | None = None
    calls: tuple[Call, ...] = ()
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


def read_transcript(path: Path | str) -> Transcript:
    """Parse the complete lines of a session file in any of the three transcript formats."""
    path = Path(path)
    data = read_complete(path)
    objs = objects_of(path, data)
    if objs and "session_kind" in objs[0][1]:
        raise NotATranscript(path, None, "a Skillsmith event log, not an agent transcript")
    fmt = format_of(objs)
    if fmt != "session":
        claude = claude_session(objs, path)
        objs = list(zip(claude.ends, claude.lines, strict=True))
    messages = [m for m in map(_message, entries(objs, path)) if m is not None]
    messages.sort(key=lambda m: m.line)  # stable: a message that ended later comes later
    return Transcript(path, fmt, messages, len(data), data.count(b"\n"), data)


def _message(entry: Entry) -> Message | None:
    """The message of a session line; None for the closing result and an empty assistant line."""
    if entry.kind == "tool":
        return Message("tool", entry.text, entry.line, entry.tool_name, is_error=entry.is_error)
    if entry.kind == "user":
        return Message("user", entry.text, entry.line)
    if entry.kind == "assistant" and (entry.text or entry.calls):
        return Message("assistant", entry.text, entry.line, calls=entry.calls)
    return None
