"""Error rates of every decision path on the noisy demo (not collected by pytest).

Planted candidates go through each decision path and the benchmark counts what the path did:

* **no effect** — same behaviour, different text: every case keeps its pass probability. Its
  acceptance rate is the *false-accept* rate (goal ≤ 5 % over ≥ 200 decisions).
* **real improvement** — +50 points of pass probability on the five cases the patch targets (on
  the holdout path: on a third of the holdout cases it still fails). Its acceptance rate is the
  *power* (goal ≥ 80 %).
* **known regression** — the targets improve as before but six other cases that used to pass
  lose 50 points (on the holdout path: cases just get worse). Its acceptance rate is the
  *false-keep* rate.

Every path runs at the product's defaults (``GatesConfig``: ``alpha`` 0.05,
``max_extra_runs`` 48, ``looks`` 5 with futility stopping; two runs a case as the demo benchmark
sets), and again under *today's rule* — the rule before futility stopping: three looks, a
decision reruns until it proves the change or spends its budget, and the other gates rerun even
after the Target gate refused. Each decision draws from its own random stream, seeded by (seed,
kind, decision), so both rules meet the same planted candidates and the same first evaluations.
Beside the error rates each path prints the agent runs a decision added by its reruns (both
variants; mean and 90th percentile) under both rules; the evaluation a decision starts from is
the same under both and is not counted. The runs are counted in the rerun callback itself, and
the evolve, Holdout and queue paths print beside them what the decision recorded: its verdicts'
``extra_runs`` (which leave the Guardrail's confirmation out) and its gates' ``agent_runs``
(every rerun by kind), with the number of decisions whose ``agent_runs`` equal what ran.

* **timeouts** (issue 26): a no-effect candidate whose failing runs become timeouts — on the 5
  cases it aims at (evolve's Target + Guardrail) or on the whole benchmark (queue eval naming no
  targets). Counted as the failures they are, it must be accepted ≤ 5 % of the time; the same
  runs recorded as failures outside the agent (left out, as every verdict treated timeouts
  before) show the bias that rule had.

* **queue eval** has two paths, planted alike (+50 points on 5 failing cases; the regression
  also 50 points off 6 passing ones). A candidate that names its 5 targets (as evolve's do) is
  judged like evolve (Target + Guardrail). One that names none must not be worse on the whole
  benchmark, and the cases that did better are screened on fresh runs and the 3 best confirmed
  on runs of their own (``engine.evaluation.gates.screening``). That path is also run on a
  measured change — the shipped skill with and without its SQL flagging step, each case at the
  pass probability probed for that text, the "improvement" towards the text with the higher
  mean — which trades cases for a net change of a few tenths of a point: no real improvement,
  printed to show what the decision makes of a trade.
* **agent Optimizer** reproduces its default budget: a benchmark the Builder built (8 cases drawn
  from the demo's, at least 3 of them passing at most half the time, one run a case); the real
  improvement lifts the 3 that fail most by +50 points. Its *skill edit* variant draws the two
  evaluations independently (a new skill text redraws the demo agent's slips); its *settings
  edit* variant draws them from the same seeds (a turn-budget or AGENTS.md change leaves the
  slips as they were), as the demo agent does.
* **tune-description** chooses among the current description and 3 tries on 8 held-out queries
  of a 20-query set, one run a query (its defaults); each query's chance of a right answer is
  drawn from the demo's per-case pass probabilities, the improvement is a try that lifts the 2
  held-out queries the current one gets right least by +50 points, the regression one that drops
  2 it gets right by 50. It reruns within its own budget (twice the gate budget a try), and its
  extra runs are summed over the 3 comparisons.

Per-case pass probabilities come from a real evaluation of the bundled noisy demo
(``--probe-runs`` runs a case; ``--cache DIR`` keeps the probes for the next run); simulated
result rows are drawn from them so each path reaches hundreds of decisions in minutes. Queue eval
also runs on real demo evaluations (``--real N`` planted candidates of each kind, on every sixth
demo case). Each rate is printed with its count and a 95 % Clopper–Pearson interval; the rule the
decision used before paired verdicts (deterministic case statuses for evolve, "strictly higher
mean" elsewhere) is measured in the same run, on the same draws, as the baseline.

Usage: ``uv run python benchmarks/bench_verdicts.py [--decisions N] [--probe-runs R] [--real N]
[--paths KEY,...]``; ``--paths`` runs only the named paths (keys: evolve, timeouts-aimed,
timeouts-whole, holdout, queue-targets, queue-whole, queue-measured, optimizer-skill,
optimizer-settings, tune-description; all by default), so one decision path can be measured
without the minutes the others take.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.core.config import GatesConfig  # noqa: E402
from engine.core.fsutil import atomic_write_text  # noqa: E402
from engine.core.store import SkillStore  # noqa: E402
from engine.core.workspace import Workspace  # noqa: E402
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL, copy_demo  # noqa: E402
from engine.evaluation.gates.candidate import TaskOutcome  # noqa: E402
from engine.evaluation.gates.outcome import (  # noqa: E402
    Guardrail,
    Holdout,
    Sampling,
    Target,
    judge_aimed,
)
from engine.evaluation.gates.queued import evaluate_queued, judge_queued  # noqa: E402
from engine.evaluation.gates.result import GateResult  # noqa: E402
from engine.evaluation.gates.submission import submit_candidate  # noqa: E402
from engine.evaluation.runner import run_evaluation  # noqa: E402
from engine.evaluation.verdict import can_improve  # noqa: E402
from engine.loops.agent_optimizer.session import better_on_these_cases  # noqa: E402
from engine.loops.triggers import (  # noqa: E402
    DescriptionScore,
    Origin,
    QueryResult,
    TriggerQuery,
    held_out_choice,
    result_rows,
    split_queries,
    tuning_sampling,
)

Rows = list[dict[str, Any]]
KINDS = ("no effect", "improvement", "regression")
TARGETED = 5
BROKEN = 6
LIFT = 0.5
TODAY_LOOKS = 3  # the looks a decision had before futility stopping
FLAG_STEPS = re.compile(r"(3|4|5|6|7|10)\. ")


@dataclass(frozen=True)
class Case:
    id: str
    split: str
    truth: str
    p: float  # the parent's pass probability


@dataclass
class Meter:
    """The agent runs the decision under way has added (both variants), and the rule it uses.

    Every simulated rerun counts itself here; each decision starts it afresh with its own
    random stream, seeded by (seed, kind, decision), so today's rule and the new one meet the
    same planted candidates and the same first evaluations.
    """

    futility: bool = True  # False: today's rule (no futility stopping, three looks)
    spent: int = 0
    # what the decision's gates recorded of it: their verdicts' extra_runs (both variants; queue
    # eval: its extra_runs_total), and their agent_runs figures (every rerun, by kind); None:
    # the path records neither
    extra: int | None = None
    recorded: int | None = None

    def looks(self) -> int:
        return GatesConfig().looks if self.futility else TODAY_LOOKS

    def start(self, seed: int, kind: str, index: int) -> random.Random:
        self.spent = 0
        self.extra = self.recorded = None
        return random.Random(f"{seed}/{kind}/{index}")

    def note(self, *gates: GateResult) -> None:
        """What the decision's gates recorded of the runs they caused, to set beside what ran."""
        self.extra = sum(2 * int(g.figures.get("extra_runs", 0)) for g in gates)
        self.recorded = sum(sum(g.figures.get("agent_runs", {}).values()) for g in gates)

    def count(self, cases: int, runs: int) -> None:
        self.spent += 2 * cases * runs


