"""Error rates of every decision path on the noisy demo (not collected by pytest).

Planted candidates go through each decision path and the benchmark counts what the path did:

* **no effect** — same behaviour, different text: every case keeps its pass probability. Its
  acceptance rate is the *false-accept* rate (goal ≤ 5 % over ≥ 200 decisions).
* **real improvement** — +50 points of pass probability on the five cases the patch targets (on
  the holdout path: on a third of the holdout cases it still fails). Its acceptance rate is the
  *power* (goal ≥ 80 %).
* **known regression** — the targets improve as before but six other cases that used to pass
  lose 50 points (on the holdout path and the queue path: cases just get worse). Its acceptance
  rate is the *false-keep* rate.

The agent Optimizer's path reproduces its default budget: a benchmark the Builder built (8
cases drawn from the demo's, one run a case) and ``gates.max_extra_runs`` of adaptive reruns; the
real improvement lifts the 3 of the 8 that fail most by +50 points. Its *skill edit* variant
draws the two evaluations independently (a new skill text redraws the demo agent's slips); its
*settings edit* variant draws them from the same seeds (a turn-budget or AGENTS.md change leaves
the slips as they were), as the demo agent does.

Per-case pass probabilities come from a real evaluation of the bundled noisy demo
(``--probe-runs`` runs a case); simulated result rows are drawn from them so each path reaches
hundreds of decisions in seconds. The queue-eval path also runs on real demo evaluations
(``--real N`` planted candidates of each kind, on every sixth demo case). Each rate is printed
with its count and a 95 % Clopper–Pearson interval; the rule the decision used before paired
verdicts (deterministic case statuses for evolve, "strictly higher mean" elsewhere) is measured
in the same run, on the same draws, as the baseline.

Usage: ``uv run python benchmarks/bench_verdicts.py [--decisions N] [--probe-runs R] [--real N]``
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.core.config import GatesConfig  # noqa: E402
from engine.core.store import SkillStore  # noqa: E402
from engine.core.workspace import Workspace  # noqa: E402
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL, copy_demo  # noqa: E402
from engine.evaluation.gates.candidate import TaskOutcome  # noqa: E402
from engine.evaluation.gates.outcome import Guardrail, Holdout, Sampling, Target  # noqa: E402
from engine.evaluation.gates.queued import evaluate_queued  # noqa: E402
from engine.evaluation.gates.submission import submit_candidate  # noqa: E402
from engine.evaluation.runner import run_evaluation  # noqa: E402
from engine.evaluation.verdict import compare_paired  # noqa: E402
from engine.loops.agent_optimizer.session import better_on_these_cases  # noqa: E402

Rows = list[dict[str, Any]]
KINDS = ("no effect", "improvement", "regression")
TARGETED = 5
BROKEN = 6
LIFT = 0.5
FLAG_STEPS = re.compile(r"(3|4|5|6|7|10)\. ")


@dataclass(frozen=True)
class Case:
    id: str
    split: str
    truth: str
    p: float  # the parent's pass probability


@dataclass
class Tally:
    accepted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    decided: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    extra: int = 0

    def add(self, kind: str, accepted: bool, extra: int = 0) -> None:
        self.decided[kind] += 1
        self.accepted[kind] += int(accepted)
        self.extra += extra


def interval(k: int, n: int) -> str:
    if n == 0:
        return "n/a"
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return f"{k / n:6.1%} ({k}/{n}, 95% [{ci.low:.1%}, {ci.high:.1%}])"


# -- the demo's per-case pass probabilities ----------------------------------------------------
def probe(ws: Workspace, runs: int) -> list[Case]:
    result = run_evaluation(ws, DEMO_BENCHMARK, runs=runs)
    by_case: dict[str, list[dict[str, Any]]] = {}
    for row in result.rows:
        if row["variant"] == "skill" and row["pass_fail"] != "invalid":
            by_case.setdefault(row["case_id"], []).append(row)
    cases = []
    for case_id, rows in sorted(by_case.items()):
        passes = sum(r["pass_fail"] == "pass" for r in rows)
        cases.append(
            Case(case_id, str(rows[0]["split"]), str(rows[0]["ground_truth"]), passes / len(rows))
        )
    return cases


def draw(cases: Sequence[Case], probs: dict[str, float], runs: int, rng: random.Random) -> Rows:
    rows = []
    for case in cases:
        other = "safe" if case.truth == "vulnerable" else "vulnerable"
        for i in range(runs):
            passed = rng.random() < probs[case.id]
            rows.append(
                {
                    "case_id": case.id,
                    "run_index": i,
                    "variant": "skill",
                    "pass_fail": "pass" if passed else "fail",
                    "ground_truth": case.truth,
                    "judge_verdict": case.truth if passed else other,
                }
            )
    return rows


def rerunner(
    cases: Sequence[Case], before: dict[str, float], after: dict[str, float], rng: random.Random
) -> Callable[[Sequence[str], int], tuple[Rows, Rows]]:
    by_id = {c.id: c for c in cases}

    def rerun(ids: Sequence[str], runs: int) -> tuple[Rows, Rows]:
        chosen = [by_id[i] for i in ids]
        return draw(chosen, before, runs, rng), draw(chosen, after, runs, rng)

    return rerun


def plant(
    kind: str, cases: Sequence[Case], targeted: Sequence[str], rng: random.Random
) -> dict[str, float]:
    probs = {c.id: c.p for c in cases}
    if kind == "no effect":
        return probs
    for case_id in targeted:
        probs[case_id] = min(1.0, probs[case_id] + LIFT)
    if kind == "regression":
        passing = [c.id for c in cases if c.p >= 0.5 and c.id not in targeted]
        for case_id in rng.sample(passing, min(BROKEN, len(passing))):
            probs[case_id] = max(0.0, probs[case_id] - LIFT)
    return probs


# -- the old rules (the baseline, on the same draws) --------------------------------------------
def _status(rows: Rows) -> dict[str, str]:
    runs: dict[str, list[bool]] = {}
    for row in rows:
        runs.setdefault(row["case_id"], []).append(row["pass_fail"] == "pass")
    return {c: "pass" if all(v) else "fail" for c, v in runs.items()}


def old_evolve(diagnosed: Rows, after: Rows, targeted: Sequence[str]) -> bool:
    was, now = _status(diagnosed), _status(after)
    fixed = any(was.get(c) != "pass" and now.get(c) == "pass" for c in targeted)
    broken = any(s == "pass" and now.get(c) != "pass" for c, s in was.items())
    return fixed and not broken


def mean(rows: Rows) -> float:
    return sum(r["pass_fail"] == "pass" for r in rows) / max(1, len(rows))


# -- the paths ---------------------------------------------------------------------------------
def evolve_path(cases: Sequence[Case], n: int, seed: int, runs: int) -> tuple[Tally, Tally]:
    """Target + Guardrail of one evolve round, on the selection cases."""
    selection = [c for c in cases if c.split == "selection"]
    sampling = Sampling(**_sampling())
    target, guardrail = Target(sampling), Guardrail(sampling)
    new, old = Tally(), Tally()
    rng = random.Random(seed)
    parent = {c.id: c.p for c in selection}
    for kind in KINDS:
        for _ in range(n):
            diagnosed = draw(selection, parent, runs, rng)  # what diagnosis picked targets from
            failing = sorted({r["case_id"] for r in diagnosed if r["pass_fail"] == "fail"})
            if not failing:
                continue
            targeted = rng.sample(failing, min(TARGETED, len(failing)))
            after_p = plant(kind, selection, targeted, rng)
            before = draw(selection, parent, runs, rng)  # the fresh paired parent evaluation
            after = draw(selection, after_p, runs, rng)
            rerun = rerunner(selection, parent, after_p, rng)
            t = target.judge(before, after, targeted, rerun=rerun)
            g = guardrail.judge(before, after, targeted=targeted, rerun=rerun)
            extra = int(t.figures.get("extra_runs", 0)) + int(g.figures.get("extra_runs", 0))
            new.add(kind, t.passed and g.passed, extra)
            old.add(kind, old_evolve(diagnosed, after, targeted))
    return new, old


def holdout_path(cases: Sequence[Case], n: int, seed: int, runs: int) -> tuple[Tally, Tally]:
    """The Holdout gate: its lower bound above −1 F1 point (old rule: F1 dropped ≤ 1 point)."""
    holdout = [c for c in cases if c.split == "holdout"]
    gate = Holdout(sampling=Sampling(**_sampling()))
    new, old = Tally(), Tally()
    rng = random.Random(seed)
    parent = {c.id: c.p for c in holdout}
    failing = [c.id for c in holdout if c.p < 0.9]
    passing = [c.id for c in holdout if c.p >= 0.5]
    for kind in KINDS:
        for _ in range(n):
            after_p = dict(parent)
            if kind == "improvement":
                for case_id in rng.sample(failing, max(1, len(failing) // 3)):
                    after_p[case_id] = min(1.0, after_p[case_id] + LIFT)
            elif kind == "regression":
                for case_id in rng.sample(passing, min(4, len(passing))):
                    after_p[case_id] = max(0.0, after_p[case_id] - LIFT)
            before = draw(holdout, parent, runs, rng)
            after = draw(holdout, after_p, runs, rng)
            result = gate.judge(
                before,
                after,
                positive_label="vulnerable",
                rerun=rerunner(holdout, parent, after_p, rng),
            )
            new.add(kind, result.passed, int(result.figures.get("extra_runs", 0)))
            old.add(kind, _f1(after) - _f1(before) >= -0.01)
    return new, old


def _f1(rows: Rows) -> float:
    tp = sum(r["ground_truth"] == "vulnerable" and r["pass_fail"] == "pass" for r in rows)
    fn = sum(r["ground_truth"] == "vulnerable" and r["pass_fail"] == "fail" for r in rows)
    fp = sum(r["ground_truth"] == "safe" and r["pass_fail"] == "fail" for r in rows)
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def benchmark_path(cases: Sequence[Case], n: int, seed: int, runs: int) -> tuple[Tally, Tally]:
    """Better on a benchmark's cases (queue eval, Optimizer): exact run-level, reruns allowed."""
    sampling = Sampling(**_sampling())
    new, old = Tally(), Tally()
    rng = random.Random(seed)
    parent = {c.id: c.p for c in cases}
    for kind in KINDS:
        for _ in range(n):
            failing = [c.id for c in cases if c.p < 1.0] or [c.id for c in cases]
            targeted = rng.sample(failing, min(TARGETED, len(failing)))
            after_p = plant(kind, cases, targeted if kind == "improvement" else [], rng)
            if kind == "regression":
                after_p = plant("regression", cases, [], rng)
            before, after = draw(cases, parent, runs, rng), draw(cases, after_p, runs, rng)

            def judge(b: Any, a: Any, alpha: float) -> Any:
                return compare_paired(b, a, alpha=alpha, test="runs", alternative="greater")

            verdict, _, _ = sampling.decide(
                before, after, judge, lambda v: not v.better, rerunner(cases, parent, after_p, rng)
            )
            new.add(kind, verdict.better, verdict.extra_runs)
            old.add(kind, mean(after) > mean(before))
    return new, old


