"""Grading every check kind against real rubric files, scripts run as real subprocesses."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from engine.core.benchmark import Benchmark, load_benchmark
from engine.core.errors import FormatError
from engine.evaluation.grading import answer_of, extract_verdict, failure_kind, grade
from engine.evaluation.llm import OfflineLLM
from tests.bench_helpers import write_benchmark, write_case


def _one_case(
    tmp_path: Path,
    rubric: dict[str, Any],
    *,
    rubric_files: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
) -> Benchmark:
    root = write_benchmark(tmp_path / "b", {}, config=config or {"labels": ["vulnerable", "safe"]})
    write_case(root, "c1", rubric, rubric_files=rubric_files)
    return load_benchmark(root)


def _grade(bench: Benchmark, answer: str, **kw: Any) -> Any:
    return grade(bench, bench.cases[0], answer, **kw)


def test_label_uses_the_last_verdict_and_ignores_markup(tmp_path: Path) -> None:
    bench = _one_case(tmp_path, {"expected": "vulnerable"})
    g = _grade(bench, "At first VERDICT: safe?\n…on reflection\nVERDICT: **Vulnerable**.")
    assert (g.score, g.passed, g.verdict, g.failure_kind) == (1.0, True, "vulnerable", None)
    assert g.checks[0].to_record() == {
        "text": "verdict is 'vulnerable'",
        "passed": True,
        "evidence": "verdict 'vulnerable'",
    }
    miss = _grade(bench, "VERDICT: safe")
    assert (miss.score, miss.passed, miss.failure_kind, miss.pass_fail) == (
        0.0,
        False,
        "FN",
        "fail",
    )


def test_failure_kinds_for_binary_labels() -> None:
    labels = ["vulnerable", "safe"]
    assert failure_kind("vulnerable", "safe", labels) == "FN"
    assert failure_kind("safe", "vulnerable", labels) == "FP"
    assert failure_kind("safe", "SAFE", labels) is None
    # No verdict is the wrong class either way, so pass/fail and the confusion matrix agree.
    assert failure_kind("vulnerable", None, labels) == "FN"
    assert failure_kind("safe", None, labels) == "FP"
    assert failure_kind("a", "b", ["a", "b", "c"]) is None


def test_extract_verdict_returns_the_declared_spelling() -> None:
    pattern = r"VERDICT:\s*(\S+)"
    assert extract_verdict("verdict: NOT_VULNERABLE", pattern, ["Not-Vulnerable"]) == (
        "Not-Vulnerable"
    )
    assert extract_verdict("verdict: maybe", pattern, ["a"]) == "maybe"
    assert extract_verdict("no verdict here", pattern, ["a"]) is None


def test_weighted_score_and_threshold(tmp_path: Path) -> None:
    rubric = {
        "expected": "vulnerable",
        "checks": [
            {"kind": "label", "weight": 1},
            {"kind": "contains", "value": "line 12", "weight": 0.5},
        ],
    }
    bench = _one_case(tmp_path, rubric)
    g = _grade(bench, "VERDICT: vulnerable (see line 120)")
    assert g.score == pytest.approx(2 / 3, abs=1e-6) and not g.passed
    assert [c.passed for c in g.checks] == [True, False]
    assert g.failure_kind is None  # the label was right; a weak answer is not an FN/FP
    lenient = _one_case(
        tmp_path / "2", rubric, config={"labels": ["vulnerable", "safe"], "pass_threshold": 0.6}
    )
    assert _grade(lenient, "VERDICT: vulnerable (see line 120)").passed


def test_exact_regex_contains(tmp_path: Path) -> None:
    bench = _one_case(
        tmp_path,
        {
            "expected": "safe",
            "checks": [
                {"kind": "exact", "value": "VERDICT: safe"},
                {"kind": "regex", "value": r"^verdict:\s+safe$"},
                {"kind": "contains", "value": "verdict: safe"},
                {"kind": "contains", "value": "Safe", "case_sensitive": True},
            ],
        },
    )
    g = _grade(bench, "  VERDICT:\n   safe \n")
    assert [c.passed for c in g.checks] == [True, False, True, False]
    assert g.checks[2].evidence == "found in: 'VERDICT: safe'"
    g2 = _grade(bench, "VERDICT: safe")
    assert [c.passed for c in g2.checks] == [True, True, True, False]
    assert g2.checks[1].evidence == "matched 'VERDICT: safe'"


def test_json_field(tmp_path: Path) -> None:
    bench = _one_case(
        tmp_path,
        {
            "expected": "vulnerable",
            "checks": [
                {"kind": "json_field", "path": "finding.lines[0]", "value": 12},
                {"kind": "json_field", "path": "finding.family", "value": "SQL Injection"},
            ],
        },
    )
    answer = 'Report:\n```json\n{"finding": {"lines": [12, 14], "family": "sql injection"}}\n```\n'
    g = _grade(bench, answer)
    assert [c.passed for c in g.checks] == [True, True]
    assert g.checks[0].evidence == "finding.lines[0] = 12"
    wrong_type = _grade(bench, json.dumps({"finding": {"lines": ["12"], "family": "xss"}}))
    assert [c.passed for c in wrong_type.checks] == [False, False]
    assert _grade(bench, "no json").checks[0].evidence == "no JSON object found in the answer"
    assert _grade(bench, '{"other": 1}').checks[0].evidence == "JSON has no field finding.lines[0]"


CHECK_PY = """\
import os, sys
answer = sys.stdin.read()
run_dir = sys.argv[1]
notes = open(os.path.join(run_dir, "notes.txt")).read() if os.path.exists(
    os.path.join(run_dir, "notes.txt")) else ""