METER = Meter()


@dataclass
class Tally:
    accepted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    decided: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    runs: list[int] = field(default_factory=list)  # agent runs each decision added
    extra: list[int] = field(default_factory=list)  # its verdicts' extra_runs (both variants)
    recorded: list[int] = field(default_factory=list)  # its gates' agent_runs

    def add(self, kind: str, accepted: bool) -> None:
        self.decided[kind] += 1
        self.accepted[kind] += int(accepted)
        self.runs.append(METER.spent)
        if METER.extra is not None and METER.recorded is not None:
            self.extra.append(METER.extra)
            self.recorded.append(METER.recorded)

    def mean_runs(self) -> float:
        return statistics.fmean(self.runs) if self.runs else 0.0

    def p90_runs(self) -> float:
        return float(np.percentile(self.runs, 90)) if self.runs else 0.0


def interval(k: int, n: int) -> str:
    if n == 0:
        return "n/a"
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return f"{k / n:6.1%} ({k}/{n}, 95% [{ci.low:.1%}, {ci.high:.1%}])"


# -- the demo's per-case pass probabilities ----------------------------------------------------
def probe(ws: Workspace, runs: int, seed: int, text: str | None = None) -> list[Case]:
    """Seeded, so two runs of the benchmark start from the same pass probabilities.

    ``text``: the SKILL.md to probe instead of the shipped one.
    """
    skills = None if text is None else {DEMO_SKILL: text}
    result = run_evaluation(ws, DEMO_BENCHMARK, runs=runs, seed=seed, skills=skills)
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