OPTIMIZER_CASES = 8  # the Builder's default benchmark size (one run a case)
OPTIMIZER_FIXED = 3


def draw_shared(
    cases: Sequence[Case], before: dict[str, float], after: dict[str, float], rng: random.Random
) -> tuple[Rows, Rows]:
    """Both variants from the same seeds: one uniform per (case, run) decides both sides."""
    b_rows, a_rows = [], []
    for case in cases:
        u = rng.random()
        for probs, out in ((before, b_rows), (after, a_rows)):
            out.append(
                {
                    "case_id": case.id,
                    "run_index": 0,
                    "variant": "skill",
                    "pass_fail": "pass" if u < probs[case.id] else "fail",
                    "score": 1.0 if u < probs[case.id] else 0.0,
                }
            )
    return b_rows, a_rows


def _evaluator(
    bench: Sequence[Case],
    before: dict[str, float],
    after: dict[str, float],
    rng: random.Random,
    *,
    shared: bool,
) -> Callable[[Sequence[str], int], tuple[Rows, Rows]]:
    """Evaluations of both variants on some cases: independent draws, or from shared seeds."""
    by_id = {c.id: c for c in bench}

    def evaluate(ids: Sequence[str], runs: int) -> tuple[Rows, Rows]:
        chosen = [by_id[i] for i in ids]
        if not shared:
            return draw(chosen, before, runs, rng), draw(chosen, after, runs, rng)
        before_rows: Rows = []
        after_rows: Rows = []
        for i in range(runs):
            b, a = draw_shared(chosen, before, after, rng)
            before_rows += [{**r, "run_index": i} for r in b]
            after_rows += [{**r, "run_index": i} for r in a]
        return before_rows, after_rows

    return evaluate


