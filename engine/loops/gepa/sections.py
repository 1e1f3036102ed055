"""A skill as the GEPA optimizer sees it: four editable sections over an untouched SKILL.md.

GEPA evolves a mapping of named texts; here the names are the SKILL.md sections a round may
rewrite. A candidate is rendered by splicing its changed sections into the seed document, so
every other byte (frontmatter keys, the title, extra sections) stays exactly as the user wrote
it, and a candidate equal to the seed renders to the seed's bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from engine.core.errors import FormatError
from engine.core.skill import SkillDoc

# The order a round asks for the sections in (tRPC-Agent-Go's: the procedure first).
SECTIONS = ("steps", "pitfalls", "when_to_use", "description")
MIN_STEPS = 2
MAX_DESCRIPTION_CHARS = 1024  # the Agent Skills limit on a description

Sections = dict[str, str]


def sections_of(text: str) -> Sections:
    """The four sections of a SKILL.md ("" for one it lacks), in cycling order."""
    doc = SkillDoc.parse(text)
    return {name: doc.section(name) or "" for name in SECTIONS}


def candidate_id(sections: Mapping[str, str]) -> str:
    """A content address: the same four texts always get the same id."""
    canonical = json.dumps({k: sections[k] for k in SECTIONS}, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def render(seed_text: str, sections: Mapping[str, str]) -> str:
    """The SKILL.md of a candidate: the seed with each differing section replaced."""
    doc = SkillDoc.parse(seed_text)
    for name in SECTIONS:
        if sections[name] != (doc.section(name) or ""):
            doc = doc.with_section(name, sections[name])
    return doc.render()


def check_section(
    seed_text: str, parent: Mapping[str, str], child: Mapping[str, str], name: str
) -> str | None:
    """Why ``child`` (``parent`` with section ``name`` rewritten) is not a valid skill, or None.

    A rewrite edits one section and may not restructure the skill: no headings of its own, no
    empty section, the steps keep at least two steps, the description stays one short line.
    """
    body = child[name].strip()
    if not body:
        return f"the {name} section is empty"
    if name == "description" and len(" ".join(body.split())) > MAX_DESCRIPTION_CHARS:
        return f"the description is longer than {MAX_DESCRIPTION_CHARS} characters"
    try:
        before = SkillDoc.parse(render(seed_text, parent))
        after = SkillDoc.parse(render(seed_text, child))
    except FormatError as exc:
        return f"the skill no longer parses: {exc}"
    added = 0 if parent[name].strip() else 1  # a missing section comes with its heading
    if len(after.headings) > len(before.headings) + added:
        return f"the {name} section adds a heading"
    if name == "steps" and len(after.steps) < MIN_STEPS:
        return f"the steps section has {len(after.steps)} steps, at least {MIN_STEPS} are needed"
    return None


__all__ = [
    "SECTIONS",
    "Sections",
    "candidate_id",
    "check_section",
    "render",
    "sections_of",
]
