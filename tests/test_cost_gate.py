"""The Cost gate: a candidate is judged on what it costs as well as on its pass rate.

The agent is a real ``command`` subprocess written for this test: it gives every case the same
answer whatever the skill says (so no candidate changes the pass rate) and reports tokens in
proportion to how much skill text it was told to follow — a SKILL.md carrying the "explain
every step at length" line costs it twice the tokens. ``queue eval`` then runs the real paired
evaluation on a small demo benchmark.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from engine.core.config import AgentConfig
from engine.core.queue import CandidateQueue
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_SKILL
from engine.evaluation.gates.candidate import TaskOutcome
from engine.evaluation.gates.cost import Cost, cost_change
from engine.evaluation.gates.outcome import Sampling
from engine.evaluation.gates.queued import Judgement, evaluate_queued, with_cost
from engine.evaluation.gates.submission import submit_candidate
from engine.evaluation.verdict import compare_paired
from tests.bench_helpers import mini_demo

MINI = "mini"
VERBOSE = "Explain every step at length before answering."

# Reads the skills it was given from its room; the answer never depends on them, the tokens do.
AGENT = f"""
import json, os, pathlib
room = pathlib.Path.cwd()
text = "".join(p.read_text() for p in (room / "skills").rglob("SKILL.md"))
tokens = 2000 if {VERBOSE!r} in text else 1000
(room / "answer.txt").write_text("VERDICT: vulnerable\\n")
print(json.dumps({{"type": "assistant", "content": "VERDICT: vulnerable"}}))
print(json.dumps({{"type": "result", "tokens": {{"input": tokens, "output": tokens // 10}},
                   "cost_usd": tokens / 1e6}}))
"""


@pytest.fixture()
def ws(tmp_path: Path) -> Workspace:
    ws = mini_demo(tmp_path / "ws", MINI, 9)
    cfg = ws.load_config()
    cfg.agent = AgentConfig(kind="command", command=[sys.executable, "-c", AGENT])
    ws.save_config(cfg)
    return ws


def _evaluated(ws: Workspace, parent_text: str | None, text: str) -> tuple[str, str]:
    store = SkillStore(ws, DEMO_SKILL)
    parent = str(store.ensure_adopted())
    if parent_text is not None:
        parent = store.publish(parent_text, why="a parent for the test")
    cand, decision = submit_candidate(
        ws, DEMO_SKILL, text, source="manual", operation="update", parent_version=parent,
        summary="planted cost change", outcome=TaskOutcome(status="fail"),
    )  # fmt: skip
    assert decision.status == "pending_eval"
    done = evaluate_queued(ws, cand.id, bench=MINI)
    return done.status, done.line()


def test_a_candidate_that_doubles_the_tokens_is_refused_by_the_cost_gate(ws: Workspace) -> None:
    store = SkillStore(ws, DEMO_SKILL)
    good = store.read(str(store.ensure_adopted()))
    status, line = _evaluated(ws, None, good.rstrip("\n") + f"\n\n{VERBOSE}\n")
    assert status == "rejected"
    assert "tokens +100% [+100%, +100%] a case" in line
    (cand,) = CandidateQueue(ws).list()
    why = cand.reason or ""
    assert "paired evaluation on mini" in why and "Cost gate: tokens and cost rose" in why
    judged = next(g for g in cand.gates() if g["gate"] == "effectiveness")
    cost = judged["figures"]["cost"]
    assert judged["verdict"] == "fail" and cost["verdict"] == "fail"
    assert cost["figures"]["changes"]["tokens"]["change"] == pytest.approx(1.0)


def test_a_skill_whose_only_gain_is_lower_cost_is_accepted_by_the_cost_gate(
    ws: Workspace,
) -> None:
    store = SkillStore(ws, DEMO_SKILL)
    good = store.read(str(store.ensure_adopted()))
    status, line = _evaluated(ws, good.rstrip("\n") + f"\n\n{VERBOSE}\n", good)
    assert status == "pending_approval"
    assert "tokens -50% [-50%, -50%] a case" in line


def _rows(tokens: dict[str, list[int]]) -> list[dict[str, object]]:
    return [
        {"case_id": case, "run_index": i, "pass_fail": "pass", "tokens": {"input": t}}
        for case, runs in tokens.items()
        for i, t in enumerate(runs)
    ]


def test_the_cost_change_is_a_per_case_ratio_with_an_interval() -> None:
    before = _rows({"a": [100, 100], "b": [1000, 1000], "c": [50, 70]})
    after = _rows({"a": [100, 110], "b": [1900, 1900], "c": [70, 80]})
    change = cost_change(before, after, "tokens")
    assert change is not None and change.n_cases == 3
    # each case weighs the same: the geometric mean of 1.05, 1.9 and 1.25
    assert change.change == pytest.approx(
        math.exp((math.log(1.05) + math.log(1.9) + math.log(1.25)) / 3) - 1
    )
    assert change.low < 0 < 0.25 < change.change < change.high
    # a rise of about 36 % is above a 25 % ceiling, but not with confidence on three cases
    assert Cost(max_increase=0.25).judge(before, after, better=False).verdict == "pass"
    # the same rise on every case is certain: refused, unless the pass rate is better
    steady = _rows({"a": [136, 136], "b": [1360, 1360], "c": [68, 95]})
    assert Cost(max_increase=0.25).judge(before, steady, better=False).verdict == "fail"
    assert Cost(max_increase=0.25).judge(before, steady, better=True).verdict == "pass"


def test_runs_that_failed_outside_the_agent_are_not_costed_and_nothing_recorded_holds() -> None:
    before = _rows({"a": [100], "b": [100]})
    after = _rows({"a": [100], "b": [100]})
    after[0] |= {"pass_fail": "invalid", "invalid_reason": "agent could not start: no sandbox",
                 "tokens": {"input": 9000}}  # fmt: skip
    change = cost_change(before, after, "tokens")
    assert change is not None and change.n_cases == 1 and change.change == 0.0
    bare = [{"case_id": "a", "run_index": 0, "pass_fail": "pass"}]
    assert Cost().judge(bare, bare, better=False).verdict == "held"


def test_a_saving_never_buys_back_a_loss_the_reruns_showed() -> None:
    """A cheaper candidate is accepted on cost alone only when it is not worse: on the first
    rows and on every verdict the judgement reached with its reruns. The first rows here lose
    one case of eight (not worse with confidence), while the reruns showed the loss."""
    cases = [f"c{i}" for i in range(8)]

    def rows(tokens: int, failing: set[str]) -> list[dict[str, object]]:
        return [
            {"case_id": c, "run_index": i, "seed": i, "tokens": {"input": tokens},
             "pass_fail": "fail" if c in failing else "pass"}
            for c in cases for i in range(2)
        ]  # fmt: skip

    before, after = rows(1000, set()), rows(500, {"c0"})
    sampling = Sampling(alpha=0.05, max_extra_runs=0)
    shown = compare_paired(rows(1000, set()), rows(1000, set(cases[:5])), test="runs",
                           alternative="less")  # fmt: skip
    assert shown.worse
    cheap = Cost(max_increase=0.25)
    found = Judgement(passed=False, verdict=shown, guardrail=shown, reasons=["not better"])
    judged = with_cost(found, cheap, before, after, sampling)
    assert judged.cost is not None and judged.cost.figures["cheaper"]
    assert not judged.passed
    # without the rerun evidence the same first rows are accepted on the saving alone
    calm = compare_paired(before, before, test="runs", alternative="less")
    found = Judgement(passed=False, verdict=calm, guardrail=calm, reasons=["not better"])
    assert with_cost(found, cheap, before, after, sampling).passed
