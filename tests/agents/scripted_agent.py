"""A small, real target agent for runner tests; each case's statement file ``mode.txt`` picks what
it does, so one benchmark can mix well-behaved, crashing, hanging and babbling units.

Modes: ``answer`` (default: look for ``eval(`` in code.txt, answer with a verdict), ``answer-file``
(same, but write the answer to answer.txt), ``sleep <s>`` (answer after sleeping), ``crash``,
``flaky`` (crash until $SKILLSMITH_TEST_COUNT_DIR/fixed exists), ``garbage``, ``flood``, ``empty``,
``hang`` (fork a grandchild that ignores SIGTERM, report its pid
on stderr, then hang), ``kill-worker`` (SIGKILL the Ray worker process it runs under).
Every launch appends one line to $SKILLSMITH_TEST_COUNT_DIR/launches.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path


def emit(line: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def count_launch() -> None:
    folder = os.environ.get("SKILLSMITH_TEST_COUNT_DIR")
    if folder:
        with open(Path(folder) / "launches", "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {Path.cwd().name}\n")


def hang() -> None:
    child = os.fork()
    if child == 0:
        grandchild = os.fork()
        if grandchild == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            while True:
                time.sleep(1)
        sys.stderr.write(f"grandchild pid {grandchild}\n")
        sys.stderr.flush()
        while True:
            time.sleep(1)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(1)


def kill_ray_worker() -> int:
    """Walk up the process tree to the Ray worker (its title starts ``ray::``) and kill it."""
    pid = os.getppid()
    while pid > 1:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        if cmdline.startswith(b"ray::"):
            os.kill(pid, signal.SIGKILL)
            time.sleep(30)
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    sys.stderr.write("no Ray worker above this process\n")
    return 4


def main() -> int:
    count_launch()
    mode_file = Path("mode.txt")
    mode = mode_file.read_text().strip() if mode_file.is_file() else "answer"
    prompt = Path(os.environ["SKILLSMITH_PROMPT_FILE"]).read_text()
    count_dir = os.environ.get("SKILLSMITH_TEST_COUNT_DIR", "")
    if mode == "crash" or (mode == "flaky" and not (Path(count_dir) / "fixed").exists()):
        sys.stderr.write("Traceback: deliberate crash\n")
        return 3
    if mode == "garbage":
        print("this is not a session line")
        return 0
    if mode == "flood":
        chunk = "x" * 65536
        while True:
            sys.stdout.write(chunk)
    if mode == "empty":
        return 0
    if mode == "hang":
        hang()
    if mode == "kill-worker":
        return kill_ray_worker()
    if mode.startswith("sleep"):
        time.sleep(float(mode.split()[1]))
    emit({"type": "user", "content": prompt})
    skills = sorted(
        p.parent.name for p in Path(os.environ["SKILLSMITH_SKILLS_DIR"]).glob("*/SKILL.md")
    )
    calls = [{"id": f"s{i}", "name": "Skill", "args": name} for i, name in enumerate(skills)]
    calls.append({"id": "g1", "name": "grep", "args": "grep -n eval( code.txt"})
    emit({"type": "assistant", "content": "Checking the code.", "tool_calls": calls})
    for call in calls[:-1]:
        emit({"type": "tool", "tool_name": "Skill", "tool_call_id": call["id"], "result": "loaded"})
    code = Path("code.txt").read_text() if Path("code.txt").is_file() else ""
    found = "eval(" in code
    emit({"type": "tool", "tool_name": "grep", "tool_call_id": "g1", "result": str(found)})
    # A skill that says "trust nothing" makes this agent call everything vulnerable; the runner
    # tests use it to show that the skill text reaches the agent.
    paranoid = any(
        "trust nothing" in (Path(os.environ["SKILLSMITH_SKILLS_DIR"]) / s / "SKILL.md").read_text()
        for s in skills
    )
    verdict = "vulnerable" if found or paranoid else "safe"
    answer = f"STEPS DONE: 1\nVERDICT: {verdict}"
    if mode == "answer-file":
        Path("answer.txt").write_text(answer)
        emit({"type": "assistant", "content": "Answer written to answer.txt"})
    else:
        emit({"type": "assistant", "content": answer})
    emit(
        {
            "type": "result",
            "tokens": {"input": 10, "output": 5},
            "cost_usd": 0.001,
            "duration_ms": 1,
            "is_error": False,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
