"""A `command` agent that reports the room it was started in, then tries to write back.

It lists every file of its working directory (links as ``path -> target``), reads the skills
the harness placed for it ($SKILLSMITH_SKILLS_DIR), says whether ``src/app.py`` still holds
what the project committed and how many names the file has (a hard link would have two), then
overwrites ``src/app.py``, ``CLAUDE.md`` and ``.claude/settings.json`` and adds a file, as an
agent editing the project would. Its session (the format of docs/agents.md) carries the report
as the last assistant message, one JSON object after ``REPORT:``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ORIGINAL_APP = "def handler(event):\n    return event\n"


def read(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def main() -> int:
    room = Path.cwd()
    files = []
    for dirpath, dirnames, filenames in os.walk(room):
        base = Path(dirpath)
        for name in sorted(filenames + [d for d in dirnames if (base / d).is_symlink()]):
            rel = (base / name).relative_to(room).as_posix()
            link = os.readlink(base / name) if (base / name).is_symlink() else None
            files.append(f"{rel} -> {link}" if link else rel)
        dirnames[:] = [d for d in dirnames if d not in (".home", ".tmp")]
    skills_dir = room / os.environ["SKILLSMITH_SKILLS_DIR"]
    skills = {p.parent.name: p.read_text() for p in sorted(skills_dir.glob("*/SKILL.md"))}
    app = room / "src" / "app.py"
    report = {
        "files": sorted(files),
        "skills_dir": os.environ["SKILLSMITH_SKILLS_DIR"],
        "skills": skills,
        "claude_md": read(room / "CLAUDE.md"),
        "settings": json.loads(read(room / ".claude" / "settings.json") or "null"),
        "app_pristine": read(app) == ORIGINAL_APP,
        "app_links": app.stat().st_nlink if app.exists() else 0,
    }
    for rel in ("src/app.py", "CLAUDE.md", ".claude/settings.json", "src/added.py"):
        if (room / rel).parent.is_dir():
            (room / rel).write_text(f"written by run {os.environ['SKILLSMITH_RUN_INDEX']}\n")
    lines = [
        {"type": "user", "content": (room / os.environ["SKILLSMITH_PROMPT_FILE"]).read_text()},
        {
            "type": "assistant",
            "content": "",
            "tool_calls": [{"id": "t1", "name": "Bash", "args": "find . -type f"}],
        },
        {"type": "tool", "tool_name": "Bash", "tool_call_id": "t1", "result": "\n".join(files)},
        {"type": "assistant", "content": "REPORT: " + json.dumps(report) + "\nVERDICT: seen"},
        {"type": "result", "tokens": {"input": 10, "output": 5}, "cost_usd": None},
    ]
    for line in lines:
        sys.stdout.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
