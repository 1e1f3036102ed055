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

The figures the session records are single noisy draws (the golden split is 16 cases, one run
each: one slip moves its F1 by several points). So after each session the start and the final
version are measured again on the holdout and golden cases, ``--remeasure`` runs a case (default
4) with the same evaluation seed for both (paired slips): the lift the two versions really differ
by, printed beside the recorded one. The goal is judged on the re-measured lift (``--remeasure 0``:
on the recorded one).

Usage: ``uv run python benchmarks/bench_evolve_lift.py [--seeds 7,11,23] [-j JOBS]
[--remeasure RUNS]``; ``--workspace PATH`` re-measures a kept session workspace instead.
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

from engine.core.benchmark import load_benchmark  # noqa: E402
from engine.core.results import read_results  # noqa: E402
from engine.core.store import SkillStore  # noqa: E402
from engine.core.workspace import Workspace  # noqa: E402
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL, copy_demo  # noqa: E402
from engine.evaluation.metrics import metrics  # noqa: E402
from engine.evaluation.runner import run_evaluation  # noqa: E402
from engine.loops.evolve import EvolveOptions, run  # noqa: E402

HOLDOUT_GOAL = 0.10
GOLDEN_GOAL = 0.05


REMEASURE_SEED = 20261202  # one fixed evaluation seed: start and final meet the same slips
Pair = tuple[float | None, float | None]


def remeasure(ws: Workspace, start: str, final: str, runs: int, jobs: int) -> dict[str, Pair]:
    """Holdout and golden F1 of the start and the final version, ``runs`` paired runs a case."""
    bench = load_benchmark(ws.benchmarks_dir / DEMO_BENCHMARK)
    cases = [c.id for c in bench.cases_in("holdout", "golden")]
    store = SkillStore(ws, DEMO_SKILL)
    found: dict[str, list[float | None]] = {"holdout": [], "golden": []}
    for version in (start, final):
        rows = run_evaluation(
            ws,
            DEMO_BENCHMARK,
            runs=runs,
            jobs=jobs,
            skills={DEMO_SKILL: store.read(version)},
            case_ids=cases,
            seed=REMEASURE_SEED,
            scoreboard=False,
        ).rows
        for split, values in found.items():
            mine = [r for r in rows if r["split"] == split and r["variant"] == "skill"]
            values.append(metrics(mine, bench.positive_label).f1)
    return {split: (values[0], values[1]) for split, values in found.items()}


def session(seed: int, jobs: int, runs: int) -> dict[str, Any]:
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
        again = (
            remeasure(ws, result.start_version, result.final_version, runs, jobs) if runs else {}
        )
        return {
            "again": again,
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


def _pts(pair: Pair) -> str:
    before, after = pair
    return (
        f"{before or 0.0:.3f} → {after or 0.0:.3f} ({100 * _lift(pair):+.1f} pts, {_ratio(pair)})"
    )


def kept(path: Path, runs: int, jobs: int) -> dict[str, Any]:
    """A kept session workspace: its start and final version from the session's ``finished``
    event, re-measured, and the Guardrail verdicts of the versions it published."""
    ws = Workspace.at(path)
    log = next(ws.sessions_dir.glob("evolve-*.jsonl"))
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    done = next(e for e in events if e.get("kind") == "finished")
    worse = []
    for verdict in sorted((ws.root / "history" / DEMO_SKILL).glob("v*/gate_verdict.json")):
        gates = json.loads(verdict.read_text(encoding="utf-8")).get("gates", [])
        guard = next((g for g in gates if g["gate"] == "guardrail"), {"figures": {}})
        if guard["figures"].get("decision") == "worse":
            worse.append(verdict.parent.name)
    again = remeasure(ws, done["start_version"], done["final_version"], runs, jobs)
    return {
        "again": again,
        "worse": worse,
        "versions": (done["start_version"], done["final_version"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="7,11,23", help="session seeds, comma-separated")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="parallel agent runs")
    parser.add_argument(
        "--remeasure", type=int, default=4, help="paired runs a case for start and final (0: off)"
    )
    parser.add_argument(
        "--workspace", type=Path, action="append", default=[], help="re-measure a kept session"
    )
    args = parser.parse_args(argv)
    found = []
    for path in args.workspace:
        one = kept(path, args.remeasure or 4, args.jobs)
        found.append(one)
        print(
            f"{path.name} ({one['versions'][0]} → {one['versions'][1]}), re-measured "
            f"({args.remeasure or 4} paired runs a case): holdout {_pts(one['again']['holdout'])}, "
            f"golden {_pts(one['again']['golden'])}, guardrail worse: "
            f"{', '.join(one['worse']) or 'none'}",
            flush=True,
        )
    for seed in [int(s) for s in args.seeds.split(",") if s.strip()] if not args.workspace else []:
        one = session(seed, args.jobs, args.remeasure)
        found.append(one)
        print(
            f"seed {seed}: {one['accepted']}/{one['rounds']} rounds accepted, stop {one['stop']}, "
            f"recorded holdout {_pts(one['holdout'])}, golden {_pts(one['golden'])}, "
            f"guardrail worse: {', '.join(one['worse']) or 'none'} ({one['seconds']:.0f} s)",
            flush=True,
        )
        if one["again"]:
            print(
                f"  re-measured ({args.remeasure} paired runs a case): holdout "
                f"{_pts(one['again']['holdout'])}, golden {_pts(one['again']['golden'])}",
                flush=True,
            )
        total = sum(one["spent"].values())
        shares = ", ".join(f"{role} {n} ({n / total:.0%})" for role, n in one["spent"].items())
        print(f"  {total} case runs ({one['seconds'] / total:.2f} s each): {shares}", flush=True)
    which = "again" if all(s["again"] for s in found) else None
    holdout = statistics.fmean(_lift(s[which]["holdout"] if which else s["holdout"]) for s in found)
    golden = statistics.fmean(_lift(s[which]["golden"] if which else s["golden"]) for s in found)
    worse = [v for s in found for v in s["worse"]]
    met = holdout >= HOLDOUT_GOAL and golden >= GOLDEN_GOAL and not worse
    print(
        f"mean over {len(found)} sessions ({'re-measured' if which else 'recorded'}): holdout "
        f"{100 * holdout:+.1f} pts (goal ≥ +{100 * HOLDOUT_GOAL:.0f}), golden "
        f"{100 * golden:+.1f} pts (goal ≥ +{100 * GOLDEN_GOAL:.0f}), accepted versions worse on "
        f"the guardrail: {len(worse)} — {'met' if met else 'NOT met'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
