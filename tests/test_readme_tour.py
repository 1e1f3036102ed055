"""The README is a guide a newcomer follows: short, and its tour does what it shows.

The tour's ``console`` blocks are run in order on a fresh demo, as a user types them (``$ `` lines,
``cd`` included); every output line the README shows must appear, in order, in what the command
printed (``…`` stands for what varies from run to run: seeds, ids, figures of the noisy agent).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
# The ids a later command names, found in what the earlier ones printed.
PLACEHOLDERS = {"<run-id>": r"\brun-\d{8}-\d{6}-[0-9a-f]+", "<candidate-id>": r"\bcand-[\w-]+"}


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def tour_steps(text: str) -> list[tuple[str, list[str]]]:
    """(command, the output lines shown under it) for every ``$`` line of the tour's blocks."""
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", _section(text, "A five-minute tour"), re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif line.strip():
                steps[-1][1].append(line)
    return steps


def _bare(text: str) -> str:
    """Without whitespace: a table cell or a long path wraps where the terminal is narrow."""
    return "".join(text.split())


def shows(printed: str, shown: list[str]) -> str | None:
    """The first shown line (other than a bare ``…``) missing from ``printed``, in order."""
    flat, at = _bare(printed), 0
    for want in shown:
        if want.strip() == "…":
            continue
        pattern = ".*?".join(re.escape(_bare(piece)) for piece in want.split("…"))
        found = re.compile(pattern, re.S).search(flat, at)
        if found is None:
            return want
        at = found.end()
    return None


def test_the_readme_is_a_short_guide_and_ci_runs_its_test_command() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.split()) <= 1500
    two = _section(text, "Two commands")
    (block,) = re.findall(r"```sh\n(.*?)```", two, re.S)
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    assert commands[0] == "uv run skillsmith demo"
    test_command = commands[1]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert [line for line in ci if line.startswith("uv run pytest")] == [test_command]


def test_shown_lines_match_what_varies_and_nothing_else() -> None:
    printed = "a\nrun folder: /tmp/x/runs/\nrun-1  status: finished  seed: 7\nb"
    assert shows(printed, ["run folder: …/runs/run-…  status: finished  seed: …"]) is None
    assert shows(printed, ["…", "b"]) is None
    assert shows(printed, ["b", "a"]) == "a"  # order counts
    assert shows(printed, ["status: failed"]) == "status: failed"


@pytest.mark.slow
def test_every_tour_command_runs_in_order_on_a_fresh_demo_and_prints_what_it_shows(
    tmp_path: Path,
) -> None:
    steps = tour_steps(README.read_text(encoding="utf-8"))
    assert [c.split()[:2] for c, _ in steps[:2]] == [["skillsmith", "demo"], ["cd", "~/ss-demo"]]
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "COLUMNS": "80", "NO_COLOR": "1"}
    env.pop("SKILLSMITH_WORKSPACE", None)
    cwd, seen = home, ""
    for command, shown in steps:
        for placeholder, pattern in PLACEHOLDERS.items():
            if placeholder in command:
                found = re.findall(pattern, seen)
                assert found, f"{placeholder}: no earlier output names one"
                command = command.replace(placeholder, found[-1])
        # ~ is the test's home folder, never the real one
        argv = [str(home) + a[1:] if a.startswith("~") else a for a in shlex.split(command)]
        if argv[0] == "cd":
            cwd = Path(argv[1])
            continue
        assert argv[0] == "skillsmith", command
        done = subprocess.run(
            [sys.executable, "-m", "engine.cli", *argv[1:]],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # one stream, as the user's terminal shows both
            text=True,
            timeout=900,
            check=False,
        )
        assert done.returncode == 0, (command, done.stdout[-2000:])
        missing = shows(done.stdout, shown)
        assert missing is None, (
            f"{command}: the README shows {missing!r}; it printed:\n" + (done.stdout[-3000:])
        )
        seen += done.stdout
