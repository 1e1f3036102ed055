"""Snapshot and restore of a 50 MB agent state against GNU tar on the same tree.

Run by hand (not collected by pytest):

    uv run python benchmarks/bench_snapshots.py [--mb 50] [--repeat 3] [--busy N]

The state mixes Markdown (compressible) with random assets (incompressible, about a quarter) and
a version history. ``snapshot`` is compared with ``tar -czf`` of the same four items; ``restore``
with ``tar -xzf`` (a restore validates every member while it unpacks, syncs what it wrote, and
keeps the state it replaced by a rename). The replaced state's archive is written after the
restore has returned (engine.core.snapshots.finish_pending); it is timed on its own, outside the
restore, against ``tar -czf``, and it never runs during another measure. Each figure is the min
and median of the per-round ratios, ours and the baseline interleaved in every round.

Fairness: every timed measure, ours and the baseline's alike, starts after ``os.sync()``, so
neither side pays for the page cache dirtied by the measures before it (without it, a restore's
syncfs wrote back the previous round's ``tar -xzf`` output, the deleted replaced state and the
baseline archive, and the ratio swung between 0.7 and 1.7 with the order of the steps). Within a
round the side that runs first alternates, so neither always gets the warmer caches. The
baseline is plain ``tar -xzf`` without a sync: a restore's own sync of what it wrote (one syncfs
of the workspace's filesystem) is part of its price.

``--busy N`` runs N CPU-bound processes for the whole measurement, to measure on a machine that
is busy with something else (the issue's "busy" figure); 0, the default, adds no load.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.core.snapshots import create_snapshot, finish_pending, restore
from engine.core.store import SkillStore
from engine.core.workspace import Workspace

ITEMS = ["skillsmith.yaml", "AGENTS.md", "skills", "history"]


def build_state(ws: Workspace, megabytes: int, rng: random.Random) -> int:
    """Skills with references, random assets and a few published versions each."""
    words = [
        "grep",
        "read",
        "parse",
        "token",
        "session",
        "rubric",
        "holdout",
        "gate",
        "taboo",
        "verdict",
        "patch",
    ]
    budget = megabytes * 1024 * 1024
    ws.agents_md.write_text("# Agent\n" + "Follow the skills.\n" * 200)
    n = 0
    while _size(ws.root) < budget:
        name = f"skill-{n:03d}"
        body = "".join(
            f"{i}. run `{rng.choice(words)} {rng.choice(words)}` then {rng.choice(words)}\n"
            for i in range(400)
        )
        skill_dir = ws.skills_dir / name
        (skill_dir / "references").mkdir(parents=True)
        (skill_dir / "assets").mkdir()
        (skill_dir / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\n{body}")
        for r in range(4):
            text = " ".join(rng.choice(words) for _ in range(40_000))
            (skill_dir / "references" / f"ref{r}.md").write_text(text)
        (skill_dir / "assets" / "blob.bin").write_bytes(rng.randbytes(300 * 1024))
        store = SkillStore(ws, name)
        for v in range(3):
            store.publish(body + f"{v}. extra step `{rng.choice(words)}`\n", why=f"round {v}")
        n += 1
    return _size(ws.root)


def _size(root: Path) -> int:
    return sum(
        p.stat().st_size
        for item in ITEMS
        if (root / item).exists()
        for p in ([root / item] if (root / item).is_file() else (root / item).rglob("*"))
        if p.is_file()
    )


def timed(run: Callable[[], object]) -> float:
    """Seconds ``run`` takes from a clean page cache: nothing left dirty by an earlier step."""
    os.sync()
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def ratio(ours: Callable[[], object], base: Callable[[], object], ours_first: bool) -> float:
    """Ours / baseline, timed back to back, the one named first running first."""
    if ours_first:
        mine = timed(ours)
        return mine / timed(base)
    theirs = timed(base)
    return timed(ours) / theirs


def rounds(repeat: int, ours: Callable[[], object], base: Callable[[], object]) -> list[float]:
    """Ratios ours / baseline, one per round: interleaved, so drift on the machine cancels."""
    return [ratio(ours, base, ours_first=r % 2 == 0) for r in range(repeat)]


@contextlib.contextmanager
def load(processes: int) -> Iterator[None]:
    """``processes`` busy loops running beside the measurement (none for 0)."""
    spin = [sys.executable, "-c", "while True: pass"]
    procs = [subprocess.Popen(spin) for _ in range(processes)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def line(label: str, baseline: str, ratios: list[float]) -> str:
    return (
        f"{label:<9} / {baseline:<9} min {min(ratios):5.2f}  "
        f"median {statistics.median(ratios):5.2f}  ({len(ratios)} interleaved rounds)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--busy", type=int, default=0, help="CPU-bound processes run beside")
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="bench-snapshots-") as tmp:
        ws = Workspace.init(Path(tmp) / "ws")
        size = build_state(ws, args.mb, rng)
        with load(args.busy):
            snap, back, deferred, size_ratio = measure(ws, Path(tmp), args.repeat)

    busy = f", {args.busy} busy loops beside" if args.busy else ""
    print(f"agent state: {size / 1e6:.1f} MB on {os.cpu_count()} CPUs{busy}")
    print(line("snapshot", "tar -czf", snap))
    print(line("restore", "tar -xzf", back))
    print(line("archive", "tar -czf", deferred) + "  (the replaced state, after the restore)")
    print(f"archive size ours/tar: {size_ratio:5.2f}")


def measure(
    ws: Workspace, tmp: Path, repeat: int
) -> tuple[list[float], list[float], list[float], float]:
    """The snapshot, restore and deferred-archive ratios, and ours / tar's archive size."""
    ours_path: list[Path] = []

    def ours_snapshot() -> None:
        ours_path.append(create_snapshot(ws, note="bench"))

    tar_out = tmp / "baseline.tar.gz"

    def tar_create() -> None:
        subprocess.run(["tar", "-czf", str(tar_out), *ITEMS], cwd=ws.root, check=True)

    snap = rounds(repeat, ours_snapshot, tar_create)
    target = ours_path[0]

    def ours_restore() -> None:
        restore(ws, target, yes=True)

    untar = tmp / "untar"

    def tar_extract() -> None:
        subprocess.run(["tar", "-xzf", str(tar_out), "-C", str(untar)], check=True)

    back: list[float] = []
    deferred: list[float] = []
    for r in range(repeat):
        shutil.rmtree(untar, ignore_errors=True)  # deleting the last one is not extracting
        untar.mkdir()
        back.append(ratio(ours_restore, tar_extract, ours_first=r % 2 == 0))
        deferred.append(ratio(lambda: finish_pending(ws), tar_create, ours_first=r % 2 == 0))
    return snap, back, deferred, target.stat().st_size / tar_out.stat().st_size


if __name__ == "__main__":
    main()
