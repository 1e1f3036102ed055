"""Stop rules of the evolution loop: weighted stagnation (the article's 3.6), convergence, slim."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.config import LimitsConfig
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation.gates import GateResult
from engine.loops.evolve import Convergence, RoundSignal, round_seed, stagnation
from engine.loops.evolve.convergence import VersionHoldout, best_standing, standings
from tests.candidate_helpers import add_skill, skill_text


def test_three_guardrail_regressions_and_two_stalls_weigh_3_6() -> None:
    regression = RoundSignal(target_not_improved=False, guardrail_regression=True)
    stall = RoundSignal.stall()
    rounds = [regression, stall, regression, regression, stall]
    assert [s.increment for s in rounds] == [1.0, 0.3, 1.0, 1.0, 0.3]
    level = stagnation(rounds)
    assert level == pytest.approx(3.6)
    conv = Convergence.from_limits(LimitsConfig())
    assert not conv.stagnated(level)  # close to, but under, the 5.0 limit


def test_five_idle_rounds_keep_going_while_regressions_trip_the_limit() -> None:
    conv = Convergence.from_limits(LimitsConfig())
    assert stagnation([RoundSignal.stall()] * 5) == pytest.approx(1.5)
    assert not conv.stagnated(stagnation([RoundSignal.stall()] * 16))
    assert conv.stagnated(stagnation([RoundSignal.stall()] * 17))  # 5.1
    broke = RoundSignal(target_not_improved=True, guardrail_regression=True, holdout_drop=True)
    assert broke.increment == pytest.approx(2.0)
    assert conv.stagnated(stagnation([broke, broke, RoundSignal(False, True)]))


def test_round_signal_reads_the_gate_verdicts() -> None:
    def gates(target: str, guardrail: str, holdout: str) -> list[GateResult]:
        return [
            GateResult("target", target),  # type: ignore[arg-type]
            GateResult("guardrail", guardrail),  # type: ignore[arg-type]
            GateResult("holdout", holdout),  # type: ignore[arg-type]
            GateResult("verify", "pass"),
        ]

    assert RoundSignal.from_gates(gates("pass", "fail", "held")).increment == 1.0
    assert RoundSignal.from_gates(gates("fail", "pass", "held")).increment == 0.3
    assert RoundSignal.from_gates(gates("pass", "pass", "fail")).increment == 0.7
    assert RoundSignal.from_gates(gates("fail", "fail", "fail")).increment == pytest.approx(2.0)
    # a candidate rejected only by Verify improved nothing this round: a stall
    verify_only = [GateResult("target", "pass"), GateResult("verify", "fail")]
    assert RoundSignal.from_gates(verify_only).increment == 0.3


def test_convergence_size_and_budget_thresholds_come_from_the_limits() -> None:
    limits = LimitsConfig(convergence_f1=0.9, max_skill_bytes=100, max_rounds=4)
    conv = Convergence.from_limits(limits)
    assert conv.converged(0.9) and not conv.converged(0.8999) and not conv.converged(None)
    assert conv.slim("x" * 101) and not conv.slim("x" * 100)
    assert conv.slim("é" * 51)  # bytes, not characters
    assert conv.out_of_rounds(4) and not conv.out_of_rounds(3)
    assert Convergence.from_limits(limits, max_rounds=2).max_rounds == 2
    assert Convergence.from_limits(LimitsConfig()).max_skill_bytes == 15_000


def test_round_seeds_depend_only_on_session_seed_and_round() -> None:
    assert round_seed(7, 3) == round_seed(7, 3)
    assert len({round_seed(7, r) for r in range(1, 11)}) == 10
    assert round_seed(7, 1) != round_seed(8, 1)


def test_standings_read_every_version_record_and_prefer_the_session_figures(
    tmp_path: Path,
) -> None:
    ws = Workspace.init(tmp_path / "ws")
    add_skill(ws, "audit", skill_text("audit"))
    store = SkillStore(ws, "audit")
    store.ensure_adopted()  # v0: no figures
    texts = [skill_text("audit", when_to_use=f"- Case {i}.") for i in range(1, 6)]
    records = [
        {"holdout": {"value": 0.5}, "session_id": "evolve-a"},  # v1
        {"holdout": {"value": 0.9}},  # v2: no session named
        {"holdout": {"value": True}},  # v3: not a figure
        {"holdout": {"value": None, "checked": False}},  # v4: never measured
        {"holdout": {"value": 0.2}, "session_id": "evolve-b"},  # v5: the session knows better
    ]
    for text, metrics in zip(texts, records, strict=True):
        store.publish(text, why="test", metrics=metrics)
    (store.dir / "v4" / "metrics.json").write_text("{not json", encoding="utf-8")

    found = standings(store, {"v5": 0.7})

    assert found == [
        VersionHoldout("v1", 0.5, "session evolve-a"),
        VersionHoldout("v2", 0.9, "its version record"),
        VersionHoldout("v5", 0.7, "this session"),
    ]
    assert best_standing(found, "v5") == VersionHoldout("v2", 0.9, "its version record")
    assert best_standing(found, "v2") == VersionHoldout("v5", 0.7, "this session")
    tie = [VersionHoldout("v1", 0.5, "a"), VersionHoldout("v3", 0.5, "b")]
    assert best_standing(tie, "v9") == VersionHoldout("v1", 0.5, "a")  # the older one
    assert best_standing([VersionHoldout("v1", 0.5, "a")], "v1") is None


def test_v0_takes_what_earlier_sessions_measured_of_its_text(tmp_path: Path) -> None:
    """v0 is adopted with no figures; two earlier evolve sessions measured its text (their
    summary.json): rollback to best sees their mean and can go back to v0."""
    import hashlib
    import json

    ws = Workspace.init(tmp_path / "ws")
    add_skill(ws, "audit", skill_text("audit"))
    store = SkillStore(ws, "audit")
    store.ensure_adopted()
    store.publish(skill_text("audit", when_to_use="- Worse."), why="t", metrics={})
    v0_sha = hashlib.sha256(store.read("v0").encode("utf-8")).hexdigest()
    for n, value in enumerate((0.6, 0.58)):
        folder = ws.experiments_dir / f"evolve-{n}"
        folder.mkdir(parents=True)
        versions = [{"version": "v0", "sha": v0_sha, "holdout_f1": value}]
        summary = {"skill": "audit", "versions": versions}
        (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    other = ws.experiments_dir / "evolve-other" / "summary.json"  # another skill's session
    other.parent.mkdir()
    versions = [{"version": "v0", "sha": v0_sha, "holdout_f1": 0.99}]
    other.write_text(json.dumps({"skill": "other", "versions": versions}), encoding="utf-8")

    found = standings(store, {"v1": 0.3})

    assert found[0].version == "v0" and found[0].source == "2 earlier session(s)"
    assert abs(found[0].holdout - 0.59) < 1e-9
    assert best_standing(found, "v1") == found[0]
