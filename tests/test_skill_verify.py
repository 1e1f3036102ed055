"""Verify score: each check passes on a well-written skill and fails on its specific flaw."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.skill import SkillDoc
from engine.evaluation.verify import CHECKS, POINTS, VerifyReport, verify_score
from tests.conftest import REAL_STYLE_FILES

GOOD = """---
name: sql-audit
description: Audits Java code for SQL injection. Use when asked whether an endpoint is injectable.
---

# SQL injection audit

Decides whether a Java endpoint is injectable.
Reads code only and does not run it.

## Steps

1. Find every query entry point with `grep -rn "executeQuery" src/`.
2. Trace each caller down to the `ServiceImpl` layer with `grep -rn "class .*ServiceImpl"`.
3. Check whether request parameters reach the SQL string; read the method with `sed -n`.
4. Write the verdict as `VERDICT: vulnerable` or `VERDICT: safe`.

## When to use

Reviews of controllers, repositories and DAO classes.

## Pitfalls

- Stopping at the interface signature hides the concatenation in the implementation.
- Prepared statements with string-built ORDER BY clauses are still injectable.
- Do not trust a comment that claims input is validated; find the validation.
"""


def _item(report: VerifyReport, check_id: str) -> tuple[bool, float, str]:
    (item,) = [i for i in report.items if i.check_id == check_id]
    return item.passed, item.points, item.detail


def test_points_add_up_to_100_and_every_check_is_reported() -> None:
    assert sum(points for _, points, _ in CHECKS) == 100
    report = verify_score(GOOD)
    assert [i.check_id for i in report.items] == [c for c, _, _ in CHECKS]
    assert report.score == 100.0
    assert report.failed == []
    assert verify_score(GOOD) == report  # deterministic


def _fails_only(text: str, check_id: str) -> str:
    report = verify_score(text)
    assert report.failed == [check_id], report.items
    passed, points, detail = _item(report, check_id)
    assert (passed, points) == (False, 0.0)
    assert report.score == 100 - POINTS[check_id]
    return detail


def test_frontmatter_valid() -> None:
    detail = _fails_only(GOOD.replace("name: sql-audit", "name: SQL_Audit"), "frontmatter_valid")
    assert "a-z, 0-9" in detail
    broken = verify_score(GOOD.replace("name: sql-audit", "name: [sql"))
    assert "frontmatter_valid" in broken.failed
    assert "invalid YAML" in _item(broken, "frontmatter_valid")[2]
    # The body is still judged when the YAML is broken.
    assert _item(broken, "pitfalls_present")[0] is True


def test_trigger_words() -> None:
    no_trigger = GOOD.replace(" Use when asked whether an endpoint is injectable.", "").replace(
        "## When to use\n\nReviews of controllers, repositories and DAO classes.\n\n", ""
    )
    detail = _fails_only(no_trigger, "trigger_words")
    assert "Use when" in detail
    # A when-to-use section (or key) is an accepted place for the triggers too.
    with_section = GOOD.replace(" Use when asked whether an endpoint is injectable.", "")
    assert _item(verify_score(with_section), "trigger_words")[0] is True


@pytest.mark.parametrize(
    "description",
    [
        "Formats tables. Use this skill whenever a CSV must be shown.",
        "Guidance for layout when building new UI.",
        "审计 SQL 注入。当用户要求审查数据访问层时使用。",
    ],
)
def test_trigger_phrases(description: str) -> None:
    doc = SkillDoc.parse(GOOD).with_frontmatter_value("description", description)
    text = doc.with_section("when_to_use", "").render()
    assert _item(verify_score(text), "trigger_words")[0] is True


def test_core_rules_early() -> None:
    preamble = "".join(f"Background paragraph {n}.\n\n" for n in range(30))
    late = GOOD.replace("## Steps\n", preamble + "## Steps\n")
    detail = _fails_only(late, "core_rules_early")
    assert "body line 69" in detail
    assert "body line 9" in _item(verify_score(GOOD), "core_rules_early")[2]


def test_core_rules_early_uses_any_numbered_list_without_a_steps_section() -> None:
    text = GOOD.replace("## Steps", "## Method")
    report = verify_score(text)
    assert _item(report, "core_rules_early")[0] is True
    assert _item(report, "steps_concrete")[0] is False


def test_no_absolute_paths() -> None:
    text = GOOD.replace("src/`.", "/home/alice/project/src/`.")
    detail = _fails_only(text, "no_absolute_paths")
    assert "line 13: /home/alice" in detail
    windows = GOOD.replace("src/`.", "C:\\Users\\alice\\src`.")
    assert _item(verify_score(windows), "no_absolute_paths")[0] is False
    for fine in ("https://example.com/home/x", "./tmp/out", "/dev/null", "/api/v1/users"):
        assert _item(verify_score(GOOD.replace("src/`.", fine + "`.")), "no_absolute_paths")[0]


def test_absolute_phrases() -> None:
    shouty = GOOD.replace(
        "- Do not trust",
        "- ALWAYS check twice. You must never skip it; it is 100% guaranteed.\n- Do not trust",
    )
    detail = _fails_only(shouty, "absolute_phrases")
    assert detail.startswith("6 absolute phrases")  # ALWAYS counts twice: it shouts
    # Inside code, the same words are not instructions.
    in_code = GOOD + "\n```bash\n# always never must always never\n```\n"
    assert _item(verify_score(in_code), "absolute_phrases")[0] is True
    # Long texts get a proportional budget.
    long_text = GOOD + ("Plain words without any absolutes at all here. " * 30 + "\n") * 5
    report = verify_score(long_text.replace("- Do not trust", "- Always and always. Never.\n- Do"))
    assert _item(report, "absolute_phrases")[0] is True


def test_pitfalls_present() -> None:
    start = GOOD.index("## Pitfalls")
    detail = _fails_only(GOOD[:start].rstrip("\n") + "\n", "pitfalls_present")
    assert "no pitfalls section" in detail
    empty = SkillDoc.parse(GOOD).with_section("pitfalls", "").render()
    assert _item(verify_score(empty), "pitfalls_present") == (
        False,
        0.0,
        "the pitfalls section is empty",
    )
    gotchas = GOOD.replace("## Pitfalls", "## Gotchas")
    assert _item(verify_score(gotchas), "pitfalls_present")[0] is True


def test_steps_concrete() -> None:
    vague = SkillDoc.parse(GOOD).with_section(
        "steps", "1. Look around.\n2. Think hard.\n3. Check with `grep`.\n4. Decide."
    )
    detail = _fails_only(vague.render(), "steps_concrete")
    assert detail.startswith("1/4 steps")
    half = SkillDoc.parse(GOOD).with_section("steps", "1. Run `make`.\n2. Read the output.")
    assert _item(verify_score(half.render()), "steps_concrete")[0] is True


def test_reasonable_length() -> None:
    short = "---\nname: tiny\ndescription: Use when tiny.\n---\n\n## Steps\n\n1. `a`\n"
    report = verify_score(short)
    passed, _, detail = _item(report, "reasonable_length")
    assert not passed and detail.startswith("2 non-blank body lines")
    huge = GOOD + "".join(f"Note {n}.\n" for n in range(500))
    assert _fails_only(huge, "reasonable_length").startswith("514 non-blank body lines")


def test_report_to_dict_lists_every_check_with_max_points() -> None:
    data = verify_score(GOOD.replace("## Pitfalls", "## Notes")).to_dict()
    assert data["score"] == 90.0
    assert {i["check_id"]: (i["points"], i["max_points"]) for i in data["items"]}[
        "pitfalls_present"
    ] == (0.0, 10)


def test_real_skills_score_in_range() -> None:
    for path in REAL_STYLE_FILES:
        report = verify_score(path.read_bytes().decode("utf-8"))
        assert 0 <= report.score <= 100
        assert _item(report, "frontmatter_valid")[0] is True, path


def test_next_steps_bullets_are_not_the_skills_steps() -> None:
    only_next = (
        "---\nname: x\ndescription: Does x. Use when asked for x.\n---\n\n# X\n\nDo x.\n\n"
        "## Next Steps\n\n- Offer `git push`.\n- Offer `make test`.\n"
    )
    item = next(i for i in verify_score(only_next).items if i.check_id == "steps_concrete")
    assert not item.passed and item.detail == "no steps section with list items"
    text = Path(__file__).parent / "data" / "lint" / "clean" / "review-changes" / "SKILL.md"
    doc = SkillDoc.parse(text.read_text("utf-8"))
    assert [s.number for s in doc.steps] == [1, 2, 3, 4, 5]
    assert not any("Offer" in s.text for s in doc.steps)
