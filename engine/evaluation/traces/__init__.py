"""Execution traces compressed into three layers for diagnosis (the outcome-driven article).

A raw session runs to hundreds of thousands of tokens; diagnosis needs only what the agent *did*.
A trace (read by ``engine.core.transcripts``, which knows every transcript format) is compressed
~100:1 into (a) a tool-call skeleton (tool and a short argument summary, results dropped), (b)
stage statistics (``stats``: calls per tool, errors, retries, tokens) and (c) a progress
cross-check (``crosscheck``: the skill steps the agent claims against the steps its tool calls
evidence), put together by ``summary``. Rules then read the summary, never the raw text, so
diagnosis stays cheap and reproducible.
"""

from engine.core.transcripts import (
    Tokens,
    ToolCall,
    Trace,
    TraceFormat,
    TraceResult,
    detect_format,
    load_trace,
    normalise,
)
from engine.evaluation.traces.crosscheck import (
    ProgressCheck,
    StepLike,
    claimed_steps,
    progress,
    step_commands,
)
from engine.evaluation.traces.stats import BenignErrors, StageStats, stage_stats
from engine.evaluation.traces.summary import TraceSummary, skeleton, summarise

__all__ = [
    "BenignErrors",
    "ProgressCheck",
    "StageStats",
    "StepLike",
    "Tokens",
    "ToolCall",
    "Trace",
    "TraceFormat",
    "TraceResult",
    "TraceSummary",
    "claimed_steps",
    "detect_format",
    "load_trace",
    "normalise",
    "progress",
    "skeleton",
    "stage_stats",
    "step_commands",
    "summarise",
]
