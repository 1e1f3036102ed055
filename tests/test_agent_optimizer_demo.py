"""The Optimizer on the shipped demo as a user runs it: ``skillsmith demo``, ``skillsmith build``
and ``skillsmith optimize-agent`` with their default settings, the demo agent at its shipped
noise, and a kept round read back from the files the session left on disk."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.core.queue import CandidateQueue
from engine.core.scoreboard import read_records
from engine.core.store import SkillStore
from engine.core.workspace import Workspace

BENCH = "opt"
SKILL = "security-audit"
SEED = "2"


def _cli(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


@pytest.mark.slow
def test_optimize_agent_keeps_a_round_on_the_shipped_demo(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    subprocess.run(
        [sys.executable, "-m", "engine.cli", "demo", str(root), "--no-tui"],
        check=True,
        capture_output=True,
    )
    # Default settings throughout, noise included: the kept round's candidate fixes cases the
    # baseline misses on every run, a far larger change than the demo agent's slips.
    built = _cli("build", BENCH, "--from", "vuln-detect", "-w", str(root))
    ws = Workspace.at(root)
    shipped = ws.skill_path(SKILL).read_text(encoding="utf-8")

    # No publish past the human: the kept round waits in the queue, the skill stays at v0.
    # The session seed fixes every evaluation's draws. At the shipped noise a session keeps a
    # round on most seeds (4 of seeds 1-6, each seed's rounds repeatable), not on every one: an
    # assertion on a kept round needs a seed that keeps one.
    held = _cli("optimize-agent", "--bench", BENCH, "-w", str(root), "--seed", SEED)
    assert held["stop_reason"] == "awaiting_approval" and held["version"] == 0
    (waiting,) = [a for a in held["attempts"] if a["decision"] == "queued"]
    queued = CandidateQueue(ws).get(waiting["candidate_id"])
    assert queued.status == "pending_approval" and queued.source == "optimize-agent"
    assert queued.skill_text() == waiting["candidate"]["after"]
    assert SkillStore(ws, SKILL).current() == "v0" and ws.version() == 0
    assert ws.skill_path(SKILL).read_text(encoding="utf-8") == shipped

    # With --auto-approve the kept rounds are published as they are kept.
    _cli("optimize-agent", "--bench", BENCH, "-w", str(root), "--auto-approve", "--seed", SEED)
    folder = sorted(ws.experiments_dir.iterdir())[-1]
    state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    assert state["status"] == "finished" and state["valid_rounds"] >= 1
    kept = [a for a in state["attempts"] if a["decision"] == "accepted"]
    assert kept, [a["reason"] for a in state["attempts"]]
    first = kept[0]
    verdict = first["verdict"]
    baseline = read_records(ws.benchmarks_dir / BENCH)[0]
    assert baseline.kind == "formal_baseline" and baseline.score == built["baseline_score"]
    # the paired verdict's figures, one-sided at the shipped alpha, against the parent's fresh
    # evaluation of the same cases
    assert verdict["decision"] == "better" and verdict["alternative"] == "greater"
    assert verdict["alpha"] == 0.05 and verdict["p_value"] < 0.05 and verdict["ci_low"] > 0
    assert verdict["n_cases"] == len(baseline.cases) and verdict["test"] == "mcnemar-exact"
    # judged on every paired run, reruns included (the first single-run scores may tie)
    assert verdict["after"] > verdict["before"] and verdict["delta"] > 0
    # the kept edit is what the traces called for: its cases are among those the baseline failed
    failing = {c.case_id for c in baseline.cases if c.score < 100}
    assert set(first["candidate"]["targeted_cases"]) <= failing
    # it stands: a record on the scoreboard with its verdict, the workspace version bumped, and
    # for a skill edit the published version holds the candidate's text
    record = read_records(ws.benchmarks_dir / BENCH)[first["record_index"]]
    assert record.kind == "accepted" and record.run_id == first["run_id"]
    assert record.score == first["score"]
    assert verdict["line"] in record.summary
    assert ws.version() >= 1
    if first["candidate"]["target"] == f"skills/{SKILL}/SKILL.md":
        store = SkillStore(ws, SKILL)
        assert first["candidate"]["after"] in {store.read(v.version) for v in store.versions()}
