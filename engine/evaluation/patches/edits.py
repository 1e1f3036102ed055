"""Line edits of SKILL.md that keep every untouched byte (line endings included).

A candidate is a whole new text whose diff against the parent must be small and exact, so edits
splice lines into the parsed document instead of re-rendering it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.core.skill import SkillDoc
from engine.evaluation.demo.agent import plan

_CONFIRM = re.compile(r"\b(confirm|re-?read|double-check|finally)\b", re.IGNORECASE)


NUMBER = re.compile(r"^(\s*)(\d+)([.)])")


def splice(doc: SkillDoc, start: int, end: int, texts: Sequence[str]) -> str:
    """The document with lines ``[start, end)`` replaced by ``texts`` (the file's line ending)."""
    pairs = [(ln.text, ln.eol) for ln in doc.lines]
    if start == len(pairs) and pairs and not pairs[-1][1]:
        pairs[-1] = (pairs[-1][0], doc.newline)
    new = [(t, doc.newline) for t in texts]
    if end == len(pairs) and new and pairs and not pairs[-1][1]:
        new[-1] = (new[-1][0], "")
    pairs[start:end] = new
    return doc.bom + "".join(t + e for t, e in pairs)


def section_end(doc: SkillDoc, name: str) -> int | None:
    """Index after the last non-blank line of a section, or None when the skill lacks it."""
    heading = doc.section_heading(name)
    if heading is None:
        return None
    stop = next(
        (h.index for h in doc.headings if h.index > heading.index and h.level <= heading.level),
        len(doc.lines),
    )
    end = stop
    while end > heading.index + 1 and doc.lines[end - 1].blank:
        end -= 1
    return end


def with_step(doc: SkillDoc, body: str) -> str | None:
    """Add a step: before a closing "confirm" step (renumbering it), else after the last one."""
    steps = doc.steps
    end = section_end(doc, "steps")
    if not steps or end is None:
        return None
    last = steps[-1]
    index = last.line - 1
    head = NUMBER.match(doc.lines[index].text)
    if head is None:
        return splice(doc, end, end, [f"- {body}"])
    indent = head.group(1)
    if _CONFIRM.search(last.text) and not any(s.command for s in plan(doc)[-1:] if s.flags):
        renumbered = NUMBER.sub(
            lambda m: f"{m.group(1)}{int(m.group(2)) + 1}{m.group(3)}", doc.lines[index].text, 1
        )
        new = [f"{indent}{last.number}{head.group(3)} {body}", renumbered]
        return splice(doc, index, index + 1, new)
    return splice(doc, end, end, [f"{indent}{last.number + 1}{head.group(3)} {body}"])


def with_pitfalls(doc: SkillDoc, items: Sequence[str]) -> str | None:
    end = section_end(doc, "pitfalls")
    if end is None:
        return None
    return splice(doc, end, end, [f"- {item}" for item in items])
