"""The text that tells a loader when to use a skill: the description and ``when_to_use``.

Claude Code reads only these to decide whether a skill applies, so a proposer's sentence there
acts on every task, not on one step. A sentence that is new in them (not in the parent's) is
judged like a step line: no absolute order and no catch-all trigger ("Also use it for tasks
that mention anything, wrong." — offline GEPA wrote that once).
Only new sentences are judged: what the parent already said is the parent's business.
"""

from __future__ import annotations

import re

from engine.core.skill import SkillDoc
from engine.evaluation.patches.textrules import TextRules
from engine.evaluation.verify import TRIGGER

_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")


def trigger_texts(doc: SkillDoc) -> dict[str, str]:
    """The description and when_to_use (frontmatter key or section) of ``doc``, by field."""
    found: dict[str, str] = {}
    description = doc.frontmatter.get("description")
    if isinstance(description, str):
        found["description"] = description
    when = doc.frontmatter.get("when_to_use")
    section = doc.section("when_to_use")
    parts = [t for t in (when if isinstance(when, str) else None, section) if t]
    if parts:
        found["when_to_use"] = "\n".join(parts)
    return found


def says_when(doc: SkillDoc) -> bool:
    """Whether the skill says when to use it, in any of the phrasings real skills use."""
    texts = trigger_texts(doc)
    return bool(texts.get("when_to_use", "").strip()) or bool(
        TRIGGER.search(texts.get("description", ""))
    )


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def new_slogans(before: SkillDoc | None, after: SkillDoc, rules: TextRules) -> list[str]:
    """Each sentence new in the description or when_to_use that is a slogan, with why."""
    old = trigger_texts(before) if before is not None else {}
    found: list[str] = []
    for field_name, text in trigger_texts(after).items():
        known = set(_sentences(old.get(field_name, "")))
        for sentence in _sentences(text):
            if sentence in known:
                continue
            catch_all = rules.catch_all_in(sentence)
            absolute = rules.absolute_in(sentence)
            why = (
                f"a catch-all trigger ({catch_all!r})"
                if catch_all
                else f"an absolute phrase ({absolute!r})"
                if absolute
                else None
            )
            if why is not None:
                found.append(f"{field_name}: {why}: {sentence!r}")
    return found


__all__ = ["new_slogans", "says_when", "trigger_texts"]
