"""Run-to-run variation of the demo agent: the slips a real model makes, reproducible from a seed.

A real agent does not give the same answer every time, and every decision Skillsmith takes has to
hold against that. So the demo agent slips, like a model sampling at temperature: on a run it may
skip a flagging step (and still claim it), misread a hit as harmless, forget a Pitfalls rule that
would have cleared a hit, or conclude at its first finding. How often depends on three things:

- ``agent.noise`` (``SKILLSMITH_NOISE``): the level, 0 = the deterministic agent of old;
- the case's latent *difficulty*: fixed by the file's content, so some cases are coin-like and
  most are nearly always decided the same way;
- the skill's *clarity*: a skill that says to finish every step, ends with a confirm step and
  spells out its near-misses leaves less to chance, so a better skill is also a steadier one —
  which is what lets evolution make progress that holds on the next evaluation.

Every draw is a hash of the unit's seed (``SKILLSMITH_SEED``), the skill text and what is being
decided (which step, which line), not a position in one random stream: the same seed and skill
give the same run exactly, and a draw about line 12 does not move because another step ran first.
The skill text is part of the hash because a real model's sampling does not stay on the same path
when its prompt changes, even by a word — so two different skills never share their luck.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

MEAN_DIFFICULTY = 1 / 3  # of uniform² — a case slips from never to three times the mean rate
MAX_SLIP = 0.9
CLARITY_WEIGHT = 0.6  # the steadiest skill slips at 40 % of the rate of the vaguest
CLEAR_PITFALLS = 10  # this many explicit "not a finding" rules count as fully spelled out
# each slip's share of the run's slip rate
SKIP_SHARE = 0.35
MISREAD_SHARE = 0.35
FORGET_SHARE = 0.5
HASTY_SHARE = 0.8


def uniform(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts``: the same parts, the same number, on any machine."""
    digest = hashlib.sha256("\x00".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def difficulty(case_text: str) -> float:
    """The case's latent difficulty in [0, 1): skewed, most cases easy and a few coin-like."""
    return uniform("difficulty", case_text) ** 2


def clarity(*, thorough: bool, confirms: bool, pitfall_rules: int) -> float:
    """How plainly the skill says what to do, in [0, 1]."""
    spelled_out = min(1.0, pitfall_rules / CLEAR_PITFALLS)
    return (float(thorough) + float(confirms) + spelled_out) / 3


@dataclass(frozen=True)
class Slips:
    """The slip draws of one run (all False when the level is 0)."""

    level: float
    seed: int
    skill_text: str
    rate: float  # this case's slip rate under this skill

    @classmethod
    def of(
        cls, level: float, seed: int, skill_text: str, case_text: str, skill_clarity: float
    ) -> Slips:
        vagueness = 1.0 - CLARITY_WEIGHT * skill_clarity
        spread = difficulty(case_text) / MEAN_DIFFICULTY
        rate = min(MAX_SLIP, level * vagueness * spread) if level > 0 else 0.0
        return cls(level, seed, skill_text, rate)

    def _draw(self, share: float, *what: object) -> bool:
        if self.rate <= 0:
            return False
        return uniform(self.seed, self.skill_text, *what) < min(MAX_SLIP, self.rate * share)

    def skips(self, command: str) -> bool:
        """The agent skips this step (and claims it done all the same)."""
        return self._draw(SKIP_SHARE, "skip", command)

    def misreads(self, path: str, line: int) -> bool:
        """The agent reads this hit as harmless and drops it."""
        return self._draw(MISREAD_SHARE, "misread", path, line)

    def forgets(self, path: str, line: int) -> bool:
        """The agent forgets the Pitfalls rule that clears this hit and keeps it."""
        return self._draw(FORGET_SHARE, "forget", path, line)

    def hasty(self) -> bool:
        """The agent concludes at its first finding (a skill that says otherwise prevents it)."""
        return self._draw(HASTY_SHARE, "hasty")