def cached_probe(
    cache: Path | None, name: str, ws: Workspace, runs: int, seed: int, text: str | None = None
) -> list[Case]:
    """A probe read back from ``cache`` when an earlier run with the same settings wrote it."""
    path = None if cache is None else cache / f"probe-{name}-{runs}x-seed{seed}.json"
    if path is not None and path.is_file():
        return [Case(**c) for c in json.loads(path.read_text(encoding="utf-8"))]
    cases = probe(ws, runs, seed, text)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps([c.__dict__ for c in cases]))
    return cases


def without_sql_step(text: str) -> str:
    """The shipped skill without its SQL flagging step (step 3): a real, narrow weakening."""
    return "".join(line for line in text.splitlines(True) if not line.startswith("3. "))


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
        METER.count(len(ids), runs)
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
    return float(sum(r["pass_fail"] == "pass" for r in rows)) / max(1, len(rows))


# -- the paths ---------------------------------------------------------------------------------
def evolve_path(cases: Sequence[Case], n: int, seed: int, runs: int) -> tuple[Tally, Tally]:
    """Target + Guardrail of one evolve round, on the selection cases."""
    selection = [c for c in cases if c.split == "selection"]
    sampling = Sampling(**_sampling())
    target, guardrail = Target(sampling), Guardrail(sampling)
    new, old = Tally(), Tally()
    parent = {c.id: c.p for c in selection}
    for kind in KINDS:
        for i in range(n):
            rng = METER.start(seed, kind, i)
            diagnosed = draw(selection, parent, runs, rng)  # what diagnosis picked targets from
            failing = sorted({r["case_id"] for r in diagnosed if r["pass_fail"] == "fail"})
            if not failing:
                continue
            targeted = rng.sample(failing, min(TARGETED, len(failing)))
            after_p = plant(kind, selection, targeted, rng)
            before = draw(selection, parent, runs, rng)  # the fresh paired parent evaluation
            after = draw(selection, after_p, runs, rng)
            rerun = rerunner(selection, parent, after_p, rng)
            t, g, _ = judge_aimed(target, guardrail, before, after, targeted, rerun)
            METER.note(t, g)
            new.add(kind, t.passed and g.passed)
            old.add(kind, old_evolve(diagnosed, after, targeted))
    return new, old


def holdout_path(cases: Sequence[Case], n: int, seed: int, runs: int) -> tuple[Tally, Tally]:
    """The Holdout gate: its lower bound above −1 F1 point (old rule: F1 dropped ≤ 1 point)."""
    holdout = [c for c in cases if c.split == "holdout"]
    gate = Holdout(sampling=Sampling(**_sampling()))
    new, old = Tally(), Tally()
    parent = {c.id: c.p for c in holdout}
    failing = [c.id for c in holdout if c.p < 0.9]
    passing = [c.id for c in holdout if c.p >= 0.5]
    for kind in KINDS:
        for i in range(n):
            rng = METER.start(seed, kind, i)
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
            METER.note(result)
            new.add(kind, result.passed)
            old.add(kind, _f1(after) - _f1(before) >= -0.01)
    return new, old


