"""Runner performance, measured against baselines taken in the same run (not collected by pytest).

1. Harness overhead per case run, one worker, with a trivial agent (a Python file that prints
   two session lines). Three loops over the same program, same interpreter:

   - *bare subprocess loop*: ``subprocess.run([python, agent.py], capture_output=True)``,
     ``--units`` times in a row, unconfined;
   - *bare bwrap loop*: the same, wrapped in ``bwrap`` with the harness's own sandbox options
     (``make_sandbox``: PID/IPC/UTS/network namespaces, system folders, the interpreter and the
     agent file read-only, a private /tmp and /proc, one room folder bound writable, reused);
   - *run_evaluation*: a real evaluation of ``--units`` cases × 1 run with ``-j 1`` and the
     default sandbox (bwrap, so the same sandbox setting as the bwrap loop) — per unit a fresh
     sealed room (statement copied, PROMPT.md written), a scrubbed environment, the agent under
     bwrap with its output captured under a byte cap, the session parsed and graded, its
     session file fsynced, its row appended and fsynced, its events logged, the room deleted;
     per evaluation the plan, the benchmark's hash, the manifest, the scoreboard record and the
     final manifest — divided by ``--units``.

   "harness / bwrap" is the runner's goal (the same sandboxed command on both sides); "harness /
   bare" is the whole cost of a unit; "bwrap / bare" the sandbox's own.
2. Worker scaling: wall time of an evaluation of ``--sleepy-units`` cases whose agent sleeps
   ``--sleep`` seconds, at ``-j 1`` and ``-j 4`` (ideal 4x). Beside it, what the machine
   allows: the bare bwrap loop of the same sleeping agent run by 1 and by 4 threads.
3. One demo-agent unit: wall time per unit of an evaluation of the bundled demo (``-j 1``,
   ``--demo-units`` case runs, agent.noise as shipped), and what the demo agent's process
   spends before it does any work — the interpreter's start (``python -c pass``) and the
   interpreter plus the agent's imports (``python -c 'import engine.evaluation.demo.agent'``),
   both with the flags the harness starts the agent with; the imports once from the bytecode
   cache the harness gives every demo run (``PYTHONPYCACHEPREFIX``, see
   engine.evaluation.agents.kinds.demo_bytecode) and once compiling the sources, as a sandboxed
   run must where no ``__pycache__`` was written.

Every measurement is repeated ``--reps`` times, interleaved (each step once, then again) so
drift of the shared machine hits all of them alike; min and median are printed. A ratio is
taken per repetition — the two sides measured seconds apart in the same pass — and then its
min and median over the repetitions are printed (not the ratio of each side's min, which would
pair the best moment of one side with the best moment of the other). The speed-up ``-j 1 / -j
4`` and the machine's own ``bare 1 / bare 4`` are formed the same way from the same pass, so
"what the machine allows" is the bound the runner's speed-up is read against.

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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.core.workspace import Workspace  # noqa: E402
from engine.evaluation.agents.kinds import DEMO_FLAGS, DEMO_MODULE, demo_bytecode  # noqa: E402
from engine.evaluation.agents.sandbox import make_sandbox  # noqa: E402
from engine.evaluation.demo import DEMO_BENCHMARK, copy_demo  # noqa: E402
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


def _timed_eval(ws: Workspace, bench: str, jobs: int, cases: list[str] | None = None) -> float:
    started = time.perf_counter()
    result = run_evaluation(ws, bench, jobs=jobs, runs=1 if cases else None, case_ids=cases)
    elapsed = time.perf_counter() - started
    assert result.metrics.invalid == 0, result.metrics.invalid_reasons
    return elapsed


def _loop(
    argv: list[str],
    units: int,
    pass_fds: tuple[int, ...] = (),
    threads: int = 1,
    env: dict[str, str] | None = None,
) -> float:
    """Seconds per run of ``argv`` run ``units`` times, by ``threads`` threads at once."""

    def one(_: int) -> None:
        subprocess.run(argv, capture_output=True, check=True, pass_fds=pass_fds, env=env)

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(units)))
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


def _demo_unit(root: Path, units: int) -> float:
    """Seconds per unit of a fresh demo workspace's evaluation of its first ``units`` cases."""
    ws = Workspace.at(copy_demo(root))
    cases = sorted(p.name for p in (ws.benchmarks_dir / DEMO_BENCHMARK).iterdir() if p.is_dir())
    return _timed_eval(ws, DEMO_BENCHMARK, 1, cases[:units]) / units


def _line(name: str, values: list[float], unit: str, scale: float = 1.0) -> None:
    print(
        f"  {name:<42} min {min(values) * scale:8.2f}{unit}   "
        f"median {statistics.median(values) * scale:8.2f}{unit}"
    )


