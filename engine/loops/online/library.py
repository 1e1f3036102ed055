"""The skill library as the reviewer and the reconciler see it: names, descriptions, excerpts,
the skill a session concerns, and the review candidates still waiting in the queue.

The reviewer needs each existing skill's description and the start of its body to notice that a
"new" method is an old one again; the reconciler needs every name a skill goes by (its folder and
its frontmatter ``name``) to turn such a create into an update of the right folder. Pinned skills
are listed — a duplicate of a pinned skill is still a duplicate — but marked, so that automation
never writes to them.

A session's lesson belongs to the skill it used. Agents show that differently: the demo agent and
Claude Code's Skill tool log a ``Skill`` call; an agent that reads the file logs a read of
``skills/<folder>/SKILL.md``; a user who corrects an agent that loaded nothing still talks about
the task the skill is for. :func:`concerned_skill` tries those in that order.

The open review candidates are what the reconciler folds a new change into, so that the queue
holds one candidate per skill and intent (:func:`engine.loops.online.reconciler.fold`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.core.candidates import OPEN
from engine.core.queue import CandidateQueue
from engine.core.skill import SkillDoc
from engine.core.store import SkillStore, read_text
from engine.core.transcripts import Message
from engine.core.workspace import Workspace
from engine.evaluation.gates.candidate import canonical_name
from engine.loops.online.spec import SkillSpec, changed_sections, spec_of

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


# -- the skill a session concerns --------------------------------------------------------------

_SKILL_FILE = re.compile(r"skills/([A-Za-z0-9][A-Za-z0-9._-]*)/SKILL\.md", re.IGNORECASE)
_WORD = re.compile(r"[a-z][a-z0-9]+")
_STEM = 6  # "vulnerable" and "vulnerabilities" are one word to a skill's trigger
_MIN_SHARED = 2  # words a session must share with a skill's name and description to concern it
_COMMON = frozenset(
    re.findall(
        r"\w+",
        """this that with from have what when which there their about would could should into
        please file files code task only also does then than them they your asked tell help""",
    )
)


def _stems(text: str) -> set[str]:
    return {w[:_STEM] for w in _WORD.findall(text.lower()) if len(w) >= 4 and w not in _COMMON}


def concerned_skill(
    messages: Sequence[Message], skills: Sequence[ExistingSkill]
) -> ExistingSkill | None:
    """The skill the session used, else the one its user talks about, else None.

    Used means loaded with a ``Skill`` call or read as ``skills/<folder>/SKILL.md``. Talked about
    means the user's words (the task and any correction) share at least two words with one
    skill's name and description, and more than with any other: a tie names no skill, since a
    lesson filed under the wrong skill misleads that skill's next user.
    """
    calls = [c for m in messages for c in m.calls]
    for call in calls:
        loaded = next((s for s in skills if is_skill_load(call.name, call.args, s.names)), None)
        if loaded is not None:
            return loaded
    by_folder = {s.folder: s for s in skills}
    for call in calls:
        for folder in _SKILL_FILE.findall(call.args):
            if folder in by_folder:
                return by_folder[folder]
    said = _stems(" ".join(m.text for m in messages if m.role == "user"))
    ranked = sorted(
        ((len(said & _stems(f"{s.name} {s.folder} {s.description}")), s) for s in skills),
        key=lambda pair: -pair[0],
    )
    if not ranked or ranked[0][0] < _MIN_SHARED:
        return None
    if len(ranked) > 1 and ranked[1][0] == ranked[0][0]:
        return None
    return ranked[0][1]


# -- the review candidates waiting in the queue ------------------------------------------------

ALL_SECTIONS = frozenset({"description", "when_to_use", "steps", "pitfalls"})


@dataclass(frozen=True)
class QueuedIdea:
    """An open review candidate as the reconciler compares it: what it changes, and where."""

    id: str
    skill: str
    operation: str
    spec: SkillSpec
    sections: frozenset[str]
    pitfalls_added: tuple[str, ...]  # its pitfalls the version it was made from lacks
    sessions: tuple[str, ...]


def open_ideas(ws: Workspace) -> list[QueuedIdea]:
    """The open candidates online review proposed, oldest first (creates and updates only).

    An update's sections are those it changes against the version it was made from; a create
    is about every section of its new skill.
    """
    found: list[QueuedIdea] = []
    for cand in CandidateQueue(ws).list():
        if cand.source != "review" or cand.status not in OPEN or cand.operation == "delete":
            continue
        doc, _error = SkillDoc.parse_lenient(cand.skill_text())
        spec = spec_of(doc, cand.skill)
        before = SkillSpec(cand.skill, "", "", ())
        sections = ALL_SECTIONS
        if cand.operation == "update" and cand.parent_version is not None:
            parent, _ = SkillDoc.parse_lenient(SkillStore(ws, cand.skill).read(cand.parent_version))
            before = spec_of(parent, cand.skill)
            sections = changed_sections(before, spec)
        provenance = cand.evidence("provenance.json")
        sessions = provenance.get("sessions") or [provenance.get("session")]
        found.append(
            QueuedIdea(
                cand.id,
                cand.skill,
                cand.operation,
                spec,
                sections,
                tuple(p for p in spec.pitfalls if p not in before.pitfalls),
                tuple(str(s) for s in sessions if s),
            )
        )
    return found