def _f1(rows: Rows) -> float:
    tp = sum(r["ground_truth"] == "vulnerable" and r["pass_fail"] == "pass" for r in rows)
    fn = sum(r["ground_truth"] == "vulnerable" and r["pass_fail"] == "fail" for r in rows)
    fp = sum(r["ground_truth"] == "safe" and r["pass_fail"] == "fail" for r in rows)
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def queue_path(
    cases: Sequence[Case], n: int, seed: int, runs: int, *, named: bool
) -> tuple[Tally, Tally]:
    """queue eval on the whole demo benchmark of a candidate that fixes 5 failing cases (+50
    points; the regression also takes 50 points off 6 passing ones), naming them or not (old
    rule: strictly higher mean).

    Named, they are judged as evolve judges (Target on them, Guardrail on the rest); unnamed,
    the candidate is better on the whole benchmark, or not worse there with the cases that did
    better screened on fresh runs and confirmed on runs of their own.
    """
    sampling = Sampling(**_sampling())
    # unnamed, the whole-benchmark comparison, the screening and the confirmation each have
    # the gate budget (the guardrail's reruns come on top, as on the named path)
    new, old = Tally(), Tally()
    parent = {c.id: c.p for c in cases}
    failing = [c.id for c in cases if c.p < 1.0]
    for kind in KINDS:
        for i in range(n):
            rng = METER.start(seed, kind, i)
            targeted = rng.sample(failing, min(TARGETED, len(failing)))
            after_p = plant(kind, cases, targeted, rng)
            before, after = draw(cases, parent, runs, rng), draw(cases, after_p, runs, rng)
            rerun = rerunner(cases, parent, after_p, rng)
            found = judge_queued(before, after, targeted if named else [], sampling, rerun)
            METER.extra, METER.recorded = 2 * found.extra_runs, sum(found.agent_runs.values())
            new.add(kind, found.passed)
            old.add(kind, mean(after) > mean(before))
    return new, old


def queue_targets_path(cases: Sequence[Case], n: int, seed: int, runs: int) -> tuple[Tally, Tally]:
    return queue_path(cases, n, seed, runs, named=True)


def queue_whole_path(cases: Sequence[Case], n: int, seed: int, runs: int) -> tuple[Tally, Tally]:
    return queue_path(cases, n, seed, runs, named=False)


def queue_measured_path(
    cases: Sequence[Case], weaker: Sequence[Case], n: int, seed: int, runs: int
) -> tuple[Tally, Tally]:
    """The no-target path on a measured change: the shipped skill and the same without its SQL
    step, each case at its probed pass probability under either text.

    The "improvement" goes from the text the probes measured worse to the other, the
    "regression" back, "no effect" is the worse text again. On the demo the step trades cases
    (it finds SQL injections and flags safe SQL) for a net change of a few tenths of a point, so
    this is no real improvement to detect: accepting it would keep a change that breaks cases.
    """
    sampling = Sampling(**_sampling())
    new, old = Tally(), Tally()
    shipped = {c.id: c.p for c in cases}
    without = {c.id: c.p for c in weaker}
    worse, better = sorted((shipped, without), key=lambda p: sum(p.values()))
    plans = {
        "no effect": (worse, worse),
        "improvement": (worse, better),
        "regression": (better, worse),
    }
    for kind in KINDS:
        parent, after_p = plans[kind]
        for i in range(n):
            rng = METER.start(seed, kind, i)
            before, after = draw(cases, parent, runs, rng), draw(cases, after_p, runs, rng)
            found = judge_queued(before, after, [], sampling, rerunner(cases, parent, after_p, rng))
            new.add(kind, found.passed)
            old.add(kind, mean(after) > mean(before))
    return new, old


