"""The part of a big SKILL.md the model proposer is shown: what the diagnosis points at.

The article's proposer input stays under 10 KB, but real skills run to 20 KB and more (the largest
public one is 74 KB). Cutting the skill blindly would hide the lines a diff must quote; so a skill
too big to send whole is sent as the sections the root cause concerns — the steps section for a
flow anomaly, the description for a skill that was never loaded, any section holding a command
or a step the evidence names — with their exact lines and line numbers, plus a one-line-per-
heading outline of everything left out. A hunk may sit at another line than its header says
(:mod:`engine.core.patch_apply`), so an excerpt's numbers only help the model; they are
never
trusted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from engine.core.skill import SkillDoc
from engine.evaluation.patches.proposer import PatchTarget
from engine.evaluation.traces import step_commands

# Root causes about the skill being found, not followed, are fixed in what the agent reads first.
_LOADING_RULES = ("skill_not_loaded",)
_STEP_MENTION = re.compile(r"\bsteps? (\d{1,3})\b", re.IGNORECASE)
MIN_OUTLINE = 600  # bytes kept for the outline however much the parts want


@dataclass(frozen=True)
class _Part:
    """Lines ``[start, stop)`` of the document (0-based) under one heading (or before any)."""

    start: int
    stop: int
    title: str
    score: int


def _parts(doc: SkillDoc) -> list[_Part]:
    """The frontmatter, the preamble and one part per heading, each up to the next heading."""
    cuts = [h.index for h in doc.headings]
    parts: list[_Part] = []
    if doc.body_start:
        parts.append(_Part(0, doc.body_start, "frontmatter", 0))
    first = cuts[0] if cuts else len(doc.lines)
    if first > doc.body_start:
        parts.append(_Part(doc.body_start, first, "(text before the first heading)", 0))
    for i, heading in enumerate(doc.headings):
        stop = cuts[i + 1] if i + 1 < len(cuts) else len(doc.lines)
        parts.append(_Part(heading.index, stop, "#" * heading.level + " " + heading.title, 0))
    return parts


def _scored(doc: SkillDoc, target: PatchTarget, parts: list[_Part]) -> list[_Part]:
    """Each part with how strongly the root cause points at it (0: not at all)."""
    evidence = [target.explanation, *target.evidence]
    commands = {c for text in evidence for c in step_commands(text)}
    numbers = {int(n) for text in evidence for n in _STEP_MENTION.findall(text)}
    step_lines = {s.line - 1 for s in doc.steps if s.number in numbers}
    all_steps = {s.line - 1 for s in doc.steps}
    loading = target.rule_id in _LOADING_RULES
    kinds = {h.index: h.kind for h in doc.headings}
    out: list[_Part] = []
    for part in parts:
        text = "\n".join(ln.text for ln in doc.lines[part.start : part.stop])
        kind = "frontmatter" if part.title == "frontmatter" else kinds.get(part.start)
        score = 0
        if loading and kind in ("frontmatter", "description", "when_to_use"):
            score += 8
        if not loading and kind in ("steps", "pitfalls"):
            score += 6
        if any(part.start <= n < part.stop for n in step_lines):
            score += 5
        elif not loading and any(part.start <= n < part.stop for n in all_steps):
            score += 2
        score += 3 * sum(1 for c in commands if c in text)
        out.append(_Part(part.start, part.stop, part.title, score))
    return out


def encoded_size(*texts: str) -> int:
    """Bytes the texts take in a JSON request body (escapes included, non-ASCII as \\uXXXX):
    the budget is what the Messages API receives, not what the file holds."""
    return sum(len(json.dumps(t)) - 2 for t in texts)


_size = encoded_size


def focused_view(doc: SkillDoc, target: PatchTarget, budget: int) -> str:
    """The skill's relevant parts and an outline of the rest, in at most ``budget`` bytes.

    The parts come first (a diff needs them); whatever room they leave goes to the outline.
    """
    parts = _scored(doc, target, _parts(doc))
    raw = [ln.raw for ln in doc.lines]
    room = budget - MIN_OUTLINE
    chosen: dict[int, tuple[int, int]] = {}
    for part in sorted(parts, key=lambda p: (-p.score, p.start)):
        if part.score <= 0 and chosen:
            break
        size = _size("".join(raw[part.start : part.stop])) + 40
        if size <= room:
            chosen[part.start] = (part.start, part.stop)
            room -= size
        elif not chosen:  # the best part alone is too big: its first lines, whole lines only
            stop = part.start
            while stop < part.stop and _size("".join(raw[part.start : stop + 1])) + 80 <= room:
                stop += 1
            chosen[part.start] = (part.start, max(stop, part.start + 1))
            room = 0
        if room <= 200:
            break
    excerpts = "\n".join(
        f'<SKILL.md lines="{start + 1}-{stop}">\n' + "".join(raw[start:stop]).rstrip("\n") + "\n"
        "</SKILL.md>"
        for start, stop in sorted(chosen.values())
    )
    head = (
        f"SKILL.md has {len(doc.lines)} lines ({len(doc.render().encode('utf-8'))} bytes), too "
        "long to show whole. Outline:\n"
    )
    tail = (
        "\n\nThe parts the diagnosis points at, exactly as in the file (hunk context lines "
        "must be copied from these):\n" + excerpts
    )
    outline: list[str] = []
    for part in parts:
        shown = chosen.get(part.start)
        lines = part.stop - part.start
        if shown is None:
            note = f"{lines} lines, not shown"
        elif shown[1] < part.stop:
            note = f"lines {shown[0] + 1}-{shown[1]} shown, {part.stop - shown[1]} more not shown"
        else:
            note = "shown below"
        outline.append(f"- line {part.start + 1}: {part.title[:80]} ({note})")
    return head + _clip_lines(outline, budget - _size(head, tail)) + tail


def _clip_lines(lines: list[str], budget: int) -> str:
    kept: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        if used + _size(line) + 1 > budget - 40:
            kept.append(f"- … {len(lines) - i} more headings")
            break
        kept.append(line)
        used += _size(line) + 1
    return "\n".join(kept)


__all__ = ["encoded_size", "focused_view"]
