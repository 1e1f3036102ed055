"""SKILL.md model: byte-identical round trips, sections, steps and surgical edits."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from engine.core.errors import FormatError
from engine.core.skill import SkillDoc, canonical_section, frontmatter_error, read_skill_text
from tests.conftest import REAL_STYLE, REAL_STYLE_FILES

CORPUS = Path(__file__).parent / "data" / "skills"
REAL_FILES = REAL_STYLE_FILES
CORPUS_FILES = sorted(CORPUS.glob("*/SKILL.md"))


def test_fixture_sets_are_present() -> None:
    assert len(REAL_FILES) >= 5
    assert len(CORPUS_FILES) >= 14
    # The corpus must not have been normalised by git (tests/data/skills/.gitattributes: -text).
    assert b"\r\n" in (CORPUS / "crlf-endings" / "SKILL.md").read_bytes()
    assert (CORPUS / "bom-start" / "SKILL.md").read_bytes().startswith(b"\xef\xbb\xbf---")
    assert b"\r3." in (CORPUS / "mixed-eol" / "SKILL.md").read_bytes()


@pytest.mark.parametrize("path", REAL_FILES + CORPUS_FILES, ids=lambda p: p.parent.name)
def test_render_is_byte_identical(path: Path) -> None:
    text = read_skill_text(path)
    doc = SkillDoc.parse(text, path)
    assert doc.render().encode("utf-8") == path.read_bytes()


@pytest.mark.parametrize("path", REAL_FILES + CORPUS_FILES, ids=lambda p: p.parent.name)
def test_rewriting_a_section_with_its_own_text_changes_nothing(path: Path) -> None:
    doc = SkillDoc.load(path)
    for name in ("when_to_use", "steps", "pitfalls"):
        text = doc.section(name)
        if text:
            assert doc.with_section(name, text).render() == doc.render(), name


# ------------------------------------------------------------------ generated documents

_TITLES = [
    "When to use",
    "When to Use This Skill",
    "Usage",
    "Steps",
    "Procedure",
    "Workflow",
    "Instructions",
    "Pitfalls",
    "Gotchas",
    "Common mistakes",
    "Overview",
    "Notes",
    "Reference",
]
_BLOCKS = [
    "Plain prose with trailing spaces.   ",
    "Prose with\ttabs and non-ASCII: naïve — 步骤 🚀",
    "1. Run `make test`\n2. Read `out.log`\n   continued line",
    "1) first\n2) second",
    "- bullet `a`\n- bullet `b`\n  - nested",
    "* star\n+ plus",
    "```yaml\n---\nname: fake\n# not a heading\n---\n```",
    "~~~\n## Pitfalls\n~~~",
    "````\n```\n# inside\n```\n````",
    "---",
    "#hashtag line",
    "",
    "   ",
]
_FRONTMATTERS = [
    None,
    "name: gen\ndescription: Use when generating.",
    "# comment\ndescription: >-\n  folded\n  text\nname: 'gen'\nmetadata:\n  k: v",
    'name: "gen"\ndescription: "quoted: yes"\nallowed-tools: [Read, Bash]',
    "",
]


def _generated(rng: random.Random) -> str:
    eols = rng.choice([["\n"], ["\r\n"], ["\n", "\r\n"], ["\n", "\r\n", "\r"]])
    parts: list[str] = []
    fm = rng.choice(_FRONTMATTERS)
    if fm is not None:
        parts += ["---", *fm.split("\n"), "---"] if fm else ["---", "---"]
    else:
        parts.append("# Title")  # a leading '---' would open a frontmatter
    for _ in range(rng.randint(0, 7)):
        if rng.random() < 0.6:
            parts.append("#" * rng.randint(1, 4) + " " + rng.choice(_TITLES))
        parts += rng.choice(_BLOCKS).split("\n")
        if rng.random() < 0.5:
            parts.append("")
    text = "".join(p + rng.choice(eols) for p in parts)
    if text and rng.random() < 0.3:
        text = text.rstrip("\r\n")
    if rng.random() < 0.2:
        text = "\ufeff" + text
    return text


def test_generated_documents_round_trip_and_edit_locally() -> None:
    rng = random.Random(20240601)
    edited = 0
    for _ in range(300):
        text = _generated(rng)
        doc = SkillDoc.parse(text)
        assert doc.render() == text
        for name in ("when_to_use", "steps", "pitfalls"):
            heading = doc.section_heading(name)
            if heading is None:
                continue
            stop = next(
                (
                    h.index
                    for h in doc.headings
                    if h.index > heading.index and h.level <= heading.level
                ),
                len(doc.lines),
            )
            before = doc.bom + "".join(ln.raw for ln in doc.lines[: heading.index + 1])
            after = "".join(ln.raw for ln in doc.lines[stop:])
            new = doc.with_section(name, "1. Run `new-tool --flag`\n2. Check `out`")
            assert new.render().startswith(before)
            assert new.render().endswith(after)
            assert new.section(name) == "1. Run `new-tool --flag`\n2. Check `out`"
            assert [s.text for s in new.steps if name == "steps"] == (
                ["Run `new-tool --flag`", "Check `out`"] if name == "steps" else []
            )
            edited += 1
    assert edited > 100


# ------------------------------------------------------------------ views


def test_frontmatter_values_and_order_of_quoting_styles() -> None:
    doc = SkillDoc.load(CORPUS / "quoting-styles")
    assert list(doc.frontmatter) == [
        "description",
        "name",
        "license",
        "allowed-tools",
        "metadata",
        "compatibility",
        "when_to_use",
        "version",
    ]
    assert doc.name == "quoting-styles"
    assert doc.description == (
        "Folded description over two lines. Use when checking that folded scalars survive."
    )
    assert doc.frontmatter["allowed-tools"] == ["Read", "Bash(git diff:*)"]
    assert doc.frontmatter["metadata"] == {"owner": "team-x", "tier": "2"}
    assert doc.frontmatter_line("license") == 7
    assert doc.frontmatter_line("absent") == 1
    assert doc.body.startswith("Body starts right after the closing line.\n")


def test_sections_tolerate_heading_variants() -> None:
    doc = SkillDoc.load(CORPUS / "heading-variants")
    assert doc.section("when_to_use") == "Whenever headings vary."
    assert doc.section("pitfalls") == "* Starred bullet one\n* Starred bullet two"
    assert doc.section("steps") is not None
    assert doc.section("steps").startswith("1) Run `ls`.")  # type: ignore[union-attr]
    # Sub-headings belong to their parent section; the H4 Gotchas ends at the end of the file.
    assert [h.title for h in doc.headings] == ["When to Use This Skill", "Procedure", "Gotchas"]
    assert doc.section("Procedure") == doc.section("steps")
    assert doc.section("nonexistent") is None


@pytest.mark.parametrize(
    ("title", "kind"),
    [
        ("When to use", "when_to_use"),
        ("When to Use This Skill", "when_to_use"),
        ("Usage", "when_to_use"),
        ("Steps", "steps"),
        ("Procedure", "steps"),
        ("Workflow", "steps"),
        ("🚀 High-Level Workflow", "steps"),
        ("Instructions", "steps"),
        ("3. Steps", "steps"),
        ("How to use this skill", "steps"),
        ("Pitfalls", "pitfalls"),
        ("Common Pitfall", "pitfalls"),
        ("Gotchas", "pitfalls"),
        ("Common mistakes", "pitfalls"),
        ("**Pitfalls**", "pitfalls"),
        ("Overview", "description"),
        ("Description", "description"),
        ("步骤", "steps"),
        ("审计流程", "steps"),
        ("常见陷阱", "pitfalls"),
        ("何时使用", "when_to_use"),
        ("Usage examples", None),
        ("Best Practices", None),
        ("Stepson", None),
        ("Reference Files", None),
    ],
)
def test_canonical_section_names(title: str, kind: str | None) -> None:
    assert canonical_section(title) == kind


def test_headings_inside_code_fences_are_ignored() -> None:
    doc = SkillDoc.load(CORPUS / "fenced-dashes")
    assert [h.title for h in doc.headings] == ["Fenced dashes", "Steps", "Pitfalls"]
    assert doc.section("pitfalls") == (
        "- A fence opened with four backticks closes only with four or more."
    )
    assert [s.number for s in doc.steps] == [1, 2, 3]
    assert "# a comment, not a heading" in doc.steps[0].text


def test_description_falls_back_to_overview_section() -> None:
    doc = SkillDoc.parse("# Tool\n\n## Overview\n\nDoes things.\n\n## Steps\n\n1. `go`\n")
    assert doc.description == "Does things."
    assert doc.name is None
    assert not doc.has_frontmatter


def test_numbered_steps_with_continuations() -> None:
    doc = SkillDoc.load(CORPUS / "heading-variants")
    steps = doc.steps
    assert [(s.number, s.line) for s in steps] == [(1, 15), (2, 16), (3, 20)]
    assert steps[1].text == (
        "Run `pwd`.\nContinuation line of step two.\n\nIndented paragraph still in step two."
    )
    assert steps[2].text == "Run `whoami`."  # the trailing prose after a blank line is not a step


def test_bulleted_steps_are_numbered_in_order() -> None:
    doc = SkillDoc.load(CORPUS / "no-frontmatter")
    assert [(s.number, s.text, s.line) for s in doc.steps] == [
        (1, "Read `README.md`", 7),
        (2, "Run `make test`", 8),
    ]


def test_numbered_items_win_over_bullets_and_nested_bullets_stay_in_their_step() -> None:
    doc = SkillDoc.load(REAL_STYLE / "mcp-server-kit")
    assert [s.number for s in doc.steps] == list(range(1, 9))
    assert "(reference/python_server.md)" in doc.steps[2].text
    assert not any("Clear tool descriptions" in s.text for s in doc.steps)


def test_sub_headings_are_steps_when_the_section_has_no_list() -> None:
    text = (
        "## Workflow\n\n### Step 1: Trace the call chain\n\nUse `grep -rn execute`.\n\n"
        "### Step 2: Decide\n\nWrite the verdict.\n\n## Pitfalls\n\n- none\n"
    )
    steps = SkillDoc.parse(text).steps
    assert [(s.number, s.line) for s in steps] == [(1, 3), (2, 7)]
    assert steps[0].text == "Step 1: Trace the call chain\nUse `grep -rn execute`."


def test_step_headings_without_a_steps_section() -> None:
    text = (
        "# Audit\n\n## STEP 1: 定位入口\n\nRun `grep -rn Controller`.\n\n"
        "## STEP 2: 调用链追踪\n\n### Detail\n\nUse `Grep` down to `ServiceImpl`.\n\n"
        "## Pitfalls\n\n- Stopping at the interface.\n"
    )
    doc = SkillDoc.parse(text)
    assert doc.section("steps") is None
    assert [(s.number, s.line, s.text) for s in doc.steps] == [
        (1, 3, "STEP 1: 定位入口\nRun `grep -rn Controller`."),
        (2, 7, "STEP 2: 调用链追踪\n### Detail\nUse `Grep` down to `ServiceImpl`."),
    ]


def test_steps_in_crlf_and_non_ascii_documents() -> None:
    crlf = SkillDoc.load(CORPUS / "crlf-endings")
    assert crlf.steps[1].text == "Group them by prefix with `grep -E '^(feat|fix)'`."
    zh = SkillDoc.load(CORPUS / "non-ascii-zh")
    assert zh.section("when_to_use") == "当需要判断一个接口是否存在 SQL 注入时。"
    assert [s.line for s in zh.steps] == [16, 17, 18]
    assert zh.frontmatter["metadata"] == {"作者": "安全组"}


def test_odd_characters_do_not_split_lines() -> None:
    doc = SkillDoc.load(CORPUS / "odd-chars")
    assert [s.text for s in doc.steps] == [
        "A form\x0cfeed inside `a line`",
        "A line\u2028separator inside `another`",
        "Tab after the number `x`",
    ]


# ------------------------------------------------------------------ edits


def test_with_section_changes_only_that_section_and_keeps_crlf() -> None:
    path = CORPUS / "crlf-endings" / "SKILL.md"
    doc = SkillDoc.load(path)
    new = doc.with_section("steps", "1. Run `git shortlog v1.2..HEAD`\n2. Paste it.")
    old_bytes = path.read_bytes()
    new_bytes = new.render().encode()
    head, _, rest = old_bytes.partition(b"1. Run `git log")
    tail = rest[rest.index(b"\r\n\r\n## Pitfalls") :]
    assert new_bytes == head + b"1. Run `git shortlog v1.2..HEAD`\r\n2. Paste it." + tail
    assert new.section("pitfalls") == doc.section("pitfalls")
    assert new.frontmatter == doc.frontmatter


def test_with_section_accepts_crlf_input_and_trailing_newlines() -> None:
    doc = SkillDoc.load(CORPUS / "trailing-space")
    new = doc.with_section("pitfalls", "- One\r\n- Two\n\n")
    assert new.render().endswith("## Pitfalls\n\n- One\n- Two\n\n\n\n")
    assert new.render().startswith(doc.render()[: doc.render().index("## Pitfalls")])


def test_with_section_at_end_of_file_keeps_missing_final_newline() -> None:
    doc = SkillDoc.load(CORPUS / "no-final-newline")
    new = doc.with_section("pitfalls", "- A\n- B")
    assert new.render().endswith("## Pitfalls\n\n- A\n- B")


def test_with_section_adds_a_missing_section_in_canonical_order() -> None:
    doc = SkillDoc.load(CORPUS / "crlf-endings")
    no_when = doc.with_section("when_to_use", "")
    assert no_when.section("when_to_use") == ""
    text = "---\nname: x\ndescription: d\n---\n\n# X\n\n## Steps\n\n1. `a`\n\n## Pitfalls\n\n- p\n"
    base = SkillDoc.parse(text)
    added = base.with_section("when_to_use", "When x happens.")
    assert added.render() == text.replace(
        "## Steps", "## When to use\n\nWhen x happens.\n\n## Steps"
    )
    appended = SkillDoc.parse(text.replace("\n## Pitfalls\n\n- p\n", "")).with_section(
        "pitfalls", "- avoid y"
    )
    assert appended.render().endswith("1. `a`\n\n## Pitfalls\n\n- avoid y\n")
    assert appended.section("pitfalls") == "- avoid y"


def test_with_section_fills_an_empty_section_and_clears_one() -> None:
    text = "## Steps\n\n## Pitfalls\n\n- p\n"
    filled = SkillDoc.parse(text).with_section("steps", "1. `go`")
    assert filled.render() == "## Steps\n\n1. `go`\n\n## Pitfalls\n\n- p\n"
    cleared = filled.with_section("steps", "")
    assert cleared.render() == "## Steps\n\n## Pitfalls\n\n- p\n"
    assert cleared.section("steps") == ""


def test_with_section_description_edits_the_frontmatter_only() -> None:
    path = CORPUS / "quoting-styles"
    doc = SkillDoc.load(path)
    new = doc.with_section("description", "Use when: a new\ndescription is needed.")
    assert new.frontmatter["description"] == "Use when: a new description is needed."
    old_lines = doc.render().splitlines(keepends=True)
    new_lines = new.render().splitlines(keepends=True)
    # The folded 3-line description became one line; every other line is untouched.
    assert new_lines[:2] == old_lines[:2]
    assert new_lines[2] == "description: 'Use when: a new description is needed.'\n"
    assert new_lines[3:] == old_lines[5:]


def test_with_frontmatter_value_keeps_other_keys_raw() -> None:
    doc = SkillDoc.load(CORPUS / "quoting-styles")
    new = doc.with_frontmatter_value("license", "MIT")
    assert new.render() == doc.render().replace(
        'license: "Apache-2.0"   # trailing comment\n', "license: MIT\n"
    )
    added = doc.with_frontmatter_value("argument-hint", "a: b")
    assert added.frontmatter["argument-hint"] == "a: b"
    assert added.render() == doc.render().replace(
        "version: 1.0\n---\n", "version: 1.0\nargument-hint: 'a: b'\n---\n"
    )
    assert doc.with_frontmatter_value("license", "Apache-2.0") is doc


def test_with_frontmatter_value_multiline_values_and_crlf() -> None:
    doc = SkillDoc.load(CORPUS / "crlf-endings")
    new = doc.with_frontmatter_value("metadata", {"owner": "me", "tags": "a b"})
    assert new.frontmatter["metadata"] == {"owner": "me", "tags": "a b"}
    raw = new.render()
    assert "\n" not in raw.replace("\r\n", "")
    assert raw.endswith(doc.render()[doc.render().index("---\r\n\r\n# CRLF") :])


def test_with_frontmatter_value_creates_a_frontmatter() -> None:
    doc = SkillDoc.load(CORPUS / "no-frontmatter")
    new = doc.with_frontmatter_value("name", "no-frontmatter")
    assert new.render() == "---\nname: no-frontmatter\n---\n" + doc.render()
    assert new.body == doc.body


def test_with_frontmatter_value_refuses_flow_mapping_frontmatter() -> None:
    doc = SkillDoc.parse("---\n{name: a, description: b}\n---\nbody\n", "f/SKILL.md")
    assert doc.name == "a"
    with pytest.raises(FormatError, match=r"f/SKILL.md: field 'frontmatter': cannot edit"):
        doc.with_frontmatter_value("name", "c")


def test_duplicate_keys_edit_the_effective_one() -> None:
    doc = SkillDoc.parse("---\nname: a\nname: b\n---\n")
    assert doc.name == "b"
    assert doc.with_frontmatter_value("name", "c").render() == "---\nname: a\nname: c\n---\n"


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("---\nname: x\ndescription: [unclosed\n---\n", 4, "invalid YAML"),
        ("---\nname: a\n  b: c\n---\n", 3, "invalid YAML: mapping values are not allowed"),
        ("---\n- a\n- b\n---\n", 2, "expected a mapping of keys, got list"),
        ("---\nname: x\n", 1, "the '---' on line 1 is never closed"),
        ("---\ncreated: 2024-13-45\n---\n", 2, "invalid YAML value"),
    ],
)
def test_bad_frontmatter_is_a_one_line_format_error(text: str, line: int, expected: str) -> None:
    with pytest.raises(FormatError) as info:
        SkillDoc.parse(text, Path("skills/x/SKILL.md"))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"skills/x/SKILL.md:{line}: field 'frontmatter':")
    assert expected in message
    doc, error = SkillDoc.parse_lenient(text, Path("skills/x/SKILL.md"))
    assert error is not None and error.line == line
    assert doc.render() == text


_FRONTMATTER_CASES = [
    "---\nname: x\ndescription: [unclosed\n---\n",
    "---\nname: a\n  b: c\n---\nbody\n---\n",
    "---\n- a\n- b\n---\n",
    "---\nname: x\n",
    "---\ncreated: 2024-13-45\n---\n",
    "\ufeff---\r\nname: [x\r\n---  \r\n# Body\r\n",
    "---\rname: x\rdescription: d\r---\r",
    "---\nname: x\n--- \t\n```\n---\n",
    "--- \nname: x\n",
    "no frontmatter\n---\nname: [x\n---\n",
    "",
    "---",
]


@pytest.mark.parametrize(
    "text",
    _FRONTMATTER_CASES + [read_skill_text(p) for p in REAL_FILES + CORPUS_FILES],
)
def test_frontmatter_error_is_parse_lenients_error(text: str) -> None:
    """The restore's cheap check refuses exactly what the full parse refuses, at the same line."""
    where = Path("skills/x/SKILL.md")
    quick = frontmatter_error(text, where)
    _doc, full = SkillDoc.parse_lenient(text, where)
    assert (str(quick), getattr(quick, "line", None)) == (str(full), getattr(full, "line", None))


def test_tab_after_a_plain_scalar_is_accepted() -> None:
    doc = SkillDoc.load(CORPUS / "trailing-space")
    assert doc.name == "trailing-space"


def test_read_skill_text_errors(tmp_path: Path) -> None:
    bad = tmp_path / "SKILL.md"
    bad.write_bytes(b"---\nname: x\n---\n\xff\xfe\n")
    with pytest.raises(FormatError, match=r"SKILL.md:4: file is not UTF-8 text"):
        read_skill_text(bad)
    with pytest.raises(FormatError, match="file not found"):
        read_skill_text(tmp_path / "missing.md")
    folder = tmp_path / "my-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_bytes(b"---\nname: my-skill\n---\r\n")
    assert read_skill_text(folder) == "---\nname: my-skill\n---\r\n"
