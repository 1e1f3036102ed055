"""`skillsmith build` offline on the demo: draft → check → pilots → freeze → Formal Baseline."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main
from engine.core.benchmark import load_benchmark
from engine.core.errors import SkillsmithError
from engine.core.events import Event, Stage, draft_line, read_event
from engine.core.scoreboard import read_records
from engine.core.sessions import list_sessions, trace_record
from engine.core.workspace import Workspace
from engine.core.yaml_log import is_log_file
from engine.evaluation.demo import copy_demo
from engine.evaluation.runner import bench_fingerprint
from engine.loops.builder import BuildOptions, formal_baseline
from engine.loops.builder import run as run_build
from tests.bench_helpers import write_case
from tests.builder_helpers import BENCH, PICK, clone, events, recompute, result_rows


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The demo with `mini` built through the CLI: two pilots over six imported cases."""
    root = copy_demo(tmp_path_factory.mktemp("build") / "ws")
    code, out, err = _cli(
        "build", BENCH, "-w", str(root), "--from", "vuln-detect", "--pick", ",".join(PICK),
        "--cases", "6", "--pilot-iterations", "2", "-j", "2", "--json",
    )  # fmt: skip
    assert code == 0, err
    return root, json.loads(out)


def test_build_freezes_the_lowest_valid_pilot_as_the_formal_baseline(
    built: tuple[Path, dict[str, Any]],
) -> None:
    root, result = built
    ws = Workspace.at(root)
    pilots = result["pilots"]
    assert [p["iteration"] for p in pilots] == [1, 2] and all(p["valid"] for p in pilots)
    lowest = min(pilots, key=lambda p: (p["score"], p["iteration"]))
    assert result["frozen_iteration"] == lowest["iteration"]
    assert result["baseline_score"] == lowest["score"]
    assert result["baseline_run_id"] == lowest["run_id"]

    (record,) = read_records(ws.benchmarks_dir / BENCH)
    assert record.kind == "formal_baseline"
    assert record.session_id == result["session_id"] and record.run_id == lowest["run_id"]
    assert all(len(case.runs) == 1 for case in record.cases)  # the pilot's single run
    assert record.runtime.provider == "skillsmith" and record.runtime.model == "demo-agent"
    assert record.summary_title.startswith("Formal Baseline")

    run_dir = ws.runs_dir / lowest["run_id"]
    figures = recompute(result_rows(run_dir))
    assert record.score == figures["score"] == result["baseline_score"]
    assert record.cost == figures["cost"] and record.duration_ms == figures["duration_ms"]
    for case in record.cases:
        assert case.score == figures["cases"][case.case_id]["score"]
        assert [r.session_id for r in case.runs] == figures["cases"][case.case_id]["sessions"]

    # the benchmark on disk is exactly the version that pilot ran
    bench = load_benchmark(ws.benchmarks_dir / BENCH)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert bench_fingerprint(bench) == manifest["inputs"]["benchmark_sha256"]
    assert sorted(c.id for c in bench.cases) == sorted(manifest["case_ids"])
    assert bench.runs_per_case == 1
    assert formal_baseline(ws, BENCH).record == record
    assert trace_record(ws, BENCH, 0).mismatches == []


def test_a_benchmark_drawn_from_a_pool_describes_itself_not_the_pool(
    built: tuple[Path, dict[str, Any]],
) -> None:
    root, result = built
    description = load_benchmark(root / "benchmarks" / BENCH).description
    assert description == (
        "Is this small source file vulnerable? "
        "Cases drawn by the Builder from the vuln-detect benchmark."
    )
    assert "80 files" in load_benchmark(root / "benchmarks" / "vuln-detect").description
    log = events(Workspace.at(root), result["session_id"])
    draft = [e for e in log if e.get("stage") == "draft"]
    stages = [read_event(Event("message", "s", e)) for e in draft]
    assert [s.text for s in stages if isinstance(s, Stage)] == ["draft: 6 new cases written"]
    assert draft_line(0, 6) == "draft: 6 cases from an earlier draft kept, nothing new drafted"


def test_predictions_errors_and_flags_are_recorded_before_and_after_each_pilot(
    built: tuple[Path, dict[str, Any]],
) -> None:
    root, result = built
    ws = Workspace.at(root)
    log = events(ws, result["session_id"])
    stages = [e.get("stage") or e["kind"] for e in log]
    assert stages[0] == "started" and stages[1] == "draft" and stages[-1] == "finished"
    for pilot in result["pilots"]:
        n = pilot["iteration"]
        predicted = [e for e in log if e.get("stage") == "prediction" and e["iteration"] == n]
        (summary,) = [e for e in log if e.get("stage") == "pilot" and e["iteration"] == n]
        cases = {row["case_id"]: row for row in result_rows(ws.runs_dir / pilot["run_id"])}
        assert sorted(p["case_id"] for p in predicted) == sorted(cases)
        # every prediction is recorded before its pilot's outcome, the error after it
        assert max(log.index(p) for p in predicted) < log.index(summary)
        for prediction in predicted:
            actual = round(cases[prediction["case_id"]]["score"] * 100, 2)
            error = summary["prediction_errors"][prediction["case_id"]]
            assert error == round(actual - prediction["current"], 2)
            assert prediction["flagged"] == (prediction["shortcut"] == prediction["desired"])
        assert sorted(summary["flagged"]) == sorted(p["case_id"] for p in predicted if p["flagged"])

    # pilot 1: a bare positive label scores like the desired behaviour on every positive case
    first = [e for e in log if e.get("stage") == "prediction" and e["iteration"] == 1]
    bench = load_benchmark(ws.benchmarks_dir / BENCH)
    positives = {c.id for c in bench.cases if c.rubric.expected == "vulnerable"}
    assert {p["case_id"] for p in first if p["flagged"]} == positives


