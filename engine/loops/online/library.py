"""The skill library as the reviewer and the reconciler see it: names, descriptions, excerpts.

The reviewer needs each existing skill's description and the start of its body to notice that a
"new" method is an old one again; the reconciler needs every name a skill goes by (its folder and
its frontmatter ``name``) to turn such a create into an update of the right folder. Pinned skills
are listed — a duplicate of a pinned skill is still a duplicate — but marked, so that automation
never writes to them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.core.skill import SkillDoc
from engine.core.store import read_text
from engine.core.workspace import Workspace
from engine.evaluation.gates.candidate import canonical_name

TRUNCATED = "\n... [truncated]"


@dataclass(frozen=True)
class ExistingSkill:
    folder: str
    name: str
    description: str
    excerpt: str
    pinned: bool
    text: str

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the skill answers to: its display name and its folder."""
        return tuple(dict.fromkeys((self.name, self.folder)))


def is_skill_load(tool: str, args: str, names: Iterable[str]) -> bool:
    """Whether a tool call loads one of ``names``: a ``Skill`` call whose argument names it.

    That is how every supported agent logs a load (the demo agent, Claude Code's Skill tool);
    the argument may carry more after the name ("weather-multi-city --brief").
    """
    if tool != "Skill":
        return False
    wanted = {canonical_name(n) for n in names}
    words = args.split()
    return canonical_name(args) in wanted or (bool(words) and canonical_name(words[0]) in wanted)


def excerpt(body: str, limit: int) -> str:
    """The start of ``body`` within ``limit`` characters (marked when cut); "" for limit < 0."""
    body = body.strip()
    if limit < 0:
        return ""
    if len(body) <= limit:
        return body
    return body[: max(0, limit - len(TRUNCATED))].rstrip() + TRUNCATED


def existing_skills(ws: Workspace, excerpt_chars: int = 600) -> list[ExistingSkill]:
    """Every skill under ``skills/``, in folder order; an unparsable one still counts by name."""
    pinned = set(ws.load_config().pinned_skills)
    found: list[ExistingSkill] = []
    for folder in ws.skill_names():
        text = read_text(ws.skill_path(folder))
        doc, _error = SkillDoc.parse_lenient(text)
        found.append(
            ExistingSkill(
                folder=folder,
                name=(doc.name or folder).strip() or folder,
                description=(doc.description or "").strip(),
                excerpt=excerpt(doc.body, excerpt_chars),
                pinned=folder in pinned or (doc.name or "") in pinned,
                text=text,
            )
        )
    return found
