#!/usr/bin/env python3
"""An example `command` agent: what any program must do to be evaluated by Skillsmith.

Skillsmith starts it once per case run, in a fresh room (the working directory) holding the
case's files, PROMPT.md and the skills under test in $SKILLSMITH_SKILLS_DIR/<name>/SKILL.md.
It must print its session on stdout, one JSON object a line (docs/agents.md): the prompt it
got, what it said, each tool call with its result, and a closing `result` line with its token
use. Its answer is its last assistant message (or answer.txt in the room).

This one has no model: it follows a skill literally. It runs every `grep` command a skill's
numbered steps name (a real tool call in the room) and answers `vulnerable` when one of them
finds something, else `safe`. Without a skill it has nothing to run and answers `safe`. A real
wrapper around another agent CLI does the same bookkeeping: place the skills where that CLI
loads them, run it, and translate its output into these lines.

To evaluate with it, in skillsmith.yaml (the path must be absolute):

    agent:
      kind: command
      command: [python3, /path/to/this/workspace/agents/example_agent.py]
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

STEP = re.compile(r"^\s*\d+\.\s.*?`(grep [^`]+)`", re.MULTILINE)


def emit(line: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")


def main() -> int:
    prompt = Path(os.environ.get("SKILLSMITH_PROMPT_FILE", "PROMPT.md")).read_text()
    emit({"type": "user", "content": prompt})
    skills = sorted(Path(os.environ.get("SKILLSMITH_SKILLS_DIR", "skills")).glob("*/SKILL.md"))
    budget = int(os.environ.get("SKILLSMITH_MAX_TURNS", "20"))
    found = False
    for number, skill in enumerate(skills):
        calls = [c for c in STEP.findall(skill.read_text()) if "<" not in c][:budget]
        emit({"type": "assistant", "content": f"Following the skill {skill.parent.name}."})
        for index, command in enumerate(calls):
            call_id = f"call-{number}-{index}"
            emit(
                {
                    "type": "assistant",
                    "content": "",
                    "tool_calls": [{"id": call_id, "name": "Bash", "args": command}],
                }
            )
            done = subprocess.run(
                ["/bin/sh", "-c", command], capture_output=True, text=True, timeout=30
            )
            found = found or bool(done.stdout.strip())  # a line printed is a hit
            emit(
                {
                    "type": "tool",
                    "tool_name": "Bash",
                    "tool_call_id": call_id,
                    "result": done.stdout + done.stderr,
                    # grep: 1 is "no match"; 2 an error (a pattern like *.js matching no file)
                    "is_error": done.returncode > 1 and not done.stdout,
                }
            )
    verdict = "vulnerable" if found else "safe"
    emit({"type": "assistant", "content": f"VERDICT: {verdict}"})
    # no model, so no tokens and no cost; a wrapper reports its CLI's figures here
    emit({"type": "result", "tokens": {"input": 0, "output": 0}, "cost_usd": None})
    return 0


if __name__ == "__main__":
    sys.exit(main())
