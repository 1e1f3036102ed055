"""Layer (c) of a trace summary: the progress cross-check.

The steps the agent claims (its ``STEPS DONE:`` line, else any "step N" it mentions) against the
steps its tool calls evidence (a call whose arguments hold a step's backticked command). A step
claimed but not evidenced is *missing*; one neither claimed nor evidenced *skipped*; one without
a command *unverifiable*.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.core.transcripts.content import normalise
from engine.core.transcripts.trace import Trace


class StepLike(Protocol):
    """A numbered skill step (engine.core.skill.Step): its number and its text."""

    @property
    def number(self) -> int: ...

    @property
    def text(self) -> str: ...


_STEPS_DONE = re.compile(r"STEPS\s+DONE\s*:\s*([^\n]*)", re.IGNORECASE)
_STEP_MENTION = re.compile(r"(?:\bstep\s*#?\s*|步骤\s*)(\d+)", re.IGNORECASE)
_RANGE = re.compile(r"(\d+)\s*(?:-|–|—|\.\.)\s*(\d+)|(\d+)")
_BACKTICKED = re.compile(r"`([^`\n]+)`")


def claimed_steps(texts: Sequence[str]) -> list[int]:
    """Steps the agent says it did: its ``STEPS DONE:`` lines, else any "step N" it mentions."""
    explicit: set[int] = set()
    found_line = False
    for text in texts:
        for match in _STEPS_DONE.finditer(text):
            found_line = True
            for part in _RANGE.finditer(match.group(1)):
                if part.group(3):
                    explicit.add(int(part.group(3)))
                else:
                    low, high = int(part.group(1)), int(part.group(2))
                    explicit.update(range(min(low, high), max(low, high) + 1))
    if found_line:
        return sorted(explicit)
    return sorted({int(m.group(1)) for text in texts for m in _STEP_MENTION.finditer(text)})


def step_commands(text: str) -> list[str]:
    """The backticked commands of a step (normalised); their presence in args evidences it."""
    return [c for c in (normalise(m) for m in _BACKTICKED.findall(text)) if c]


def _evidences(command: str, tool: str, args: str) -> bool:
    """A call evidences a step's command when its arguments hold it, or, for a command written
    the Claude Code way as tool and argument (`` `Read task/X.java` ``), when it is a call of
    that tool whose arguments hold the rest."""
    if command in args:
        return True
    head, _, rest = command.partition(" ")
    return bool(rest) and head.casefold() == tool and rest in args


@dataclass(frozen=True)
class ProgressCheck:
    steps_known: bool
    claimed: list[int]
    evidenced: list[int]
    unverifiable: list[int]
    missing: list[int]  # claimed, checkable, but no call evidences them
    skipped: list[int]  # checkable, neither claimed nor evidenced
    evidence: dict[int, int]  # step → index of the first call that evidences it


def progress(trace: Trace, steps: Sequence[StepLike] | None) -> ProgressCheck:
    claimed = claimed_steps(trace.texts)
    if not steps:
        return ProgressCheck(False, claimed, [], [], [], [], {})
    args = [normalise(c.args) for c in trace.calls]
    names = [c.name.casefold() for c in trace.calls]
    evidence: dict[int, int] = {}
    unverifiable: list[int] = []
    for step in steps:
        commands = step_commands(step.text)
        if not commands:
            unverifiable.append(step.number)
            continue
        for index, arg in enumerate(args):
            if any(_evidences(command, names[index], arg) for command in commands):
                evidence[step.number] = index
                break
    checkable = [s.number for s in steps if s.number not in unverifiable]
    evidenced = sorted(evidence)
    return ProgressCheck(
        steps_known=True,
        claimed=claimed,
        evidenced=evidenced,
        unverifiable=unverifiable,
        missing=[n for n in claimed if n in checkable and n not in evidence],
        skipped=[n for n in checkable if n not in evidence and n not in claimed],
        evidence=evidence,
    )
