"""A finding at one line of a file, and the rule that produced it.

Shared by the secret scanner (``engine.secrets``), the safety scan (``engine.core.safety``), lint
and
the gates, so each of them reports a problem the same way and a rule id means one thing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]
Category = Literal["secret", "destructive", "path"]


@dataclass(frozen=True)
class Finding:
    """One problem at one line of a file."""

    rule_id: str
    severity: Severity
    line: int
    message: str
    span: int = 1  # the lines it covers from ``line`` (a command continued over several)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "severity": self.severity,
            "line": self.line,
            "message": self.message,
        }

    def format(self, path: object) -> str:
        return f"{path}:{self.line}: {self.severity} {self.rule_id} {self.message}"


# A judge looks at one regex match (and the text it was found in: the line, plus the next line
# for a rule with ``lookahead``) and returns the severity it deserves, or None for a near miss.
Judge = Callable[[re.Match[str], str], Severity | None]


@dataclass(frozen=True)
class Rule:
    """A named pattern; ``hints`` are lowercase substrings one of which a line must contain
    before the regexes run (Python's ``re`` has no literal prefilter, and most lines are prose).
    """

    id: str
    hints: tuple[str, ...]
    category: Category
    message: str
    patterns: tuple[re.Pattern[str], ...]
    judge: Judge | None = None
    severity: Severity = "error"
    lookahead: bool = False  # the judge also sees the next line (a PEM header and its body)

    def check(self, line: str, following: str = "") -> tuple[Severity, str] | None:
        """The severity and the offending text of this rule's first real hit on ``line``."""
        context = f"{line}\n{following}" if self.lookahead else line
        for pattern in self.patterns:
            for match in pattern.finditer(line):
                severity = self.judge(match, context) if self.judge else self.severity
                if severity is not None:
                    return severity, match.group(0)
        return None


def any_hint(rules: tuple[Rule, ...]) -> re.Pattern[str]:
    """One pattern of every (lowercase) hint of ``rules``, for a lowercased line: most lines
    match none, and then no rule needs to look at them (one search, not a test per hint)."""
    hints = sorted({hint for rule in rules for hint in rule.hints}, key=len, reverse=True)
    return re.compile("|".join(re.escape(hint) for hint in hints))


__all__ = ["Category", "Finding", "Judge", "Rule", "Severity", "any_hint"]
