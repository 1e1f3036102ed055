"""The reviewer's decision: create / update / delete skills, each a five-field method spec.

A method is name, description, when_to_use, steps and pitfalls — nothing else (tRPC-Agent-Go's
``SkillSpec``), so a model can fill it in and code can check it. The decision arrives as JSON
text from a model and is parsed strictly: unknown keys, wrong types, a spec missing a required
field, a skip reason next to changes — each rejects the *whole* reply, because a half-understood
reply must not advance the review cursor. Duplicate names across the three lists are settled the
reference's way (a deletion beats an update beats a create).

Rendering turns a spec into SKILL.md text: a create gets a fresh file whose frontmatter ``name``
is its folder (Agent Skills wants the two equal); an update edits the existing file section by
section, so its other frontmatter keys and sections stay byte for byte.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import yaml

from engine.core.errors import FormatError, SkillsmithError
from engine.core.schema import from_mapping
from engine.core.skill import SkillDoc
from engine.evaluation.gates.candidate import canonical_name

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


class ReviewerError(SkillsmithError):
    """The reviewer gave no usable decision (model error, malformed or invalid reply)."""


@dataclass(frozen=True)
class SkillSpec:
    name: str
    description: str
    when_to_use: str
    steps: tuple[str, ...]
    pitfalls: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "description": self.description,
            "when_to_use": self.when_to_use,
            "steps": list(self.steps),
        }
        if self.pitfalls:
            data["pitfalls"] = list(self.pitfalls)
        return data


@dataclass(frozen=True)
class SkillUpdate:
    """``name`` is the existing skill; ``spec`` its full new content."""

    name: str
    spec: SkillSpec
    reason: str = ""


@dataclass(frozen=True)
class ReviewDecision:
    skip_reason: str = ""
    creates: tuple[SkillSpec, ...] = ()
    updates: tuple[SkillUpdate, ...] = ()
    deletions: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.creates or self.updates or self.deletions)

    def to_dict(self) -> dict[str, object]:
        """The wire shape the reviewer answers in (and that the session log records)."""
        return {
            "skip_reason": self.skip_reason,
            "skills": [s.to_dict() for s in self.creates],
            "updates": [
                {"name": u.name, "new_spec": u.spec.to_dict(), "reason": u.reason}
                for u in self.updates
            ],
            "deletions": list(self.deletions),
        }


# -- strict parsing ----------------------------------------------------------------------------


@dataclass
class _WireSpec:
    name: str = ""
    description: str = ""
    when_to_use: str = ""
    steps: list[str] | None = None
    pitfalls: list[str] | None = None


@dataclass
class _WireUpdate:
    name: str
    new_spec: _WireSpec | None = None
    reason: str = ""


@dataclass
class _WireDecision:
    skip_reason: str = ""
    skills: list[_WireSpec] = field(default_factory=list)
    updates: list[_WireUpdate] = field(default_factory=list)
    deletions: list[str] = field(default_factory=list)


def _first_object(text: str) -> str | None:
    """The first balanced ``{…}`` of ``text`` (string- and escape-aware), if any."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return text[start : index + 1]
        start = text.find("{", start + 1)
    return None


def _spec(wire: _WireSpec, where: str) -> SkillSpec | None:
    """A validated spec; None for an all-empty one (a model's placeholder), else every field."""
    name, description = wire.name.strip(), wire.description.strip()
    when = wire.when_to_use.strip()
    steps = tuple(s.strip() for s in wire.steps or [] if s.strip())
    pitfalls = tuple(p.strip() for p in wire.pitfalls or [] if p.strip())
    if not (name or description or when or steps):
        return None
    for label, value in (("name", name), ("description", description), ("when_to_use", when)):
        if not value:
            raise ReviewerError(f"{where}: field '{label}' is required")
    if not steps:
        raise ReviewerError(f"{where}: field 'steps' needs at least one step")
    return SkillSpec(name, description, when, steps, pitfalls)


