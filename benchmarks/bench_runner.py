"""Runner performance, measured against baselines taken in the same run (not collected by pytest).

1. Harness overhead per case run: ``run_evaluation`` (one worker) with a trivial agent that
   prints two session lines, against two bare loops of the same program — ``subprocess.run``
   alone, and ``subprocess.run`` under bubblewrap with the harness's own sandbox options. The
   first ratio is the whole cost of a unit; the second is what the harness adds on top of the
   sandbox (run folder, environment, grading, the atomic session/row writes); the sandbox's own
   cost is the bwrap loop against the bare one.
2. Parallel scaling: wall time at 1 and 4 workers with an agent that sleeps (ideal 4x).

Every measurement is repeated ``--reps`` times, interleaved (bare, bwrap, harness, -j 1, -j 4,
then again) so drift of the shared machine hits all of them alike; min and median are printed.

Usage: ``uv run python benchmarks/bench_runner.py [--units N] [--sleep S] [--reps R]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.core.workspace import Workspace  # noqa: E402
from engine.evaluation.agents.sandbox import make_sandbox  # noqa: E402
from engine.evaluation.runner import run_evaluation  # noqa: E402

TRIVIAL = textwrap.dedent(
    """
    import json, os, sys, time
    time.sleep(float(os.environ.get("BENCH_SLEEP_S", "0")))
    print(json.dumps({"type": "user", "content": "p"}))
    print(json.dumps({"type": "assistant", "content": "VERDICT: safe"}))
    """
)


def _workspace(root: Path, agent: Path, cases: int, env_allow: list[str]) -> Workspace:
    ws = Workspace.init(root)
    cfg = ws.load_config()
    cfg.agent.kind = "command"
    cfg.agent.command = [sys.executable, str(agent)]
    cfg.agent.env_allow = env_allow
    ws.save_config(cfg)
    bench = ws.benchmarks_dir / "b"
    bench.mkdir()
    config = {"labels": ["vulnerable", "safe"], "runs_per_case": 1, "seed": 1}
    (bench / "benchmark.yaml").write_text(yaml.safe_dump(config))
    for i in range(cases):
        case = bench / f"c{i:03d}"
        (case / "statement").mkdir(parents=True)
        (case / "rubric").mkdir()
        (case / "statement" / "prompt.md").write_text("Is it safe? Answer VERDICT: <label>.\n")
        (case / "statement" / "code.py").write_text(f"x = {i}\n")
        (case / "rubric" / "rubric.yaml").write_text("expected: safe\n")
    return ws


def _timed_eval(ws: Workspace, jobs: int) -> float:
    started = time.perf_counter()
    result = run_evaluation(ws, "b", jobs=jobs)
    elapsed = time.perf_counter() - started
    assert result.metrics.invalid == 0, result.metrics.invalid_reasons
    return elapsed


def _loop(argv: list[str], units: int, pass_fds: tuple[int, ...] = ()) -> float:
    """Seconds per run of ``argv`` run ``units`` times in a row."""
    started = time.perf_counter()
    for _ in range(units):
        subprocess.run(argv, capture_output=True, check=True, pass_fds=pass_fds)
    return (time.perf_counter() - started) / units


def _bwrap_argv(base: Path, agent: Path) -> tuple[list[str], int]:
    """The harness's sandbox around the trivial agent, in a room of its own."""
    room = base / "scratch" / "unit-bench"
    room.mkdir(parents=True)
    sandbox = make_sandbox(
        "bwrap", network=False, command=[sys.executable, str(agent)], workspace=base / "none"
    )
    status = os.open(os.devnull, os.O_WRONLY)
    args = [sandbox.bwrap, *sandbox.options(room, status), "--", sys.executable, str(agent)]
    return args, status


def _line(name: str, values: list[float], unit: str, scale: float = 1.0) -> None:
    print(
        f"  {name:<34} min {min(values) * scale:8.2f}{unit}   "
        f"median {statistics.median(values) * scale:8.2f}{unit}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=30, help="case runs per overhead measure")
    parser.add_argument("--sleep", type=float, default=0.5, help="sleeping agent's sleep (s)")
    parser.add_argument("--sleepy-units", type=int, default=16, help="case runs when sleeping")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions (≥ 3)")
    args = parser.parse_args()
    figures: dict[str, list[float]] = {
        k: [] for k in ("bare", "bwrap", "harness", "j1", "j4", "h/bare", "h/bwrap", "scale")
    }
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        agent = base / "agent.py"
        agent.write_text(TRIVIAL)
        bwrap, status_fd = _bwrap_argv(base, agent)
        steps: list[tuple[str, Callable[[int], float]]] = [
            ("bare", lambda _: _loop([sys.executable, str(agent)], args.units)),
            ("bwrap", lambda _: _loop(bwrap, args.units, (status_fd,))),
            (
                "harness",
                lambda rep: (
                    _timed_eval(_workspace(base / f"ws-t{rep}", agent, args.units, []), 1)
                    / args.units
                ),
            ),
        ]
        for jobs in (1, 4):
            steps.append(
                (
                    f"j{jobs}",
                    lambda rep, jobs=jobs: _timed_eval(
                        _workspace(
                            base / f"ws-s{jobs}-{rep}", agent, args.sleepy_units, ["BENCH_SLEEP_S"]
                        ),
                        jobs,
                    ),
                )
            )
        for rep in range(args.reps):
            for name, step in steps:
                os.environ["BENCH_SLEEP_S"] = str(args.sleep) if name.startswith("j") else "0"
                figures[name].append(step(rep))
            figures["h/bare"].append(figures["harness"][-1] / figures["bare"][-1])
            figures["h/bwrap"].append(figures["harness"][-1] / figures["bwrap"][-1])
            figures["scale"].append(figures["j1"][-1] / figures["j4"][-1])
        os.close(status_fd)
    print(f"harness overhead per case run (1 worker, trivial agent, {args.units} runs)")
    _line("bare subprocess loop", figures["bare"], " ms", 1000)
    _line("bare bwrap loop (the sandbox alone)", figures["bwrap"], " ms", 1000)
    _line("run_evaluation", figures["harness"], " ms", 1000)
    sandbox = [b / a for a, b in zip(figures["bare"], figures["bwrap"], strict=True)]
    _line("sandbox cost: bwrap / bare", sandbox, "x")
    _line("ratio harness / bare", figures["h/bare"], "x")
    _line("ratio harness / bwrap (goal ≤ 1.3)", figures["h/bwrap"], "x")
    print(f"\nwall time with a sleeping agent ({args.sleep}s, {args.sleepy_units} case runs)")
    _line("-j 1", figures["j1"], " s")
    _line("-j 4", figures["j4"], " s")
    _line("speed-up -j 4 vs -j 1 (goal ≥ 3.6)", figures["scale"], "x")


if __name__ == "__main__":
    main()
