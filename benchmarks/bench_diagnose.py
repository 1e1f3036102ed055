"""``skillsmith diagnose`` against the size of the benchmark (run by hand, not collected by pytest).

    uv run python benchmarks/bench_diagnose.py [--sizes 300,3000] [--repeat 3]

Builds a demo workspace, evaluates its 108-case benchmark once with the demo agent (one run a
case), then grows benchmark and run together to each size: case ``c`` gets clones ``c-v1``,
``c-v2`` … whose source files carry their own identifiers (every word of four letters or more
gets the clone's suffix, so no two clones are near-identical statements, as in a real
benchmark), and the run gets each clone's rows and transcripts. Then it times whole
``skillsmith diagnose RUN --json`` processes (root causes and the ground-truth audit, which
evolve also runs every round), interleaved across sizes so drift on a shared machine cancels.

Prints the median seconds per size and the ratio of each size to the smallest; the goal for the
10× step (300 → 3,000 cases) is ≤ 12×, near-linear.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = "vuln-detect"
_IDENT = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]{3,})\b")


def _cli(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", "-w", str(ws), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )


def _base(root: Path) -> tuple[Path, Path]:
    """The demo workspace and its one evaluated run (seeded, so the rows are repeatable)."""
    ws = root / "demo"
    _cli(root, "demo", "--no-tui", str(ws))
    _cli(ws, "eval", BENCH, "--runs", "1", "--seed", "11")
    (run,) = [p for p in (ws / "runs").iterdir() if (p / "results.jsonl").is_file()]
    return ws, run


def _clone_case(src: Path, dst: Path, k: int) -> None:
    shutil.copytree(src, dst)
    for path in (dst / "statement").iterdir():
        if path.name != "prompt.md":
            text = path.read_text(encoding="utf-8")
            path.write_text(_IDENT.sub(lambda m: f"{m.group(1)}{k}", text), encoding="utf-8")


def grow(ws: Path, run: Path, size: int) -> str:
    """A benchmark of ``size`` cases (the demo's and their clones) and its run; the run's id."""
    bench = ws / "benchmarks" / BENCH
    originals = sorted(p for p in bench.iterdir() if (p / "rubric").is_dir())
    name = f"{BENCH}-{size}"
    out = ws / "benchmarks" / name
    shutil.copytree(bench, out, ignore=shutil.ignore_patterns(*[p.name for p in originals]))
    meta = (out / "benchmark.yaml").read_text(encoding="utf-8")
    (out / "benchmark.yaml").write_text(meta.replace(f"id: {BENCH}", f"id: {name}"), "utf-8")
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text("utf-8").splitlines()]
    by_case = {r["case_id"]: r for r in rows}
    run_id = f"{run.name}-{size}"
    new_run = ws / "runs" / run_id
    (new_run / "sessions").mkdir(parents=True)
    shutil.copytree(run / "inputs", new_run / "inputs")
    ids: list[str] = []
    out_rows: list[str] = []
    for n in range(size):
        src = originals[n % len(originals)]
        k = n // len(originals)
        cid = src.name if k == 0 else f"{src.name}-v{k}"
        if k == 0:
            shutil.copytree(src, out / cid)
        else:
            _clone_case(src, out / cid, k)
        row = dict(by_case[src.name])
        session = f"sessions/{cid}.0.jsonl"
        shutil.copyfile(run / row["session_file"], new_run / session)
        row.update(case_id=cid, session_file=session, session_id=f"{run_id}/{cid}.0")
        out_rows.append(json.dumps(row))
        ids.append(cid)
    manifest = json.loads((run / "manifest.json").read_text("utf-8"))
    manifest.update(run_id=run_id, benchmark=name, case_ids=ids)
    (new_run / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    (new_run / "results.jsonl").write_text("\n".join(out_rows) + "\n", "utf-8")
    return run_id


def time_diagnose(ws: Path, run_id: str) -> float:
    start = time.perf_counter()
    _cli(ws, "--json", "diagnose", run_id)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="300,3000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="bench-diagnose-") as tmp:
        ws, run = _base(Path(tmp))
        runs = {size: grow(ws, run, size) for size in sizes}
        times: dict[int, list[float]] = {size: [] for size in sizes}
        for _ in range(args.repeat):
            for size in sizes:
                times[size].append(time_diagnose(ws, runs[size]))
    smallest = statistics.median(times[sizes[0]])
    for size in sizes:
        med = statistics.median(times[size])
        print(f"{size:>6} cases: median {med:6.2f} s  ({med / smallest:5.2f}x of {sizes[0]})")


if __name__ == "__main__":
    main()
