"""The reconciler's four rules, and the strict parsing of the reviewer's decision."""

from __future__ import annotations

import json

import pytest

from engine.core.skill import SkillDoc
from engine.loops.online import ReviewDecision, ReviewerError, SkillSpec, parse_decision, reconcile
from engine.loops.online.library import ExistingSkill
from engine.loops.online.reconciler import is_variant_suffix
from engine.loops.online.spec import SkillUpdate, render_new, render_update


def existing(name: str, folder: str | None = None, *, pinned: bool = False) -> ExistingSkill:
    return ExistingSkill(folder or name.lower().replace(" ", "-"), name, "", "", pinned, "")


def spec(name: str, *, when: str = "When it applies.", steps: tuple[str, ...] = ()) -> SkillSpec:
    return SkillSpec(name, "What it does.", when, steps or (f"{name} step one.", "Step two."))


def creates(*specs: SkillSpec) -> ReviewDecision:
    return ReviewDecision(creates=specs)


@pytest.mark.parametrize(
    ("rest", "expected"),
    [
        (" - 3 cities", True),
        ("(scope)", True),
        (".v2", True),
        (" V10", True),
        ("v3", True),
        (" name", False),
        ("vfoo", False),
        ("Ext", False),
        ("", False),
    ],
)
def test_variant_suffixes(rest: str, expected: bool) -> None:
    assert is_variant_suffix(rest) is expected


def test_count_sibling_of_a_generic_skill_becomes_its_update() -> None:
    library = [existing("Weather - Multi-City", "weather-multi-city")]
    changes, events = reconcile(creates(spec("Weather - 3 Cities")), library)
    [change] = changes
    assert (change.operation, change.skill, change.proposed_as) == (
        "update",
        "weather-multi-city",
        "Weather - 3 Cities",
    )
    assert change.spec is not None and change.spec.name == "Weather - Multi-City"
    assert [e.kind for e in events] == ["rewrite_quantified_sibling_to_update"]


def test_a_count_specific_sibling_is_no_generic_parent() -> None:
    """Rule 3 needs a generic parent; two counted names still merge by word overlap (rule 4)."""
    changes, events = reconcile(
        creates(spec("Weather - 5 Cities")), [existing("Weather - 3 Cities")]
    )
    assert [(c.operation, c.skill) for c in changes] == [("update", "weather---3-cities")]
    assert [e.kind for e in events] == ["rewrite_word_overlap_to_update"]
    changes, events = reconcile(
        creates(spec("Forecast - 5 Cities")), [existing("Weather - 3 Cities")]
    )
    assert [(c.operation, c.skill) for c in changes] == [("create", "forecast-5-cities")]


def test_name_superset_and_exact_names_become_updates() -> None:
    library = [existing("Foo Workflow"), existing("weather-multi-city")]
    changes, _ = reconcile(
        creates(
            spec("Foo Workflow - 3 Cities"),
            spec("Foo Workflow Extended"),
            spec("Weather - Multi-City"),  # the folder's name, spelled as a title
        ),
        library,
    )
    assert [(c.operation, c.skill) for c in changes] == [
        ("update", "foo-workflow"),
        ("update", "weather-multi-city"),
        ("create", "foo-workflow-extended"),
    ]


def test_three_variants_of_one_parent_give_one_update() -> None:
    changes, events = reconcile(
        creates(spec("Foo Workflow - A"), spec("Foo Workflow (B)"), spec("Foo Workflow v2")),
        [existing("Foo Workflow")],
    )
    assert [(c.operation, c.skill) for c in changes] == [("update", "foo-workflow")]
    assert [e.kind for e in events] == [
        "rewrite_superset_to_update",
        "drop_intra_batch_duplicate",
        "drop_intra_batch_duplicate",
    ]


def test_word_overlap() -> None:
    library = [existing("Geopolitical Market Analysis"), existing("Market Analysis")]
    changes, events = reconcile(
        creates(spec("Geopolitical Market Impact Analysis"), spec("Market Data Fetcher")),
        library,
    )
    assert [(c.operation, c.skill) for c in changes] == [
        ("update", "geopolitical-market-analysis"),
        ("create", "market-data-fetcher"),
    ]
    assert events[0].kind == "rewrite_word_overlap_to_update"
    assert "75% word overlap" in events[0].reason


def test_intra_batch_duplicates_by_name_or_shape() -> None:
    steps = ("Fetch it.", "Check it.")
    changes, events = reconcile(
        creates(
            spec("Recipe Builder", steps=steps),
            spec("recipe   builder"),
            spec("Dish Planner", steps=steps),
        ),
        [],
    )
    assert [c.skill for c in changes] == ["recipe-builder"]
    assert [e.kind for e in events] == ["drop_intra_batch_duplicate"] * 2


