"""A minimal `command` agent: what Skillsmith needs from any program it evaluates.

Skillsmith starts it once per case run, in the case's sealed run folder, with the task in the
file named by $SKILLSMITH_PROMPT_FILE and the skills under $SKILLSMITH_SKILLS_DIR. It prints its
session to stdout as JSON lines (docs/formats.md) and ends its last assistant line with the
answer. This one does no reasoning: it reads each source file and calls a file vulnerable when
a line formats a string into a SQL call, which is enough to see the format end to end.
"""

import json
import os
import re
import sys
from pathlib import Path

FORMATTED_SQL = re.compile(r"(execute|query)\(.*(%|\+|\$\{|f\")")


def emit(line: dict) -> None:
    sys.stdout.write(json.dumps(line) + "\n")


def main() -> int:
    prompt = Path(os.environ["SKILLSMITH_PROMPT_FILE"]).read_text(encoding="utf-8")
    skills = Path(os.environ.get("SKILLSMITH_SKILLS_DIR", "skills"))
    emit({"type": "user", "content": prompt})
    files = sorted(
        p for p in Path(".").rglob("*") if p.is_file() and skills not in p.parents
    )
    emit(
        {
            "type": "assistant",
            "content": "Reading the files I was given.",
            "tool_calls": [
                {"id": f"r{i}", "name": "Read", "args": str(p)} for i, p in enumerate(files)
            ],
        }
    )
    hits = []
    for i, path in enumerate(files):
        text = path.read_text(encoding="utf-8", errors="replace")
        found = [n for n, line in enumerate(text.splitlines(), 1) if FORMATTED_SQL.search(line)]
        hits += [f"{path}:{n}" for n in found]
        emit({"type": "tool", "tool_name": "Read", "tool_call_id": f"r{i}", "result": text[:2000]})
    verdict = "vulnerable" if hits else "safe"
    why = f"SQL formatted from input at {', '.join(hits)}" if hits else "no formatted SQL call"
    emit({"type": "assistant", "content": f"{why}.\nVERDICT: {verdict}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
