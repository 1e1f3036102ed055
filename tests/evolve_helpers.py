"""Shared helpers of the evolution tests: demo copies, the CLI as a subprocess, version texts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL, copy_demo

ROOT = Path(__file__).resolve().parents[1]
# A third of the demo benchmark: enough for a rejected and an accepted round in two rounds,
# small enough to run several whole sessions in a test.
SMALL_FAMILIES = ("deser", "path", "crypto")


def demo(
    dest: Path, families: tuple[str, ...] | None = None, *, noise: float | None = None
) -> Workspace:
    """A copy of the demo workspace, optionally with only the cases of some families and another
    ``agent.noise`` than the shipped one."""
    copy_demo(dest)
    if families is not None:
        bench = dest / "benchmarks" / DEMO_BENCHMARK
        for case in bench.iterdir():
            if case.is_dir() and not case.name.startswith(tuple(f + "-" for f in families)):
                shutil.rmtree(case)
    ws = Workspace.at(dest)
    if noise is not None:
        cfg = ws.load_config()
        cfg.agent.noise = noise
        ws.save_config(cfg)
    return ws


def evolve_argv(ws: Workspace, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "engine.cli",
        "evolve",
        DEMO_SKILL,
        "--bench",
        DEMO_BENCHMARK,
        "-j",
        "2",
        "-w",
        str(ws.root),
        *extra,
    ]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def run_evolve(
    ws: Workspace, *extra: str, timeout: float = 900, extra_env: dict[str, str] | None = None
) -> dict[str, Any]:
    """``skillsmith evolve … --json`` as a subprocess (``extra_env`` added); its JSON result."""
    done = subprocess.run(
        [*evolve_argv(ws, *extra), "--json"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**env(), **(extra_env or {})},
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def versions(ws: Workspace) -> list[str]:
    """The SKILL.md text of every stored version of the demo skill, in order."""
    store = SkillStore(ws, DEMO_SKILL)
    return [store.read(v.version) for v in store.versions()]


def state(ws: Workspace) -> dict[str, Any]:
    """What must not depend on interruptions or on the wall clock: the versions, the current
    pointer and active text, the taboo signatures, and the queued candidates' contents."""
    store = SkillStore(ws, DEMO_SKILL)
    from engine.core.queue import CandidateQueue

    return {
        "versions": versions(ws),
        "current": store.current(),
        "active": ws.skill_path(DEMO_SKILL).read_text(encoding="utf-8"),
        "taboo": [(e.rule_id, e.diff_hash) for e in store.taboo().entries()],
        "candidates": [(c.content_hash, c.status) for c in CandidateQueue(ws).list()],
    }


def session_events(ws: Workspace, session_id: str) -> list[dict[str, Any]]:
    path = ws.sessions_dir / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