def optimizer_path(
    cases: Sequence[Case], n: int, seed: int, runs: int, *, shared: bool
) -> tuple[Tally, Tally]:
    """One Optimizer round on a built benchmark at its defaults, by the Optimizer's own judge."""
    sampling = Sampling(**_sampling())
    new, old = Tally(), Tally()
    rng = random.Random(seed)
    for kind in KINDS:
        for _ in range(n):
            bench = rng.sample(list(cases), OPTIMIZER_CASES)
            parent = {c.id: c.p for c in bench}
            # the fix lands on the cases that fail most (a lift of a case that nearly always
            # passes already would be no +50-point fix at all)
            ranked = sorted(bench, key=lambda c: (c.p, rng.random()))
            fixed = [c.id for c in ranked[:OPTIMIZER_FIXED]]
            after_p = dict(parent)
            if kind == "improvement":
                after_p.update({c: min(1.0, parent[c] + LIFT) for c in fixed})
            elif kind == "regression":
                passing = [c.id for c in bench if c.p >= 0.5] or [c.id for c in bench]
                for c in rng.sample(passing, min(OPTIMIZER_FIXED, len(passing))):
                    after_p[c] = max(0.0, parent[c] - LIFT)

            evaluate = _evaluator(bench, parent, after_p, rng, shared=shared)
            before, after = evaluate([c.id for c in bench], 1)
            verdict, _, _ = sampling.decide(
                before, after, better_on_these_cases, lambda v: not v.better, evaluate
            )
            new.add(kind, verdict.better, verdict.extra_runs)
            old.add(kind, mean(after) > mean(before))
    return new, old


