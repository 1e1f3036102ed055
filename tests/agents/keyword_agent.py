"""A tiny target agent for optimizer tests: its verdict is a pure function of the skill text.

The case's token is in ``token.txt``. The agent answers ``vulnerable`` when a skill says
``flag all`` (and not ``ignore <token>``) or ``flag <token>``, else ``safe`` — so a test can
script exactly which rewrite fixes or breaks which case. A case with a ``noise.txt`` (a rate)
flips the verdict with that probability, drawn from the run's ``SKILLSMITH_SEED``: noisy like the
demo agent, yet the same seed gives the same answer.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path


def emit(line: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")


def main() -> int:
    prompt = Path(os.environ["SKILLSMITH_PROMPT_FILE"]).read_text(encoding="utf-8")
    token = Path("token.txt").read_text(encoding="utf-8").strip()
    skills = sorted(Path(os.environ.get("SKILLSMITH_SKILLS_DIR", "skills")).glob("*/SKILL.md"))
    text = "\n".join(p.read_text(encoding="utf-8") for p in skills).lower()
    flagged = ("flag all" in text and f"ignore {token}" not in text) or f"flag {token}" in text
    noise = Path("noise.txt")
    if noise.exists():
        draw = random.Random(os.environ.get("SKILLSMITH_SEED", "0")).random()
        flagged ^= draw < float(noise.read_text(encoding="utf-8"))
    emit({"type": "user", "content": prompt})
    names = ", ".join(p.parent.name for p in skills) or "none"
    emit(
        {
            "type": "assistant",
            "content": "Loading the skills.",
            "tool_calls": [{"id": "t1", "name": "Skill", "args": names}],
        }
    )
    emit({"type": "tool", "tool_name": "Skill", "tool_call_id": "t1", "result": "loaded"})
    verdict = "vulnerable" if flagged else "safe"
    emit({"type": "assistant", "content": f"Token {token} checked.\nVERDICT: {verdict}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
