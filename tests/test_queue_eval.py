"""``skillsmith queue eval``: a pending_eval candidate is settled by a paired evaluation.

The demo workspace is evaluated for real (subprocess agents), on a benchmark of every sixth demo
case to keep it quick. The planted change is large on purpose — the audit skill's flagging steps
removed or restored — so the verdict is decided whatever the agent's run-to-run noise does; the
tests that check exact figures set ``agent.noise: 0`` and say so.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.errors import SkillsmithError
from engine.core.queue import CandidateQueue
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_SKILL
from engine.evaluation.gates.candidate import Effectiveness, TaskOutcome
from engine.evaluation.gates.submission import submit_candidate
from engine.evaluation.verdict import compare_paired
from tests.bench_helpers import mini_demo

FLAG_STEPS = re.compile(r"(3|4|5|6|7|10)\. ")
MINI = "mini"
SEED = "1"


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _without_flags(text: str) -> str:
    """The skill with only its list, read, trace, include and confirm steps: it flags nothing."""
    return "".join(line for line in text.splitlines(True) if not FLAG_STEPS.match(line))


def _pending(ws: Workspace, text: str, parent: str) -> str:
    cand, decision = submit_candidate(
        ws,
        DEMO_SKILL,
        text,
        source="manual",
        operation="update",
        parent_version=parent,
        summary="planted change",
        outcome=TaskOutcome(status="fail"),  # the task gave no proof: parked in pending_eval
    )
    assert decision.status == "pending_eval"
    return cand.id


@pytest.fixture()
def ws(tmp_path: Path) -> Workspace:
    ws = mini_demo(tmp_path / "ws", MINI, 6)
    return ws


def test_a_real_improvement_moves_on_to_approval_with_its_figures(ws: Workspace) -> None:
    store = SkillStore(ws, DEMO_SKILL)
    good = store.read(str(store.ensure_adopted()))
    weak = store.publish(_without_flags(good), why="planted: the SQL step lost")
    cand_id = _pending(ws, good, weak)
    # the seed fixes the noisy demo's draws: a fix this large is found on most seeds, and the
    # figures below (a broad change found at once) need one where the first look decides
    code, out, err = _cli(
        "queue", "eval", cand_id, "-w", str(ws.root), "--bench", MINI, "-j", "2", "--json",
        "--seed", SEED,
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "pending_approval", data["verdict"]["line"]
    verdict = data["verdict"]
    assert verdict["decision"] == "better" and verdict["ci_low"] > 0
    # better on the whole benchmark at once (a broad change), at half of gates.alpha
    assert verdict["n_cases"] == 18 and verdict["n_runs"] == 2 and verdict["alpha"] == 0.025
    assert data["broad"] == verdict and data["screening"] is None
    assert data["extra_runs"] == verdict["extra_runs"]
    cand = CandidateQueue(ws).get(cand_id)
    (gate,) = [g for g in cand.gates() if g["gate"] == "effectiveness"]  # judged again
    assert gate["verdict"] == "pass" and gate["figures"]["line"] == verdict["line"]
    assert gate["figures"]["against"] == weak and gate["figures"]["runs"] == data["run_ids"]
    assert [h.status for h in cand.history][-1] == "pending_approval"
    # a second evaluation is refused: it is no longer pending_eval
    code, _, err = _cli("queue", "eval", cand_id, "-w", str(ws.root))
    assert code != 0 and "only pending_eval candidates are evaluated" in err
    # with two benchmarks and no --bench, the choice is asked for, naming both
    other = _pending(ws, good, str(store.current()))
    code, _, err = _cli("queue", "eval", other, "-w", str(ws.root))
    assert code != 0 and "pick a benchmark with --bench (found: mini, vuln-detect)" in err


def test_a_regression_is_rejected_onto_the_taboo_list(ws: Workspace) -> None:
    store = SkillStore(ws, DEMO_SKILL)
    current = str(store.ensure_adopted())
    cand_id = _pending(ws, _without_flags(store.read(current)), current)
    # a fixed seed, for the same reason: the loss is shown on the first look
    code, out, err = _cli(
        "queue", "eval", cand_id, "-w", str(ws.root), "--bench", MINI, "-j", "2", "--seed", SEED
    )
    assert code == 0, err
    assert out.startswith(f"{cand_id}: whole benchmark: -") and out.rstrip().endswith("→ rejected")
    cand = CandidateQueue(ws).get(cand_id)
    assert cand.status == "rejected" and cand.reason is not None
    assert (
        f"paired evaluation on {MINI} against parent {current}: whole benchmark: -" in cand.reason
    )
    assert "whole benchmark not worse: " in cand.reason  # it is worse: nothing was screened
    assert len(store.taboo().entries()) == 1
    with pytest.raises(SkillsmithError, match="only pending_eval"):
        CandidateQueue(ws).record_evaluation(cand_id, {"gate": "x"}, passed=True, why="again")


def test_a_candidate_naming_its_targets_is_judged_on_them_and_on_the_rest(ws: Workspace) -> None:
    """Like evolve's gates: better on the cases it names, and not worse on the others."""
    cfg = ws.load_config()
    cfg.agent.noise = 0  # deterministic runs: each outcome below is exact, not a likely one
    ws.save_config(cfg)
    store = SkillStore(ws, DEMO_SKILL)
    good = store.read(str(store.ensure_adopted()))
    sqli = ["sqli-js-concat", "sqli-py-format"]

    def queued(parent_text: str, targets: list[str]) -> str:
        parent = store.publish(parent_text, why="planted parent")
        cand, _ = submit_candidate(
            ws, DEMO_SKILL, good, source="manual", operation="update", parent_version=parent,
            summary="planted fix", outcome=TaskOutcome(status="fail"),
            provenance={"targeted_cases": [*targets, "no-such-case"]},
        )  # fmt: skip
        return cand.id

    # the parent lost the SQL step: the candidate fixes the two SQL cases and leaves the rest
    fix = queued("".join(x for x in good.splitlines(True) if not x.startswith("3. ")), sqli)
    code, out, err = _cli("queue", "eval", fix, "-w", str(ws.root), "--bench", MINI, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "pending_approval" and data["targets"] == sqli
    assert (data["verdict"]["decision"], data["verdict"]["n_cases"]) == ("better", 2)
    assert data["verdict"]["extra_runs"] > 0  # 4 pairs at the first look decide nothing yet
    assert (data["guardrail"]["decision"], data["guardrail"]["n_cases"]) == ("inconclusive", 16)
    (gate,) = [g for g in CandidateQueue(ws).get(fix).gates() if g["gate"] == "effectiveness"]
    assert gate["figures"]["targets"] == sqli and gate["figures"]["guardrail"]["n_cases"] == 16

    # every flagging step restored at once fixes the vulnerable cases it names, but flags the
    # safe ones the parent (which flagged nothing) passed: the guardrail rejects it
    mini = ws.benchmarks_dir / MINI
    vulnerable = sorted(
        c.name for c in mini.iterdir()
        if c.is_dir() and "expected: vulnerable" in (c / "rubric" / "rubric.yaml").read_text()
    )  # fmt: skip
    broad = queued(_without_flags(good) + "\n", vulnerable)
    code, out, err = _cli("queue", "eval", broad, "-w", str(ws.root), "--bench", MINI)
    assert code == 0, err
    assert out.rstrip().endswith("→ rejected")
    assert f"{len(vulnerable)} targeted: +" in out and " better " in out.split("; others")[0]
    assert " worse (" in out.split("; others: ")[1]
    cand = CandidateQueue(ws).get(broad)
    assert cand.status == "rejected" and "(worse at one-sided p<0.05)" in (cand.reason or "")


def test_a_narrow_fix_naming_no_targets_is_screened_and_confirmed(ws: Workspace) -> None:
    """The candidate restores the SQL step, which fixes 2 of the 18 cases, and names none.

    ``agent.noise: 0`` makes every run exact, so each figure below is the one the design gives,
    not a likely one. With ``gates.looks: 1`` the whole-benchmark route has its one look (2 of 18
    pairs better: not enough), so the fix must be found by screening: the 2 cases that gained are
    rerun twice each, then confirmed on 24 fresh runs each, all 48 pairs better.
    """
    cfg = ws.load_config()
    cfg.agent.noise = 0
    cfg.gates.looks = 1
    ws.save_config(cfg)
    store = SkillStore(ws, DEMO_SKILL)
    good = store.read(str(store.ensure_adopted()))
    parent = store.publish(
        "".join(x for x in good.splitlines(True) if not x.startswith("3. ")), why="planted parent"
    )
    cand_id = _pending(ws, good, parent)
    code, out, err = _cli(
        "queue", "eval", cand_id, "-w", str(ws.root), "--bench", MINI, "--runs", "1", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    sqli = ["sqli-js-concat", "sqli-py-format"]
    assert data["status"] == "pending_approval", data["verdict"]["line"]
    assert data["broad"]["decision"] == "inconclusive" and data["broad"]["alpha"] == 0.025
    assert data["screening"] == {
        "rounds": [{"cases": sqli, "runs_each": 2}],
        "confirmed": sqli,
        "confirmation_runs": 48,
    }
    verdict = data["verdict"]
    assert (verdict["decision"], verdict["n_cases"], verdict["n_runs"]) == ("better", 2, 24)
    assert verdict["p_value"] == pytest.approx(0.5**48) and verdict["alpha"] == 0.025
    assert data["guardrail"]["n_cases"] == 18 and data["guardrail"]["decision"] != "worse"
    assert data["extra_runs"] == 2 * 2 + 48 and len(data["run_ids"]) == 3
    (gate,) = [g for g in CandidateQueue(ws).get(cand_id).gates() if g["gate"] == "effectiveness"]
    figures = gate["figures"]
    assert figures["screening"] == data["screening"] and figures["extra_runs_total"] == 52
    assert figures["agent_runs"] == {"screening": 2 * 52}  # by step, both variants
    assert figures["runs"] == data["run_ids"] and figures["targets"] == []
    assert "2 screened cases (sqli-js-concat, sqli-py-format): +" in gate["reasons"][0]


def test_effectiveness_judged_on_a_paired_verdict() -> None:
    before = [{"case_id": f"c{i}", "run_index": 0, "pass_fail": "fail"} for i in range(6)]
    after = [{**r, "pass_fail": "pass"} for r in before]
    better = compare_paired(before, after, test="runs", alternative="greater")
    result = Effectiveness().judge(None, operation="update", verdict=better)
    assert result.verdict == "pass" and result.figures["unproven"] is False
    assert result.figures["p_value"] == pytest.approx(0.5**6)
    assert result.reasons == [f"paired evaluation against the parent: {better.line()}"]
    same = compare_paired(before, before, test="runs", alternative="greater")
    refused = Effectiveness().judge(TaskOutcome(status="success"), operation="update", verdict=same)
    assert refused.verdict == "fail"  # the paired evidence outranks the task's own word
    assert refused.reasons[0].endswith("better at one-sided p<0.05 wanted")


def test_the_gates_pane_shows_the_change_line() -> None:
    from tui.gates_pane import render_gates

    line = "+8.3 pts [+2.1, +14.5] p=0.01 better (23 paired cases, 4 runs, +12 extra)"
    shown = render_gates(
        [{"gate": "target", "verdict": "pass", "figures": {"line": line, "p_value": 0.01}}]
    ).plain
    assert f"change: {line}\n" in shown
    assert "figures: p_value=0.01\n" in shown and "line=" not in shown


def test_a_budget_stops_the_evaluation_undecided_and_a_larger_one_resumes_it(
    ws: Workspace,
) -> None:
    """``--budget-runs 30`` stops the paired evaluation (72 runs: 18 cases × 2 runs × 2
    variants) part-way: exit 1, nothing decided, the candidate still pending_eval. Every results
    row is one agent run; the units in flight may finish past the budget (at most -j 2). The
    same command with more budget resumes the same run folder and decides; the planted change
    is large, so that decision holds whatever the agent's noise does."""
    store = SkillStore(ws, DEMO_SKILL)
    good = store.read(str(store.ensure_adopted()))
    cand_id = _pending(ws, good, store.publish(_without_flags(good), why="planted"))
    args = ("queue", "eval", cand_id, "-w", str(ws.root), "--bench", MINI, "-j", "2", "--json")

    code, out, err = _cli(*args, "--budget-runs", "30")
    assert code == 1, err
    data = json.loads(out)
    assert (data["status"], data["stopped"]) == ("pending_eval", "budget")
    assert data["reason"].startswith("budget reached: 30 of 30 agent runs; spent ")
    (results,) = ws.runs_dir.glob("*/results.jsonl")
    folder = results.parent
    rows = len(results.read_text(encoding="utf-8").splitlines())
    assert data["spent"]["runs"] == rows and 30 <= rows <= 30 + 2
    cand = CandidateQueue(ws).get(cand_id)
    assert cand.status == "pending_eval" and not any(
        g["gate"] == "effectiveness" and g["figures"].get("runs") for g in cand.gates()
    )

    code, out, err = _cli(*args, "--budget-runs", "1000")
    assert code == 0, err
    done = json.loads(out)
    assert done["status"] == "pending_approval" and done["run_ids"][0] == folder.name
