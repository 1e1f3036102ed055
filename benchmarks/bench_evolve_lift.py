"""What offline evolution buys on the noisy demo, over several session seeds (not run by pytest).

Each seed is one whole ``evolve --auto-approve`` session with the default budget on a fresh copy
of the bundled demo (``agent.noise`` as shipped). The baseline is the session's own starting
version, measured in the same session: the lift is final minus start on the holdout split (the
gate's cases, looked at every few rounds) and on the golden split (never seen by any decision),
in F1 points, with the ratio final / start beside it. It also checks every accepted version's
Guardrail verdict: none may be worse than its parent at the configured one-sided alpha.

Goals (issue: verdicts that hold on a noisy agent): mean holdout lift ≥ 10 points and mean
golden lift ≥ 5 points over the seeds, and no accepted version significantly worse on the
guardrail cases.

Usage: ``uv run python benchmarks/bench_evolve_lift.py [--seeds 7,11,23] [-j JOBS]``
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.core.results import read_results  # noqa: E402
from engine.core.workspace import Workspace  # noqa: E402
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL, copy_demo  # noqa: E402
from engine.loops.evolve import EvolveOptions, run  # noqa: E402

HOLDOUT_GOAL = 0.10
GOLDEN_GOAL = 0.05


def session(seed: int, jobs: int) -> dict[str, Any]:
    """One session on a fresh demo copy: start/final holdout and golden F1, guardrail verdicts."""
    with tempfile.TemporaryDirectory(prefix="bench-evolve-") as tmp:
        root = Path(tmp) / "ws"
        copy_demo(root)
        ws = Workspace.at(root)
        started = time.perf_counter()
        result = run(
            ws, EvolveOptions(DEMO_SKILL, DEMO_BENCHMARK, auto_approve=True, seed=seed, jobs=jobs)
        )
        seconds = time.perf_counter() - started
        by_version = {v.version: v for v in result.versions}
        start, final = by_version[result.start_version], by_version[result.final_version]
        worse: list[str] = []
        for record in result.rounds:
            if record.outcome != "accepted":
                continue
            gates = json.loads((root / record.folder / "gates.json").read_text(encoding="utf-8"))
            guard = next(g for g in gates if g["gate"] == "guardrail")
            if guard["figures"].get("decision") == "worse":
                worse.append(str(record.version))
        return {
            "spent": spent(ws, result.session_id),
            "seed": seed,
            "rounds": len(result.rounds),
            "accepted": sum(r.outcome == "accepted" for r in result.rounds),
            "stop": result.stop_reason,
            "holdout": (result.holdout_start, result.holdout_final),
            "golden": (start.golden_f1, final.golden_f1),
            "worse": worse,
            "seconds": seconds,
        }


def spent(ws: Workspace, session_id: str) -> dict[str, int]:
    """Case runs per evaluation role of a session (reruns counted together): where the time goes."""
    path = ws.sessions_dir / f"{session_id}.jsonl"
    found: collections.Counter[str] = collections.Counter()
    seen: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        run_id, text = event.get("run_id"), str(event.get("text", ""))
        if event.get("kind") != "message" or not run_id or not text.startswith("evaluating "):
            continue
        if run_id not in seen:
            seen.add(run_id)
            role = re.sub(r"-\d+$", "", text.split()[1])
            found[role] += len(read_results(ws.runs_dir / run_id / "results.jsonl"))
    return dict(found.most_common())


def _lift(pair: tuple[float | None, float | None]) -> float:
    before, after = pair
    return (after or 0.0) - (before or 0.0)


def _ratio(pair: tuple[float | None, float | None]) -> str:
    before, after = pair
    return f"×{(after or 0.0) / before:.2f}" if before else "×n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="7,11,23", help="session seeds, comma-separated")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="parallel agent runs")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    found = []
    for seed in seeds:
        one = session(seed, args.jobs)
        found.append(one)
        print(
            f"seed {seed}: {one['accepted']}/{one['rounds']} rounds accepted, stop {one['stop']}, "
            f"holdout {one['holdout'][0]:.3f} → {one['holdout'][1]:.3f} "
            f"({100 * _lift(one['holdout']):+.1f} pts, {_ratio(one['holdout'])}), "
            f"golden {one['golden'][0]:.3f} → {one['golden'][1]:.3f} "
            f"({100 * _lift(one['golden']):+.1f} pts, {_ratio(one['golden'])}), "
            f"guardrail worse: {', '.join(one['worse']) or 'none'} ({one['seconds']:.0f} s)",
            flush=True,
        )
        total = sum(one["spent"].values())
        shares = ", ".join(f"{role} {n} ({n / total:.0%})" for role, n in one["spent"].items())
        print(f"  {total} case runs ({one['seconds'] / total:.2f} s each): {shares}", flush=True)
    holdout = statistics.fmean(_lift(s["holdout"]) for s in found)
    golden = statistics.fmean(_lift(s["golden"]) for s in found)
    worse = [v for s in found for v in s["worse"]]
    met = holdout >= HOLDOUT_GOAL and golden >= GOLDEN_GOAL and not worse
    print(
        f"mean over {len(found)} seeds: holdout {100 * holdout:+.1f} pts "
        f"(goal ≥ +{100 * HOLDOUT_GOAL:.0f}), golden {100 * golden:+.1f} pts "
        f"(goal ≥ +{100 * GOLDEN_GOAL:.0f}), accepted versions worse on the guardrail: "
        f"{len(worse)} — {'met' if met else 'NOT met'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
