"""Start-up of quick commands against bare interpreters (run by hand, not collected by pytest).

    uv run python benchmarks/bench_start.py [--repeat 5]

Times, in fresh processes and interleaved so that drift on a shared machine cancels:
``python -c pass``, ``python -c "import yaml, rich"`` (the baseline: the two libraries every
command needs), ``skillsmith --help``, ``skillsmith queue`` on an empty workspace and on one
holding ``--candidates`` candidates (default 5,000: one submitted through the queue, then copied
under new ids, each with its own history). Prints min and median of each and of the per-round
ratios to the baseline (goal: ≤ 3×), in wall time and in CPU time (user + system, which a busy
machine disturbs less).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ENTRY = "import sys; sys.argv = ['skillsmith', *sys.argv[1:]]; import tui.launch; tui.launch.main()"


# An installed package has its bytecode cached; measure that, not compiling the sources.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv``."""
    cpu, started = _children_cpu(), time.perf_counter()
    subprocess.run(argv, cwd=ROOT, check=True, capture_output=True, env=ENV)
    return time.perf_counter() - started, _children_cpu() - cpu


def queue_of(root: Path, count: int) -> Path:
    """A workspace whose queue holds ``count`` pending candidates."""
    import yaml

    from tests.tui_workspace import build_workspace

    ws = build_workspace(root, candidates=1)
    first = sorted(p for p in ws.candidates_dir.iterdir() if p.is_dir())[0]
    record = yaml.safe_load((first / "candidate.yaml").read_text(encoding="utf-8"))
    for n in range(count - 2):  # build_workspace queued two
        cid = f"cand-bench-{n:06d}"
        shutil.copytree(first, ws.candidates_dir / cid)
        record.update(id=cid, summary=f"candidate {n}: drop grep hits in comments")
        text = yaml.safe_dump(record, sort_keys=False)
        (ws.candidates_dir / cid / "candidate.yaml").write_text(text, encoding="utf-8")
    return ws.root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--candidates", type=int, default=5000)
    args = parser.parse_args()
    from engine.core.fsutil import SETTLED_AFTER_S
    from engine.core.workspace import Workspace

    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        ws = Workspace.init(Path(tmp) / "ws")
        full = queue_of(Path(tmp) / "full", args.candidates)
        # A queue that has been there a while, as a person's is: files written in the last
        # moments are read again until they settle (engine.core.candidates, yaml_twin).
        time.sleep(SETTLED_AFTER_S)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "import yaml, rich": [sys.executable, "-c", "import yaml, rich"],
            "skillsmith --help": [sys.executable, "-c", ENTRY, "--help"],
            "skillsmith queue": [sys.executable, "-c", ENTRY, "-w", str(ws.root), "queue"],
            f"queue of {args.candidates}": [sys.executable, "-c", ENTRY, "-w", str(full), "queue"],
        }
        for argv in commands.values():  # warm the file cache and the bytecode
            timed(argv)
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, argv in commands.items():
                figures[name].append(timed(argv))
    base = figures["import yaml, rich"]
    for kind, at in (("wall", 0), ("cpu", 1)):
        for name, pairs in figures.items():
            values = [p[at] for p in pairs]
            ratios = [p[at] / b[at] for p, b in zip(pairs, base, strict=True)]
            print(
                f"{kind:<4} {name:<20} min {min(values) * 1000:6.0f} ms  median "
                f"{statistics.median(values) * 1000:6.0f} ms   ratio to yaml+rich "
                f"min {min(ratios):.2f}× median {statistics.median(ratios):.2f}×"
            )


if __name__ == "__main__":
    main()