def optimizer_skill_path(
    cases: Sequence[Case], n: int, seed: int, runs: int
) -> tuple[Tally, Tally]:
    return optimizer_path(cases, n, seed, runs, shared=False)


def optimizer_settings_path(
    cases: Sequence[Case], n: int, seed: int, runs: int
) -> tuple[Tally, Tally]:
    return optimizer_path(cases, n, seed, runs, shared=True)


def _sampling() -> dict[str, Any]:
    cfg = GatesConfig()
    return {"alpha": cfg.alpha, "max_extra_runs": cfg.max_extra_runs, "looks": cfg.looks}


# -- real demo evaluations through `queue eval` ------------------------------------------------
def real_queue_path(base: Path, n: int) -> Tally:
    """Planted candidates settled by real paired evaluations (every sixth demo case)."""
    tally = Tally()
    for kind in KINDS:
        for i in range(n):
            ws = Workspace(copy_demo(base / f"{kind.replace(' ', '-')}-{i}"))
            src, dst = ws.benchmarks_dir / DEMO_BENCHMARK, ws.benchmarks_dir / "mini"
            dst.mkdir()
            config = (src / "benchmark.yaml").read_text(encoding="utf-8")
            (dst / "benchmark.yaml").write_text(config.replace(f"id: {DEMO_BENCHMARK}", "id: mini"))
            for case in sorted(p.name for p in src.iterdir() if p.is_dir())[::6]:
                shutil.copytree(src / case, dst / case)
            store = SkillStore(ws, DEMO_SKILL)
            current = str(store.ensure_adopted())
            good = store.read(current)
            weak = "".join(line for line in good.splitlines(True) if not FLAG_STEPS.match(line))
            if kind == "no effect":
                parent, text = current, good.rstrip("\n") + "\n\n<!-- reviewed -->\n"
            elif kind == "improvement":
                parent, text = store.publish(weak, why="planted weaker parent"), good
            else:
                parent, text = current, weak
            cand, _ = submit_candidate(
                ws, DEMO_SKILL, text, source="manual", operation="update",
                parent_version=parent, summary=f"planted {kind}",
                outcome=TaskOutcome(status="fail"),
            )  # fmt: skip
            done = evaluate_queued(ws, cand.id, bench="mini")
            tally.add(kind, done.status == "pending_approval", done.verdict.extra_runs)
            print(f"  real {kind:<12} {done.verdict.line()} → {done.status}", flush=True)
    return tally


