"""Workspaces and checks for the Builder, Optimizer and session tests.

Building a benchmark runs real agents, so one build is made per test module (``built_demo``) and
each test works on its own copy (``clone``). Run as a script, this file is a target agent: it
counts its launch in ``$SKILLSMITH_TEST_COUNT_DIR/launches`` (case and run index), optionally
sleeps ``$SKILLSMITH_TEST_DELAY`` seconds or crashes on one case (``$SKILLSMITH_TEST_CRASH``),
then is the bundled demo agent — so a test can count exactly which units ran, break units, and
kill an Optimizer in the middle of an evaluation.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

COUNT_ENV = "SKILLSMITH_TEST_COUNT_DIR"
DELAY_ENV = "SKILLSMITH_TEST_DELAY"
CRASH_ENV = "SKILLSMITH_TEST_CRASH"  # "<statement file>:once" or "<statement file>:always"
BENCH = "mini"
# Demo cases on which the offline optimizer's first candidate (run every step before concluding)
# fixes a premature conclusion, and the next ones change nothing: one kept round, then rollbacks.
PICK = (
    "cmdi-js-execfile",
    "deser-php-allowed-classes",
    "crypto-py-md5-etag",
    "crypto-py-md5-password",
    "sqli-py-params",
    "sqli-py-format",
    "path-py-concat",
    "xss-js-innerhtml",
)


def built_demo(root: Path, *, iterations: int = 1, cases: int = 6) -> Path:
    """A copy of the demo with benchmark ``mini`` built from vuln-detect (a Formal Baseline)."""
    from engine.core.workspace import Workspace
    from engine.evaluation.demo import copy_demo
    from engine.loops.builder import BuildOptions
    from engine.loops.builder import run as run_build

    path = copy_demo(root)
    # The Optimizer tests assert exact keep/roll-back decisions and scores of single runs, so the
    # demo agent runs without its run-to-run slips (agent.noise: 0).
    ws = Workspace.at(path)
    cfg = ws.load_config()
    cfg.agent.noise = 0.0
    ws.save_config(cfg)
    run_build(
        Workspace.at(path),
        BuildOptions(
            BENCH,
            source="vuln-detect",
            pick=PICK,
            cases=cases,
            pilot_iterations=iterations,
            jobs=2,
        ),
    )
    return path


def clone(source: Path, dest: Path) -> Any:
    """An independent copy of a workspace (history pointers stay symlinks)."""
    from engine.core.workspace import Workspace

    shutil.copytree(source, dest, symlinks=True)
    return Workspace.at(dest)


def use_counting_agent(ws: Any, count: Path) -> Path:
    """Make this file the workspace's target agent (kind ``command``), counting into ``count``.

    The count folder is the one place outside its run folder the sandbox lets it write.
    """
    count.mkdir(parents=True, exist_ok=True)
    count.chmod(0o777)  # under a root harness the agent writes it as "nobody" (docs/sandbox.md)
    cfg = ws.load_config()
    cfg.agent.kind = "command"
    cfg.agent.command = [sys.executable, str(Path(__file__).resolve())]
    cfg.agent.env_allow = [COUNT_ENV, DELAY_ENV, CRASH_ENV]
    cfg.agent.writable_paths = [str(count)]
    ws.save_config(cfg)
    return count


def launches(count_dir: Path) -> list[str]:
    path = count_dir / "launches"
    return path.read_text().splitlines() if path.exists() else []


def result_rows(run_dir: Path) -> list[dict[str, Any]]:
    text = (run_dir / "results.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def recompute(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """PenguinHarness' figures from raw results rows, written out independently of the engine:
    a run's score is ×100; a case averages its runs; the evaluation averages its cases; scores
    two decimals, costs six ignoring nulls, durations whole milliseconds."""
    cases: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["pass_fail"] != "invalid":
            cases.setdefault(row["case_id"], []).append(row)

    def cost(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return round(math.fsum(known) / len(known), 6) if known else None

    per_case = {}
    for case_id, runs in cases.items():
        per_case[case_id] = {
            "score": round(statistics.fmean(r["score"] * 100 for r in runs), 2),
            "cost": cost([r["cost_usd"] for r in runs]),
            "duration_ms": round(statistics.fmean(r["duration_ms"] for r in runs)),
            "sessions": sorted(r["session_id"] for r in runs),
        }
    return {
        "score": round(statistics.fmean(c["score"] for c in per_case.values()), 2),
        "cost": cost([c["cost"] for c in per_case.values()]),
        "duration_ms": round(statistics.fmean(c["duration_ms"] for c in per_case.values())),
        "cases": per_case,
    }


def events(ws: Any, session_id: str) -> list[dict[str, Any]]:
    path = ws.sessions_dir / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _count_and_run() -> int:
    folder = Path(os.environ.get(COUNT_ENV) or ".")
    files = sorted(p.name for p in Path.cwd().iterdir() if p.is_file() and p.suffix != ".md")
    unit = f"{','.join(files)}#{os.environ.get('SKILLSMITH_RUN_INDEX', '0')}"
    if os.environ.get(COUNT_ENV):
        with open(folder / "launches", "a", encoding="utf-8") as fh:
            fh.write(unit + "\n")
    time.sleep(float(os.environ.get(DELAY_ENV) or 0))
    crash_file, _, how = (os.environ.get(CRASH_ENV) or "").partition(":")
    if crash_file and crash_file in files:
        marker = folder / f"crashed-{crash_file}"
        if how == "always" or not marker.exists():
            marker.touch()
            sys.stderr.write(f"test agent: crashing on {crash_file}\n")
            return 3
    from engine.evaluation.demo.agent import main

    return main()


if __name__ == "__main__":
    sys.exit(_count_and_run())
