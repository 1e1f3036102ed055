"""Runner performance, measured against baselines taken in the same run (not collected by pytest).

1. Harness overhead per case run: ``run_evaluation`` with a trivial agent (prints two session
   lines) against a bare loop of ``subprocess.run`` of the same program. The difference is what
   the harness adds per unit: building and removing the run directory, the scrubbed environment,
   process-group cleanup, grading and the atomic session/row writes.
2. Parallel scaling: wall time at 1, 2 and 4 workers with an agent that sleeps, against the
   1-worker time (ideal speed-up = the worker count, capped by the units).

Usage: ``uv run python benchmarks/bench_runner.py [--units N] [--sleep S]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.runner import run_evaluation  # noqa: E402
from engine.workspace import Workspace  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=40, help="case runs per measurement")
    parser.add_argument("--sleep", type=float, default=0.5, help="sleeping agent's sleep (s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        agent = base / "agent.py"
        agent.write_text(TRIVIAL)

        bare_started = time.perf_counter()
        for _ in range(args.units):
            subprocess.run([sys.executable, str(agent)], capture_output=True, check=True)
        bare = (time.perf_counter() - bare_started) / args.units
        ws = _workspace(base / "ws-trivial", agent, args.units, [])
        harness = _timed_eval(ws, jobs=1) / args.units
        print("harness overhead per case run (1 worker, trivial agent)")
        print(f"  bare subprocess loop : {bare * 1000:8.1f} ms/run")
        print(f"  run_evaluation       : {harness * 1000:8.1f} ms/run")
        print(f"  overhead             : {(harness - bare) * 1000:8.1f} ms/run")
        print(f"  ratio harness / bare : {harness / bare:8.2f}x")

        os.environ["BENCH_SLEEP_S"] = str(args.sleep)
        sleepy_units = min(args.units, 12)
        print(f"\nwall time with a sleeping agent ({args.sleep}s, {sleepy_units} case runs)")
        times: dict[int, float] = {}
        for jobs in (1, 2, 4):
            ws = _workspace(base / f"ws-sleep-{jobs}", agent, sleepy_units, ["BENCH_SLEEP_S"])
            times[jobs] = _timed_eval(ws, jobs=jobs)
            ideal = sleepy_units * args.sleep / jobs
            print(
                f"  -j {jobs}: {times[jobs]:6.2f} s   speed-up vs -j 1: "
                f"{times[1] / times[jobs]:5.2f}x (ideal {jobs}x; sleep floor {ideal:5.2f} s)"
            )


if __name__ == "__main__":
    main()