def test_explicit_update_and_delete_win_over_a_rewrite() -> None:
    library = [existing("Weather - Multi-City"), existing("Foo Workflow")]
    decision = ReviewDecision(
        creates=(spec("Weather - 3 Cities"), spec("Foo Workflow - EU")),
        updates=(SkillUpdate("Weather - Multi-City", spec("Weather - Multi-City")),),
        deletions=("Foo Workflow",),
    )
    changes, events = reconcile(decision, library)
    assert [(c.operation, c.skill) for c in changes] == [
        ("delete", "foo-workflow"),
        ("update", "weather---multi-city"),
        ("create", "foo-workflow-eu"),  # delete-then-create stays explicit
    ]
    assert [e.kind for e in events] == ["drop_conflicts_with_update"]


def test_unknown_and_pinned_targets_are_skipped() -> None:
    library = [existing("Weather - Multi-City", "weather-multi-city", pinned=True)]
    decision = ReviewDecision(
        creates=(spec("Weather - 3 Cities"),),
        updates=(SkillUpdate("Nope", spec("Nope")),),
        deletions=("weather-multi-city", "ghost"),
    )
    changes, events = reconcile(decision, library)
    assert changes == []
    assert sorted(e.kind for e in events) == [
        "skip_pinned",
        "skip_pinned",
        "skip_unknown_delete",
        "skip_unknown_update",
    ]


# -- the decision reply ------------------------------------------------------------------------


def _spec(name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "description": "d", "when_to_use": "w", "steps": ["a", "b"]} | extra


def test_reply_wrappers_and_name_priority() -> None:
    body = {
        "skip_reason": "",
        "skills": [_spec("Foo"), _spec("Bar"), _spec("bar ")],
        "updates": [{"name": "Foo", "new_spec": _spec("other"), "reason": "r"}],
        "deletions": ["FOO"],
    }
    for text in (
        json.dumps(body),
        "```json\n" + json.dumps(body, indent=2) + "\n```",
        "Here is the decision:\n" + json.dumps(body) + "\nThanks.",
    ):
        decision = parse_decision(text, "s.jsonl")
        assert decision.deletions == ("FOO",)
        assert decision.updates == ()  # "Foo" is claimed by the deletion first
        assert [s.name for s in decision.creates] == ["Bar"]


def test_update_spec_takes_the_update_name_and_placeholders_drop() -> None:
    body = {
        "updates": [{"name": "Weather", "new_spec": _spec("Other"), "reason": "why"}],
        "skills": [{"name": "", "description": "", "when_to_use": "", "steps": [" "]}],
    }
    decision = parse_decision(json.dumps(body), "s.jsonl")
    assert decision.creates == ()
    [update] = decision.updates
    assert (update.name, update.spec.name, update.reason) == ("Weather", "Weather", "why")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("not json at all", "expected one JSON object"),
        ("[1, 2]", "expected one JSON object"),
        (json.dumps({"skills": [_spec("X", when_to_use="")]}), "'when_to_use' is required"),
        (json.dumps({"skills": [_spec("X", steps=[])]}), "at least one step"),
        (json.dumps({"skills": [_spec("X", tags=["a"])]}), "skills[0].tags': unknown key"),
        (json.dumps({"skills": "X"}), "field 'skills': expected a list"),
        (json.dumps({"skip_reason": "no", "deletions": ["X"]}), "cannot come with"),
    ],
)
def test_malformed_replies_are_errors(body: str, message: str) -> None:
    with pytest.raises(ReviewerError, match=r"s\.jsonl \(reviewer reply\)") as info:
        parse_decision(body, "s.jsonl")
    assert message in str(info.value)


def test_rendering_a_create_and_a_minimal_update() -> None:
    new = SkillSpec(
        "Weather - Multi-City",
        "Weather: several cities in one report.",
        "A report covers several cities.",
        ("Geocode each city.", "Fetch each forecast."),
        ("One batched request times out as a whole.",),
    )
    doc = SkillDoc.parse(render_new(new, "weather-multi-city"))
    assert doc.name == "weather-multi-city"
    assert doc.description == "Weather: several cities in one report."
    assert [s.text for s in doc.steps] == list(new.steps)
    assert "One batched request" in (doc.section("pitfalls") or "")

    original = render_new(new, "weather-multi-city")
    more = SkillSpec(new.name, new.description, new.when_to_use, new.steps, (*new.pitfalls, "X."))
    updated = render_update(original, more)
    assert updated.startswith(original.rstrip("\n"))
    assert updated[len(original.rstrip("\n")) :] == "\n- X.\n"
    assert render_update(original, new) == original
