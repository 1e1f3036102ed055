"""The reconciler: deterministic rules that stop the skill library from filling with near-twins.

A reviewer sees one session; left alone it proposes "Weather - 3 Cities" when "Weather -
Multi-City" already exists, or two copies of one method in one reply. These rules (tRPC-Agent-Go's
reconciler, in its order) rely only on names and structure, never on open-ended judgement:

1. intra-batch: of two creates with the same normalised name, or the same when_to_use and
   steps, the first wins;
2. strict-name superset: a create named like an existing skill plus a variant suffix ("Foo -
   3 Cities", "Foo (v2)", "Foo: EU") — or the same name again — becomes an update of it;
3. count-specific sibling: "Weather - 3 Cities" becomes an update of a generic "Weather -
   Multi-City" (the shared rule of the Spec gate, ``engine.evaluation.gates.candidate``);
4. word overlap: a create whose significant name words overlap an existing skill's by Jaccard
   ≥ 0.5 (and at least two shared words) becomes an update of it.

A rewrite yields to an explicit decision: if the reviewer already updates that parent, the create
is dropped; if it deletes the parent, the create stays (delete-then-create is deliberate); a
second create rewritten onto the same parent is dropped. Updates and deletions must name an
existing skill, and pinned skills are never written by automation. Every rewrite, drop and skip is
returned as an event for the session log.

Then :func:`fold` compares the changes with the review candidates still open in the queue, so the
queue holds one candidate per skill and intent: a change of the same skill and section as an open
candidate (a create: of the same new skill, by the rules above) absorbs it — the older one's
pitfalls and the sections only it changed are carried over — and the older candidate is
superseded once the new one is queued. Without this, each session with the same correction, or
one per audited file, queued its own copy of one idea.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from engine.core.skill import SkillDoc
from engine.core.transcripts import normalise
from engine.evaluation.gates.candidate import canonical_name, count_sibling_of
from engine.loops.online.library import ALL_SECTIONS, ExistingSkill, QueuedIdea
from engine.loops.online.spec import ReviewDecision, SkillSpec, changed_sections, spec_of

Operation = Literal["create", "update", "delete"]
WORD_OVERLAP_MIN = 0.5
_SEPARATORS = frozenset("-:([/|_.")
_STOP_WORDS = frozenset(
    re.findall(
        r"\w+",
        """the and for with from that this are was were been being have has had does did will would
    could should may might shall can not but yet also then than when where how what which who whom
    its each every all any few more most other some such into over under between through about
    using multi multiple""",
    )
)


@dataclass(frozen=True)
class SkillChange:
    """One write to propose: ``skill`` is the folder; ``spec`` is None for a delete."""

    operation: Operation
    skill: str
    spec: SkillSpec | None
    reason: str
    proposed_as: str | None = None  # the create's own name when a rule turned it into an update
    supersedes: tuple[str, ...] = ()  # open candidates this change carries (see ``fold``)
    sessions: tuple[str, ...] = ()  # the sessions of the candidates it carries


@dataclass(frozen=True)
class ReconcileEvent:
    kind: str
    original: str
    target: str | None
    reason: str

    def to_dict(self) -> dict[str, str | None]:
        return {
            "kind": self.kind,
            "original": self.original,
            "target": self.target,
            "reason": self.reason,
        }


def normalise_name(name: str) -> str:
    """Lower case, whitespace collapsed, punctuation kept: "Foo  -  3 Cities" → "foo - 3 cities"."""
    return normalise(name).lower()


def folder_for(name: str) -> str:
    """The ``skills/`` folder a new skill of this name gets (Agent Skills style: a-z, 0-9, -)."""
    return canonical_name(name) or "unnamed-skill"


def is_variant_suffix(rest: str) -> bool:
    """Whether ``rest``, what follows a parent's name, marks a variant: " - 3 cities", "v2"."""
    if not rest:
        return False
    if rest[0] in " \t":
        rest = rest.lstrip(" \t")
        if not rest:
            return False
    if rest[0] in _SEPARATORS:
        return True
    return rest[0] in "vV" and len(rest) > 1 and rest[1].isdigit()


def significant_words(name: str) -> set[str]:
    text = name.lower()
    for char in "-_.":
        text = text.replace(char, " ")
    return {w for w in text.split() if len(w) >= 3 and w not in _STOP_WORDS}


def _shape_key(spec: SkillSpec) -> str | None:
    when = spec.when_to_use.strip().lower()
    if not when or not spec.steps:
        return None
    return when + "\x1f" + "\x1e".join(s.strip().lower() for s in spec.steps)


