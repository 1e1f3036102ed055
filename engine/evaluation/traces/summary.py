"""The summary of a trace — its three layers — and the compact text handed to people and models.

Layer (a) is the tool-call skeleton (one line per call, repeats folded, the middle elided past a
cap), (b) the stage statistics (``stats``), (c) the progress cross-check (``crosscheck``); the
conclusion is read exactly as grading reads the verdict, so both always agree.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.core.config import DiagnosisConfig
from engine.core.transcripts.content import clip, normalise
from engine.core.transcripts.detect import TraceFormat
from engine.core.transcripts.trace import ToolCall, Trace
from engine.evaluation.grading import CheckTimeout, extract_verdict
from engine.evaluation.traces.crosscheck import ProgressCheck, StepLike, progress
from engine.evaluation.traces.stats import BenignErrors, StageStats, stage_stats


@dataclass(frozen=True)
class TraceSummary:
    source: str
    format: TraceFormat
    raw_bytes: int
    skeleton: list[str]
    elided_calls: int
    stats: StageStats
    progress: ProgressCheck
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
        entry = f"{call.name}{mark} {clip(normalise(call.args), width)}".rstrip()
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
    try:
        conclusion = extract_verdict(final, label_pattern or config.label_pattern, list(labels))
    except CheckTimeout:  # a label_pattern that runs away on this answer: grading said so too
        conclusion = None
    return TraceSummary(
        source=trace.source,
        format=trace.format,
        raw_bytes=trace.size_bytes,
        skeleton=entries,
        elided_calls=hidden,
        stats=stage_stats(trace, BenignErrors(config)),
        progress=progress(trace, steps),
        conclusion=conclusion,
        final_excerpt=clip(normalise(final), 200),
    )
