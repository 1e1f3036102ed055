"""Per-evaluation cost against the length of the history (run by hand, not collected by pytest).

    uv run python benchmarks/bench_history.py [--factor 20] [--repeat 3] [--cases 4]

The demo's history is 20 evaluation records of the full vuln-detect benchmark (every case, two
runs each). This builds a demo workspace with 1× that history and one with ``--factor`` × it,
then measures, in fresh processes (as each ``skillsmith eval`` is one), interleaved 1× / N× so
drift on a shared machine cancels:

* the scoreboard write of one full demo evaluation (``append_record``), the step whose cost
  grew with the history;
* a whole small evaluation (``run_evaluation`` on ``--cases`` cases, one run each), which
  includes that write and every other history-dependent step of an evaluation (the history
  is also that many finished run folders in ``runs/``, which resuming and the sweep of killed
  writes must not list);
* the scoreboard pane's read (``read_heads``) of a history just copied into place (its heads
  index rebuilt), against a bare ``yaml.load`` (C loader) of the 1× file, the demo's own
  history: a plain reader of the N× file costs about N times that;
* the Overview's figures (``load_overview``) and the workbench's first content (process start
  → the Overview showing them), reading the history as appends leave it (heads index current).

Prints min and median of each, and of the per-round ratios N× / 1×.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

START = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEMO_RECORDS = 20
BENCH = "vuln-detect"


def _rows(ws_root: Path) -> list[dict[str, Any]]:
    """Result rows shaped like a full demo evaluation's (every case, two runs)."""
    from engine.core.benchmark import load_benchmark

    bench = load_benchmark(ws_root / "benchmarks" / BENCH)
    return [
        {
            "case_id": case.id,
            "run_index": run,
            "pass_fail": "pass" if (n + run) % 3 else "fail",
            "score": 1.0 if (n + run) % 3 else 0.0,
            "cost_usd": 0.0012 + 0.000001 * n,
            "duration_ms": 800 + n,
            "session_id": f"sess-{case.id}-{run}",
            "run_id": "run-bench",
        }
        for n, case in enumerate(bench.cases)
        for run in range(bench.runs_per_case)
    ]


def _record(ws_root: Path, title: str) -> Any:
    from engine.core.scoreboard import Runtime, record_from_rows

    return record_from_rows(
        _rows(ws_root),
        runtime=Runtime(provider="offline", model="demo-agent"),
        summary_title=title,
        summary="bench_history fixture",
        run_id="run-bench",
        skills={"security-audit": "v1"},
    )


def build(base: Path, factor: int) -> dict[int, Path]:
    """Demo workspaces with 1× and ``factor``× the history, and the history files to reset."""
    from engine.core.scoreboard import append_record
    from engine.evaluation.demo import copy_demo

    roots = {}
    for size in (1, factor):
        root = copy_demo(base / f"ws-{size}x")
        bench = root / "benchmarks" / BENCH
        append_record(bench, _record(root, "evaluation 0"))
        piece = (bench / "scoreboard.yaml").read_text(encoding="utf-8")
        text = "".join(
            piece.replace("summary_title: evaluation 0", f"summary_title: evaluation {n}")
            for n in range(DEMO_RECORDS * size)
        )
        (bench / "scoreboard.yaml").write_text(text, encoding="utf-8")
        shutil.copy2(bench / "scoreboard.yaml", base / f"history-{size}x.yaml")
        _past_runs(root / "runs", DEMO_RECORDS * size)
        roots[size] = root
    return roots