class _Index:
    """Existing skills by every name they go by, longest name first (the most specific parent)."""

    def __init__(self, skills: Sequence[ExistingSkill]) -> None:
        self.skills = list(skills)
        pairs = [(name, s) for s in skills for name in s.names]
        self.by_name = sorted(pairs, key=lambda p: len(normalise_name(p[0])), reverse=True)

    def resolve(self, name: str) -> ExistingSkill | None:
        key = canonical_name(name)
        return next((s for n, s in self.by_name if canonical_name(n) == key), None)

    def superset_parent(self, name: str) -> ExistingSkill | None:
        cand = normalise_name(name)
        for existing, skill in self.by_name:
            parent = normalise_name(existing)
            if cand == parent or canonical_name(cand) == canonical_name(parent):
                return skill
            rest = cand[len(parent) :]
            if len(parent) < len(cand) and cand.startswith(parent) and is_variant_suffix(rest):
                return skill
        return None

    def sibling_parent(self, name: str) -> ExistingSkill | None:
        parent = count_sibling_of(name, [n for n, _ in self.by_name])
        return self.resolve(parent) if parent is not None else None

    def overlap_parent(self, name: str) -> tuple[ExistingSkill, float] | None:
        words = significant_words(name)
        if len(words) < 2:
            return None
        cand = normalise_name(name)
        best: tuple[ExistingSkill, float] | None = None
        for skill in self.skills:
            names = [normalise_name(n) for n in skill.names]
            if any(cand.startswith(n) or n.startswith(cand) for n in names):
                continue  # a name extension is rule 2's business, not a word overlap
            for existing in skill.names:
                other = significant_words(existing)
                if len(other) < 2:
                    continue
                shared = words & other
                score = len(shared) / len(words | other)
                if (
                    len(shared) >= 2
                    and score >= WORD_OVERLAP_MIN
                    and (best is None or score > best[1])
                ):
                    best = (skill, score)
        return best


def reconcile(
    decision: ReviewDecision, existing: Sequence[ExistingSkill]
) -> tuple[list[SkillChange], list[ReconcileEvent]]:
    """The writes a decision amounts to, after the four rules; plus what the rules did."""
    index = _Index(existing)
    events: list[ReconcileEvent] = []
    deletes: list[SkillChange] = []
    updates: list[SkillChange] = []
    for name in decision.deletions:
        target = index.resolve(name)
        if target is None:
            events.append(ReconcileEvent("skip_unknown_delete", name, None, "no such skill"))
        elif target.pinned:
            events.append(ReconcileEvent("skip_pinned", name, target.folder, "pinned skill"))
        else:
            deletes.append(SkillChange("delete", target.folder, None, "reviewer: obsolete skill"))
    for update in decision.updates:
        target = index.resolve(update.name)
        if target is None:
            events.append(ReconcileEvent("skip_unknown_update", update.name, None, "no such skill"))
        elif target.pinned:
            events.append(ReconcileEvent("skip_pinned", update.name, target.folder, "pinned skill"))
        elif any(c.skill == target.folder for c in updates):
            events.append(ReconcileEvent("drop_duplicate_update", update.name, target.folder, ""))
        else:
            spec = _as(update.spec, target.name)
            updates.append(SkillChange("update", target.folder, spec, update.reason or "reviewer"))
    deleted = {c.skill for c in deletes}
    claimed = {c.skill for c in updates}
    creates: list[SkillChange] = []
    seen_names: set[str] = set()
    seen_shapes: set[str] = set()
    for spec in decision.creates:
        norm, shape = normalise_name(spec.name), _shape_key(spec)
        if norm in seen_names or (shape is not None and shape in seen_shapes):
            events.append(
                ReconcileEvent("drop_intra_batch_duplicate", spec.name, None, "same name or steps")
            )
            continue
        seen_names.add(norm)
        if shape is not None:
            seen_shapes.add(shape)
        parent, rule, why = _parent(index, spec.name)
        if parent is None:
            creates.append(SkillChange("create", folder_for(spec.name), spec, "new method"))
            continue
        reason = f"auto-merged by reconciler: {spec.name!r} {why} {parent.name!r}"
        if parent.folder in deleted:
            replaces = "replaces a deleted skill"
            creates.append(SkillChange("create", folder_for(spec.name), spec, replaces))
        elif parent.pinned:
            events.append(ReconcileEvent("skip_pinned", spec.name, parent.folder, reason))
        elif parent.folder in claimed:
            kind = "drop_conflicts_with_update"
            if any(c.proposed_as for c in updates if c.skill == parent.folder):
                kind = "drop_intra_batch_duplicate"
            events.append(ReconcileEvent(kind, spec.name, parent.folder, reason))
        else:
            claimed.add(parent.folder)
            updates.append(
                SkillChange("update", parent.folder, _as(spec, parent.name), reason, spec.name)
            )
            events.append(ReconcileEvent(rule, spec.name, parent.folder, reason))
    return deletes + updates + creates, events


