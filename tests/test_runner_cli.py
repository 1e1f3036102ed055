"""``skillsmith eval``: the results table, --json, --skill NAME@vK, --cases and usage errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.store import SkillStore
from tests.conftest import REAL_STYLE
from tests.runner_helpers import add_skill, command_workspace, launches, mode_benchmark

VULN = "q = eval(x)\n"
SAFE = "q = int(x)\n"


def test_eval_prints_the_results_table(
    tmp_path: Path,
    count_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(
        ws,
        {
            "vuln": ("answer", VULN, "vulnerable"),
            "miss": ("answer", SAFE, "vulnerable"),
            "boom": ("crash", SAFE, "safe"),
        },
        runs=2,
    )
    assert main(["eval", "b", "-w", str(ws.root), "-j", "2"]) == 0
    out = capsys.readouterr().out
    assert "vulnerable, vulnerable" in out and "2/2" in out and "0/2" in out
    assert "invalid: agent crashed (exit status 3)" in out
    assert "0.50 / 1.00" not in out  # precision 1, recall 0.5 → shown as 1.00 / 0.50 / 0.67
    assert "1.00 / 0.50 / 0.67" in out
    assert "2 × agent crashed (exit status 3): Traceback: deliberate crash" in out
    assert "status: incomplete" in out
    assert "--resume run-" in out


def test_eval_json_with_a_stored_skill_version_and_chosen_cases(
    tmp_path: Path, count_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = command_workspace(tmp_path / "ws")
    add_skill(ws, "audit", "1. trust nothing.\n")
    store = SkillStore(ws, "audit")
    store.ensure_adopted()
    paranoid = store.current()
    assert paranoid is not None
    store.publish("---\nname: audit\ndescription: Audit.\n---\n1. Grep.\n", why="calm")
    mode_benchmark(ws, {"s1": ("answer", SAFE, "safe"), "s2": ("answer", SAFE, "safe")})

    code = main(
        ["eval", "b", "-w", str(ws.root), "--skill", f"audit@{paranoid}", "--cases", "s2", "--json"]
    )

    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "finished" and report["launched"] == 1
    assert report["metrics"]["pass_rate"] == 0.0  # the old paranoid version flags safe code
    manifest = json.loads((Path(report["run_dir"]) / "manifest.json").read_text())
    assert manifest["skills"] == [
        {
            "name": "audit",
            "version": paranoid,
            "sha256": manifest["skills"][0]["sha256"],
            "under_test": True,
        }
    ]
    assert manifest["case_ids"] == ["s2"]
    assert len(launches(count_dir)) == 1


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["--baseline", "latest"], 2, "expected 'none' or a version"),
        (["--runs", "0"], 2, "--runs: expected a number ≥ 1"),
        (["--skill", "nope"], 2, "no skill 'nope'"),
        (["--resume", "run-missing"], 1, "no run folder"),
        (["--cases", "zzz"], 2, "has no case 'zzz'"),
    ],
)
def test_eval_refusals_are_one_line(
    tmp_path: Path,
    count_dir: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    code: int,
    message: str,
) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {"s1": ("answer", SAFE, "safe")})
    assert main(["eval", "b", "-w", str(ws.root), *argv]) == code
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert list(ws.runs_dir.iterdir()) == []
    assert launches(count_dir) == []


def test_eval_with_a_baseline_reports_the_paired_change(
    tmp_path: Path, count_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = command_workspace(tmp_path / "ws")
    add_skill(ws, "audit", "1. trust nothing.\n")
    store = SkillStore(ws, "audit")
    paranoid = store.ensure_adopted()
    calm = store.publish("---\nname: audit\ndescription: Audit.\n---\n1. Grep.\n", why="calm")
    mode_benchmark(ws, {f"s{i}": ("answer", SAFE, "safe") for i in range(3)})
    argv = ["eval", "b", "-w", str(ws.root), "--skill", f"audit@{paranoid}", "--baseline", calm]
    assert main([*argv, "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)["verdict"]
    # every case passes with the calm baseline and fails with the paranoid skill: the exact
    # test on 3 discordant pairs, two-sided p = 2 × (1/2)³
    assert (verdict["delta"], verdict["n_cases"], verdict["test"]) == (-1.0, 3, "mcnemar-exact")
    assert verdict["p_value"] == pytest.approx(0.25) and verdict["decision"] == "inconclusive"
    assert main(argv) == 0
    assert f"skill vs baseline {calm}: -100.0 pts [" in capsys.readouterr().out


def test_eval_says_which_skill_the_model_may_not_load(
    tmp_path: Path, count_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A slash-command skill (``disable-model-invocation: true``, the corpus's deploy-checklist)
    is never loaded by Claude Code itself: eval names it instead of scoring it silently."""
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {"vuln": ("answer", VULN, "vulnerable")}, runs=1)
    shutil.copytree(
        REAL_STYLE / "release-tools/skills/deploy-checklist", ws.skills_dir / "deploy-checklist"
    )
    assert main(["eval", "b", "-w", str(ws.root), "-j", "1"]) == 0
    err = capsys.readouterr().err
    path = ws.skill_path("deploy-checklist")
    assert (
        f"warning: {path}: disable-model-invocation: true: Claude Code never loads this skill by "
        "itself (only a person's /deploy-checklist runs it), so an evaluation cannot measure it "
        "through the agent"
    ) in err.splitlines()
