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


def stagnated(
    versions: list[VersionRecord], evaluations: dict[str, dict[str, Evaluation]] | None = None
) -> PendingRound:
    """A session checkpointed at its final stage after stagnation tripped on ``versions[-1]``."""
    current = versions[-1].version
    return PendingRound(
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
        evaluations=evaluations or {},
        versions=versions,
        rounds=[
            RoundRecord(r, current, "rejected", "gate rejected: guardrail", 1.0, r - 1.0)
            for r in (2, 3, 4)
        ],
    )


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
    pending = stagnated(
        [
            VersionRecord("v0", sha(good), 0, verify_score(good).score, holdout_f1=best),
            VersionRecord("v1", sha(bad), 1, verify_score(bad).score),
        ],
        {
            sha(good): {
                "holdout": Evaluation(measured.run_id, "holdout", best, measured.metrics.pass_rate)
            }
        },
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


def test_stagnation_rolls_back_to_the_best_version_of_an_earlier_session(tmp_path: Path) -> None:
    # agent.noise 0: the three versions' holdout figures must order exactly as planted.
    ws = demo(tmp_path / "ws", SMALL_FAMILIES, noise=0.0)
    store = SkillStore(ws, DEMO_SKILL)
    store.ensure_adopted()
    full = store.read("v0")
    no_paths = full.replace("Flag file paths", "Note file paths")
    crippled = no_paths.replace("Flag unsafe deserialization", "Note unsafe deserialization")
    bench = load_benchmark(ws.benchmarks_dir / DEMO_BENCHMARK)
    holdout = [c.id for c in bench.cases_in("holdout")]

    def holdout_f1(text: str) -> float:
        run = run_evaluation(
            ws, DEMO_BENCHMARK, jobs=2, skills={DEMO_SKILL: text}, case_ids=holdout, seed=11
        )
        assert run.metrics.f1 is not None
        return run.metrics.f1

    # An earlier session published v1 (worse) and then v2 (the best), each with its figures;
    # a hand edit then made v3, the version the stagnating session started from.
    earlier = "evolve-20251130-000000-0ld5e5"
    figures = {"v1": holdout_f1(no_paths), "v2": holdout_f1(full)}
    assert figures["v2"] > figures["v1"]
    for text, version in ((no_paths, "v1"), (full + "\n", "v2")):
        metrics = {"holdout": {"value": figures[version]}, "session_id": earlier}
        assert store.publish(text, why=f"{earlier}: gates passed", metrics=metrics) == version
    assert store.publish(crippled, why="a hand edit") == "v3"
    pending = stagnated([VersionRecord("v3", sha(crippled), 0, verify_score(crippled).score)])
    save(ws, pending)

    result = run(ws, EvolveOptions(DEMO_SKILL, DEMO_BENCHMARK))

    assert result.stop_reason == "stagnation"
    assert (store.current(), result.final_version) == ("v2", "v2")
    assert ws.skill_path(DEMO_SKILL).read_text(encoding="utf-8") == full + "\n"
    last = store.audit()[-1]
    assert (last["op"], last["from"], last["to"]) == ("rollback", "v3", "v2")
    assert f"recorded {figures['v2']:.3f} in session {earlier}" in last["why"]
    assert result.holdout_final is not None and result.holdout_final > figures["v1"]
    rolled = [e for e in session_events(ws, result.session_id) if e["kind"] == "rolled_back"]
    assert [(e["frm"], e["to"]) for e in rolled] == [("v3", "v2")]
    assert "f1 +" in rolled[0]["why"]  # the paired verdict's line goes with the decision


def test_a_nominated_version_not_better_when_measured_again_is_not_rolled_back_to(
    tmp_path: Path,
) -> None:
    # agent.noise 0, so "not better when measured again" is exact, not luck.
    ws = demo(tmp_path / "ws", SMALL_FAMILIES, noise=0.0)
    store = SkillStore(ws, DEMO_SKILL)
    store.ensure_adopted()
    full = store.read("v0")
    crippled = full.replace("Flag file paths", "Note file paths")
    # An earlier session recorded a flattering figure for v1, which is really the worse text.
    metrics = {"holdout": {"value": 1.0}, "session_id": "evolve-20251130-000000-0ld5e5"}
    store.publish(crippled, why="earlier session", metrics=metrics)
    store.publish(full + "\n", why="a hand edit")
    pending = stagnated([VersionRecord("v2", sha(full + "\n"), 0, verify_score(full).score)])
    save(ws, pending)

    result = run(ws, EvolveOptions(DEMO_SKILL, DEMO_BENCHMARK))

    assert (store.current(), result.final_version) == ("v2", "v2")
    assert all(e["op"] != "rollback" for e in store.audit())
    kept = [
        e["text"]
        for e in session_events(ws, result.session_id)
        if e["kind"] == "message" and str(e.get("text", "")).startswith("stagnation: kept v2")
    ]
    assert len(kept) == 1 and "v1 (recorded 1.000 in session" in kept[0]