OPTIMIZER_CASES = 8  # the Builder's default benchmark size (one run a case)
OPTIMIZER_FIXED = 3


def draw_shared(
    cases: Sequence[Case], before: dict[str, float], after: dict[str, float], rng: random.Random
) -> tuple[Rows, Rows]:
    """Both variants from the same seeds: one uniform per (case, run) decides both sides."""
    b_rows: Rows = []
    a_rows: Rows = []
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
        METER.count(len(ids), runs)
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


def built_benchmark(cases: Sequence[Case], rng: random.Random) -> list[Case]:
    """8 demo cases, at least 3 of them passing at most half the time.

    A Builder builds its benchmark where the skill is weak; a draw with fewer than three cases
    that can gain 50 points has no room for the planted +50-point fix of three cases (a
    capped lift of a case that nearly always passes is a few points, not a fix), so it is
    drawn again — for every kind alike, so the three kinds face the same benchmarks.
    """
    while True:
        bench = rng.sample(list(cases), OPTIMIZER_CASES)
        if sum(c.p <= 1 - LIFT for c in bench) >= OPTIMIZER_FIXED:
            return bench


def optimizer_path(
    cases: Sequence[Case], n: int, seed: int, runs: int, *, shared: bool
) -> tuple[Tally, Tally]:
    """One Optimizer round on a built benchmark at its defaults, by the Optimizer's own judge."""
    sampling = Sampling(**_sampling())
    new, old = Tally(), Tally()
    for kind in KINDS:
        for i in range(n):
            rng = METER.start(seed, kind, i)
            bench = built_benchmark(cases, rng)
            parent = {c.id: c.p for c in bench}
            # the fix lands on the cases that fail most, each able to gain the full 50 points
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
            METER.spent = 0  # the round's own evaluation; the decision's runs start here
            verdict, _, _ = sampling.decide(
                before,
                after,
                better_on_these_cases,
                lambda v: not v.better,
                evaluate,
                pick=can_improve,
            )
            new.add(kind, verdict.better)
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


TRIGGER_QUERIES = 20  # a skill-creator eval set: half should trigger, half should not
TRIGGER_TRIES = 3  # tune-description's default iterations
TRIGGER_FIXED = 2


def _query_results(
    probs: dict[str, float], truth: dict[str, bool], runs: int, rng: random.Random
) -> list[QueryResult]:
    """Held-out results of one description: each run gets its query right with its chance."""
    results = []
    for query, p in probs.items():
        loaded = [truth[query] == (rng.random() < p) for _ in range(runs)]
        right = sum(load == truth[query] for load in loaded)
        results.append(
            QueryResult(
                query=query, should_trigger=truth[query], split="test", runs=runs,
                loads=sum(loaded), rate=sum(loaded) / runs, triggered=sum(loaded) / runs >= 0.5,
                correct=right / runs >= 0.5, loaded=loaded,
            )
        )  # fmt: skip
    return results


