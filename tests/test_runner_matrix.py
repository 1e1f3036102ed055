"""The evaluation matrix with real agent processes: rows, sessions, invalid units, variants."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.core.benchmark import load_benchmark
from engine.core.errors import SkillsmithError
from engine.core.events import Event
from engine.core.results import read_results
from engine.core.scoreboard import read_records
from engine.core.store import SkillStore
from engine.evaluation.agents import make_agent
from engine.evaluation.runner import make_plan, run_evaluation
from tests.runner_helpers import (
    SCRIPTED,
    add_skill,
    command_workspace,
    launches,
    mode_benchmark,
    running,
)

VULN = "query = eval(request.args['q'])\n"
SAFE = "query = int(request.args['q'])\n"


def test_broken_agents_become_invalid_units_while_the_rest_completes(
    tmp_path: Path, count_dir: Path
) -> None:
    ws = command_workspace(tmp_path / "ws", timeout_s=2.0, max_output_bytes=300_000)
    add_skill(ws, "audit", "1. Grep for eval.\n")
    mode_benchmark(
        ws,
        {
            "vuln": ("answer", VULN, "vulnerable"),
            "safe": ("answer-file", SAFE, "safe"),
            "missed": ("answer", SAFE, "vulnerable"),
            "crash": ("crash", VULN, "vulnerable"),
            "garbage": ("garbage", VULN, "vulnerable"),
            "hang": ("hang", VULN, "vulnerable"),
            "flood": ("flood", VULN, "vulnerable"),
            "empty": ("empty", VULN, "vulnerable"),
        },
    )
    events: list[Event] = []

    result = run_evaluation(ws, "b", jobs=2, reporter=events.append)

    by_case = {r["case_id"]: r for r in result.rows}
    assert by_case["vuln"]["pass_fail"] == "pass"
    assert by_case["safe"]["pass_fail"] == "pass"  # answer.txt wins over the last message
    assert by_case["missed"]["pass_fail"] == "fail"
    assert by_case["missed"]["failure_kind"] == "FN"
    reasons = {
        c: by_case[c]["invalid_reason"] for c in by_case if c not in ("vuln", "safe", "missed")
    }
    assert reasons == {
        "crash": "agent crashed (exit status 3): Traceback: deliberate crash",
        "garbage": "garbage output: stdout line 1 is not JSON: 'this is not a session line'",
        "hang": "timeout after 2s",
        "flood": "output over cap (300000 bytes)",
        "empty": "no output: the agent printed no session lines",
    }
    for case_id in reasons:
        assert by_case[case_id]["pass_fail"] == "invalid"
        assert by_case[case_id]["score"] == 0.0
    # the hanging agent's grandchild (it ignores SIGTERM) did not survive the timeout
    stderr = (result.run_dir / "raw" / "hang.0.stderr.txt").read_text()
    assert re.search(r"grandchild pid (\d+)", stderr)  # it was started
    assert running(str(SCRIPTED)) == []
    # invalid units are not failures: quality figures use the 3 valid units only
    assert result.metrics.invalid == 5 and result.metrics.valid == 3
    assert result.metrics.pass_rate == pytest.approx(2 / 3)
    assert (result.metrics.tp, result.metrics.fn, result.metrics.tn) == (1, 1, 1)
    assert result.status == "incomplete"
    assert len(launches(count_dir)) == 8
    # every unit has its row (validated by the metrics reader) and a session file
    rows = read_results(result.run_dir / "results.jsonl")
    assert sorted(r["case_id"] for r in rows) == sorted(by_case)
    for row in rows:
        assert (result.run_dir / row["session_file"]).is_file()
        assert row["session_id"] == f"{result.run_id}/{row['case_id']}.0"
    vuln_session = [
        json.loads(line)
        for line in (result.run_dir / by_case["vuln"]["session_file"]).read_text().splitlines()
    ]
    assert vuln_session[0]["type"] == "user" and "VERDICT: <label>" in vuln_session[0]["content"]
    assert vuln_session[1]["tool_calls"][0] == {"id": "s0", "name": "Skill", "args": "audit"}
    assert by_case["vuln"]["tokens"] == {"input": 10, "output": 5}
    assert by_case["vuln"]["cost_usd"] == 0.001
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["status"] == "incomplete"
    assert manifest["counts"] == {"pass": 2, "fail": 1, "invalid": 5, "missing": 0}
    assert manifest["agent"]["kind"] == "command"
    assert manifest["skills"][0]["name"] == "audit" and len(manifest["skills"][0]["sha256"]) == 64
    # events: started, one case_finished + progress per unit, finished
    kinds = [e.kind for e in events]
    assert kinds[0] == "started" and kinds[-1] == "finished"
    assert kinds.count("case_finished") == 8
    assert [e.data["done"] for e in events if e.kind == "progress"] == list(range(1, 9))
    assert (ws.sessions_dir / f"{result.run_id}.jsonl").is_file()  # the TUI's live view
    (record,) = read_records(ws.benchmarks_dir / "b")
    assert record.run_id == result.run_id and len(record.cases) == 3
    assert list((count_dir.parent / "tmp" / "skillsmith-runs").iterdir()) == []  # rooms removed


def test_skill_text_reaches_the_agent_and_baseline_none_runs_without_it(
    tmp_path: Path, count_dir: Path
) -> None:
    ws = command_workspace(tmp_path / "ws")
    add_skill(ws, "audit", "1. Grep for eval.\n")
    mode_benchmark(ws, {"v": ("answer", VULN, "vulnerable"), "s": ("answer", SAFE, "safe")}, runs=2)
    paranoid = "---\nname: audit\ndescription: Audit.\n---\n1. trust nothing: flag it.\n"

    result = run_evaluation(ws, "b", jobs=2, skills={"audit": paranoid}, baseline="none")

    verdicts = {
        (r["case_id"], r["run_index"], r["variant"]): r["judge_verdict"] for r in result.rows
    }
    assert verdicts == {
        ("s", 0, "baseline"): "safe",
        ("s", 0, "skill"): "vulnerable",  # the overriding text made it flag everything
        ("s", 1, "baseline"): "safe",
        ("s", 1, "skill"): "vulnerable",
        ("v", 0, "baseline"): "vulnerable",
        ("v", 0, "skill"): "vulnerable",
        ("v", 1, "baseline"): "vulnerable",
        ("v", 1, "skill"): "vulnerable",
    }
    assert result.metrics.pass_rate == 0.5
    assert result.baseline_metrics is not None and result.baseline_metrics.pass_rate == 1.0
    assert (result.run_dir / "sessions" / "s.1.baseline.jsonl").is_file()
    baseline_session = (result.run_dir / "sessions" / "s.0.baseline.jsonl").read_text()
    assert '"name": "Skill"' not in baseline_session  # no skill was installed for the baseline
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["baseline"] == {"spec": "none", "skills": []}
    assert manifest["skills"][0]["version"] is None  # an unpublished text
    assert (result.run_dir / "inputs" / "skill" / "audit" / "SKILL.md").read_text() == paranoid
    records = read_records(ws.benchmarks_dir / "b")
    assert [r.variant for r in records] == ["skill", "baseline"]
    assert [r.score for r in records] == [50.0, 100.0]


def test_baseline_at_a_stored_version_and_skill_versions_in_the_manifest(
    tmp_path: Path, count_dir: Path
) -> None:
    ws = command_workspace(tmp_path / "ws")
    add_skill(ws, "audit", "1. trust nothing.\n")
    store = SkillStore(ws, "audit")
    store.ensure_adopted()
    first = store.current()
    assert first is not None
    calmer = "---\nname: audit\ndescription: Audit code. Use for every audit.\n---\n1. Grep.\n"
    second = store.publish(calmer, why="calmer")
    mode_benchmark(ws, {"s": ("answer", SAFE, "safe")})

    result = run_evaluation(ws, "b", jobs=1, baseline=first)

    by_variant = {r["variant"]: r["judge_verdict"] for r in result.rows}
    assert by_variant == {"skill": "safe", "baseline": "vulnerable"}
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["skills"][0]["version"] == second
    assert manifest["baseline"]["spec"] == first
    assert manifest["baseline"]["skills"][0]["version"] == first


def test_units_run_in_a_stable_order_from_the_seed(tmp_path: Path) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {f"c{i}": ("answer", SAFE, "safe") for i in range(6)}, runs=3)
    bench = load_benchmark(ws.benchmarks_dir / "b")
    agent = make_agent(ws)

    def order() -> list[tuple[str, int, str]]:
        plan = make_plan(ws, bench, agent, runs=None, skills=None, baseline="none", case_ids=None)
        return [(u.case_id, u.run_index, u.variant) for u in plan.units()]

    first = order()
    assert first == order()
    assert len(first) == 36 and len(set(first)) == 36
    assert first != sorted(first)


def test_only_the_chosen_cases_run(tmp_path: Path, count_dir: Path) -> None:
    ws = command_workspace(tmp_path / "ws2")
    mode_benchmark(ws, {f"c{i}": ("answer", SAFE, "safe") for i in range(4)})
    result = run_evaluation(ws, "b", jobs=2, case_ids=["c2", "c0"])
    assert [r["case_id"] for r in result.rows] == ["c0", "c2"]
    assert len(launches(count_dir)) == 2


def test_a_statement_the_harness_cannot_lay_out_is_refused_before_the_run_starts(
    tmp_path: Path, count_dir: Path
) -> None:
    ws = command_workspace(tmp_path / "ws")
    root = mode_benchmark(ws, {"ok": ("answer", SAFE, "safe")})
    (root / "ok" / "statement" / "AGENTS.md").write_text("the statement's own AGENTS.md\n")
    with pytest.raises(SkillsmithError, match=r"statement/AGENTS\.md: a statement file may not"):
        run_evaluation(ws, "b")
    assert not ws.runs_dir.exists() or list(ws.runs_dir.iterdir()) == []  # no run folder
    assert not ws.sessions_dir.exists() or list(ws.sessions_dir.rglob("*.jsonl")) == []
    assert launches(count_dir) == []