def _parent(index: _Index, name: str) -> tuple[ExistingSkill | None, str, str]:
    found = index.superset_parent(name)
    if found is not None:
        return found, "rewrite_superset_to_update", "repeats or extends the name of"
    found = index.sibling_parent(name)
    if found is not None:
        return found, "rewrite_quantified_sibling_to_update", "is a count-specific sibling of"
    overlap = index.overlap_parent(name)
    if overlap is not None:
        skill, score = overlap
        return skill, "rewrite_word_overlap_to_update", f"has {score:.0%} word overlap with"
    return None, "", ""


def _as(spec: SkillSpec, name: str) -> SkillSpec:
    return SkillSpec(name, spec.description, spec.when_to_use, spec.steps, spec.pitfalls)


def fold(
    changes: Sequence[SkillChange], ideas: Sequence[QueuedIdea], existing: Sequence[ExistingSkill]
) -> tuple[list[SkillChange], list[ReconcileEvent]]:
    """``changes`` with each open candidate of the same skill and section folded in.

    An update is about the sections it rewrites in the current skill; it absorbs every open
    update of that skill sharing one of them. A create absorbs the open creates of the same new
    skill: the same folder, or a name the rules above tie to the queued one's (the change then
    takes the older folder and name, so the idea keeps one identity).
    """
    texts = {s.folder: s.text for s in existing}
    out: list[SkillChange] = []
    events: list[ReconcileEvent] = []
    taken: set[str] = set()
    for change in changes:
        spec = change.spec
        if spec is None:
            out.append(change)
            continue
        if change.operation == "update":
            now = spec_of(SkillDoc.parse_lenient(texts.get(change.skill, ""))[0], change.skill)
            about = changed_sections(now, spec)
            same = [i for i in ideas if i.operation == "update" and i.skill == change.skill]
            folded = [i for i in same if i.sections & about and i.id not in taken]
        else:
            about = ALL_SECTIONS
            creates = [i for i in ideas if i.operation == "create" and i.id not in taken]
            folded = _same_create(spec.name, change.skill, creates)
        if not folded:
            out.append(change)
            continue
        taken.update(i.id for i in folded)
        for idea in folded:
            spec = _merged(spec, about, idea)
        skill = change.skill
        if change.operation == "create":
            skill, spec = folded[0].skill, _as(spec, folded[0].spec.name)
        sessions = tuple(dict.fromkeys(s for i in folded for s in i.sessions))
        ids = tuple(i.id for i in folded)
        out.append(
            dataclasses.replace(change, skill=skill, spec=spec, supersedes=ids, sessions=sessions)
        )
        for idea in folded:
            shared = ", ".join(sorted(idea.sections & about))
            why = f"same skill ({skill}) and section ({shared}) as {idea.id}, which it supersedes"
            events.append(ReconcileEvent("fold_into_queued", change.skill, idea.id, why))
    return out, events


def _same_create(name: str, folder: str, creates: Sequence[QueuedIdea]) -> list[QueuedIdea]:
    """The queued creates of the skill ``name`` would create: by folder, else by the rules."""
    same = [i for i in creates if i.skill == folder]
    if same:
        return same
    queued = [
        ExistingSkill(i.skill, i.spec.name, i.spec.description, "", False, "") for i in creates
    ]
    parent, _rule, _why = _parent(_Index(queued), name)
    return [i for i in creates if parent is not None and i.skill == parent.folder]


def _merged(spec: SkillSpec, about: frozenset[str], idea: QueuedIdea) -> SkillSpec:
    """``spec`` plus what only the older ``idea`` says: the pitfalls it added and the sections
    it changed that ``spec`` leaves alone. Where both rewrite a section, the newer one wins."""
    old = idea.spec

    def pick(section: str, new: str, older: str) -> str:
        return older if section in idea.sections and section not in about else new

    return SkillSpec(
        spec.name,
        pick("description", spec.description, old.description),
        pick("when_to_use", spec.when_to_use, old.when_to_use),
        old.steps if "steps" in idea.sections and "steps" not in about else spec.steps,
        tuple(dict.fromkeys((*spec.pitfalls, *idea.pitfalls_added))),
    )