def parse_decision(text: str, source: str) -> ReviewDecision:
    """The decision in a model's reply; :class:`ReviewerError` (one line) when there is none.

    Accepted wrappers: a Markdown code fence, prose around one JSON object. Nothing is
    repaired: malformed JSON is an error, so the segment is reviewed again later.
    """
    where = f"{source} (reviewer reply)"
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    body = fenced.group(1) if fenced else stripped
    candidates = [body] + ([found] if (found := _first_object(body)) and found != body else [])
    data: object = None
    for candidate in candidates:
        try:
            data = json.loads(candidate)
            break
        except json.JSONDecodeError:
            continue
    if not isinstance(data, dict):
        snippet = " ".join(stripped.split())[:80]
        raise ReviewerError(f"{where}: expected one JSON object, got {snippet!r}")
    try:
        wire = from_mapping(_WireDecision, data, where)
    except FormatError as exc:
        raise ReviewerError(str(exc)) from None
    claimed: set[str] = set()

    def claim(name: str) -> bool:
        key = canonical_name(name)
        if not key or key in claimed:
            return False
        claimed.add(key)
        return True

    deletions = tuple(d.strip() for d in wire.deletions if d.strip() and claim(d))
    updates: list[SkillUpdate] = []
    for index, update in enumerate(wire.updates):
        if update.new_spec is None or not update.name.strip() or not claim(update.name):
            continue
        spec = _spec(update.new_spec, f"{where}: updates[{index}]")
        if spec is not None:
            name = update.name.strip()
            updates.append(SkillUpdate(name, _renamed(spec, name), update.reason.strip()))
    creates = []
    for index, wire_spec in enumerate(wire.skills):
        spec = _spec(wire_spec, f"{where}: skills[{index}]")
        if spec is not None and claim(spec.name):
            creates.append(spec)
    decision = ReviewDecision(wire.skip_reason.strip(), tuple(creates), tuple(updates), deletions)
    if decision.skip_reason and not decision.empty:
        raise ReviewerError(f"{where}: a skip_reason cannot come with skills, updates or deletions")
    return decision


def _renamed(spec: SkillSpec, name: str) -> SkillSpec:
    return SkillSpec(name, spec.description, spec.when_to_use, spec.steps, spec.pitfalls)


# -- rendering ---------------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _steps_body(steps: tuple[str, ...]) -> str:
    return "\n".join(f"{n}. {_one_line(s)}" for n, s in enumerate(steps, start=1))


def _pitfalls_body(pitfalls: tuple[str, ...]) -> str:
    return "\n".join(f"- {_one_line(p)}" for p in pitfalls)


def render_new(spec: SkillSpec, folder: str) -> str:
    """A new SKILL.md for ``spec`` living in ``skills/<folder>/``."""
    front = yaml.safe_dump(
        {"name": folder, "description": _one_line(spec.description)},
        allow_unicode=True,
        sort_keys=False,
        width=2**31 - 1,
    )
    parts = [
        f"---\n{front}---\n",
        f"# {_one_line(spec.name)}\n",
        f"## When to use\n\n{spec.when_to_use.strip()}\n",
        f"## Steps\n\n{_steps_body(spec.steps)}\n",
    ]
    if spec.pitfalls:
        parts.append(f"## Pitfalls\n\n{_pitfalls_body(spec.pitfalls)}\n")
    return "\n".join(parts)


def changed_sections(before: SkillSpec, after: SkillSpec) -> frozenset[str]:
    """The sections ``after`` rewrites in a skill whose fields are ``before``.

    This is what a review candidate is *about* (its intent): the reconciler folds two candidates
    that change the same section of one skill. Whitespace inside a line does not count, and empty
    pitfalls keep the file's own, so they change nothing.
    """
    changed: set[str] = set()
    if _one_line(after.description) != _one_line(before.description):
        changed.add("description")
    if _one_line(after.when_to_use) != _one_line(before.when_to_use):
        changed.add("when_to_use")
    if [_one_line(s) for s in after.steps] != [_one_line(s) for s in before.steps]:
        changed.add("steps")
    if after.pitfalls and [_one_line(p) for p in after.pitfalls] != [
        _one_line(p) for p in before.pitfalls
    ]:
        changed.add("pitfalls")
    return frozenset(changed)


def render_update(existing: str, spec: SkillSpec) -> str:
    """``existing`` with the spec's description, when_to_use, steps and pitfalls put in.

    Only the fields the spec actually changes are rewritten, so an update that adds one pitfall
    is a one-pitfall diff; everything the spec does not name (other frontmatter keys, other
    sections) stays byte for byte.
    """
    doc = SkillDoc.parse(existing)
    changed = changed_sections(spec_of(doc, spec.name), spec)
    if "description" in changed:
        doc = doc.with_section("description", _one_line(spec.description))
    if "when_to_use" in changed:
        doc = doc.with_section("when_to_use", spec.when_to_use.strip())
    if "steps" in changed:
        doc = doc.with_section("steps", _steps_body(spec.steps))
    if "pitfalls" in changed:
        doc = doc.with_section("pitfalls", _pitfalls_body(spec.pitfalls))
    return doc.render()


def spec_of(doc: SkillDoc, fallback_name: str) -> SkillSpec:
    """The five fields of an existing skill, as far as its file has them."""
    pitfalls = tuple(
        line.lstrip("-*+ ").strip()
        for line in (doc.section("pitfalls") or "").splitlines()
        if line.strip()
    )
    return SkillSpec(
        name=doc.name or fallback_name,
        description=doc.description or "",
        when_to_use=(doc.section("when_to_use") or "").strip(),
        steps=tuple(s.text for s in doc.steps),
        pitfalls=pitfalls,
    )