def trigger_path(cases: Sequence[Case], n: int, seed: int, runs: int) -> tuple[Tally, Tally]:
    """tune-description's held-out choice among the current description and 3 tries.

    Each held-out query gets the current description right with a chance drawn from the demo's
    per-case pass probabilities (its spread of run-to-run reliability); one run a query, as
    tune-description's default. The real improvement is a try that lifts the 2 held-out
    queries the current one gets right least by +50 points, the regression one that drops 2
    it gets right by 50; the other tries change nothing. Old rule: the highest held-out
    accuracy, if strictly above the current one's. The reruns' budget is tune-description's
    (``tuning_sampling``: twice the gate budget a try); the current description's reruns are
    drawn afresh for each try, where the product shares them — each comparison is the same.
    """
    sampling = dataclasses.replace(
        tuning_sampling(GatesConfig()), futility=METER.futility, looks=METER.looks()
    )
    new, old = Tally(), Tally()
    queries = [TriggerQuery(f"query {i}", i < TRIGGER_QUERIES // 2) for i in range(TRIGGER_QUERIES)]
    _train, test = split_queries(queries)
    truth = {q.query: q.should_trigger for q in test}
    for kind in KINDS:
        for i in range(n):
            rng = METER.start(seed, kind, i)
            current = {q.query: rng.choice(list(cases)).p for q in test}
            tries = [dict(current) for _ in range(TRIGGER_TRIES)]
            ranked = sorted(current, key=lambda q: (current[q], rng.random()))
            if kind == "improvement":
                for q in ranked[:TRIGGER_FIXED]:
                    tries[0][q] = min(1.0, current[q] + LIFT)
            elif kind == "regression":
                for q in ranked[-TRIGGER_FIXED:]:
                    tries[0][q] = max(0.0, current[q] - LIFT)
            probs = [current, *tries]
            scores = []
            for index, p in enumerate(probs):
                results = _query_results(p, truth, 1, rng)
                accuracy = sum(r.correct for r in results) / len(results)
                origin: Origin = "current" if index == 0 else "proposed"
                scores.append(DescriptionScore(index, f"d{index}", origin, 0.0, accuracy, results))

            def rerun_for(
                score: DescriptionScore,
                probs: list[dict[str, float]] = probs,
                rng: random.Random = rng,
            ) -> Callable[..., tuple[Rows, Rows]]:
                def rerun(ids: Sequence[str], runs: int) -> tuple[Rows, Rows]:
                    METER.count(len(ids), runs)
                    b = _query_results({q: probs[0][q] for q in ids}, truth, runs, rng)
                    a = _query_results({q: probs[score.index][q] for q in ids}, truth, runs, rng)
                    return result_rows(b), result_rows(a)

                return rerun

            best, _verdict = held_out_choice(scores, sampling, rerun_for)
            top = max(scores[1:], key=lambda s: (s.test_accuracy, -s.index))
            was = top.index if top.test_accuracy > scores[0].test_accuracy else 0
            # the planted try (1) kept, or for no effect any try kept
            new.add(kind, best.index == 1 or (kind == "no effect" and best.index != 0))
            old.add(kind, was == 1 or (kind == "no effect" and was != 0))
    return new, old


TIMEOUT = "timeout after 300s"  # how the runner records a run the agent ran out of time on
OUTSIDE = "agent could not start: sandbox unavailable"  # a failure outside the agent


def timed_out(rows: Rows, cases: set[str] | None, reason: str) -> Rows:
    """The rows with every failing run of ``cases`` (None: all) turned into an invalid unit."""
    return [
        {**r, "pass_fail": "invalid", "invalid_reason": reason, "judge_verdict": None}
        if r["pass_fail"] == "fail" and (cases is None or r["case_id"] in cases)
        else r
        for r in rows
    ]


def timeout_path(
    cases: Sequence[Case], n: int, seed: int, runs: int, *, whole: bool
) -> tuple[Tally, Tally]:
    """A no-effect candidate whose failing runs become timeouts (issue 26, Build 7).

    On the aimed cases (evolve's Target + Guardrail on the selection cases) or on the whole
    benchmark (queue eval of a candidate naming no targets). The first tally counts a timeout
    as the failure it is; the second records the same runs as failures outside the agent,
    which are left out — the rule every verdict applied to timeouts before, which such a
    candidate fooled.
    """
    pool = list(cases) if whole else [c for c in cases if c.split == "selection"]
    sampling = Sampling(**_sampling())
    parent = {c.id: c.p for c in pool}
    tallies = (Tally(), Tally())
    for i in range(n):
        for reason, tally in zip((TIMEOUT, OUTSIDE), tallies, strict=True):
            rng = METER.start(seed, "no effect", i)
            failing = sorted({c.id for c in pool if c.p < 1.0})
            targeted = [] if whole else rng.sample(failing, min(TARGETED, len(failing)))
            aimed = None if whole else set(targeted)
            before = draw(pool, parent, runs, rng)
            after = timed_out(draw(pool, parent, runs, rng), aimed, reason)
            plain = rerunner(pool, parent, parent, rng)

            def rerun(
                ids: Sequence[str],
                k: int,
                plain: Callable[..., tuple[Rows, Rows]] = plain,
                aimed: set[str] | None = aimed,
                reason: str = reason,
            ) -> tuple[Rows, Rows]:
                b, a = plain(ids, k)
                return b, timed_out(a, aimed, reason)

            found = judge_queued(before, after, targeted, sampling, rerun)
            tally.add("no effect", found.passed)
    return tallies


def _sampling() -> dict[str, Any]:
    cfg = GatesConfig()
    return {
        "alpha": cfg.alpha,
        "max_extra_runs": cfg.max_extra_runs,
        "looks": METER.looks(),
        "futility": METER.futility,
    }


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
            METER.spent = 2 * done.extra_runs
            tally.add(kind, done.status == "pending_approval")
            print(f"  real {kind:<12} {done.line()} → {done.status}", flush=True)
    return tally


def report(name: str, new: Tally, old: Tally | None, old_name: str, today: Tally | None) -> None:
    """Error rates of the new rule beside today's rule (no futility stopping) and the rule
    before paired verdicts, then the agent runs each decision added under both."""
    labels = {"no effect": "false-accept", "improvement": "power", "regression": "false-keep"}
    if "Holdout" in name:  # a non-inferiority gate: passing a change that does nothing is right
        labels["no effect"] = "no-effect kept"
    print(f"\n{name}")
    for kind in KINDS:
        if not new.decided[kind]:
            continue
        line = f"  {labels[kind]:<12} {interval(new.accepted[kind], new.decided[kind])}"
        if today is not None:
            line += f"   today's rule: {interval(today.accepted[kind], today.decided[kind])}"
        if old is not None:
            line += f"   {old_name}: {interval(old.accepted[kind], old.decided[kind])}"
        print(line)
    line = (
        f"  agent runs per decision (reruns, both variants): mean {new.mean_runs():.1f}, "
        f"p90 {new.p90_runs():.0f}"
    )
    if today is not None:
        ratio = new.mean_runs() / today.mean_runs() if today.mean_runs() else float("nan")
        line += (
            f"   today's rule: mean {today.mean_runs():.1f}, p90 {today.p90_runs():.0f}"
            f"   ({ratio:.2f}× today's)"
        )
    print(line)
    if new.recorded:
        same = sum(r == s for r, s in zip(new.recorded, new.runs, strict=True))
        print(
            f"  recorded per decision (both variants): verdicts' extra_runs mean "
            f"{statistics.fmean(new.extra):.1f}, gates' agent_runs mean "
            f"{statistics.fmean(new.recorded):.1f}, ran mean {new.mean_runs():.1f}; "
            f"agent_runs = ran in {same} "
            f"of {len(new.runs)} decisions"
        )


PATH_KEYS = (
    "evolve",
    "timeouts-aimed",
    "timeouts-whole",
    "holdout",
    "queue-targets",
    "queue-whole",
    "queue-measured",
    "optimizer-skill",
    "optimizer-settings",
    "tune-description",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=300, help="per kind and path")
    parser.add_argument("--probe-runs", type=int, default=6)
    parser.add_argument("--runs", type=int, default=2, help="runs a case in each evaluation")
    parser.add_argument("--real", type=int, default=3, help="real queue evaluations per kind")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--cache", type=Path, default=None, help="keep the probes here and reuse them next time"
    )
    parser.add_argument(
        "--paths",
        default=",".join(PATH_KEYS),
        help="comma-separated decision paths to run (default: all): " + ", ".join(PATH_KEYS),
    )
    args = parser.parse_args()
    chosen = [key.strip() for key in args.paths.split(",") if key.strip()]
    unknown = [key for key in chosen if key not in PATH_KEYS]
    if unknown or not chosen:
        parser.error(
            f"--paths: unknown path {', '.join(unknown) or '(none)'}; known: "
            + ", ".join(PATH_KEYS)
        )
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(copy_demo(Path(tmp) / "probe"))
        store = SkillStore(ws, DEMO_SKILL)
        shipped_text = store.read(str(store.ensure_adopted()))
        started = time.monotonic()
        cases = cached_probe(args.cache, "shipped", ws, args.probe_runs, args.seed)
        weaker = cached_probe(
            args.cache,
            "without-sql-step",
            ws,
            args.probe_runs,
            args.seed,
            without_sql_step(shipped_text),
        )
        unsteady = sum(0 < c.p < 1 for c in cases)
        moved = sum(a.p != b.p for a, b in zip(cases, weaker, strict=True))
        net = 100 * abs(sum(a.p - b.p for a, b in zip(cases, weaker, strict=True))) / len(cases)
        print(
            f"probe: {len(cases)} demo cases × {args.probe_runs} runs, shipped skill and without "
            f"its SQL step, in {time.monotonic() - started:.0f}s; {unsteady} cases vary from run "
            f"to run; {moved} change pass rate between the two texts"
        )
        paths: dict[
            str, tuple[str, Callable[[Sequence[Case], int, int, int], tuple[Tally, Tally]], str]
        ]
        paths = {
            "evolve": (
                "evolve Target + Guardrail (selection)",
                evolve_path,
                "old case-status rule",
            ),
            "timeouts-aimed": (
                "no-effect candidate whose failures on its 5 aimed cases become timeouts "
                "(Target + Guardrail; timeouts counted as failures)",
                lambda c, n, seed, runs: timeout_path(c, n, seed, runs, whole=False),
                "failures left out as before",
            ),
            "timeouts-whole": (
                "no-effect candidate whose failures on the whole benchmark become timeouts "
                "(queue eval, no targets; timeouts counted as failures)",
                lambda c, n, seed, runs: timeout_path(c, n, seed, runs, whole=True),
                "failures left out as before",
            ),
            "holdout": (
                "evolve Holdout (lower bound > −1 F1 pt)",
                holdout_path,
                "old F1-drop rule",
            ),
            "queue-targets": (
                "queue eval, candidate naming its 5 targets (Target + Guardrail)",
                queue_targets_path,
                "strictly higher mean",
            ),
            "queue-whole": (
                "queue eval, candidate naming no targets (screened, confirmed on fresh runs)",
                queue_whole_path,
                "strictly higher mean",
            ),
            "queue-measured": (
                f"queue eval, no targets, measured SQL step on/off (a trade: net {net:+.1f} pts)",
                lambda c, n, seed, runs: queue_measured_path(c, weaker, n, seed, runs),
                "strictly higher mean",
            ),
            "optimizer-skill": (
                "agent Optimizer round, skill edit (8 built cases, 1 run)",
                optimizer_skill_path,
                "strictly higher mean",
            ),
            "optimizer-settings": (
                "agent Optimizer round, settings edit (8 built cases, 1 run, shared seeds)",
                optimizer_settings_path,
                "strictly higher mean",
            ),
            "tune-description": (
                "tune-description held-out choice (8 held-out queries, 1 run, 3 tries)",
                trigger_path,
                "highest held-out accuracy",
            ),
        }
        for key in chosen:
            name, path, old_name = paths[key]
            started = time.monotonic()
            METER.futility = False
            today, _ = path(cases, args.decisions, args.seed, args.runs)
            METER.futility = True
            new, old = path(cases, args.decisions, args.seed, args.runs)
            report(name, new, old, old_name, today)
            print(f"  ({time.monotonic() - started:.0f}s)", flush=True)
        if args.real:
            started = time.monotonic()
            print(f"\nqueue eval on real demo evaluations ({args.real} per kind)")
            real = real_queue_path(Path(tmp), args.real)
            report("queue eval (real)", real, None, "", None)
            print(f"  ({time.monotonic() - started:.0f}s)")


if __name__ == "__main__":
    main()
