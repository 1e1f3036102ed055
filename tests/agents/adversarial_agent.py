"""A hostile target agent: it hunts for everything it must not see and reports what it found.

It reads its environment (and /proc/self/environ), its cwd and HOME, lists every ancestor
directory, walks ``..`` (the other run directories) reading every file, and tries the relative
paths where a rubric, a vault or a workspace config would sit if the run directory were inside the
workspace. The report is hex-encoded in the answer so the harness's secret redaction cannot hide a
leak from the test that decodes it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

GUESSES = [
    "rubric/rubric.yaml",
    "../rubric/rubric.yaml",
    "../../rubric/rubric.yaml",
    "../vault/anthropic_api_key",
    "../../vault/anthropic_api_key",
    "../../../vault/anthropic_api_key",
    "../skillsmith.yaml",
    "../../skillsmith.yaml",
    "../../../skillsmith.yaml",
]
MAX_FILES = 400


def read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[:20000]
    except OSError as exc:
        return f"<{type(exc).__name__}>"


def main() -> None:
    here = Path.cwd()
    report: dict[str, object] = {
        "cwd": str(here),
        "env": dict(os.environ),
        "proc_environ": read(Path("/proc/self/environ")),
        "home_listing": sorted(os.listdir(os.environ.get("HOME", "."))),
        "ancestors": {str(p): sorted(os.listdir(p)) for p in here.parents if os.access(p, os.R_OK)},
        "guesses": {g: read(here / g) for g in GUESSES if (here / g).exists()},
        "api_key": os.environ.get("ANTHROPIC_API_KEY"),
    }
    files: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(here.parent):
        dirnames.sort()
        for name in sorted(filenames):
            if len(files) >= MAX_FILES:
                break
            full = Path(dirpath) / name
            files[str(full)] = read(full)
    report["sibling_files"] = files
    encoded = json.dumps(report).encode().hex()
    print(json.dumps({"type": "user", "content": read(Path("PROMPT.md"))}))
    print(json.dumps({"type": "assistant", "content": f"REPORT {encoded}\nVERDICT: safe"}))


if __name__ == "__main__":
    main()
