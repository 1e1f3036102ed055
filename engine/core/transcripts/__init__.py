"""One reader per transcript format, shared by diagnosis, the runner and online review.

A transcript arrives as the session JSONL (the article's, and our runner's), as the stdout of
``claude -p --output-format stream-json`` or as a Claude Code transcript from
``~/.claude/projects/``. The floors of this package:

* ``lines`` — JSON lines, streamed or only the complete ones of a growing file;
* ``detect`` — which format a file is, from its first lines;
* ``content`` — the text of a block and the one-line summary of a tool input;
* ``claude`` — the one Claude fold: Claude Code's lines (either dialect) as session lines;
* ``session`` — the session format, read and checked into entries;
* ``trace`` — the tool-call view diagnosis reads (``load_trace``);
* ``conversation`` — the message view online review reads (``read_transcript``).

What is made of a trace — stage statistics, the progress cross-check, the summary — is
``engine.evaluation.traces``'s business, apart from parsing.
"""

from engine.core.transcripts.claude import ClaudeSession, claude_session
from engine.core.transcripts.content import normalise, summarise_input, text_of
from engine.core.transcripts.conversation import (
    Message,
    NotATranscript,
    Transcript,
    read_transcript,
)
from engine.core.transcripts.detect import DETECT_LINES, TraceFormat, detect_format, detect_line
from engine.core.transcripts.session import Call, Entry, entries
from engine.core.transcripts.trace import (
    RESULT_KEEP,
    Tokens,
    ToolCall,
    Trace,
    TraceResult,
    load_trace,
)

__all__ = [
    "DETECT_LINES",
    "RESULT_KEEP",
    "Call",
    "ClaudeSession",
    "Entry",
    "Message",
    "NotATranscript",
    "Tokens",
    "ToolCall",
    "Trace",
    "TraceFormat",
    "TraceResult",
    "Transcript",
    "claude_session",
    "detect_format",
    "detect_line",
    "entries",
    "load_trace",
    "normalise",
    "read_transcript",
    "summarise_input",
    "text_of",
]
