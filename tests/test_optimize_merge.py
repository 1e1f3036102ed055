"""GEPA's merge proposal on hand-made sections and pools: what a merged child keeps of each
lineage, which pool member it takes as partner, and the screen it has to pass."""

from __future__ import annotations

import pytest

from engine.loops.gepa.merge import lineage, merge_section, merge_sections, plan_merge
from engine.loops.gepa.pareto import merge_keeps

SEED_STEPS = '1. Read it: `read <file>`.\n2. Flag SQL: `grep -nE "execute\\(" *.py`\n3. Confirm.'
SEED = {
    "steps": SEED_STEPS,
    "pitfalls": "- `?` placeholders — not a finding.",
    "when_to_use": "- An audit.",
    "description": "Audit a file.",
}


def with_(**changes: str) -> dict[str, str]:
    return {**SEED, **changes}


def test_a_step_the_partner_added_is_replayed_before_the_closing_step() -> None:
    parent = SEED_STEPS.replace("3. Confirm.", "3. Flag query sinks: `grep ->query(`\n4. Confirm.")
    partner = SEED_STEPS.replace("3. Confirm.", "3. Flag os.Open: `grep os.Open(`\n4. Confirm.")
    merged = merge_section(SEED_STEPS, parent, partner, numbered=True)
    assert merged.splitlines()[2:] == [
        "3. Flag query sinks: `grep ->query(`",
        "4. Flag os.Open: `grep os.Open(`",
        "5. Confirm.",
    ]


def test_a_changed_step_is_replayed_only_where_the_parent_kept_the_original() -> None:
    widened = SEED_STEPS.replace("*.py", "*.py *.php")
    assert merge_section(SEED_STEPS, SEED_STEPS, widened, numbered=True) == widened
    # the parent rewrote that step itself: its own text stands
    own = SEED_STEPS.replace("*.py", "*.py *.go")
    assert merge_section(SEED_STEPS, own, widened, numbered=True) == own


def test_merged_sections_take_each_lineages_items_and_one_description() -> None:
    parent = with_(pitfalls=SEED["pitfalls"] + "\n- `shlex.quote(` — not a finding.")
    partner = with_(
        pitfalls=SEED["pitfalls"] + "\n- `usedforsecurity=False` — not a finding.",
        description="Audit a file. Also for tasks that mention checks.",
    )
    merged = merge_sections(SEED, parent, partner)
    assert merged["pitfalls"].splitlines() == [
        "- `?` placeholders — not a finding.",
        "- `shlex.quote(` — not a finding.",
        "- `usedforsecurity=False` — not a finding.",
    ]
    assert merged["description"] == partner["description"]  # the parent left it as it was
    assert merged["steps"] == SEED["steps"] and merged["when_to_use"] == SEED["when_to_use"]
    both = merge_sections(SEED, with_(description="Audit one file."), partner)
    assert both["description"] == "Audit one file."


def test_the_partner_is_a_front_member_of_another_lineage_that_changes_the_parent() -> None:
    cases = ["a", "b", "c"]
    members = [
        SEED,
        with_(pitfalls=SEED["pitfalls"] + "\n- `shlex.quote(` — not a finding."),  # 1: seed's
        with_(when_to_use="- An audit.\n- Run every step."),  # 2: seed's
        with_(when_to_use="- An audit.\n- Run every step.", description="Audit it."),  # 3: 2's
    ]
    parents: list[int | None] = [None, 0, 0, 2]
    table = [
        {"a": 0.0, "b": 0.0, "c": 0.0},
        {"a": 1.0, "b": 0.0, "c": 0.0},
        {"a": 0.0, "b": 1.0, "c": 0.0},
        {"a": 0.0, "b": 1.0, "c": 1.0},
    ]
    assert lineage(3, parents) == [3, 2, 0]
    plan = plan_merge(1, members, parents, table, cases, set())
    assert plan is not None and (plan.partner, plan.ancestor) == (3, 0)
    assert plan.sections["pitfalls"] == members[1]["pitfalls"]
    assert plan.sections["when_to_use"] == members[3]["when_to_use"]
    # a descendant's or an ancestor's changes are no other lineage's; a tried pair is not redone
    assert plan_merge(2, members, parents, table, cases, set()).partner == 1  # type: ignore[union-attr]
    assert plan_merge(1, members, parents, table, cases, {(1, 3)}) is None
    assert plan_merge(0, members, parents, table, cases, set()) is None


@pytest.mark.parametrize(
    ("parent", "child", "kept"),
    [
        ([1, 0, 1], [1, 0, 1], True),  # a tie keeps a merge (a reflective child needs a gain)
        ([1, 0, 1], [0, 1, 1], True),
        ([1, 1, 0], [1, 0, 0], False),
    ],
)
def test_a_merged_child_is_kept_unless_it_scores_below_its_parent(
    parent: list[float], child: list[float], kept: bool
) -> None:
    assert merge_keeps(parent, child) is kept
