"""Start-up of quick commands against bare interpreters (run by hand, not collected by pytest).

    uv run python benchmarks/bench_start.py [--repeat 5]

Times, in fresh processes and interleaved so that drift on a shared machine cancels:
``python -c pass``, ``python -c "import yaml, rich"`` (the baseline: the two libraries every
command needs), ``skillsmith --help`` and ``skillsmith queue`` on an empty workspace. Prints min
and median of each and of the per-round ratios to the baseline (goal: ≤ 3×).
"""

from __future__ import annotations

import argparse
import os
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


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, check=True, capture_output=True, env=ENV)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from engine.core.workspace import Workspace

    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        ws = Workspace.init(Path(tmp) / "ws")
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "import yaml, rich": [sys.executable, "-c", "import yaml, rich"],
            "skillsmith --help": [sys.executable, "-c", ENTRY, "--help"],
            "skillsmith queue": [sys.executable, "-c", ENTRY, "-w", str(ws.root), "queue"],
        }
        for argv in commands.values():  # warm the file cache and the bytecode
            timed(argv)
        figures: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, argv in commands.items():
                figures[name].append(timed(argv))
    base = figures["import yaml, rich"]
    for name, values in figures.items():
        ratios = [v / b for v, b in zip(values, base, strict=True)]
        print(
            f"{name:<20} min {min(values) * 1000:6.0f} ms  median "
            f"{statistics.median(values) * 1000:6.0f} ms   ratio to yaml+rich "
            f"min {min(ratios):.2f}× median {statistics.median(ratios):.2f}×"
        )


if __name__ == "__main__":
    main()
