"""Layer (b) of a trace summary: stage statistics — calls per tool, errors, retries, tokens.

A *retry* re-issues, unchanged, a call that failed before; a failed search that merely found
nothing is a benign error, not a failure (the article's BENIGN_ERROR_PATTERNS), or every
thorough search would look like an error burst.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from engine.core.config import DiagnosisConfig
from engine.core.transcripts.content import clip, normalise
from engine.core.transcripts.trace import Tokens, ToolCall, Trace, TraceResult


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
        max_repeat_call=f"{top[0][0][0]} {clip(top[0][0][1], 80)}".strip() if top else None,
        tokens=trace.tokens,
        result=trace.result,
    )
