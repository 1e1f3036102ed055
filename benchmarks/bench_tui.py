"""Workbench speed and size on a big workspace, against a bare Textual app (run by hand).

    uv run python benchmarks/bench_tui.py [--keep DIR] [--repeat 3] [--factor 2]

Builds (through the engine APIs) a workspace with 500 × factor candidates, 200 × factor
evaluation runs (each with its run folder, session log and scoreboard record) and 50 versions of
one skill, then measures in fresh processes:

* time to first paint: process start → the first frame handed to the terminal (ours and a bare
  Textual app showing one Static), in wall-clock and in the process's CPU time (the figure a
  busy shared machine disturbs least), and ours → the queue's first rows shown and the queue
  filled with all its rows;
* peak memory (ru_maxrss) of both, ours also after opening every pane;
* refresh latency: a candidate written to disk → the first frame whose queue shows its row,
  against watchfiles alone noticing the same write with the same debounce settings.

One process of each kind per round, rounds interleaved so that drift on a shared machine hits
all kinds alike; prints the per-round ratios (min and median) and the median figures.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

START = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The size factor reaches the measured child processes through the environment.
FACTOR = int(os.environ.get("BENCH_TUI_FACTOR", "1"))
CANDIDATES = 500 * FACTOR
RUNS = 200 * FACTOR
VERSIONS = 50
LATENCY_SAMPLES = 5


# -- the workspace ---------------------------------------------------------------------------------
def build(root: Path) -> None:
    from engine.core.events import SessionLog
    from engine.core.fsutil import atomic_write_json, atomic_write_text
    from engine.core.queue import CandidateQueue
    from engine.core.runs import RunFolder
    from engine.core.scoreboard import Runtime, append_record, record_from_rows
    from engine.core.store import SkillStore, unified_diff
    from engine.core.workspace import Workspace
    from tests.tui_workspace import BENCH, CASES, GATES_PASS, SKILL, _copy_benchmark, skill_text

    ws = Workspace.init(root)
    text = skill_text()
    atomic_write_text(ws.skill_path(SKILL), text)
    _copy_benchmark(ws, CASES)
    store = SkillStore(ws, SKILL)
    store.ensure_adopted()
    for n in range(1, VERSIONS):
        text = text + f"- Pitfall {n}: a `grep -n` hit in comment block {n} is not a finding.\n"
        store.publish(text, why=f"version {n}")
    queue = CandidateQueue(ws)
    current = store.current()
    for n in range(CANDIDATES):
        new = text + f"- Candidate {n}: drop `grep` hits in generated file {n}.\n"
        queue.submit(
            SKILL,
            new,
            unified_diff(text, new),
            source="evolve",
            operation="update",
            status="pending_approval" if n % 3 else "pending_eval",
            parent_version=current,
            summary=f"candidate {n}",
            gates=GATES_PASS,
            delta_score=0.01 * (n % 7),
        )
    base = {"variant": "skill", "duration_ms": 900, "tokens": {"input": 1200, "output": 300}}
    for n in range(RUNS):
        run_id = f"run-20260301-{n:06d}-bench"
        folder = RunFolder(ws.runs_dir / run_id)
        folder.path.mkdir(parents=True)
        atomic_write_json(folder.manifest_path, {"run_id": run_id, "benchmark": BENCH})
        rows = []
        for index, case in enumerate(CASES):
            passed = (n + index) % 3 != 0
            row = {
                **base,
                "case_id": case,
                "run_index": 0,
                "pass_fail": "pass" if passed else "fail",
                "score": 1.0 if passed else 0.0,
                "session_id": f"{run_id}-{case}",
                "cost_usd": 0.002,
            }
            folder.append_row(row)
            rows.append(row)
        log = SessionLog(ws.sessions_dir, "eval", session_id=run_id)
        log.emit("started", run_id=run_id, total=len(CASES))
        for done, row in enumerate(rows, 1):
            log.emit("case_finished", case_id=row["case_id"], pass_fail=row["pass_fail"])
            log.emit("progress", done=done, total=len(rows))
        log.emit("finished", run_id=run_id, status="finished")
        record = record_from_rows(
            rows,
            runtime=Runtime(provider="demo", model="demo"),
            summary_title=f"evaluation {n}",
            summary="benchmark fixture",
            run_id=run_id,
            skills={SKILL: f"v{n % VERSIONS}"},
        )
        append_record(ws.benchmarks_dir / BENCH, record)


# -- the measured processes ------------------------------------------------------------------------
def rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def on_frames(app: Any, seen: Callable[[], None]) -> None:
    """Call ``seen()`` each time ``app`` hands a frame to the terminal.

    Textual calls ``App._display`` with each compositor update; one outside a batch is a frame
    a user sees. Timing frames, rather than polling the widgets from the pilot (each poll waits
    for every widget's queue) or a callback queued after a refresh, measures what is on the
    screen and keeps what the app schedules after painting out of the figure.
    """
    display = app._display

    def timed(screen: Any, renderable: Any) -> None:
        display(screen, renderable)
        if renderable is not None and not app._batch_count:
            seen()

    app._display = timed


def time_first_frame(app: Any, figures: dict[str, float]) -> None:
    """Note in ``figures["paint_s"]`` when ``app`` hands its first frame to the terminal."""

    def seen() -> None:
        if "paint_s" not in figures:
            figures["paint_s"] = time.perf_counter() - START
            # CPU seconds the process spent to get there (interpreter start included): on a
            # shared machine the wall clock also counts the time other processes held the cores.
            figures["paint_cpu_s"] = time.process_time()

    on_frames(app, seen)


async def first_paint(pilot: Any, figures: dict[str, float]) -> None:
    """Return once the first frame is out (not waiting for loaders to finish)."""
    while "paint_s" not in figures:
        await pilot.pause(0.001)


def child_bare() -> dict[str, float]:
    from textual.app import App, ComposeResult
    from textual.pilot import Pilot
    from textual.widgets import Static

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("bare")

    figures: dict[str, float] = {}

    async def pilot(p: Pilot[Any]) -> None:
        await first_paint(p, figures)
        figures["rss_mb"] = rss_mb()
        p.app.exit()

    app = Bare()
    time_first_frame(app, figures)
    app.run(headless=True, size=(120, 40), auto_pilot=pilot)
    return figures


def child_ours(ws_root: str) -> dict[str, float]:
    import asyncio

    from textual.pilot import Pilot

    from engine.core.workspace import Workspace
    from tui.app import make_app

    ws = Workspace.at(ws_root)
    app = make_app(ws, watch=True)
    figures: dict[str, float] = {}

    async def until(condition: Callable[[], bool], p: Pilot[Any], timeout: float = 60) -> None:
        deadline = time.perf_counter() + timeout
        while not condition():
            if time.perf_counter() > deadline:
                raise SystemExit("timed out")
            await p.pause(0.002)

    async def pilot(p: Pilot[Any]) -> None:
        await first_paint(p, figures)
        figures["rss_paint_mb"] = rss_mb()
        # What the measuring needs is imported once the first frame is out, like the panes.
        from engine.core.queue import CandidateQueue
        from engine.core.store import SkillStore
        from tests.tui_workspace import SKILL, submit_candidate
        from tui.scoreboard_pane import ScoreboardPane
        from tui.sessions_pane import SessionsPane
        from tui.skills_pane import SkillsPane

        await until(lambda: app.queue_pane.table.row_count > 0, p)
        figures["first_rows_s"] = time.perf_counter() - START
        await until(lambda: app.queue_pane.table.row_count >= CANDIDATES, p)
        figures["queue_s"] = time.perf_counter() - START
        for key in "456":
            await p.press(key)
        await until(
            lambda: all(
                pane.loaded
                for pane in (
                    app.query_one(SessionsPane),
                    app.query_one(ScoreboardPane),
                    app.query_one(SkillsPane),
                )
            ),
            p,
        )
        figures["all_panes_s"] = time.perf_counter() - START
        figures["rss_all_mb"] = rss_mb()
        await p.press("1")
        await p.pause(1.0)  # let the watcher settle before timing it
        queue = CandidateQueue(ws)
        text = ws.skill_path(SKILL).read_text()
        current = SkillStore(ws, SKILL).current()
        latencies = []
        # The first frame showing one more row than before the write: the pane showing it.
        shown: dict[str, Any] = {}

        def seen() -> None:
            if "rows" in shown and app.queue_pane.table.row_count > shown["rows"]:
                shown["at"] = time.perf_counter()
                del shown["rows"]
                shown["event"].set()

        on_frames(app, seen)
        for n in range(LATENCY_SAMPLES):
            shown.update(rows=app.queue_pane.table.row_count, event=asyncio.Event())
            await asyncio.to_thread(submit_candidate, queue, text, f"Latency {n}", str(current))
            written = time.perf_counter()
            await asyncio.wait_for(shown["event"].wait(), 60)
            latencies.append(shown["at"] - written)
            await asyncio.sleep(0.5)
        figures["refresh_s"] = statistics.median(latencies)
        app.exit()

    time_first_frame(app, figures)
    app.run(headless=True, size=(120, 40), auto_pilot=pilot)
    return figures


def child_watch(ws_root: str) -> dict[str, float]:
    """watchfiles alone, with the workbench's settings, noticing the same kind of write."""
    import asyncio

    from watchfiles import awatch

    from engine.core.queue import CandidateQueue
    from engine.core.workspace import Workspace
    from tests.tui_workspace import SKILL, submit_candidate
    from tui.app import WATCH_DEBOUNCE_MS, WATCH_STEP_MS
    from tui.watch import WorkspaceFilter

    ws = Workspace.at(ws_root)
    queue = CandidateQueue(ws)
    text = ws.skill_path(SKILL).read_text()

    async def main() -> float:
        latencies = []
        stop = asyncio.Event()
        seen = asyncio.Event()

        async def watch() -> None:
            async for _ in awatch(
                ws.root,
                watch_filter=WorkspaceFilter(ws.root),
                debounce=WATCH_DEBOUNCE_MS,
                step=WATCH_STEP_MS,
                stop_event=stop,
            ):
                seen.set()

        task = asyncio.create_task(watch())
        await asyncio.sleep(1.0)
        for n in range(LATENCY_SAMPLES):
            seen.clear()
            await asyncio.to_thread(submit_candidate, queue, text, f"Raw {n}", "v49")
            written = time.perf_counter()
            await seen.wait()
            latencies.append(time.perf_counter() - written)
            await asyncio.sleep(0.5)
        stop.set()
        await task
        return statistics.median(latencies)

    return {"refresh_s": asyncio.run(main())}


def measure(kind: str, ws_root: Path, repeat: int) -> dict[str, float]:
    """Median of ``repeat`` fresh processes (imports, first paint and memory are per process).

    The latency samples add candidates, so each process gets its own copy of the workspace.
    """
    runs = []
    # Installed packages have cached bytecode: measure that, not compiling our sources each time.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["XDG_CONFIG_HOME"] = str(ws_root.parent / "xdg")
    for _ in range(repeat):
        copy = ws_root.parent / "ws-measured"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(ws_root, copy, symlinks=True)
        out = subprocess.run(
            [sys.executable, __file__, "--child", kind, str(copy)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=ROOT,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the workspace here (reused if present)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--factor", type=int, default=FACTOR, help="workspace size factor")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "WS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.factor != FACTOR:  # re-run with the factor in the environment the children inherit
        os.environ["BENCH_TUI_FACTOR"] = str(args.factor)
        os.execv(sys.executable, [sys.executable, *sys.argv])
    if args.child:
        kind, ws_root = args.child
        figures = {"ours": child_ours, "watch": child_watch}
        result = child_bare() if kind == "bare" else figures[kind](ws_root)
        print(json.dumps(result))
        return
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-tui-"))
    ws_root = base / "ws"
    if not ws_root.exists():
        started = time.perf_counter()
        build(ws_root)
        print(
            f"built {ws_root} in {time.perf_counter() - started:.1f} s "
            f"({CANDIDATES} candidates, {RUNS} runs, {VERSIONS} versions)"
        )
        # A workspace a person has used: its files settled, its queue listed once (any
        # `skillsmith queue` or earlier workbench leaves the listing index; copies keep it).
        from engine.core.candidates import refresh_index
        from engine.core.fsutil import SETTLED_AFTER_S

        time.sleep(SETTLED_AFTER_S)
        refresh_index(ws_root / "candidates")
    # Interleaved, one process of each kind per round, so that drift on the machine cancels.
    rounds: dict[str, list[dict[str, float]]] = {"bare": [], "ours": [], "watch": []}
    for _ in range(args.repeat):
        for kind, runs in rounds.items():
            runs.append(measure(kind, ws_root, 1))
    bare, ours, watch = (
        {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for runs in rounds.values()
    )
    paint = [
        o["paint_s"] / b["paint_s"] for o, b in zip(rounds["ours"], rounds["bare"], strict=True)
    ]
    paint_cpu = [
        o["paint_cpu_s"] / b["paint_cpu_s"]
        for o, b in zip(rounds["ours"], rounds["bare"], strict=True)
    ]
    refresh = [o["refresh_s"] for o in rounds["ours"]]
    print(
        f"per round: first paint ratio min {min(paint):.2f} median {statistics.median(paint):.2f}; "
        f"in CPU time min {min(paint_cpu):.2f} median {statistics.median(paint_cpu):.2f}; "
        f"refresh min {min(refresh) * 1000:.0f} ms "
        f"median {statistics.median(refresh) * 1000:.0f} ms"
    )
    print(
        f"first paint     ours {ours['paint_s']:.2f} s   bare {bare['paint_s']:.2f} s   "
        f"ratio {ours['paint_s'] / bare['paint_s']:.2f}"
    )
    print(
        f"  in CPU time   ours {ours['paint_cpu_s']:.2f} s   bare {bare['paint_cpu_s']:.2f} s   "
        f"ratio {ours['paint_cpu_s'] / bare['paint_cpu_s']:.2f}"
    )
    print(
        f"first rows      ours {ours['first_rows_s']:.2f} s\n"
        f"queue filled    ours {ours['queue_s']:.2f} s ({CANDIDATES} rows)   "
        f"ratio to bare paint {ours['queue_s'] / bare['paint_s']:.2f}"
    )
    print(f"all panes       ours {ours['all_panes_s']:.2f} s")
    print(
        f"memory (paint)  ours {ours['rss_paint_mb']:.0f} MB   bare {bare['rss_mb']:.0f} MB   "
        f"ratio {ours['rss_paint_mb'] / bare['rss_mb']:.2f}"
    )
    print(
        f"memory (panes)  ours {ours['rss_all_mb']:.0f} MB   "
        f"ratio {ours['rss_all_mb'] / bare['rss_mb']:.2f}"
    )
    print(
        f"refresh latency ours {ours['refresh_s'] * 1000:.0f} ms   "
        f"watchfiles alone {watch['refresh_s'] * 1000:.0f} ms   "
        f"ratio {ours['refresh_s'] / watch['refresh_s']:.2f}"
    )


if __name__ == "__main__":
    main()
