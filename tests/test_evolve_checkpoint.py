"""``.pending_round.json``: round trip, refusals, one evolution at a time, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.errors import FormatError, SkillsmithError
from engine.core.workspace import Workspace
from engine.loops.evolve import EvolveOptions, run
from engine.loops.evolve.checkpoint import (
    CandidateDraft,
    Evaluation,
    PendingRound,
    RoundRecord,
    VersionRecord,
    clear,
    exclusive,
    load,
    save,
)
from tests.evolve_helpers import demo


def pending(**changes: object) -> PendingRound:
    base = PendingRound(
        session_id="evolve-20260101-000000-abcdef",
        skill="security-audit",
        bench="vuln-detect",
        seed=7,
        proposer="offline",
        auto_approve=True,
        max_rounds=3,
        started_at="2026-01-01T00:00:00Z",
    )
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def test_checkpoint_round_trips_every_field(workspace: Workspace) -> None:
    state = pending(
        round=2,
        stage="gate",
        done=["evaluate", "diagnose", "audit", "propose", "filter", "evaluate_candidate"],
        parent_version="v1",
        run_ids={"selection": "run-a", "candidate": "run-b"},
        artifacts={"diagnose": "experiments/e/round-02/diagnosis.json"},
        candidate=CandidateDraft(
            rule_id="progress_mismatch",
            direction="FN",
            taboo_rule="progress_mismatch:FN",
            diff="--- a/SKILL.md\n+++ b/SKILL.md\n@@ -1 +1 @@\n-a\n+b\n",
            sha="0" * 64,
            text_path="experiments/e/round-02/SKILL.md",
            summary="FN + progress_mismatch: b",
            case_ids=["c1", "c2"],
        ),
        stagnation=1.3,
        evaluations={"0" * 64: {"selection": Evaluation("run-a", "selection", 0.5, 0.6)}},
        paired={"0" * 64: {"selection": "run-c"}},
        versions=[VersionRecord("v0", "0" * 64, 0, 100.0, 0.5, 0.4, None)],
        rounds=[RoundRecord(1, "v0", "rejected", "gate rejected: target", 0.3, 0.3)],
    )
    save(workspace, state)
    raw = json.loads(workspace.pending_round_path.read_text(encoding="utf-8"))
    assert (raw["round"], raw["stage"], raw["run_ids"]["candidate"]) == (2, "gate", "run-b")
    assert raw["candidate"]["diff"].startswith("--- a/SKILL.md")
    loaded = load(workspace)
    assert loaded == state
    assert loaded is not None and loaded.evaluation("0" * 64, "selection") == Evaluation(
        "run-a", "selection", 0.5, 0.6
    )
    assert loaded.evaluations["0" * 64]["selection"].value == 0.5
    clear(workspace)
    assert load(workspace) is None


def test_a_damaged_checkpoint_is_one_line_naming_the_field(workspace: Workspace) -> None:
    path = workspace.pending_round_path
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(FormatError, match=r"\.pending_round\.json: expected the interrupted"):
        load(workspace)
    data = json.loads(json.dumps(pending().__dict__, default=str))
    data["stage"] = "lunch"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FormatError, match="field 'stage': expected one of baseline"):
        load(workspace)
    data["stage"], data["round"] = "gate", "two"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FormatError, match="field 'round': expected an integer"):
        load(workspace)


def test_one_evolution_per_workspace_and_stale_temp_files_are_dropped(
    workspace: Workspace,
) -> None:
    leftover = workspace.root / "..pending_round.json.x1y2.tmp"  # fsutil temp name
    leftover.write_text("half", encoding="utf-8")
    with exclusive(workspace):
        assert not leftover.exists()
        with (
            pytest.raises(SkillsmithError, match="another evolution is running"),
            exclusive(workspace),
        ):
            pass
    with exclusive(workspace):  # released with the first holder
        pass


def test_a_pending_session_resumes_only_with_its_own_arguments(tmp_path: Path) -> None:
    ws = demo(tmp_path / "ws")
    save(ws, pending(round=3, stage="propose"))
    for options, field in (
        (EvolveOptions("other-skill", "vuln-detect"), "skill"),
        (EvolveOptions("security-audit", "vuln-detect", seed=8), "seed"),
        (EvolveOptions("security-audit", "vuln-detect", rounds=9), "max_rounds"),
        (EvolveOptions("security-audit", "vuln-detect", proposer="anthropic"), "proposer"),
    ):
        with pytest.raises(SkillsmithError, match=f"field '{field}': an interrupted evolution"):
            run(ws, options)
    assert load(ws) == pending(round=3, stage="propose")  # refusing touched nothing


def test_cli_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = demo(tmp_path / "ws")
    assert main(["evolve", "nope", "--bench", "vuln-detect", "-w", str(ws.root)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no skill 'nope' (have: security-audit)" in err
    assert main(["evolve", "security-audit", "--bench", "nobench", "-w", str(ws.root)]) == 1
    assert "nobench: no such benchmark" in capsys.readouterr().err
    argv = ["evolve", "security-audit", "--bench", "vuln-detect", "-w", str(ws.root)]
    assert main([*argv, "--proposer", "gpt"]) == 2
    assert "--proposer gpt: expected one of offline, anthropic" in capsys.readouterr().err
    live = ws.skill_path("security-audit")
    shipped = live.read_text(encoding="utf-8")
    live.write_text(shipped + "\n- A hand-written line.\n", encoding="utf-8")
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "SKILL.md: edited by hand since v0; publish it first" in err
    assert err.count("\n") == 1 and not ws.pending_round_path.exists()
    live.write_text(shipped, encoding="utf-8")
    bench_yaml = ws.benchmarks_dir / "vuln-detect" / "benchmark.yaml"
    text = bench_yaml.read_text(encoding="utf-8")
    bench_yaml.write_text(
        text.replace(
            "splits: {selection: 0.6, holdout: 0.25, golden: 0.15}",
            "splits: {feedback: 0.6, validation: 0.25, holdout: 0.15}",
        ),
        encoding="utf-8",
    )
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "evolve needs selection/holdout/golden splits" in err and err.count("\n") == 1
    assert not ws.pending_round_path.exists()
    assert main([*argv, "--rounds", "0"]) == 2
    assert capsys.readouterr().err.strip().endswith("--rounds: expected a number ≥ 1, got 0")
    with pytest.raises(SystemExit) as usage:
        main(["evolve", "security-audit", "-w", str(ws.root)])
    assert usage.value.code == 2 and "--bench" in capsys.readouterr().err