def report(name: str, new: Tally, old: Tally | None, old_name: str) -> None:
    labels = {"no effect": "false-accept", "improvement": "power", "regression": "false-keep"}
    if "Holdout" in name:  # a non-inferiority gate: passing a change that does nothing is right
        labels["no effect"] = "no-effect kept"
    print(f"\n{name}")
    for kind in KINDS:
        line = f"  {labels[kind]:<12} {interval(new.accepted[kind], new.decided[kind])}"
        if old is not None:
            line += f"   {old_name}: {interval(old.accepted[kind], old.decided[kind])}"
        print(line)
    total = sum(new.decided.values())
    budget = GatesConfig().max_extra_runs
    print(f"  extra runs per decision: {new.extra / max(1, total):.1f} (budget {budget})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=300, help="per kind and path")
    parser.add_argument("--probe-runs", type=int, default=6)
    parser.add_argument("--runs", type=int, default=2, help="runs a case in each evaluation")
    parser.add_argument("--real", type=int, default=3, help="real queue evaluations per kind")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(copy_demo(Path(tmp) / "probe"))
        started = time.monotonic()
        cases = probe(ws, args.probe_runs)
        unsteady = sum(0 < c.p < 1 for c in cases)
        print(
            f"probe: {len(cases)} demo cases × {args.probe_runs} runs in "
            f"{time.monotonic() - started:.0f}s; {unsteady} cases vary from run to run"
        )
        for name, path, old_name in (
            ("evolve Target + Guardrail (selection)", evolve_path, "old case-status rule"),
            ("evolve Holdout (lower bound > −1 F1 pt)", holdout_path, "old F1-drop rule"),
            (
                "better on the benchmark (queue eval)",
                benchmark_path,
                "strictly higher mean",
            ),
            (
                "agent Optimizer round, skill edit (8 built cases, 1 run)",
                optimizer_skill_path,
                "strictly higher mean",
            ),
            (
                "agent Optimizer round, settings edit (8 built cases, 1 run, shared seeds)",
                optimizer_settings_path,
                "strictly higher mean",
            ),
        ):
            started = time.monotonic()
            new, old = path(cases, args.decisions, args.seed, args.runs)
            report(name, new, old, old_name)
            print(f"  ({time.monotonic() - started:.0f}s)")
        if args.real:
            started = time.monotonic()
            print(f"\nqueue eval on real demo evaluations ({args.real} per kind)")
            real = real_queue_path(Path(tmp), args.real)
            report("queue eval (real)", real, None, "")
            print(f"  ({time.monotonic() - started:.0f}s)")


if __name__ == "__main__":
    main()
