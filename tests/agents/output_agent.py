"""A target agent that leaves files behind, for the outputs, judge and garbage tests.

The statement's ``task.txt`` picks what it does:

- ``report``: writes ``report.md`` (the words of ``words.txt``), ``out/data.json`` and a binary
  ``chart.png``, links ``host-link.txt`` to the path named in ``host.txt``, makes one tool call
  that fails, and answers only that the report is written (the files are what counts);
- ``claim``: answers that it wrote ``report.md`` without writing anything;
- ``echo-prompt``: copies the prompt it was given to ``seen-prompt.md``, lists what else it was
  given (the run folder's names, the skills' files) in ``seen-context.txt`` and answers ``done``;
- ``garbage <kind>``: one good session line, then one line of garbage: ``deep`` (nested 200,000
  levels), ``inf`` (a token count of 1e999), ``nan`` (a cost of NaN), ``digits`` (a token count
  of 5,000 digits) or ``huge`` (a line of 3 MB).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def emit(line: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")


def finish(answer: str) -> None:
    emit({"type": "assistant", "content": answer})
    emit({"type": "result", "tokens": {"input": 12, "output": 7}, "cost_usd": 0.002})


GARBAGE = {
    "deep": "[" * 200_000 + "]" * 200_000,
    "inf": '{"type": "result", "tokens": {"input": 1e999, "output": 1}}',
    "nan": '{"type": "result", "tokens": {"input": 1, "output": 1}, "cost_usd": NaN}',
    "digits": '{"type": "result", "tokens": {"input": ' + "7" * 5000 + ', "output": 1}}',
    "huge": json.dumps({"type": "assistant", "content": "x" * 3_000_000}),
}


def main() -> int:
    task = Path("task.txt").read_text().split()
    given = Path(os.environ["SKILLSMITH_PROMPT_FILE"]).read_bytes()
    prompt = given.decode("utf-8")
    emit({"type": "user", "content": prompt})
    if task[0] == "garbage":
        sys.stdout.write(GARBAGE[task[1]] + "\n")
        finish("done")
        return 0
    if task[0] == "echo-prompt":
        Path("seen-prompt.md").write_bytes(given)
        skills = sorted(str(p) for p in Path(os.environ["SKILLSMITH_SKILLS_DIR"]).glob("*/*"))
        Path("seen-context.txt").write_text("\n".join([*sorted(os.listdir(".")), *skills]))
        finish("done")
        return 0
    if task[0] == "claim":
        finish("I wrote report.md with the summary.")
        return 0
    words = Path("words.txt").read_text().strip()
    calls = [
        {"id": "w1", "name": "Write", "args": "report.md"},
        {"id": "b1", "name": "Bash", "args": "make-chart --missing-flag"},
    ]
    emit({"type": "assistant", "content": "Writing the report.", "tool_calls": calls})
    Path("report.md").write_text(f"# Summary\n\n{words}\n")
    emit({"type": "tool", "tool_name": "Write", "tool_call_id": "w1", "result": "ok"})
    emit(
        {
            "type": "tool",
            "tool_name": "Bash",
            "tool_call_id": "b1",
            "result": "make-chart: unknown flag --missing-flag",
            "is_error": True,
        }
    )
    Path("out").mkdir()
    Path("out/data.json").write_text(json.dumps({"summary": {"words": len(words.split())}}))
    Path("chart.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    os.symlink(Path("host.txt").read_text().strip(), "host-link.txt")
    finish("The report is written.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
