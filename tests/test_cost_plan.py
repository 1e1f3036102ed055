"""``--dry-run``: a job's plan (agent runs, time, tokens, dollars) is printed and nothing runs.

On a copy of the demo workspace through the real CLI; the estimate comes from a stated default
until the benchmark has recorded runs of the agent, then from those runs (the demo agent's own
tokens and durations, read back from its results).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from engine.cli import main
from engine.core.benchmark import load_benchmark
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL, copy_demo


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_eval_dry_run_prints_the_plan_and_starts_no_run(tmp_path: Path) -> None:
    ws = Workspace(copy_demo(tmp_path / "ws"))
    w = ("-w", str(ws.root))
    code, out, _ = _cli("eval", DEMO_BENCHMARK, "--runs", "2", "--dry-run", "-j", "2", *w)
    assert code == 0
    assert out.startswith("plan: 216 agent runs (108 cases × 2 runs); estimate ")
    assert "no recorded runs on this benchmark: demo default per run" in out
    assert "dry run: no agent was started" in out
    assert not list(ws.runs_dir.glob("run-*"))

    # two cases run for real: the next plan is estimated from their recorded units
    cases = "sqli-go-sprintf,sqli-java-concat"
    assert _cli("eval", DEMO_BENCHMARK, "--cases", cases, "--runs", "1", *w)[0] == 0
    rows = [
        json.loads(line)
        for path in ws.runs_dir.glob("*/results.jsonl")
        for line in path.read_text().splitlines()
    ]
    tokens = sum(r["tokens"]["input"] + r["tokens"]["output"] for r in rows) / len(rows)
    code, out, _ = _cli("--json", "eval", DEMO_BENCHMARK, "--runs", "2", "--dry-run", *w)
    plan = json.loads(out)
    assert plan["dry_run"] and plan["agent_runs"] == 216
    assert plan["estimate"]["source"] == "from 2 recorded units of this agent on this benchmark"
    assert plan["estimate"]["tokens"][0] == round(216 * tokens)
    assert len(list(ws.runs_dir.glob("*/results.jsonl"))) == 1


def test_evolve_dry_run_plans_every_round_and_writes_no_checkpoint(tmp_path: Path) -> None:
    ws = Workspace(copy_demo(tmp_path / "ws"))
    code, out, _ = _cli(
        "evolve", DEMO_SKILL, "--bench", DEMO_BENCHMARK, "--rounds", "2", "--dry-run",
        "-w", str(ws.root),
    )  # fmt: skip
    assert code == 0 and "(at most, 2 rounds), up to " in out
    assert not ws.pending_round_path.exists()
    assert not ws.runs_dir.is_dir() or not any(ws.runs_dir.glob("run-*"))


def test_evolve_plan_counts_a_guardrail_confirmation_past_max_extra_runs(tmp_path: Path) -> None:
    """With ``max_extra_runs: 4`` a confirmation of many broken cases costs 2 runs of each, more
    than the budget: the plan's most is what the gates can really spend (docs/verdicts.md)."""
    ws = Workspace(copy_demo(tmp_path / "ws"))
    cfg = ws.load_config()
    cfg.gates.max_extra_runs = 4
    ws.save_config(cfg)
    selection = sum(1 for c in load_benchmark(ws.benchmarks_dir / DEMO_BENCHMARK).cases
                    if c.split == "selection")  # fmt: skip
    code, out, _ = _cli(
        "--json", "evolve", DEMO_SKILL, "--bench", DEMO_BENCHMARK, "--rounds", "1", "--dry-run",
        "-w", str(ws.root),
    )  # fmt: skip
    assert code == 0
    # per side: Target 4, Guardrail 4, its confirmation 2 runs of every selection case
    assert json.loads(out)["max_extra_runs"] == 2 * (4 + 4 + 2 * selection) > 2 * 3 * 4


def test_optimize_dry_run_plans_its_metric_calls_and_starts_no_search(tmp_path: Path) -> None:
    """GEPA's runs are its metric-call budget, never exceeded: the seed's validation for sure,
    the search and the holdout comparison up to the budget; a dry run makes no experiment."""
    ws = Workspace(copy_demo(tmp_path / "ws"))
    w = ("-w", str(ws.root))
    args = ("optimize", DEMO_SKILL, "--bench", DEMO_BENCHMARK, "--max-metric-calls", "300")
    code, out, _ = _cli(*args, "--dry-run", *w)
    assert code == 0
    assert out.startswith("plan: ") and "(the seed on validation), up to 300 with the search" in out
    assert "dry run: no agent was started" in out
    assert not ws.experiments_dir.is_dir() or not any(ws.experiments_dir.iterdir())
    code, out, _ = _cli("--json", *args, "--dry-run", *w)
    plan = json.loads(out)
    assert plan["dry_run"] and plan["agent_runs"] + plan["max_extra_runs"] == 300
    # what the run refuses, the plan refuses first (one line, nothing run)
    code, _, err = _cli(*args[:-1], "10", "--dry-run", *w)
    assert code == 2 and "--max-metric-calls 10 cannot cover" in err


def test_tune_description_dry_run_plans_every_description_and_its_reruns(tmp_path: Path) -> None:
    """The plan's most bounds what a real tuning spends: each description on every query, and
    each try's held-out reruns with the current description's beside them."""
    ws = Workspace(copy_demo(tmp_path / "ws"))
    queries = ws.root / "examples" / "trigger-queries.json"
    asked = len(json.loads(queries.read_text(encoding="utf-8")))
    w = ("-w", str(ws.root))
    args = ("tune-description", DEMO_SKILL, "--queries", str(queries), "--iterations", "1")
    code, out, _ = _cli("--json", *args, "--max-extra-runs", "8", "--dry-run", *w)
    plan = json.loads(out)
    assert code == 0 and plan["dry_run"]
    assert plan["agent_runs"] == 2 * asked and plan["max_extra_runs"] == 2 * 8
    assert not ws.experiments_dir.is_dir() or not any(ws.experiments_dir.iterdir())
    code, out, _ = _cli("--json", *args, "--max-extra-runs", "8", "--no-submit", *w)
    spent = json.loads(out)["spent"]["runs"]
    assert asked <= spent <= plan["agent_runs"] + plan["max_extra_runs"]
