"""The built-in diagnosis rules: bad working habits visible in any agent's trace.

Each rule is a small checker over one case's compressed trace and knows no domain vocabulary, so
it serves a code-review or data-analysis agent as well as a security auditor. Every threshold
comes from :class:`engine.core.config.DiagnosisConfig`.
"""

from __future__ import annotations

from collections import Counter

from engine.evaluation.diagnosis.registry import CaseContext, CheckResult, checker
from engine.evaluation.traces import BenignErrors, ToolCall, normalise, step_commands

SKILL_TOOL = "skill"


def _show(call: ToolCall, width: int = 60) -> str:
    args = normalise(call.args)
    return f"#{call.index + 1} {call.name} {args[:width]}".rstrip()


def _substantive(ctx: CaseContext) -> list[ToolCall]:
    """Calls that do work; loading the skill is not analysis."""
    return [c for c in ctx.trace.calls if c.name.lower() != SKILL_TOOL]


def _commands(ctx: CaseContext, number: int) -> str:
    for step in ctx.steps:
        if step.number == number:
            return ", ".join(f"`{c}`" for c in step_commands(step.text))
    return ""


@checker("tool_error_burst", "tool calls failed in a burst (benign search misses excluded)")
def tool_error_burst(ctx: CaseContext) -> CheckResult:
    benign = BenignErrors(ctx.config)
    failed = [c for c in ctx.trace.calls if c.is_error and not benign(c)]
    window = ctx.config.error_burst_window
    best: list[ToolCall] = []
    end = 0
    for start, first in enumerate(failed):  # two pointers: the failures within one window
        end = max(end, start)
        while end < len(failed) and failed[end].index < first.index + window:
            end += 1
        if end - start > len(best):
            best = failed[start:end]
    if len(best) < ctx.config.error_burst_min:
        return None
    head = f"{len(best)} failed calls within {window} consecutive calls"
    return [head, *(f"{_show(c)} → {normalise(c.result)[:70]}" for c in best)]


@checker("progress_mismatch", "claims skill steps that no tool call evidences")
def progress_mismatch(ctx: CaseContext) -> CheckResult:
    progress = ctx.summary.progress
    if not ctx.asked_protocol or not progress.steps_known or not progress.missing:
        return None
    lines = [
        f"claimed steps {progress.claimed}, evidenced {progress.evidenced}",
    ]
    for number in progress.missing:
        lines.append(f"step {number} claimed but no call ran {_commands(ctx, number)}".rstrip())
    return lines


@checker("no_tool_calls", "concluded without a single tool call")
def no_tool_calls(ctx: CaseContext) -> CheckResult:
    if _substantive(ctx):
        return None
    verdict = ctx.summary.conclusion or ctx.summary.final_excerpt[:60] or "nothing"
    return [f"0 tool calls before concluding: {verdict}"]


@checker("redundant_retry", "re-issued failed calls unchanged")
def redundant_retry(ctx: CaseContext) -> CheckResult:
    if ctx.summary.stats.retries < ctx.config.redundant_retry_min:
        return None
    failed: set[tuple[str, str]] = set()
    retried: Counter[tuple[str, str]] = Counter()
    for call in ctx.trace.calls:
        if call.key in failed:
            retried[call.key] += 1
        if call.is_error:
            failed.add(call.key)
    lines = [f"{ctx.summary.stats.retries} unchanged retries of failed calls"]
    lines += [f"{name} {args[:60]} retried {n}×" for (name, args), n in retried.most_common()]
    return lines


@checker("tool_loop", "the same call repeated over and over")
def tool_loop(ctx: CaseContext) -> CheckResult:
    stats = ctx.summary.stats
    if stats.max_repeat < ctx.config.tool_loop_min_repeats:
        return None
    return [
        f"{stats.max_repeat_call} issued {stats.max_repeat}× "
        f"({stats.tool_calls_total} calls, {stats.tokens.total} tokens)"
    ]


@checker("skill_not_loaded", "the skill was never loaded (no Skill call, no read of SKILL.md)")
def skill_not_loaded(ctx: CaseContext) -> CheckResult:
    if not ctx.expects_skill:
        return None
    name = ctx.skill_name
    for call in ctx.trace.calls:
        args = normalise(call.args)
        if call.name.lower() == SKILL_TOOL and (name is None or name in args):
            return None
        if "SKILL.md" in args and (name is None or f"{name}/SKILL.md" in args):
            return None
    loaded = [normalise(c.args) for c in ctx.trace.calls if c.name.lower() == SKILL_TOOL]
    wanted = f"skill {name!r}" if name else "a skill"
    tail = f"; loaded only {loaded}" if loaded else ""
    return [f"never loaded {wanted} in {len(ctx.trace.calls)} calls{tail}"]


@checker("premature_conclusion", "concluded before doing the skill's remaining steps")
def premature_conclusion(ctx: CaseContext) -> CheckResult:
    if not ctx.asked_protocol:
        return None  # no label line or STEPS DONE was asked for: nothing to read "concluded" from
    summary = ctx.summary
    result = summary.stats.result
    if result is not None and result.is_error:
        return None  # the run was cut off, not concluded (budget_exhaustion)
    if not (summary.conclusion or summary.final_excerpt):
        return None
    done = len(_substantive(ctx))
    if done == 0:
        return None  # no_tool_calls says it better
    if done < ctx.config.premature_min_calls:
        return [f"concluded {summary.conclusion or '-'} after only {done} tool calls"]
    progress = summary.progress
    if not progress.steps_known:
        return None
    last = max(progress.evidenced, default=0)
    trailing = [n for n in progress.skipped if n > last]
    if not trailing:
        return None
    lines = [f"concluded {summary.conclusion or '-'} after step {last}; never reached {trailing}"]
    lines += [f"step {n} not run: {_commands(ctx, n)}" for n in trailing]
    return lines


@checker("budget_exhaustion", "the run hit its turn, token, time or cost budget")
def budget_exhaustion(ctx: CaseContext) -> CheckResult:
    reasons = [r.lower() for r in ctx.config.budget_reasons]
    lines: list[str] = []
    result = ctx.summary.stats.result
    if result is not None and result.is_error:
        reason = (result.reason or "").lower()
        if any(r in reason for r in reasons):
            lines.append(f"run ended with {result.reason}")
    invalid = str(ctx.row.get("invalid_reason") or "")
    if invalid and any(r in invalid.lower() for r in reasons):
        lines.append(f"invalid: {invalid}")
    row_tokens = ctx.row.get("tokens")
    row_total = 0
    if isinstance(row_tokens, dict):
        row_total = sum(v for v in row_tokens.values() if isinstance(v, int))
    used = max(ctx.summary.stats.tokens.total, row_total)
    if used > ctx.config.token_budget:
        lines.append(f"{used} tokens used, over the budget of {ctx.config.token_budget}")
    return lines or None


BUILTIN_CHECKERS = (
    tool_error_burst,
    progress_mismatch,
    no_tool_calls,
    redundant_retry,
    tool_loop,
    skill_not_loaded,
    premature_conclusion,
    budget_exhaustion,
)