def _ratios(top: list[float], bottom: list[float]) -> list[float]:
    return [a / b for a, b in zip(top, bottom, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=30, help="case runs per overhead measure")
    parser.add_argument("--sleep", type=float, default=0.5, help="sleeping agent's sleep (s)")
    parser.add_argument("--sleepy-units", type=int, default=16, help="case runs when sleeping")
    parser.add_argument("--demo-units", type=int, default=12, help="demo case runs")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions (≥ 3)")
    args = parser.parse_args()
    figures: dict[str, list[float]] = {}
    demo_python = [sys.executable, *DEMO_FLAGS, "-c"]
    cache = demo_bytecode()  # what the harness gives a demo run: its compiled modules
    cached = None if cache is None else {**os.environ, "PYTHONPYCACHEPREFIX": str(cache)}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        agent = base / "agent.py"
        agent.write_text(TRIVIAL)
        bwrap, status_fd = _bwrap_argv(base, agent)
        sleepy = args.sleepy_units

        def evaluation(name: str, units: int, jobs: int, env: list[str]) -> Callable[[int], float]:
            def run(rep: int) -> float:
                return _timed_eval(_workspace(base / f"{name}-{rep}", agent, units, env), "b", jobs)

            return run

        steps: dict[str, tuple[float, Callable[[int], float]]] = {
            "bare": (0, lambda _: _loop([sys.executable, str(agent)], args.units)),
            "bwrap": (0, lambda _: _loop(bwrap, args.units, (status_fd,))),
            "harness": (0, lambda rep: evaluation("t", args.units, 1, [])(rep) / args.units),
            "j1": (args.sleep, evaluation("s1", sleepy, 1, ["BENCH_SLEEP_S"])),
            "j4": (args.sleep, evaluation("s4", sleepy, 4, ["BENCH_SLEEP_S"])),
            "bare j1": (args.sleep, lambda _: _loop(bwrap, sleepy, (status_fd,)) * sleepy),
            "bare j4": (args.sleep, lambda _: _loop(bwrap, sleepy, (status_fd,), 4) * sleepy),
            "demo unit": (0, lambda rep: _demo_unit(base / f"demo-{rep}", args.demo_units)),
            "interpreter": (0, lambda _: _loop([*demo_python, "pass"], args.units)),
            "agent start": (
                0,
                lambda _: _loop([*demo_python, f"import {DEMO_MODULE}"], args.units, env=cached),
            ),
            "agent compiling": (
                0,
                lambda _: _loop([*demo_python, f"import {DEMO_MODULE}"], args.units),
            ),
        }
        for rep in range(args.reps):
            for name, (sleep, step) in steps.items():
                os.environ["BENCH_SLEEP_S"] = str(sleep)
                figures.setdefault(name, []).append(step(rep))
        os.close(status_fd)
    print(f"harness overhead per case run (1 worker, trivial agent, {args.units} runs)")
    _line("bare subprocess loop", figures["bare"], " ms", 1000)
    _line("bare bwrap loop (the sandbox alone)", figures["bwrap"], " ms", 1000)
    _line("run_evaluation (bwrap)", figures["harness"], " ms", 1000)
    _line("sandbox cost: bwrap / bare", _ratios(figures["bwrap"], figures["bare"]), "x")
    _line("ratio harness / bare", _ratios(figures["harness"], figures["bare"]), "x")
    _line("ratio harness / bwrap (goal ≤ 1.3)", _ratios(figures["harness"], figures["bwrap"]), "x")
    print(f"\nwall time with a sleeping agent ({args.sleep}s, {sleepy} case runs)")
    _line("run_evaluation -j 1", figures["j1"], " s")
    _line("run_evaluation -j 4", figures["j4"], " s")
    _line("bare bwrap loop, 1 thread", figures["bare j1"], " s")
    _line("bare bwrap loop, 4 threads", figures["bare j4"], " s")
    _line(
        "what the machine allows: bare 4 vs 1", _ratios(figures["bare j1"], figures["bare j4"]), "x"
    )
    _line("speed-up -j 4 vs -j 1 (goal ≥ 3.6)", _ratios(figures["j1"], figures["j4"]), "x")
    print(f"\none demo-agent unit ({args.demo_units} case runs, -j 1)")
    _line("run_evaluation of the demo, per unit", figures["demo unit"], " ms", 1000)
    _line("interpreter start (python -c pass)", figures["interpreter"], " ms", 1000)
    _line("agent start-up (interpreter + imports)", figures["agent start"], " ms", 1000)
    _line("  the same compiling its sources (no cache)", figures["agent compiling"], " ms", 1000)
    _line(
        "start-up: cached / compiling",
        _ratios(figures["agent start"], figures["agent compiling"]),
        "x",
    )
    _line(
        "start-up share of a demo unit", _ratios(figures["agent start"], figures["demo unit"]), "x"
    )


if __name__ == "__main__":
    main()