def test_calibration_grades_the_evidence_rule_on_flagged_cases(
    built: tuple[Path, dict[str, Any]],
) -> None:
    root, result = built
    ws = Workspace.at(root)
    (calibration,) = [
        e for e in events(ws, result["session_id"]) if e.get("stage") == "calibration"
    ]
    added = {c["case"] for c in calibration["changes"] if c["action"] == "add_check"}
    assert added == set(result["pilots"][0]["flagged"]) and added
    second = {r["case_id"]: r for r in result_rows(ws.runs_dir / result["pilots"][1]["run_id"])}
    for case_id in added:
        texts = [check["text"] for check in second[case_id]["checks"]]
        assert any(t.startswith("judge: [evidence]") for t in texts), texts
    standard = (ws.benchmarks_dir / BENCH / "standard.md").read_text()
    assert "- [evidence] The answer gives the verdict `vulnerable`" in standard


def test_scaffolding_is_cleaned_and_the_session_is_listed(
    built: tuple[Path, dict[str, Any]],
) -> None:
    root, result = built
    ws = Workspace.at(root)
    assert list(ws.experiments_dir.iterdir()) == []
    hidden = [p.name for p in (ws.benchmarks_dir / BENCH).iterdir() if p.name.startswith(".")]
    assert [n for n in hidden if not is_log_file(n, "scoreboard.yaml")] == []  # its index stays
    (info,) = list_sessions(ws, "build")
    assert (info.session_id, info.label, info.status) == (result["session_id"], "Build", "frozen")
    assert list(info.run_ids) == [p["run_id"] for p in result["pilots"]]
    assert info.benchmark == BENCH
    for run_id in info.run_ids:  # each pilot's evaluation is its own session too
        assert any(s.session_id == run_id and s.kind == "eval" for s in list_sessions(ws))


def test_a_frozen_benchmark_is_not_built_again(built: tuple[Path, dict[str, Any]]) -> None:
    root, _ = built
    code, _, err = _cli("build", BENCH, "-w", str(root), "--from", "vuln-detect")
    assert code == 1
    assert err.strip() == (
        f"skillsmith: error: {root / 'benchmarks' / BENCH / 'scoreboard.yaml'}: the benchmark "
        "is frozen (it has a Formal Baseline); build a new benchmark instead"
    )


def test_editing_a_frozen_benchmark_voids_its_baseline_for_the_optimizer(
    built: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    ws = clone(built[0], tmp_path / "ws")
    case = load_benchmark(ws.benchmarks_dir / BENCH).cases[0]
    (case.statement_dir / "prompt.md").write_text(case.prompt() + "\nBe quick.\n")
    with pytest.raises(SkillsmithError, match="the benchmark changed after its Formal Baseline"):
        formal_baseline(ws, BENCH)
    code, _, err = _cli("optimize-agent", "-w", str(ws.root), "--bench", BENCH)
    assert code == 1 and "changed after its Formal Baseline" in err


def test_a_pilot_at_or_below_the_target_freezes_early(tmp_path: Path) -> None:
    ws = Workspace.at(copy_demo(tmp_path / "ws"))
    options = BuildOptions(
        "tiny", source="vuln-detect", pick=PICK[:4], cases=2, pilot_iterations=3,
        target_score=100.0, jobs=2,
    )  # fmt: skip
    result = run_build(ws, options)
    assert (len(result.pilots), result.frozen_iteration, result.reason) == (1, 1, "target")
    (record,) = read_records(ws.benchmarks_dir / "tiny")
    assert "because it reached the target score" in record.summary


def test_offline_drafting_needs_material_and_writes_nothing(tmp_path: Path) -> None:
    root = copy_demo(tmp_path / "ws")
    code, _, err = _cli("build", "fresh", "-w", str(root), "--goal", "find SQL injection")
    assert code == 1
    assert "offline model: drafting needs 8 cases of imported material (--from)" in err
    assert not (root / "benchmarks" / "fresh").exists()
    (info,) = list_sessions(Workspace.at(root), "build")
    assert info.status == "failed"


def test_a_case_failing_its_pre_dispatch_check_never_reaches_an_agent(tmp_path: Path) -> None:
    ws = Workspace.at(copy_demo(tmp_path / "ws"))
    pool = ws.benchmarks_dir / "pool"
    pool.mkdir()
    (pool / "benchmark.yaml").write_text(yaml.safe_dump({"labels": ["vulnerable", "safe"]}))
    write_case(pool, "ok", {"expected": "safe"}, prompt="Audit `a.py`.\n", files={"a.py": "x\n"})
    write_case(pool, "broken", {"expected": "vulnerable"}, prompt="Audit `gone.py`.\n")
    with pytest.raises(SkillsmithError, match=r"names `gone\.py`, which is not in the statement"):
        run_build(ws, BuildOptions("b2", goal="audit", source="pool", cases=2, jobs=2))
    assert list(ws.runs_dir.iterdir()) == []