print("key visible" if "ANTHROPIC_API_KEY" in os.environ else "no key")
print("private data:", open("expected.txt").read().strip())
sys.exit(0 if "line 12" in answer and "audited" in notes else 1)
"""


def test_script_check_runs_in_a_subprocess(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    bench = _one_case(
        tmp_path,
        {"expected": "vulnerable", "checks": [{"kind": "script", "path": "check.py"}]},
        rubric_files={"check.py": CHECK_PY, "expected.txt": "line 12\n"},
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "notes.txt").write_text("audited")
    ok = _grade(bench, "bug at line 12", run_dir=run_dir)
    assert ok.passed and ok.checks[0].evidence == "exit 0: no key\nprivate data: line 12"
    bad = _grade(bench, "bug at line 13", run_dir=run_dir)
    assert not bad.passed and bad.checks[0].evidence.startswith("exit 1")
    # Without a run dir the script gets an empty one: the notes are missing → fail.
    assert not _grade(bench, "bug at line 12").passed


def test_executable_script_check(tmp_path: Path) -> None:
    root = write_benchmark(tmp_path / "b", {}, config={"labels": ["vulnerable", "safe"]})
    rubric = {"expected": "safe", "checks": [{"kind": "script", "path": "check.sh"}]}
    script = {"check.sh": '#!/bin/sh\ngrep -q "all clear" && echo fine\n'}
    case = write_case(root, "c1", rubric, rubric_files=script)
    with pytest.raises(FormatError, match=r"expected a \.py file or an executable"):
        load_benchmark(root)
    (case / "rubric" / "check.sh").chmod(0o755)
    bench = load_benchmark(root)
    assert _grade(bench, "all clear").checks[0].evidence == "exit 0: fine"
    assert not _grade(bench, "nope").passed


HANG_PY = """\
import subprocess, sys, time
child = subprocess.Popen(["sleep", "60"])
open(sys.argv[1] + "/child.pid", "w").write(str(child.pid))
time.sleep(60)
"""


def test_script_timeout_kills_the_process_group(tmp_path: Path) -> None:
    bench = _one_case(
        tmp_path,
        {"expected": "safe", "checks": [{"kind": "script", "path": "hang.py", "timeout_s": 1}]},
        rubric_files={"hang.py": HANG_PY},
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    started = time.monotonic()
    g = _grade(bench, "x", run_dir=run_dir)
    assert time.monotonic() - started < 15
    assert not g.passed and g.valid and g.checks[0].evidence == "timed out after 1s"
    child = int((run_dir / "child.pid").read_text())
    for _ in range(50):  # the grandchild was killed with its group; wait for init to reap it
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        if Path(f"/proc/{child}/stat").read_text().split()[2] == "Z":
            break
        time.sleep(0.05)
    else:
        pytest.fail("grandchild of the check script survived its timeout")


def test_llm_judge_without_a_model_makes_the_unit_invalid(tmp_path: Path) -> None:
    bench = _one_case(
        tmp_path,
        {
            "expected": "vulnerable",
            "checks": [{"kind": "label"}, {"kind": "llm_judge", "criteria": "Names the sink."}],
        },
    )
    g = _grade(bench, "VERDICT: vulnerable")
    assert not g.valid and not g.passed and g.pass_fail == "invalid"
    assert g.invalid_reason == "check 1 (llm_judge) not graded: no judge model was given"
    assert g.row_fields()["pass_fail"] == "invalid"


def test_llm_judge_with_a_model(tmp_path: Path) -> None:
    bench = _one_case(
        tmp_path,
        {
            "expected": "vulnerable",
            "checks": [{"kind": "llm_judge", "criteria": "Names the sink."}],
        },
    )
    seen: list[str] = []

    def respond(system: str, messages: list[dict[str, Any]]) -> str:
        prompt = str(messages[0]["content"])
        seen.append(prompt)
        return "PASS\nquotes: cursor.execute" if "execute" in prompt else "FAIL - no sink"

    judge = OfflineLLM(respond)
    good = _grade(bench, "the sink is cursor.execute", llm=judge)
    assert good.passed and good.checks[0].evidence == "quotes: cursor.execute"
    assert "Criterion: Names the sink." in seen[0] and "Expected answer: vulnerable" in seen[0]
    bad = _grade(bench, "no idea", llm=judge)
    assert bad.valid and not bad.passed and bad.checks[0].evidence == "no sink"
    mute = _grade(bench, "x", llm=OfflineLLM(lambda s, m: "I cannot decide"))
    assert not mute.valid and "no PASS/FAIL" in str(mute.invalid_reason)


def test_answer_of_prefers_answer_txt(tmp_path: Path) -> None:
    lines = [
        {"type": "user", "content": "task"},
        {"type": "assistant", "content": "thinking", "tool_calls": [{"id": "t1"}]},
        {"type": "tool", "tool_name": "grep", "result": "x"},
        {"type": "assistant", "content": [{"type": "text", "text": "VERDICT: safe"}]},
        {"type": "result", "tokens": {"input": 1, "output": 1}},
    ]
    assert answer_of(tmp_path, lines) == "VERDICT: safe"
    assert answer_of(None, lines[:3]) == "thinking"
    assert answer_of(None, []) == ""
    (tmp_path / "answer.txt").write_text("VERDICT: vulnerable\n")
    assert answer_of(tmp_path, lines) == "VERDICT: vulnerable\n"
