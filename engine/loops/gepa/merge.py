"""GEPA's merge proposal: one candidate that carries the lessons of two Pareto-front lineages.

Each reflective round teaches a lineage what its own minibatch failed on, so after a few rounds
the pool holds candidates that each fixed different families (one learnt a PHP query sink, an
other the guard of a safe loader) and none of them holds all of it. GEPA's answer is the merge:
take two candidates on the Pareto front, neither an ancestor of the other, and build the child
that keeps what each of them changed since their common ancestor (the reference takes, per
component, the text of the descendant that changed it). Our components are sections of prose
that both descendants usually edit, so the merge works one level finer, on the section's
items (its lines; numbered steps without their numbers): every change the partner made since
the ancestor — a step or a pitfall added, a step's command widened — is replayed on the parent,
unless the parent already has it or no longer holds the lines it changed (then the parent's
own text stands, as the reference keeps the better-scoring descendant's). A merged child is
screened and validated like any other child.

Pure functions over section texts and pool records; :class:`engine.loops.gepa.adapter.SkillAdapter`
schedules merges (after a kept reflective child, as the reference does) and records them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.loops.gepa.pareto import Table, mean_score, pruned_fronts

Sections = Mapping[str, str]
MAX_MERGES = 5  # merge attempts a run makes at most (the reference's max_merge_invocations)
_NUMBER = re.compile(r"^(\s*)\d+([.)])\s+")
# The steps section keeps its numbering; the merged list is renumbered from one.
_NUMBERED = ("steps",)


def _items(text: str, numbered: bool) -> list[str]:
    lines = [ln.rstrip() for ln in text.strip("\n").splitlines()]
    return [_NUMBER.sub("", ln) if numbered else ln for ln in lines if ln.strip()]


def _joined(items: Sequence[str], numbered: bool) -> str:
    if not numbered:
        return "\n".join(items)
    return "\n".join(f"{n}. {item}" for n, item in enumerate(items, start=1))


def merge_section(ancestor: str, parent: str, partner: str, *, numbered: bool) -> str:
    """``parent`` with every change ``partner`` made to ``ancestor`` replayed on it (items)."""
    base, mine, theirs = (_items(t, numbered) for t in (ancestor, parent, partner))
    merged = list(mine)
    matcher = difflib.SequenceMatcher(a=base, b=theirs, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old, new = base[i1:i2], [x for x in theirs[j1:j2] if x not in merged]
        if old:
            at = _run_at(merged, old)
            if at is None:
                continue  # the parent changed those items too: its own text stands
            merged[at : at + len(old)] = new
        elif new:
            # An addition goes where the partner put it: before the ancestor's next item (a
            # closing confirm step stays last), at the end when it came last, so the parent's
            # own additions stay first, else after the ancestor's previous item.
            after = base[i1] if i1 < len(base) else None
            before = base[i1 - 1] if i1 > 0 else None
            if after is not None and after in merged:
                at = merged.index(after)
            elif after is None or before not in merged:
                at = len(merged)
            else:
                at = merged.index(before) + 1
            merged[at:at] = new
    return _joined(merged, numbered)


def _run_at(items: Sequence[str], run: Sequence[str]) -> int | None:
    for at in range(len(items) - len(run) + 1):
        if list(items[at : at + len(run)]) == list(run):
            return at
    return None


def merge_sections(ancestor: Sections, parent: Sections, partner: Sections) -> dict[str, str]:
    """The merged candidate: each section of ``parent`` with ``partner``'s changes replayed.

    A one-paragraph description is no list of items: the partner's text is taken only where the
    parent left the ancestor's untouched (the reference's per-component rule)."""
    merged = dict(parent)
    for name, text in parent.items():
        if name == "description":
            if text == ancestor.get(name, "") and partner.get(name, text) != text:
                merged[name] = partner[name]
            continue
        mine = merge_section(
            ancestor.get(name, ""), text, partner.get(name, ""), numbered=name in _NUMBERED
        )
        if _items(mine, False) != _items(text, False):
            merged[name] = mine
    return merged


def lineage(index: int, parents: Sequence[int | None]) -> list[int]:
    """``index`` and its ancestors, nearest first (pool indices; the seed has no parent)."""
    chain: list[int] = []
    at: int | None = index
    while at is not None and at not in chain:
        chain.append(at)
        at = parents[at]
    return chain


@dataclass(frozen=True)
class MergePlan:
    """Which pool member to merge into the parent, and from which common ancestor."""

    partner: int
    ancestor: int
    sections: dict[str, str]


def plan_merge(
    parent: int,
    members: Sequence[Sections],
    parents: Sequence[int | None],
    table: Table,
    cases: Sequence[str],
    tried: set[tuple[int, int]],
) -> MergePlan | None:
    """The partner for ``parent``: a member on the pruned Pareto front, neither its ancestor
    nor its descendant, whose merge changes the parent — the one leading on most validation
    cases the parent does not lead on (then the higher mean, then the earlier); None if none.

    ``tried`` holds the (parent, partner) pairs merged before; they are not tried again."""
    fronts = pruned_fronts(table, cases)
    mine = lineage(parent, parents)
    own = {c for c, front in fronts.items() if parent in front}
    best: tuple[tuple[int, float, int], MergePlan] | None = None
    for other in sorted(set().union(*fronts.values())):
        theirs = lineage(other, parents)
        if other in mine or parent in theirs or (parent, other) in tried:
            continue
        ancestor = next(a for a in mine if a in theirs)
        merged = merge_sections(members[ancestor], members[parent], members[other])
        if merged == dict(members[parent]):
            continue
        leads = sum(1 for c, front in fronts.items() if other in front and c not in own)
        key = (leads, mean_score(table[other], cases), -other)
        if best is None or key > best[0]:
            best = (key, MergePlan(other, ancestor, merged))
    return None if best is None else best[1]


__all__ = ["MAX_MERGES", "MergePlan", "lineage", "merge_section", "merge_sections", "plan_merge"]
