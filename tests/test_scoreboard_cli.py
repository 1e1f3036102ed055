"""``skillsmith scoreboard``: the Scoreboard pane's table in the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.evaluation.runner import run_evaluation
from engine.views.rows import compact_count
from tests.runner_helpers import command_workspace, mode_benchmark

SAFE = "q = int(x)\n"


def test_scoreboard_lists_every_evaluation_with_the_runs_tokens(
    tmp_path: Path,
    count_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {"ok": ("answer", SAFE, "safe"), "also": ("answer", SAFE, "safe")}, runs=2)
    run = run_evaluation(ws, "b", jobs=2)
    lines = (run.run_dir / "results.jsonl").read_text().splitlines()
    tokens = sum(sum(v or 0 for v in json.loads(line)["tokens"].values()) for line in lines)

    assert main(["scoreboard", "-w", str(ws.root), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["n"], row["run_id"], row["tokens"], row["pass_rate"]) == (
        1,
        run.run_id,
        tokens,
        1.0,
    )

    assert main(["scoreboard", "b", "-w", str(ws.root)]) == 0
    out = capsys.readouterr().out
    assert "b · 1 evaluation" in out and run.run_id in out
    assert compact_count(tokens) in out and "100.00%" in out and "…" not in out


def test_scoreboard_refusals_name_what_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {"ok": ("answer", SAFE, "safe")}, runs=1)
    assert main(["scoreboard", "nope", "-w", str(ws.root)]) == 2
    assert "nope: no benchmark" in capsys.readouterr().err
    assert main(["scoreboard", "-w", str(ws.root)]) == 0
    assert "b: no evaluation yet; run: skillsmith eval b" in capsys.readouterr().out
