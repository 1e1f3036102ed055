"""A command agent for the real-style acceptance test: it follows the pdf-workbench skill only as
far as the skill's text reaches it.

The case asks whether ``form.pdf`` is encrypted before filling it. The agent reads every
SKILL.md it was given; only when one of them tells it to run ``qpdf --show-encryption`` does it
look at the file (a real read, recorded as a Bash call) — otherwise it assumes a plain form. So
the shipped skill misses every encrypted form, and the one added line fixes them all.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

CHECK = "qpdf --show-encryption"


def emit(line: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")


def main() -> int:
    prompt = Path(os.environ["SKILLSMITH_PROMPT_FILE"]).read_text(encoding="utf-8")
    skills = sorted(Path(os.environ.get("SKILLSMITH_SKILLS_DIR", "skills")).glob("*/SKILL.md"))
    told = any(CHECK in p.read_text(encoding="utf-8") for p in skills)
    emit({"type": "user", "content": prompt})
    emit(
        {
            "type": "assistant",
            "content": "Loading the pdf skill.",
            "tool_calls": [{"id": "t1", "name": "Skill", "args": "pdf-workbench"}],
        }
    )
    emit({"type": "tool", "tool_name": "Skill", "tool_call_id": "t1", "result": "loaded"})
    encrypted = False
    if told:
        data = Path("form.pdf").read_bytes()
        encrypted = b"/Encrypt" in data
        emit(
            {
                "type": "assistant",
                "content": "Checking the form's encryption first.",
                "tool_calls": [{"id": "t2", "name": "Bash", "args": f"{CHECK} form.pdf"}],
            }
        )
        result = "R = 6 (AES-256)" if encrypted else "File is not encrypted"
        emit({"type": "tool", "tool_name": "Bash", "tool_call_id": "t2", "result": result})
    verdict = "encrypted" if encrypted else "plain"
    emit({"type": "assistant", "content": f"The form is {verdict}.\nVERDICT: {verdict}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
