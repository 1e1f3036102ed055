"""Negative-transfer protection: when stagnation trips and the current version is worse on the
holdout split than the best version of the session, the loop rolls back to the best (audited)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from engine.core.benchmark import load_benchmark
from engine.core.store import SkillStore
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL
from engine.evaluation.runner import run_evaluation
from engine.evaluation.verify import verify_score
from engine.loops.evolve import EvolveOptions, run
from engine.loops.evolve.checkpoint import (
    Evaluation,
    PendingRound,
    RoundRecord,
    VersionRecord,
    save,
)
from tests.evolve_helpers import SMALL_FAMILIES, demo, session_events

pytestmark = pytest.mark.slow


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_stagnation_rolls_back_to_the_best_holdout_version(tmp_path: Path) -> None:
    ws = demo(tmp_path / "ws", SMALL_FAMILIES)
    store = SkillStore(ws, DEMO_SKILL)
    store.ensure_adopted()
    good = store.read("v0")
    # a "patch" that quietly kills the path and deserialisation steps
    bad = good.replace("Flag file paths", "Note file paths").replace(
        "Flag unsafe deserialization", "Note unsafe deserialization"
    )
    assert bad != good
    store.publish(bad, why="an accepted patch that generalises badly")
    bench = load_benchmark(ws.benchmarks_dir / DEMO_BENCHMARK)
    holdout = [c.id for c in bench.cases_in("holdout")]
    measured = run_evaluation(
        ws, DEMO_BENCHMARK, jobs=2, skills={DEMO_SKILL: good}, case_ids=holdout
    )
    best = measured.metrics.f1
    assert best is not None
    pending = PendingRound(
        session_id="evolve-20260101-000000-abcdef",
        skill=DEMO_SKILL,
        bench=DEMO_BENCHMARK,
        seed=7,
        proposer="offline",
        auto_approve=True,
        max_rounds=10,
        started_at="2026-01-01T00:00:00Z",
        round=4,
        stage="final",
        stop_reason="stagnation",
        stagnation=5.3,
        evaluations={
            sha(good): {
                "holdout": Evaluation(measured.run_id, "holdout", best, measured.metrics.pass_rate)
            }
        },
        versions=[
            VersionRecord("v0", sha(good), 0, verify_score(good).score, holdout_f1=best),
            VersionRecord("v1", sha(bad), 1, verify_score(bad).score),
        ],
        rounds=[
            RoundRecord(r, "v1", "rejected", "gate rejected: guardrail", 1.0, r - 1.0)
            for r in (2, 3, 4)
        ],
    )
    save(ws, pending)

    result = run(ws, EvolveOptions(DEMO_SKILL, DEMO_BENCHMARK))

    assert result.resumed and result.stop_reason == "stagnation"
    assert result.holdout_final == best
    worse = next(v for v in result.versions if v.version == "v1")
    assert worse.holdout_f1 is not None and worse.holdout_f1 < best
    assert (store.current(), result.final_version) == ("v0", "v0")
    assert ws.skill_path(DEMO_SKILL).read_text(encoding="utf-8") == good
    last = store.audit()[-1]
    assert (last["op"], last["from"], last["to"]) == ("rollback", "v1", "v0")
    assert "stagnation 5.3" in last["why"] and f"v0 {best:.3f}" in last["why"]
    events = session_events(ws, result.session_id)
    rolled = [e for e in events if e["kind"] == "rolled_back"]
    assert [(e["frm"], e["to"]) for e in rolled] == [("v1", "v0")]
    assert [v.version for v in store.versions()] == ["v0", "v1"]  # nothing deleted
    assert not ws.pending_round_path.exists()
