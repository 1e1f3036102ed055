"""Garbage agent output is one invalid unit, results.jsonl is always strict JSON, and a check
that runs away (a regex backtracking without end) is stopped at its time limit.

The agent is real (tests/agents/output_agent.py): after one good session line it prints one
line nested 200,000 deep, a token count of 1e999 or of 5,000 digits, a cost of NaN, or a 3 MB
line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.core.benchmark import load_benchmark
from engine.core.strict_json import MAX_DEPTH, Refused, load_line
from engine.evaluation.grading import grade
from tests.bench_helpers import write_benchmark, write_case
from tests.runner_helpers import AGENTS, command_workspace

AGENT = AGENTS / "output_agent.py"
GARBAGE = {
    "deep": f"nests deeper than {MAX_DEPTH} levels",
    "inf": "holds a number out of range (1e999)",
    "nan": "holds a non-finite number (NaN)",
    "digits": "holds a number of 5000 characters",
    "huge": "is a line of 3000036 characters",
}


def _strict(raw: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(raw, parse_constant=refuse)


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    return [_strict(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def test_each_garbage_line_is_one_invalid_unit_and_the_evaluation_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = command_workspace(tmp_path / "ws", AGENT, env_allow=(), max_output_bytes=8_000_000)
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config={"runs_per_case": 1})
    report = {"checks": [{"kind": "file", "path": "seen-prompt.md"}]}
    for kind in GARBAGE:
        write_case(root, kind, report, files={"task.txt": f"garbage {kind}"})
    write_case(root, "good", report, files={"task.txt": "echo-prompt"})

    assert main(["eval", "b", "-j", "2", "--json", "-w", str(ws.root)]) == 0

    run_dir = Path(json.loads(capsys.readouterr().out)["run_dir"])
    rows = {row["case_id"]: row for row in _rows(run_dir)}
    assert len(rows) == len(GARBAGE) + 1
    assert rows["good"]["pass_fail"] == "pass"
    for kind, reason in GARBAGE.items():
        row = rows[kind]
        assert row["pass_fail"] == "invalid", kind
        assert row["invalid_reason"].startswith(f"garbage output: stdout line 2 {reason}"), row
        assert len(row["invalid_reason"]) < 300  # the reason, not the garbage
    manifest = _strict((run_dir / "manifest.json").read_text())
    assert manifest["counts"] == {"pass": 1, "fail": 0, "invalid": 5, "missing": 0}


def test_a_resume_reads_old_rows_with_nan_and_writes_them_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = command_workspace(tmp_path / "ws", AGENT, env_allow=())
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config={"runs_per_case": 1})
    report = {"checks": [{"kind": "file", "path": "seen-prompt.md"}]}
    write_case(root, "good", report, files={"task.txt": "echo-prompt"})
    write_case(root, "bad", report, files={"task.txt": "garbage nan"})
    assert main(["eval", "b", "--json", "-w", str(ws.root)]) == 0
    run_dir = Path(json.loads(capsys.readouterr().out)["run_dir"])
    # what an older version wrote: a NaN cost, which no strict reader accepts
    results = run_dir / "results.jsonl"
    text = re.sub(r'"cost_usd":[^,]+', '"cost_usd":NaN', results.read_text())
    results.write_text(text)
    with pytest.raises(ValueError, match="not strict JSON"):
        _rows(run_dir)

    assert main(["eval", "b", "--resume", run_dir.name, "-w", str(ws.root)]) == 0

    rows = _rows(run_dir)  # strict again: the old NaN became null
    assert sorted(r["case_id"] for r in rows) == ["bad", "good"]
    assert {r["case_id"]: r["cost_usd"] for r in rows}["good"] is None


def test_a_runaway_regex_is_stopped_at_its_time_limit(tmp_path: Path) -> None:
    root = write_benchmark(tmp_path / "b", {}, config={"runs_per_case": 1})
    runaway = {"kind": "regex", "value": "(a|aa)+$", "timeout_s": 0.2}
    write_case(root, "c", {"checks": [{"kind": "contains", "value": "aaaa"}, runaway]})
    bench = load_benchmark(root)

    graded = grade(bench, bench.cases[0], "a" * 5000 + "!")

    assert graded.pass_fail == "invalid"
    assert graded.invalid_reason is not None
    assert "check 1 (regex) not graded: /(a|aa)+$/ timed out after 0.2s" in graded.invalid_reason


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("[" * 100 + "]" * 100, "nests deeper than"),
        ('{"n": -Infinity}', "non-finite number (-Infinity)"),
        ('{"n": 1.5e400}', "out of range"),
        ("not json", "is not JSON"),
    ],
)
def test_load_line_refuses_with_a_reason(raw: str, reason: str) -> None:
    with pytest.raises(Refused, match=re.escape(reason)):
        load_line(raw)
