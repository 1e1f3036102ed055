"""The private decision standard of a benchmark: ``benchmarks/<id>/standard.md``.

PenguinHarness lets a benchmark hold a private standard — reusable strategy, priorities or
inference limits the public statement does not spell out — as long as it is explicit and fixed:
it is never rewritten to fit this run's answers. Each rule has an id; an ``llm_judge`` check of a
rubric grades exactly one rule, and its criteria is the rule's text prefixed by ``[id]``, so the
pre-dispatch checks can verify that a rubric relies only on rules the standard defines.

The file lives at the benchmark root, beside the case folders: the agent never sees it (only a
case's ``statement/`` is copied into a run), and it is part of the benchmark's fingerprint, so
changing it after a Formal Baseline makes later scores incomparable — which the Optimizer refuses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import FormatError
from engine.core.fsutil import atomic_write_text

STANDARD_FILE = "standard.md"
EVIDENCE = "evidence"
_RULE = re.compile(r"^- \[([a-z][a-z0-9-]*)\] (\S.*)$")
_GOAL = re.compile(r"^Goal: (.*)$")
_CRITERIA = re.compile(r"^\[([a-z][a-z0-9-]*)\] (\S.*)$", re.DOTALL)
_EVIDENCE_TEXT = re.compile(
    r"^The answer gives the verdict `([^`]+)` and cites at least one finding as `file:line`\.$"
)
_HEADER = (
    "# Decision standard\n\n"
    "Private and fixed: the rules this benchmark's rubrics may rely on beyond the public "
    "statement. Never shown to the agent; never rewritten to fit an answer.\n"
)


@dataclass(frozen=True)
class StandardRule:
    id: str
    text: str

    @property
    def criteria(self) -> str:
        """The ``llm_judge`` criteria that grades this rule."""
        return f"[{self.id}] {self.text}"


@dataclass(frozen=True)
class Standard:
    goal: str
    rules: tuple[StandardRule, ...]

    def rule(self, rule_id: str) -> StandardRule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    def rule_of_criteria(self, criteria: str) -> StandardRule | None:
        """The rule an llm_judge criteria grades (it must quote the rule exactly)."""
        found = _CRITERIA.match(criteria.strip())
        rule = self.rule(found.group(1)) if found else None
        return rule if rule is not None and rule.criteria == criteria.strip() else None

    def render(self) -> str:
        lines = [_HEADER, f"Goal: {' '.join(self.goal.split())}", ""]
        lines += [f"- [{r.id}] {' '.join(r.text.split())}" for r in self.rules]
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, text: str, path: Path) -> Standard:
        goal = ""
        rules: list[StandardRule] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if found := _GOAL.match(line):
                goal = found.group(1).strip()
            elif found := _RULE.match(line):
                if any(r.id == found.group(1) for r in rules):
                    raise FormatError(path, None, f"duplicate rule [{found.group(1)}]", line=number)
                rules.append(StandardRule(found.group(1), found.group(2).strip()))
            elif line.startswith("- "):
                raise FormatError(path, None, "expected a rule line '- [id] text'", line=number)
        if not rules:
            raise FormatError(path, None, "expected at least one rule line '- [id] text'")
        return cls(goal, tuple(rules))


def evidence_rule(positive: str) -> StandardRule:
    """The rule that separates a reasoned verdict from a guess: a positive names its finding.

    It is graded on positive cases only, where a bare positive label (the shortcut) passes the
    label check but not this rule, and a wrong label passes neither.
    """
    return StandardRule(
        EVIDENCE,
        f"The answer gives the verdict `{positive}` and cites at least one finding as `file:line`.",
    )


def evidence_label(rule_text: str) -> str | None:
    """The positive label of an evidence rule's text (None for any other rule)."""
    found = _EVIDENCE_TEXT.match(rule_text.strip())
    return found.group(1) if found else None


def standard_path(bench_root: Path) -> Path:
    return Path(bench_root) / STANDARD_FILE


def load_standard(bench_root: Path) -> Standard | None:
    path = standard_path(bench_root)
    if not path.is_file():
        return None
    return Standard.parse(path.read_text(encoding="utf-8"), path)


def write_standard(bench_root: Path, standard: Standard) -> Path:
    path = standard_path(bench_root)
    atomic_write_text(path, standard.render())
    return path
