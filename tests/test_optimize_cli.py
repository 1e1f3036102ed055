"""``skillsmith optimize`` on a fresh copy of the bundled demo, offline, as a real process.

The demo agent follows its SKILL.md and the offline reflection model mines its edits from the
Feedback records, so the whole loop runs with no network. Whatever the search finds, the run must
stay within its limits, leave a complete experiment record, and either queue a candidate that
beats the seed on holdout or say why it did not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.core.fsutil import read_jsonl
from engine.core.queue import CandidateQueue
from engine.core.skill import SkillDoc
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL, copy_demo
from engine.evaluation.patches.textrules import default_rules

REPO = Path(__file__).resolve().parents[1]
SMALL = ["--splits", "0.125,0.125,0.125", "-j", "2"]  # 10 cases per split out of 80


def _optimize(ws: Path, *flags: str, timeout: float = 300) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "engine.cli", "optimize", DEMO_SKILL),
            *("--bench", DEMO_BENCHMARK, "-w", str(ws), "--json", *flags),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def _items(candidate: dict[str, Any], section: str) -> list[str]:
    """A candidate's section as its items, steps without their numbers."""
    lines = candidate["sections"][section].splitlines()
    return [ln.split(". ", 1)[-1] if ln[:1].isdigit() else ln for ln in lines if ln.strip()]


@pytest.mark.slow
def test_demo_optimization_completes_within_its_limits(tmp_path: Path) -> None:
    root = copy_demo(tmp_path / "demo")
    code, result, err = _optimize(
        root, "--iterations", "3", "--max-metric-calls", "200", "--seed", "3", *SMALL
    )
    assert code == 0, err
    assert result["status"] in ("submitted", "not_submitted")
    assert result["iterations"] <= 3
    assert 10 <= result["metric_calls"] <= 200
    folder = Path(result["experiment_dir"])
    assert folder.parent == root / "experiments"
    for name in ("experiment.json", "events.jsonl", "result.json"):
        assert (folder / name).is_file(), name
    assert json.loads((folder / "result.json").read_text())["reason"] == result["reason"]
    # Every metric call is accounted for by a stored evaluation, run by run.
    evaluations = [json.loads(p.read_text()) for p in (folder / "evaluations").iterdir()]
    assert sum(len(e["results"]) for e in evaluations) == result["metric_calls"]
    for evaluation in evaluations:
        assert (root / "runs" / evaluation["run_id"] / "results.jsonl").is_file()
    events = read_jsonl(folder / "events.jsonl")
    assert events[-1]["kind"] == "finished"
    queue = CandidateQueue(Workspace.at(root)).list()
    if result["status"] == "submitted":
        holdout = result["holdout"]
        assert holdout["candidate_mean"] > holdout["seed_mean"]
        assert [(c.id, c.status) for c in queue] == [(result["candidate"], "pending_approval")]
    else:
        assert result["reason"] and queue == []


def test_a_time_limit_exits_1_with_the_failure_recorded(tmp_path: Path) -> None:
    root = copy_demo(tmp_path / "demo")
    code, result, _err = _optimize(root, "--time-limit", "0.5", *SMALL)
    assert code == 1
    assert result["status"] == "failed"
    assert result["reason"].startswith("time limit of 0.5s reached")
    # how far the search got in 0.5 s depends on the machine: whatever it proposed is on record
    # as rejected (its idea on the taboo list), never approvable
    assert {c.status for c in CandidateQueue(Workspace.at(root)).list()} <= {"rejected"}
    stored = json.loads((Path(result["experiment_dir"]) / "result.json").read_text())
    assert stored["status"] == "failed"


def test_bad_flags_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_demo(tmp_path / "demo")
    base = ["optimize", DEMO_SKILL, "--bench", DEMO_BENCHMARK, "-w", str(root)]
    for flags, message in (
        (["--splits", "0.5,0.6"], "--splits: expected three ratios"),
        (["--splits", "0.5,0.5,0.5"], "sum to 1.5"),
        (["--reflection-batch", "0"], "--reflection-batch: expected a number ≥ 1"),
        (["--min-gain", "2"], "--min-gain: expected a number in [0, 1]"),
        (["--splits", "0.05,0.05,0.05"], "at least 10 cases per split"),
    ):
        assert main([*base, *flags]) == 2, flags
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not any((root / "experiments").iterdir())


