"""The deterministic filters every proposed patch passes before any evaluation.

The article's three layers, plus its slim mode:

- **taboo**: the exact edit was rejected before (by diff hash, whatever rule it was proposed for);
- **structure**: ``--- a/SKILL.md`` / ``+++ b/SKILL.md`` / ``@@``, at most ``max_patch_lines``
  changed lines (a small learning rate: a regression can be traced to one edit and a taboo entry
  stays precise), no added heading (no reorganising the document), and it applies cleanly;
- **text_quality** ("anti-slogan"): a step or DO line must name something an agent can act on —
  a tool, a file path with a suffix, backticked code, a CamelCase symbol, a function call or a CLI
  flag; absolute phrases are refused; a line claiming to fix or avoid something must say how;
  a sentence new in the description or when_to_use may not be a catch-all trigger ("use it for
  anything") or an absolute order, since the loader reads those on every task;
- **semantic_traps**: words wider than the verdict ("risk" for "vulnerability") may not come in;
- **slim**: once SKILL.md is over ``max_skill_bytes``, a patch may only delete or merge lines;
- **safety**: the Safety gate's rules (``engine.core.safety``: credentials, destructive commands,
path
  traversal) on every added line, code included, so the candidate's later Safety gate at the queue
  never meets a patch that evaluation was already spent on.

Only added lines are judged: a filter must never fail a patch for text it leaves alone.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from engine.core.config import LimitsConfig
from engine.core.patch_apply import Applied, ParsedDiff, PatchError, apply_diff, parse_diff
from engine.core.safety import scan
from engine.core.skill import Line, SkillDoc
from engine.core.taboo import TabooEntry, TabooList
from engine.evaluation.patches.signature import same_edit, split_taboo_rule, taboo_rule
from engine.evaluation.patches.textrules import TextRules, default_rules
from engine.evaluation.patches.trigger_text import new_slogans

Severity = Literal["fatal", "warning"]
TABOO, STRUCTURE, TEXT, TRAPS, SLIM = "taboo", "structure", "text_quality", "semantic_traps", "slim"
SAFETY = "safety"
CHECKED_SECTIONS = ("steps", "pitfalls")
SOURCE_HEADER = "a/SKILL.md"
TARGET_HEADER = "b/SKILL.md"

_INLINE_CODE = re.compile(r"`[^`\n]*`")
_ITEM = re.compile(r"\s*(?:[-*+]|\d{1,9}[.)])\s+")
_DO_LINE = re.compile(r"\s*(?:[-*+]|\d{1,9}[.)])?\s*(?:\*\*)?(?:DO\b|DON'T\b|DO NOT\b|必须|务必)")
_CONCRETE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("backticked code", re.compile(r"`[^`\n]+`")),
    ("a function call", re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\((?!s\))")),
    ("a file path", re.compile(r"(?<![\w/.-])(?:[\w-]+/)*[\w-]{2,}\.[A-Za-z][A-Za-z0-9]{0,5}\b")),
    ("a CamelCase symbol", re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")),
    ("a camelCase symbol", re.compile(r"\b[a-z]+[0-9]*[A-Z][A-Za-z0-9]*\b")),
    ("a CLI flag", re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")),
)
_WORDS = re.compile(r"[A-Za-z0-9_]+|[^\W\d_A-Za-z]", re.UNICODE)
_GLUE = frozenset(
    {
        *("a", "an", "and", "or", "the", "of", "to", "in", "on", "with", "also", "then"),
        *("when", "for", "by", "it", "its", "is", "are", "be", "和", "或", "与", "及", "的"),
    }
)


class FilterFinding(NamedTuple):
    filter: str
    severity: Severity
    message: str


@dataclass(frozen=True)
class FilterReport:
    findings: list[FilterFinding]
    patched: str | None = None  # the SKILL.md text after the patch, when it applies

    @property
    def passed(self) -> bool:
        return not self.fatal

    @property
    def fatal(self) -> list[FilterFinding]:
        return [f for f in self.findings if f.severity == "fatal"]

    def reason(self) -> str:
        """One line naming every fatal finding (what a rejection records)."""
        return "; ".join(f"{f.filter}: {f.message}" for f in self.fatal) or "passed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "findings": [f._asdict() for f in self.findings],
        }


def concrete_token(text: str, rules: TextRules) -> str | None:
    """What makes a line actionable (for messages), or None when it is only words."""
    for kind, pattern in _CONCRETE:
        match = pattern.search(text)
        if match:
            return f"{kind} {match.group(0)!r}"
    tool = rules.tool_in(text)
    return f"the tool {tool!r}" if tool else None


def prose_of(text: str) -> str:
    """A line without its inline code: words inside backticks are commands, not wording."""
    return _INLINE_CODE.sub(" ", text)


def _entries(taboo: TabooList | Iterable[TabooEntry] | None) -> list[TabooEntry]:
    if taboo is None:
        return []
    return taboo.entries() if isinstance(taboo, TabooList) else list(taboo)


# -- taboo ----------------------------------------------------------------------------------------


def _taboo(
    diff: str, entries: list[TabooEntry], rule_id: str, direction: str
) -> list[FilterFinding]:
    entry = same_edit(entries, diff)
    if entry is None:
        return []
    rule, was = split_taboo_rule(entry.rule_id)
    mine = (rule, was) == (rule_id, direction) or entry.rule_id == rule_id
    how = (
        ""
        if mine
        else f" (proposed then for {entry.rule_id}, now for {taboo_rule(rule_id, direction)})"
    )
    return [
        FilterFinding(
            TABOO,
            "fatal",
            f"this exact patch ({entry.diff_hash}) was rejected on {entry.recorded_at}{how}: "
            f"{entry.reason}",
        )
    ]


# -- structure ------------------------------------------------------------------------------------


def _headers(diff: str, parsed: ParsedDiff) -> list[FilterFinding]:
    found: list[FilterFinding] = []
    if parsed.files != 1:
        found.append(FilterFinding(STRUCTURE, "fatal", f"touches {parsed.files} files, not one"))
    if parsed.source_file != SOURCE_HEADER or parsed.target_file != TARGET_HEADER:
        found.append(
            FilterFinding(
                STRUCTURE,
                "fatal",
                f"headers name {parsed.source_file!r} / {parsed.target_file!r}; expected "
                f"'--- {SOURCE_HEADER}' and '+++ {TARGET_HEADER}'",
            )
        )
    if not parsed.hunks or not re.search(r"(?m)^@@ ", diff):
        found.append(FilterFinding(STRUCTURE, "fatal", "no '@@' hunk"))
    elif not parsed.added and not parsed.removed:
        found.append(FilterFinding(STRUCTURE, "fatal", "the diff changes nothing"))
    return found


def _size(parsed: ParsedDiff, limits: LimitsConfig) -> list[FilterFinding]:
    changed = len(parsed.added) + len(parsed.removed)
    if changed <= limits.max_patch_lines:
        return []
    return [
        FilterFinding(
            STRUCTURE,
            "fatal",
            f"{changed} changed lines ({len(parsed.added)} added, {len(parsed.removed)} removed); "
            f"at most {limits.max_patch_lines}",
        )
    ]


def _headings(doc: SkillDoc, added_at: Sequence[int]) -> list[FilterFinding]:
    new = set(added_at)
    return [
        FilterFinding(
            STRUCTURE, "fatal", f"line {h.line} adds a heading: {doc.lines[h.index].text!r}"
        )
        for h in doc.headings
        if h.index in new
    ]


def _still_parses(before: str, after: str) -> list[FilterFinding]:
    _, error_before = SkillDoc.parse_lenient(before)
    _, error_after = SkillDoc.parse_lenient(after)
    if error_after is None or error_before is not None:
        return []
    return [FilterFinding(STRUCTURE, "fatal", f"the patched SKILL.md breaks: {error_after}")]


# -- text quality and traps -----------------------------------------------------------------------


def _section_of(doc: SkillDoc) -> list[str | None]:
    """The canonical section (steps, pitfalls, …) every line sits in, nested headings included."""
    kinds: list[str | None] = [None] * len(doc.lines)
    stack: list[tuple[int, str | None]] = []
    starts = {h.index: h for h in doc.headings}
    for index in range(len(doc.lines)):
        heading = starts.get(index)
        if heading is not None:
            while stack and stack[-1][0] >= heading.level:
                stack.pop()
            stack.append((heading.level, heading.kind))
        kinds[index] = next((kind for _, kind in reversed(stack) if kind), None)
    return kinds


def _items(lines: Sequence[Line], indexes: Iterable[int]) -> list[list[int]]:
    """Group line indexes into list items: an item line, then its continuation lines."""
    items: list[list[int]] = []
    previous: int | None = None
    for index in indexes:
        line = lines[index]
        if line.blank:
            previous = None
            continue
        if (
            previous is None
            or previous != index - 1
            or (not line.in_code and _ITEM.match(line.text))
        ):
            items.append([index])
        else:
            items[-1].append(index)
        previous = index
    return items


def _concreteness(doc: SkillDoc, added: set[int], rules: TextRules) -> list[FilterFinding]:
    sections = _section_of(doc)
    found: list[FilterFinding] = []
    headings = {h.index for h in doc.headings}
    checked = [
        i for i in range(len(doc.lines)) if sections[i] in CHECKED_SECTIONS and i not in headings
    ]
    for item in _items(doc.lines, checked):
        if not added.intersection(item) or any(doc.lines[i].in_code for i in item):
            continue
        text = " ".join(doc.lines[i].text.strip() for i in item)
        if concrete_token(text, rules) is None:
            first = doc.lines[item[0]]
            found.append(
                FilterFinding(
                    TEXT,
                    "fatal",
                    f"line {first.number}: a {sections[item[0]]} line names no tool, file path, "
                    f"backticked code, CamelCase symbol, function call or CLI flag: {text!r}",
                )
            )
    for index in sorted(added):
        line = doc.lines[index]
        if sections[index] in CHECKED_SECTIONS or line.in_code or not _DO_LINE.match(line.text):
            continue
        if concrete_token(line.text, rules) is None:
            found.append(
                FilterFinding(
                    TEXT,
                    "fatal",
                    f"line {line.number}: a DO line names nothing to act on: {line.text.strip()!r}",
                )
            )
    return found


def _line_rules(numbered: Sequence[tuple[int, str]], rules: TextRules) -> list[FilterFinding]:
    found: list[FilterFinding] = []
    for number, text in numbered:
        prose = prose_of(text)
        phrase = rules.absolute_in(prose)
        if phrase is not None:
            found.append(
                FilterFinding(
                    TEXT, "fatal", f"line {number}: absolute phrase {phrase!r}: {text.strip()!r}"
                )
            )
        claim = rules.claim_in(prose)
        if claim is not None and concrete_token(text, rules) is None:
            found.append(
                FilterFinding(
                    TEXT,
                    "fatal",
                    f"line {number}: claims to {claim!r} something without saying how (name the "
                    f"tool, file or code on the same line): {text.strip()!r}",
                )
            )
    return found


def _traps(added: Sequence[str], removed: Sequence[str], rules: TextRules) -> list[FilterFinding]:
    def count(texts: Sequence[str]) -> Counter[str]:
        return Counter(t.word for text in texts for t in rules.traps_in(prose_of(text)))

    gained = count(added) - count(removed)
    by_word = {t.word: t for t in rules.traps}
    return [
        FilterFinding(
            TRAPS,
            "fatal",
            f"uses {word!r} ({by_word[word].why}); say {by_word[word].prefer!r}",
        )
        for word in gained
    ]


def _slim(parsed: ParsedDiff, size: int, limit: int) -> list[FilterFinding]:
    found: list[FilterFinding] = []
    net = len(parsed.added) - len(parsed.removed)
    why = f"slim mode (SKILL.md is {size} bytes, over {limit})"
    if net > 0:
        found.append(
            FilterFinding(
                SLIM,
                "fatal",
                f"{why}: a patch may only delete or merge lines; this one adds {net} net lines",
            )
        )
    known = {w.lower() for text in parsed.removed for w in _WORDS.findall(text)}
    new = sorted({w.lower() for text in parsed.added for w in _WORDS.findall(text)} - known - _GLUE)
    if new:
        found.append(
            FilterFinding(
                SLIM, "fatal", f"{why}: merged lines bring new words: {', '.join(new[:8])}"
            )
        )
    return found


def _safety(added: Sequence[tuple[int, str]]) -> list[FilterFinding]:
    """The Safety gate's scan over every added line, code blocks included (``curl … | bash`` sits
    in one): a dangerous patch is refused before any evaluation is spent on it."""
    found: list[FilterFinding] = []
    for number, text in added:
        for finding in scan(text):
            if finding.severity == "error":
                where = f"line {number}: " if number else ""
                message = f"{where}{finding.rule_id}: {finding.message}"
                found.append(FilterFinding(SAFETY, "fatal", message))
    return found


# -- the pipeline ---------------------------------------------------------------------------------


def run_filters(
    diff: str,
    skill_text: str,
    *,
    taboo: TabooList | Iterable[TabooEntry] | None,
    rule_id: str,
    direction: str,
    limits: LimitsConfig,
    slim: bool = False,
    rules: TextRules | None = None,
    slim_limit: int | None = None,
) -> FilterReport:
    """All filters over one diff against the SKILL.md text it was written for.

    ``slim`` forces slim mode; it is also on whenever ``skill_text`` exceeds ``slim_limit``
    (default ``limits.max_skill_bytes``). A patch passes when no finding is fatal.
    """
    rules = rules or default_rules()
    findings = _taboo(diff, _entries(taboo), rule_id, direction)
    try:
        parsed = parse_diff(diff)
    except PatchError as exc:
        return FilterReport([*findings, FilterFinding(STRUCTURE, "fatal", str(exc))])
    findings += _headers(diff, parsed) + _size(parsed, limits)
    applied: Applied | None = None
    try:
        applied = apply_diff(skill_text, diff)
    except PatchError as exc:
        findings.append(FilterFinding(STRUCTURE, "fatal", str(exc)))
    if applied is not None:
        doc, _ = SkillDoc.parse_lenient(applied.text)
        findings += _headings(doc, applied.added_at) + _still_parses(skill_text, applied.text)
        added = {i for i in applied.added_at if not doc.lines[i].in_code}
        findings += _concreteness(doc, added, rules)
        before, _ = SkillDoc.parse_lenient(skill_text)
        findings += [FilterFinding(TEXT, "fatal", s) for s in new_slogans(before, doc, rules)]
        numbered = [(doc.lines[i].number, doc.lines[i].text) for i in sorted(added)]
        every = [(doc.lines[i].number, doc.lines[i].text) for i in sorted(applied.added_at)]
    else:
        numbered = every = [(0, text) for text in parsed.added]
    findings += _line_rules(numbered, rules)
    findings += _traps([text for _, text in numbered], parsed.removed, rules)
    findings += _safety(every)
    size = len(skill_text.encode("utf-8"))
    limit = slim_limit or limits.max_skill_bytes
    if slim or size > limit:
        findings += _slim(parsed, size, limit)
    return FilterReport(findings, applied.text if applied is not None else None)


__all__ = [
    "FilterFinding",
    "FilterReport",
    "concrete_token",
    "prose_of",
    "run_filters",
]
