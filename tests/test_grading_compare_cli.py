"""``skillsmith compare`` on real run folders, in-process and as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from engine.cli import main
from engine.core.workspace import Workspace
from tests.bench_helpers import result_row, write_benchmark


def _row(case_id: str, run: int, truth: str, verdict: str) -> dict[str, Any]:
    usage = {"tokens": {"input": 10, "output": 5}, "cost_usd": 0.001, "duration_ms": 100}
    return result_row(case_id, run, truth, verdict, **usage)


def _run(ws: Workspace, run_id: str, rows: list[dict[str, Any]]) -> Path:
    folder = ws.runs_dir / run_id
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"benchmark": "vuln", "run_id": run_id}))
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


V, S = "vulnerable", "safe"


@pytest.fixture
def two_runs(workspace: Workspace) -> Workspace:
    cases = {"a": {"expected": V}, "b": {"expected": V}, "c": {"expected": S}, "d": {"expected": S}}
    write_benchmark(workspace.benchmarks_dir / "vuln", cases)  # type: ignore[arg-type]
    _run(
        workspace,
        "before",
        [
            _row("a", 0, V, S),
            _row("a", 1, V, S),
            _row("b", 0, V, V),
            _row("b", 1, V, V),
            _row("c", 0, S, S),
            _row("c", 1, S, V),
            _row("d", 0, S, V),
            # an invalid unit later re-run: the later row supersedes it
            {**_row("d", 1, S, V), "pass_fail": "invalid", "invalid_reason": "timeout"},
            _row("d", 1, S, V),
            {**_row("a", 0, V, V), "variant": "baseline"},
        ],
    )
    _run(
        workspace,
        "after",
        [
            _row("a", 0, V, V),
            _row("a", 1, V, V),
            _row("b", 0, V, S),
            _row("b", 1, V, S),
            _row("c", 0, S, S),
            _row("c", 1, S, S),
            _row("d", 0, S, V),
            _row("d", 1, S, V),
        ],
    )
    return workspace


def test_compare_json(two_runs: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "before", "after", "-w", str(two_runs.root), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fixed"] == ["a"] and data["newly_broken"] == ["b"]
    assert data["still_failing"] == ["d"] and data["flaky"] == ["c"]
    assert data["before"]["units"] == 8  # latest row per unit, skill variant only
    assert data["before"]["positive_label"] == V
    assert (data["after"]["tp"], data["after"]["fn"]) == (2, 2)
    assert data["deltas"]["pass_rate"] == pytest.approx(4 / 8 - 3 / 8)
    # the paired verdict over the four cases: per-case changes +1, −1, +½, 0 (paired t-test)
    expected = stats.ttest_1samp([1.0, -1.0, 0.5, 0.0], 0.0)
    assert data["verdict"]["p_value"] == pytest.approx(float(expected.pvalue), abs=1e-6)
    assert (data["verdict"]["decision"], data["verdict"]["n_cases"]) == ("inconclusive", 4)


def test_compare_table(two_runs: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["compare", "before", str(two_runs.runs_dir / "after"), "-w", str(two_runs.root)]) == 0
    )
    out = capsys.readouterr().out
    assert "pass rate" in out and "F1" in out and "+12.5 pp" in out
    assert "newly broken" in out and "fixed" in out and "flaky" in out
    assert "1 fixed, 1 newly broken, 1 still failing, 1 flaky, 0 unmeasured, 0 still passing" in out
    assert "pass rate after vs before: +12.5 pts [" in out and "inconclusive (4 paired" in out


def test_compare_errors_are_one_line(two_runs: Workspace, tmp_path: Path) -> None:
    (two_runs.runs_dir / "after" / "results.jsonl").open("a").write('{"case_id": 3}\n')
    cmd = [
        sys.executable,
        "-m",
        "engine.cli",
        "compare",
        "before",
        "after",
        "-w",
        str(two_runs.root),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "after/results.jsonl:9: field 'case_id'" in proc.stderr
    cmd[4] = "missing"
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "missing: no run folder" in proc.stderr
