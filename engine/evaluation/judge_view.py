"""What an ``llm_judge`` check shows the judge: the task, the run's steps, its outputs, its answer.

An agent that *claims* it wrote ``report.pdf`` must not pass on the claim, so the judge sees
what the agent did (the transcript's tool calls and errors, summarised) and what it left (each
kept output: text inline, a binary named with its size and type, a link as a link, never
followed) beside the answer. A case limits that with ``judge_sees`` in its rubric (a judge of
tone needs no transcript; a case whose files hold something private shows only the answer).

The answer block comes last: the offline judge (engine.evaluation.judge) reads it to the last
``</answer>``, so nothing an output file holds can end it early.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.core.benchmark import Case, Check
from engine.core.errors import FormatError
from engine.core.outputs import Outputs
from engine.core.transcripts.content import clip, normalise
from engine.core.transcripts.trace import session_trace
from engine.evaluation.traces.summary import skeleton

MAX_CALLS = 40  # skeleton lines (repeats folded, the middle elided)
MAX_ERRORS = 10
FILE_CHARS = 20_000  # per output shown inline
OUTPUT_CHARS = 60_000  # all outputs together


def transcript_summary(session: Sequence[dict[str, Any]]) -> str:
    """The run in a few lines: each tool call (failed ones marked ``!``), then the errors."""
    try:
        trace = session_trace(session, source="session")
    except FormatError as exc:
        return f"(the transcript could not be read: {exc})"
    failed = [c for c in trace.calls if c.is_error]
    lines = [f"{len(trace.calls)} tool calls, {len(failed)} failed"]
    entries, _ = skeleton(trace.calls, max_entries=MAX_CALLS)
    lines += [f"  {entry}" for entry in entries]
    for call in failed[:MAX_ERRORS]:
        lines.append(
            f"error: {call.name} {clip(normalise(call.args), 80)} -> {clip(call.result, 200)}"
        )
    if trace.result is not None and trace.result.is_error:
        lines.append(f"the run ended with an error: {trace.result.reason or 'unknown'}")
    return "\n".join(lines)


def outputs_listing(outputs: Outputs) -> str:
    """Every kept output: text inline (cut), the rest named by size and type."""
    if not outputs.entries:
        return "(the agent left no output files)"
    parts: list[str] = []
    shown = 0
    for entry in outputs.entries:
        if entry.kind == "link":
            parts.append(f'<link path="{entry.path}" target="{entry.target}" (not followed)/>')
            continue
        if entry.kind == "other" or entry.data is None:
            parts.append(f'<file path="{entry.path}" size="{entry.size}" ({entry.note})/>')
            continue
        text = entry.text
        head = f'<file path="{entry.path}" size="{entry.size}" type="{entry.media_type}"'
        if text is None:
            parts.append(f"{head} binary/>")
            continue
        room = max(0, min(FILE_CHARS, OUTPUT_CHARS - shown))
        body = text if len(text) <= room else text[:room] + f"\n… [{len(text) - room} more chars]"
        shown += min(len(text), room)
        parts.append(f"{head}>\n{body}\n</file>")
    if outputs.left_out:
        parts.append(f"({outputs.left_out})")
    return "\n".join(parts)


def judge_request(
    case: Case,
    check: Check,
    answer: str,
    *,
    session: Sequence[dict[str, Any]] | None,
    outputs: Outputs | None,
) -> str:
    """The user message of one llm_judge check, holding the parts the case lets it see."""
    sees = set(case.rubric.judge_sees)
    parts: list[str] = []
    if "task" in sees:
        parts.append(f"<task>\n{case.prompt().strip()}\n</task>")
    parts.append(f"Criterion: {check.criteria}")
    if case.rubric.expected:
        parts.append(f"Expected answer: {case.rubric.expected}")
    if "transcript" in sees and session is not None:
        parts.append(f"<transcript>\n{transcript_summary(session)}\n</transcript>")
    if "outputs" in sees and outputs is not None:
        parts.append(f"<outputs>\n{outputs_listing(outputs)}\n</outputs>")
    shown = answer if "answer" in sees else "(the case does not show the judge the answer)"
    parts.append(f"<answer>\n{shown}\n</answer>")
    return "\n".join(parts)