def _past_runs(runs_dir: Path, count: int) -> None:
    """The run folders of the history's evaluations, finished: a manifest and a results file
    each (their sessions are not what an evaluation looks at), and the index of unfinished
    runs the evaluations that made them would have left (engine.core.runs)."""
    from engine.core.runs import build_index

    for n in range(count):
        run = runs_dir / f"run-past-{n:05d}"
        (run / "sessions").mkdir(parents=True)
        manifest = {
            "run_id": run.name,
            "benchmark": BENCH,
            "key": f"past-{n}",
            "status": "finished",
        }
        (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        (run / "results.jsonl").write_text("", encoding="utf-8")
    build_index(runs_dir)


# -- the measured processes --------------------------------------------------------------------
def child(kind: str, ws_root: Path, cases: int) -> float:
    bench = ws_root / "benchmarks" / BENCH
    if kind == "append":
        from engine.core.scoreboard import append_record

        record = _record(ws_root, "measured")
        started = time.perf_counter()
        append_record(bench, record)
        return time.perf_counter() - started
    if kind == "eval":
        from engine.core.benchmark import load_benchmark
        from engine.core.workspace import Workspace
        from engine.evaluation.runner import run_evaluation

        ids = [c.id for c in load_benchmark(bench).cases[:cases]]
        started = time.perf_counter()
        run_evaluation(Workspace.at(ws_root), BENCH, runs=1, jobs=1, case_ids=ids)
        return time.perf_counter() - started
    if kind == "heads":
        from engine.core.scoreboard import read_heads

        started = time.perf_counter()
        heads = read_heads(bench)
        assert heads, "no records read"
        return time.perf_counter() - started
    if kind == "overview":
        from engine.core.workspace import Workspace
        from engine.views.overview import load_overview

        started = time.perf_counter()
        view = load_overview(Workspace.at(ws_root))
        assert view.benchmarks and view.benchmarks[0].evaluations, "no records read"
        return time.perf_counter() - started
    if kind == "tui":
        return _first_content(ws_root)
    if kind == "yaml":
        import yaml

        loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        text = (bench / "scoreboard.yaml").read_text(encoding="utf-8")
        started = time.perf_counter()
        yaml.load(text, Loader=loader)
        return time.perf_counter() - started
    raise SystemExit(f"unknown child {kind}")


def _first_content(ws_root: Path) -> float:
    """Process start → the workbench's Overview showing the workspace's figures."""
    from engine.core.workspace import Workspace
    from tui.app import make_app
    from tui.overview_pane import OverviewPane

    app = make_app(Workspace.at(ws_root), watch=False)
    shown: list[float] = []

    async def pilot(p: Any) -> None:
        pane = app.query_one(OverviewPane)
        deadline = time.perf_counter() + 120
        while pane.view is None and time.perf_counter() < deadline:
            await p.pause(0.002)
        shown.append(time.perf_counter() - START)
        app.exit()

    app.run(headless=True, size=(120, 40), auto_pilot=pilot)
    if not shown:
        raise SystemExit("the overview never showed")
    return shown[0]


def measure(kind: str, ws_root: Path, history: Path, cases: int) -> float:
    target = ws_root / "benchmarks" / BENCH / "scoreboard.yaml"
    if kind in ("overview", "tui"):  # read the history as the appends left it (index current)
        return _child(kind, ws_root, cases)
    shutil.copy2(history, target)
    # Flush the copy now: else the append's fsync would pay for writing the whole fresh copy.
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return _child(kind, ws_root, cases)


def _child(kind: str, ws_root: Path, cases: int) -> float:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(ws_root), "--cases", str(cases)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def _line(label: str, values: list[float], unit: str = "s") -> str:
    low, mid = min(values), statistics.median(values)
    return f"{label:<36} min {low:8.3f} {unit}   median {mid:8.3f} {unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factor", type=int, default=20, help="history size against the demo's")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", type=int, default=4, help="cases in the measured evaluation")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "WS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), args.cases)))
        return
    base = Path(tempfile.mkdtemp(prefix="bench-history-"))
    try:
        roots = build(base, args.factor)
        n = args.factor
        print(
            f"history: 1× = {DEMO_RECORDS} records "
            f"({(base / 'history-1x.yaml').stat().st_size / 1e6:.1f} MB), "
            f"{n}× = {DEMO_RECORDS * n} records "
            f"({(base / f'history-{n}x.yaml').stat().st_size / 1e6:.1f} MB)"
        )
        figures: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for kind in ("append", "eval", "heads", "overview", "tui"):
                for size in (1, n):
                    got = measure(kind, roots[size], base / f"history-{size}x.yaml", args.cases)
                    figures.setdefault(f"{kind} {size}x", []).append(got)
                    if kind == "heads" and size == n:
                        bare = measure("yaml", roots[1], base / "history-1x.yaml", args.cases)
                        figures.setdefault("yaml 1x", []).append(bare)
        for kind, label in (
            ("append", "scoreboard write, one evaluation"),
            ("eval", f"evaluation of {args.cases} cases"),
            ("heads", "scoreboard pane read"),
            ("overview", "Overview figures"),
            ("tui", "workbench start → Overview shown"),
        ):
            print(_line(f"{label} at 1×", figures[f"{kind} 1x"]))
            print(_line(f"{label} at {n}×", figures[f"{kind} {n}x"]))
            small, big = figures[f"{kind} 1x"], figures[f"{kind} {n}x"]
            ratios = [b / a for a, b in zip(small, big, strict=True)]
            print(_line(f"  ratio {n}× / 1×", ratios, unit="×"))
        print(_line("bare yaml.load of the 1× history", figures["yaml 1x"]))
        ratios = [h / y for h, y in zip(figures[f"heads {n}x"], figures["yaml 1x"], strict=True)]
        print(_line(f"  pane read {n}× / bare yaml 1×", ratios, unit="×"))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
