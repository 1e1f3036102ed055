"""The Verify score: a deterministic 0–100 quality mark for a SKILL.md text.

The Verify gate is orthogonal to the outcome gates: a skill can pass today's cases and still be
badly written (absolute orders everywhere, no list of what not to do, rules buried at the bottom)
and fail on tomorrow's. The gate wants this score at least 75 and no more than 5 below the
parent's, so the score must be reproducible to the point: fixed checks, fixed points, no model.
Each check is small, named and reported, so a failed gate says exactly what to fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from engine.core.errors import FormatError
from engine.core.lint import MAX_BODY_LINES, MAX_BYTES, spec_findings
from engine.core.skill import SkillDoc

RULES_EARLY_LINES = 50
MIN_BODY_LINES = 10
ABSOLUTES_PER_100_WORDS = 1.0
ABSOLUTES_FREE = 3

# "This skill should be used when …", "Use when …", "Claude should use this skill whenever …",
# "Triggers on …", "Invoke it when …": the ways real skills say when they apply (Spec asks too).
TRIGGER = re.compile(
    r"(?i)\b(?:use (?:this skill |this |it )?(?:when|whenever|for|if|to)\b"
    r"|(?:should|can|may|must) be (?:used|invoked|loaded|triggered) (?:when|whenever|for|if|to)\b"
    r"|when (?:the )?user\b|whenever\b|triggers? (?:on|when|for)\b|invoke (?:it )?when\b"
    r"|when asked\b|when (?:you |the agent )?(?:need|want)s?\b|when \w+ing\b)"
    r"|当.{1,30}时|适用于|时使用"
)
_ABSOLUTE = re.compile(
    r"\b(?:always|never|must|absolutely|guaranteed?|without exception|under no circumstances)\b"
    r"|100\s?%|必须|绝对|永远|务必|一定要",
    re.IGNORECASE,
)
_SHOUT = re.compile(r"\b(?:ALWAYS|NEVER|MUST)\b")
_INLINE_CODE = re.compile(r"`[^`]*`")
_NUMBERED = re.compile(r"[ \t]{0,3}\d{1,9}[.)][ \t]+\S")
_ABS_PATH = re.compile(
    r"(?<![\w.:/~$-])/(?:home|Users|tmp|opt|var|etc|root|usr|mnt|srv|private|data|workspace"
    r"|work|media|Volumes)/[\w.@-]+"
    r"|(?<![\w])[A-Za-z]:\\[\w. -]+"
)


class VerifyItem(NamedTuple):
    check_id: str
    passed: bool
    points: float
    detail: str


@dataclass(frozen=True)
class VerifyReport:
    score: float
    items: list[VerifyItem]

    @property
    def failed(self) -> list[str]:
        return [item.check_id for item in self.items if not item.passed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "items": [
                {
                    "check_id": i.check_id,
                    "passed": i.passed,
                    "points": i.points,
                    "max_points": POINTS[i.check_id],
                    "detail": i.detail,
                }
                for i in self.items
            ],
        }


@dataclass(frozen=True)
class _Subject:
    """What every check looks at: the doc (even with broken YAML) and its parse error."""

    text: str
    doc: SkillDoc
    error: FormatError | None

    def prose(self) -> list[str]:
        """Body lines outside code, with inline code removed, plus the description."""
        lines = [_INLINE_CODE.sub("", ln.text) for ln in self.doc.body_lines if not ln.in_code]
        description = self.doc.frontmatter.get("description")
        if isinstance(description, str):
            lines.append(description)
        return lines


Outcome = tuple[bool, str]


def _frontmatter_valid(s: _Subject) -> Outcome:
    if s.error is not None:
        return False, str(s.error)
    if not s.doc.has_frontmatter:
        return False, "no YAML frontmatter"
    problems = [f for f in spec_findings(s.doc) if f.severity == "error"]
    if problems:
        return False, "; ".join(f"line {f.line}: {f.message}" for f in problems)
    return True, "name and description follow the Agent Skills spec"


def _trigger_words(s: _Subject) -> Outcome:
    description = s.doc.frontmatter.get("description")
    if isinstance(description, str):
        match = TRIGGER.search(description)
        if match:
            return True, f"description says when to use it ({match.group(0)!r})"
    when = s.doc.section("when_to_use") or s.doc.frontmatter.get("when_to_use")
    if isinstance(when, str) and when.strip():
        return True, "a when-to-use section names the triggers"
    return False, "the description does not say when to use the skill (e.g. 'Use when …')"


def _core_rules_early(s: _Subject) -> Outcome:
    body = s.doc.body_lines
    offset = s.doc.body_start
    steps = s.doc.steps
    first = steps[0].line - offset if steps else None
    if first is None:
        first = next(
            (
                n
                for n, ln in enumerate(body, start=1)
                if not ln.in_code and _NUMBERED.match(ln.text)
            ),
            None,
        )
    if first is None:
        return False, "no numbered steps"
    if first > RULES_EARLY_LINES:
        return False, f"the steps begin on body line {first} (within {RULES_EARLY_LINES} wanted)"
    return True, f"the steps begin on body line {first}"


def _no_absolute_paths(s: _Subject) -> Outcome:
    hits = [
        f"line {ln.number}: {m.group(0)}"
        for ln in s.doc.body_lines
        for m in _ABS_PATH.finditer(ln.text)
    ]
    if hits:
        return False, "hard-coded absolute paths: " + ", ".join(hits[:3])
    return True, "no hard-coded absolute paths"


def _absolute_phrases(s: _Subject) -> Outcome:
    prose = s.prose()
    words = sum(len(line.split()) for line in prose)
    count = sum(len(_ABSOLUTE.findall(line)) + len(_SHOUT.findall(line)) for line in prose)
    budget = max(ABSOLUTES_FREE, int(words * ABSOLUTES_PER_100_WORDS / 100))
    detail = (
        f"{count} absolute phrases (always/never/must/100%…) for {words} words, budget {budget}"
    )
    return count <= budget, detail


def _pitfalls_present(s: _Subject) -> Outcome:
    text = s.doc.section("pitfalls")
    if text is None:
        return False, "no pitfalls section (what not to do)"
    if not text.strip():
        return False, "the pitfalls section is empty"
    return True, "has a pitfalls section"


def _steps_concrete(s: _Subject) -> Outcome:
    steps = s.doc.steps
    if not steps:
        return False, "no steps section with list items"
    concrete = sum(1 for step in steps if "`" in step.text)
    ok = concrete * 2 >= len(steps)
    return ok, f"{concrete}/{len(steps)} steps name a concrete command or tool in backticks"


def _reasonable_length(s: _Subject) -> Outcome:
    lines = sum(1 for ln in s.doc.body_lines if not ln.blank)
    size = len(s.text.encode("utf-8"))
    ok = MIN_BODY_LINES <= lines <= MAX_BODY_LINES and size <= MAX_BYTES
    return ok, (
        f"{lines} non-blank body lines (want {MIN_BODY_LINES}–{MAX_BODY_LINES}), "
        f"{size} bytes (at most {MAX_BYTES})"
    )


CHECKS: tuple[tuple[str, int, Callable[[_Subject], Outcome]], ...] = (
    ("frontmatter_valid", 15, _frontmatter_valid),
    ("trigger_words", 15, _trigger_words),
    ("core_rules_early", 15, _core_rules_early),
    ("steps_concrete", 15, _steps_concrete),
    ("no_absolute_paths", 10, _no_absolute_paths),
    ("absolute_phrases", 10, _absolute_phrases),
    ("pitfalls_present", 10, _pitfalls_present),
    ("reasonable_length", 10, _reasonable_length),
)
POINTS = {check_id: points for check_id, points, _ in CHECKS}


def verify_score(text: str) -> VerifyReport:
    """Score ``text``; every check is reported, passed or not, with the points it earned."""
    doc, error = SkillDoc.parse_lenient(text)
    subject = _Subject(text, doc, error)
    items: list[VerifyItem] = []
    for check_id, points, check in CHECKS:
        passed, detail = check(subject)
        items.append(VerifyItem(check_id, passed, float(points) if passed else 0.0, detail))
    return VerifyReport(sum(item.points for item in items), items)


__all__ = ["CHECKS", "POINTS", "TRIGGER", "VerifyItem", "VerifyReport", "verify_score"]