@pytest.mark.slow
def test_demo_default_run_keeps_candidates_that_win_different_cases(tmp_path: Path) -> None:
    # The demo's own settings (its noisy agent, the benchmark's seed, the default budget); only
    # the parallelism is set, which changes no figure: every case run has its own seed. The
    # default budget's ~500 agent runs take minutes on two cores.
    root = copy_demo(tmp_path / "demo")
    code, result, err = _optimize(root, "-j", "2", timeout=900)
    assert code == 0, err
    pool = result["pool"]
    # At least two pool members lead on validation cases the other does not.
    wins = [frozenset(p["wins"]) for p in pool]
    assert any(a - b and b - a for a in wins for b in wins), pool
    assert all(p["why"] for p in pool)
    # The three leaders by validation mean ran Validation a second time before the pick, and
    # every metric call, the recheck's included, is a stored evaluation.
    folder = Path(result["experiment_dir"])
    rechecks = [e for e in read_jsonl(folder / "events.jsonl") if e["kind"] == "validation_recheck"]
    leaders = [p["id"] for p in pool if p["validation_runs"] == 2]
    assert len(leaders) == 3 and [sorted(e["candidate_ids"]) for e in rechecks] == [sorted(leaders)]
    assert result["selected_id"] in leaders
    evaluations = [json.loads(p.read_text()) for p in (folder / "evaluations").iterdir()]
    assert sum(len(e["results"]) for e in evaluations) == result["metric_calls"] <= 1000
    # The record on disk says the same, and every pool member's SKILL.md is kept beside it.
    stored = json.loads((folder / "result.json").read_text())
    assert (stored["status"], stored["reason"], stored["pool"]) == (
        result["status"],
        result["reason"],
        pool,
    )
    for member in pool:
        kept = json.loads((folder / "candidates" / f"{member['id']}.json").read_text())
        assert kept["skill_md"].startswith("---\n")
    # GEPA's merge ran (the benchmark's seed fixes the rounds, so a merge is always proposed
    # on this run): a merged child differs from its parent, and holds every pitfall its
    # partner from another lineage added since their common ancestor.
    merges = [e for e in read_jsonl(folder / "events.jsonl") if e["kind"] == "merge"]
    assert merges, "no merge was proposed"
    for merge in merges:
        child, parent, partner, ancestor = (
            json.loads((folder / "candidates" / f"{merge[k]}.json").read_text())
            for k in ("candidate_id", "parent_id", "partner_id", "ancestor_id")
        )
        assert child["sections"] != parent["sections"]
        added = set(_items(partner, "pitfalls")) - set(_items(ancestor, "pitfalls"))
        assert added <= set(_items(child, "pitfalls"))
    # On the demo's own settings the search finds a candidate that beats the seed on holdout by
    # the paired verdict, with the critical cases held. The run is reproducible (every draw is
    # seeded by the benchmark's seed), so this is its outcome, not a chance one. The offline
    # reflection once wrote a catch-all trigger into the description ("… mention anything,
    # wrong."), which the candidate gates' text filters refuse (issue 25); it no longer proposes
    # such words, so the pick passes them and waits for approval.
    holdout = stored["holdout"]
    assert holdout["candidate_mean"] > holdout["seed_mean"]
    assert holdout["critical_regressed"] == []
    assert holdout["verdict"]["decision"] == "better"
    assert result["status"] == "submitted", result["reason"]
    queued = CandidateQueue(Workspace.at(root)).list()
    assert [(c.id, c.status) for c in queued] == [(result["candidate"], "pending_approval")]
    description = SkillDoc.parse(queued[0].skill_text()).frontmatter["description"]
    assert default_rules().catch_all_in(description) is None, description


def test_a_budget_in_skillsmith_yaml_stops_the_search_like_the_time_limit(tmp_path: Path) -> None:
    """skillsmith.yaml's ``budget:`` bounds optimize as it bounds evolve: the run stops at the
    first clean point past 25 agent runs, fails like a time limit (exit 1, nothing queued) and
    records what it spent. Seed fixed so the run is the same one every time (the demo agent is
    seeded per unit); every results row on disk is one agent run."""
    root = copy_demo(tmp_path / "demo")
    ws = Workspace.at(root)
    cfg = ws.load_config()
    cfg.budget.runs = 25
    ws.save_config(cfg)
    code, result, err = _optimize(
        root, "--iterations", "3", "--max-metric-calls", "200", "--seed", "3", *SMALL
    )
    assert code == 1, err
    assert (result["status"], result["stop_reason"]) == ("failed", "budget")
    # the units in flight when the budget ran out finish and count: the spent line says so
    assert result["reason"].startswith("budget reached: ")
    assert f"spent {result['spent']['runs']}/25 agent runs" in result["reason"]
    assert result["reason"].endswith("nothing was submitted")
    rows = sum(len(read_jsonl(p)) for p in (root / "runs").glob("*/results.jsonl"))
    assert result["spent"]["runs"] == rows and 25 <= rows <= 25 + 2  # + one batch of -j 2
    assert result["budget"] == {"runs": 25, "usd": None, "tokens": None}
    assert CandidateQueue(ws).list() == []
    stored = json.loads((Path(result["experiment_dir"]) / "result.json").read_text())
    assert (stored["status"], stored["stop_reason"]) == ("failed", "budget")
