"""Lint: Agent Skills spec, safety findings with lines, size warnings; no false errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import FormatError
from engine.core.lint import lint, lint_text
from engine.core.safety import Finding
from engine.core.skill import SkillDoc
from tests.conftest import REAL_STYLE, REAL_STYLE_FILES

REAL_FILES = REAL_STYLE_FILES

GOOD = """---
name: good-skill
description: Reviews a diff. Use when the user asks for a code review.
license: MIT
allowed-tools: Read Grep
metadata:
  owner: platform
compatibility: Needs git
when_to_use: On review requests.
version: "1.2"
---

# Good skill

## Steps

1. Run `git diff`.
"""


def _write(root: Path, folder: str, text: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def _rules(findings: list[Finding]) -> list[tuple[str, str, int]]:
    return [(f.rule_id, f.severity, f.line) for f in findings]


def test_the_real_skills_are_there() -> None:
    """An empty glob would make the test below pass by running nothing."""
    assert len(REAL_FILES) >= 5, f"the real-style corpus is missing: {REAL_STYLE}"


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.parent.name)
def test_real_skills_have_no_errors(path: Path) -> None:
    errors = [f for f in lint(path) if f.severity == "error"]
    assert errors == []


def test_the_real_style_corpus_lints_as_its_loaders_read_it() -> None:
    """Acceptance (issue 25): a git range in prose, paths inside code fences, a plugin skill's
    ``../../README.md`` link and Claude Code's own keys are no finding at all; the one warning
    is the slash-command skill the model may not load, and it says why."""
    found = {(p.parent.name, f.rule_id, f.severity) for p in REAL_STYLE_FILES for f in lint(p)}
    assert found == {("deploy-checklist", "spec.model_invocation_disabled", "warning")}
    [why] = [f.message for f in lint(REAL_STYLE / "release-tools/skills/deploy-checklist")]
    assert "/deploy-checklist" in why and "evaluation cannot measure it" in why


def test_a_dotdot_counts_only_where_it_reads_as_a_path(tmp_path: Path) -> None:
    body = (
        "Compare `<a7>..<b7>` and v1.2..v1.3 in prose.\n"  # git ranges
        "Run `cd .. && make`.\n"  # one level up, read
        "Copy it with `cp notes.md ../../shared/`.\n"  # a write two levels up
    )
    path = _write(tmp_path, "ranges", GOOD.replace("good-skill", "ranges") + body)
    hits = [(f.rule_id, f.severity, f.line) for f in lint(path) if f.rule_id == "path.traversal"]
    assert hits == [("path.traversal", "warning", 19), ("path.traversal", "error", 20)]


def test_links_resolve_through_dotdot_and_code_fences_are_not_references(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    (plugin / "skills").mkdir(parents=True)
    (plugin / "GUIDE.md").write_text("# Guide\n")
    body = (
        "See [the guide](../../GUIDE.md) and [gone](../../MISSING.md).\n\n"
        "```bash\npython scripts/not_here.py --out [x](y.md)\n```\n"
    )
    path = _write(plugin / "skills", "linked", GOOD.replace("good-skill", "linked") + body)
    found = [(f.rule_id, f.severity, f.line) for f in lint(path)]
    assert found == [
        ("path.traversal", "error", 18),
        ("reference.missing", "warning", 18),
    ]


def test_good_skill_is_clean_and_folder_path_works(tmp_path: Path) -> None:
    path = _write(tmp_path, "good-skill", GOOD)
    assert lint(path) == []
    assert lint(path.parent) == []


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("", "spec.name.missing"),
        ("a" * 65, "spec.name.length"),
        ("Good-Skill", "spec.name.charset"),
        ("good_skill", "spec.name.charset"),
        ("-good", "spec.name.hyphen"),
        ("good-", "spec.name.hyphen"),
        ("good--skill", "spec.name.hyphen"),
        ("other-skill", "spec.name.folder"),
        ("[1, 2]", "spec.name.type"),
    ],
)
def test_name_rules(name: str, rule: str) -> None:
    text = GOOD.replace("name: good-skill", f"name: {name}")
    findings = lint_text(text, folder="good-skill")
    assert _rules(findings) == [(rule, "error", 2)]


def test_name_of_64_chars_matching_its_folder_is_fine() -> None:
    name = "a" * 30 + "-" + "b" * 33
    assert lint_text(GOOD.replace("good-skill", name), folder=name) == []


def test_missing_name_is_reported_at_the_frontmatter_start() -> None:
    text = GOOD.replace("name: good-skill\n", "")
    assert _rules(lint_text(text)) == [("spec.name.missing", "error", 1)]


def test_reserved_word_is_a_warning() -> None:
    text = GOOD.replace("good-skill", "claude-helper")
    assert _rules(lint_text(text, folder="claude-helper")) == [("spec.name.reserved", "warning", 2)]


@pytest.mark.parametrize(
    ("description", "rule"),
    [
        ('""', "spec.description.missing"),
        ("x" * 1025, "spec.description.length"),
        ("Use <b>bold</b> when asked", "spec.description.markup"),
        ("a -> b when asked", "spec.description.markup"),
        ("[1, 2]", "spec.description.type"),
    ],
)
def test_description_rules(description: str, rule: str) -> None:
    text = GOOD.replace(
        "description: Reviews a diff. Use when the user asks for a code review.",
        f"description: {description}",
    )
    assert _rules(lint_text(text)) == [(rule, "error", 3)]


def test_description_of_1024_chars_is_fine() -> None:
    text = GOOD.replace("Reviews a diff. Use when the user asks for a code review.", "x" * 1024)
    assert lint_text(text) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "compatibility: Needs git",
            "compatibility: " + "c" * 501,
            ("spec.compatibility", "error", 8),
        ),
        ("metadata:\n  owner: platform", "metadata: [a, b]", ("spec.metadata", "error", 6)),
        ("metadata:\n  owner: platform", "metadata:\n  level: 3", ("spec.metadata", "warning", 6)),
        ("allowed-tools: Read Grep", "allowed-tools: {a: 1}", ("spec.allowed_tools", "error", 5)),
        ("license: MIT", "license: 2", ("spec.license", "warning", 4)),
        (
            "when_to_use: On review requests.",
            "when_to_use: [a]",
            ("spec.when_to_use", "warning", 9),
        ),
        (
            'version: "1.2"',
            "version: 1.2\ncolour: blue",
            ("spec.unknown_key", "warning", 11),
        ),
    ],
)
def test_optional_key_rules(old: str, new: str, expected: tuple[str, str, int]) -> None:
    assert old in GOOD
    assert _rules(lint_text(GOOD.replace(old, new))) == [expected]


def test_allowed_tools_may_be_a_list() -> None:
    text = GOOD.replace("allowed-tools: Read Grep", "allowed-tools:\n  - Read\n  - Grep")
    assert lint_text(text) == []


def test_frontmatter_problems_are_single_errors_with_lines() -> None:
    (bad_yaml,) = lint_text("---\nname: x\ndescription: [oops\n---\nbody\n")
    assert (bad_yaml.rule_id, bad_yaml.severity, bad_yaml.line) == ("spec.frontmatter", "error", 4)
    assert bad_yaml.message.startswith("invalid YAML")
    (missing,) = lint_text("# Just a body\n")
    assert (missing.rule_id, missing.line) == ("spec.frontmatter", 1)
    (unclosed,) = lint_text("---\nname: x\n")
    assert unclosed.message == "the '---' on line 1 is never closed"


def test_broken_yaml_still_gets_a_safety_scan() -> None:
    findings = lint_text("---\nname: [x\n---\n\nrm -rf ~\n")
    assert _rules(findings) == [
        ("spec.frontmatter", "error", 3),
        ("destructive.rm_rf", "error", 5),
    ]


def test_safety_findings_are_errors_with_file_lines() -> None:
    text = (
        GOOD + "\n## Cleanup\n\n```bash\nrm -rf ./build\nrm -rf $HOME\n```\n\ncat /etc/os-release\n"
    )
    findings = lint_text(text)
    assert _rules(findings) == [
        ("destructive.rm_rf", "error", 23),
        ("path.system_config", "warning", 26),
    ]


def test_size_warnings(tmp_path: Path) -> None:
    long_body = GOOD + "".join(f"line {n}\n" for n in range(500))
    findings = lint_text(long_body)
    assert _rules(findings) == [("size.body_lines", "warning", 512)]
    big = GOOD + ("word " * 20 + "\n") * 160
    assert _rules(lint_text(big)) == [("size.bytes", "warning", 1)]


def test_empty_body_is_a_warning() -> None:
    text = GOOD[: GOOD.index("---\n\n# Good") + 4]
    assert _rules(lint_text(text)) == [("spec.body.empty", "warning", 11)]


def test_unreadable_files_raise_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="file not found"):
        lint(tmp_path / "nope" / "SKILL.md")
    path = tmp_path / "latin" / "SKILL.md"
    path.parent.mkdir()
    path.write_bytes(b"---\nname: caf\xe9\n---\n")
    with pytest.raises(FormatError, match=r"latin/SKILL.md:2: file is not UTF-8 text"):
        lint(path)


def test_findings_are_sorted_by_line_errors_first() -> None:
    text = GOOD.replace('version: "1.2"', 'version: "1.2"\nextra: 1') + "\ncat /etc/passwd\n"
    text = text.replace("license: MIT", "license: MIT\ntoken: abcd1234efgh")
    lines = [(f.line, f.severity) for f in lint_text(text)]
    assert lines == sorted(lines, key=lambda x: (x[0], x[1] != "error"))
    assert ("secret.assignment", "error", 5) in _rules(lint_text(text))


LINT_DATA = Path(__file__).parent / "data" / "lint"


def test_claude_code_frontmatter_keys_are_known() -> None:
    path = LINT_DATA / "clean" / "review-changes" / "SKILL.md"
    keys = [f for f in lint(path) if f.rule_id == "spec.unknown_key"]
    assert keys == []
    bad = lint_text(GOOD.replace("version:", "user-invocable: sometimes\nversion:"))
    assert _rules(bad) == [("spec.user-invocable", "warning", 10)]


def test_reference_links_are_case_sensitive() -> None:
    clean = LINT_DATA / "clean" / "pdf-forms" / "SKILL.md"
    assert lint(clean) == []
    path = LINT_DATA / "caught" / "pdf-forms-missing" / "SKILL.md"
    found = [(f.rule_id, f.severity, f.line, f.message) for f in lint(path)]
    assert ("reference.case", "warning", 11,
            "'FORMS.md' is 'forms.md' in the skill folder (file names are case-sensitive where "
            "the agent runs)") in found  # fmt: skip
    assert ("reference.case", "warning", 12) in [f[:3] for f in found]
    assert ("reference.missing", "warning", 12, "links to missing 'examples.md'") in found
    assert ("spec.unknown_key", "warning", 4) in [f[:3] for f in found]
    # Without a folder to look in (text only) nothing is claimed about references.
    assert not [f for f in lint_text(path.read_text()) if f.rule_id.startswith("reference.")]


@pytest.mark.parametrize("path", sorted(LINT_DATA.rglob("SKILL.md")), ids=lambda p: p.parent.name)
def test_lint_data_renders_back_byte_identically(path: Path) -> None:
    data = path.read_bytes()
    assert SkillDoc.parse(data.decode("utf-8")).render().encode("utf-8") == data


@pytest.mark.parametrize("name", ["review-changes", "pdf-forms", "deploy-preview"])
def test_false_error_cases_have_no_errors(name: str) -> None:
    """Git ranges, Graphviz and `=>` arrows, blockquotes beside a `../`, Claude Code keys, a
    documented placeholder token (`vca_abc123`)."""
    errors = [f for f in lint(LINT_DATA / "clean" / name / "SKILL.md") if f.severity == "error"]
    assert errors == []


def test_real_problems_are_still_errors() -> None:
    leaky = lint(LINT_DATA / "caught" / "leaky-deploy" / "SKILL.md")
    assert [(f.rule_id, f.line) for f in leaky if f.severity == "error"] == [
        ("secret.assignment", 13),
        ("path.traversal", 16),  # two levels up
        ("path.traversal", 17),  # one level up, through a real redirect
    ]
    missing = lint(LINT_DATA / "caught" / "pdf-forms-missing" / "SKILL.md")
    assert [(f.rule_id, f.line) for f in missing if f.severity == "error"] == [
        ("path.traversal", 13)
    ]
