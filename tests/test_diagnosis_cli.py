"""``skillsmith diagnose RUN``: rich and JSON output, errors, workspace features."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.workspace import Workspace
from tests.bench_helpers import write_benchmark
from tests.diag_helpers import (
    SKILL_TEXT,
    clean_calls,
    ok,
    row,
    session_lines,
    thirteen_failures_run,
    write_run,
)
from tests.test_diagnosis_checkers import FUNCTION_CHECKER, write_checker

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_ambient_workspace(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SKILLSMITH_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)


def test_exported_run_folder_needs_no_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = thirteen_failures_run(tmp_path / "export")
    assert main(["diagnose", str(folder), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["run_id"] == "export" and data["benchmark"] is None
    diagnosis = data["diagnosis"]
    assert diagnosis["failing_cases"] == 13 and diagnosis["direction"] == "FN"
    shares = {rc["id"]: (rc["count"], rc["worth_patch"]) for rc in diagnosis["root_causes"]}
    assert shares == {"FN + progress_mismatch": (5, True), "FP + no_tool_calls": (3, False)}
    assert data["gt_audit"]["threshold"] == 0.5
    assert len(data["gt_audit"]["suspicions"]) == 13


def test_rich_output_in_a_workspace(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    thirteen_failures_run(workspace.runs_dir / "run-1")
    assert main(["-w", str(workspace.root), "diagnose", "run-1"]) == 0
    out = capsys.readouterr().out
    assert "diagnosis of run-1: 19 rows, 13 failing cases" in out
    assert "FN + progress_mismatch" in out and "5/13" in out and "38.5%" in out
    assert "FP + no_tool_calls" in out and "23.1%" in out
    assert 'step 3 claimed but no call ran `grep -rn "ServiceImpl" src/main/java`' in out
    assert "undiagnosed failures: clean-0, clean-1" in out
    assert "passing but flawed (low priority): pass-0 (redundant_retry, tool_error_burst)" in out
    assert "evolution triggered (direction: FN)" in out
    # none reaches the flag: the weaker signs are counted, their table is --verbose
    assert "5 failing cases show a weaker sign, below the flag (--verbose)" in out
    # a summary by default; the row per unit (and the weaker signs) behind --verbose
    assert "outcomes: FN 10, FP 3, pass 6; rule hits: progress_mismatch 5, no_tool_calls 3" in out
    assert "(one row per unit: diagnose --verbose)" in out
    assert "fn-0" not in out.split("root causes")[0]
    assert main(["-w", str(workspace.root), "diagnose", "run-1", "--verbose"]) == 0
    long = capsys.readouterr().out
    assert "outcomes:" not in long and "ground-truth suspicion" in long
    rows = [line for line in long.splitlines() if line.startswith("│ fn-")]
    assert len(rows) == 5
    assert len(long.splitlines()) > len(out.splitlines()) + 19


def test_workspace_checkers_config_and_benchmark_are_used(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    write_checker(workspace.root / "checkers", "scanner.py", FUNCTION_CHECKER)
    config = workspace.load_config()
    config.limits.root_cause_min_share = 0.5
    workspace.save_config(config)
    write_benchmark(
        workspace.benchmarks_dir / "audit",
        {
            "a-1": {"expected": "vulnerable", "type": "idor"},
            "a-2": {"expected": "safe", "type": "idor"},
            "a-3": {"expected": "vulnerable", "type": "idor"},
            "a-4": {"expected": "vulnerable", "type": "idor"},
        },
    )
    units = [
        (row("a-1", "FN", case_type="idor"), session_lines(clean_calls(), "VERDICT: safe")),
        (row("a-2", "pass", label="safe"), session_lines(clean_calls(), "VERDICT: safe")),
    ]
    write_run(workspace.runs_dir / "run-2", units, manifest={"benchmark": "audit"})
    assert main(["-w", str(workspace.root), "diagnose", "run-2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["benchmark"] == "audit" and data["checkers"][-1] == "scanner_not_run"
    (cause,) = data["diagnosis"]["root_causes"]
    assert cause["id"] == "FN + scanner_not_run" and cause["share"] == 1.0
    assert data["diagnosis"]["min_share"] == 0.5
    contradictory, twins, *_ = data["gt_audit"]["data_quality"]
    assert contradictory == {
        "problem": "contradictory_labels_in_type",
        "case_type": "idor",
        "counts": {"safe": 1, "vulnerable": 3},
        "labels": {"safe": ["a-2"], "vulnerable": ["a-1", "a-3", "a-4"]},
        "outliers": ["safe"],
    }
    # the statements are the helper's default prompt: identical text, different labels
    assert twins["problem"] == "near_identical_cases_labelled_differently"
    assert twins["case_ids"] == ["a-1", "a-2"] and twins["similarity"] == 1.0
    assert main(["-w", str(workspace.root), "diagnose", "run-2"]) == 0
    out = capsys.readouterr().out
    assert "data quality: only 1 of the 4 'idor' cases are labelled 'safe' (a-2)" in out
    assert "mixes labels" not in out
    assert "data quality: a-1 and a-2 are near-identical (1.00) but labelled" in out


def test_also_adds_other_skill_versions_to_the_audit(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    final = "STEPS DONE: 1, 2, 3, 4\nVERDICT: safe"
    for n, text in enumerate((SKILL_TEXT, SKILL_TEXT + "\n<!-- v2 -->\n")):
        units = [
            (row("c1", "FN", run_index=i), session_lines(clean_calls(), final)) for i in range(2)
        ]
        write_run(workspace.runs_dir / f"run-{n}", units, skill_text=text)
    argv = ["-w", str(workspace.root), "diagnose", "run-0", "--json"]
    assert main(argv) == 0
    alone = json.loads(capsys.readouterr().out)["gt_audit"]["suspicions"][0]
    assert main([*argv, "--also", "run-1"]) == 0
    both = json.loads(capsys.readouterr().out)["gt_audit"]["suspicions"][0]
    assert alone["signals"]["cross_version_disagreement"] == 0.0 and not alone["flagged"]
    assert both["signals"]["cross_version_disagreement"] == 1.0 and both["flagged"]


def test_unknown_run_is_one_line_exit_1(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["-w", str(workspace.root), "diagnose", "nope"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope: no such run" in err


def test_malformed_files_are_named_with_their_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = thirteen_failures_run(tmp_path / "run-x")
    session = folder / "sessions" / "fn-2.0.jsonl"
    lines = session.read_text().splitlines()
    lines[2] = lines[2][:-1]
    session.write_text("\n".join(lines) + "\n")
    assert main(["diagnose", str(folder)]) == 1
    err = capsys.readouterr().err
    assert f"{session}:3: line is not valid JSON" in err and err.count("\n") == 1
    (folder / "results.jsonl").write_text('{"case_id": "a", "pass_fail": "maybe"}\n')
    assert main(["diagnose", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "results.jsonl:1: field 'pass_fail': expected 'pass', 'fail' or 'invalid'" in err


def test_article_export_without_run_index_or_session_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sec-code-bench-export"
    (folder / "sessions").mkdir(parents=True)
    rows = [
        {
            "case_id": "biz-vul-001",
            "ground_truth": "true",
            "judge_verdict": "true",
            "pass_fail": "pass",
        },
        {
            "case_id": "biz-vul-002",
            "ground_truth": "true",
            "judge_verdict": "false",
            "pass_fail": "fail",
            "failure_kind": "FN",
        },
    ]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    answer = {"type": "assistant", "content": "# 审计结论\n该接口不存在漏洞"}
    for case_id in ("biz-vul-001", "biz-vul-002"):
        (folder / "sessions" / f"{case_id}.jsonl").write_text(json.dumps(answer) + "\n")
    assert main(["diagnose", str(folder), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["diagnosis"]
    (cause,) = [rc for rc in data["root_causes"] if rc["rule_id"] == "no_tool_calls"]
    assert cause["id"] == "FN + no_tool_calls" and cause["case_ids"] == ["biz-vul-002"]


def test_subprocess_run_of_the_real_command(workspace: Workspace) -> None:
    thirteen_failures_run(workspace.runs_dir / "run-1")
    env = {k: v for k, v in os.environ.items() if k != "SKILLSMITH_WORKSPACE"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli",
            "-w",
            str(workspace.root),
            "diagnose",
            "run-1",
            "--json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["diagnosis"]["root_causes"][0]["id"] == "FN + progress_mismatch"


def test_long_case_ids_fold_at_80_columns_and_are_never_cut(
    workspace: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    ids = ("xss-js-innerhtml-template-literal", "xss-js-innerhtml-sanitized-dompurify")
    units = [(row(i, "FP", label="safe"), session_lines([], "VERDICT: vulnerable")) for i in ids]
    write_run(workspace.runs_dir / "run-3", units)
    assert main(["-w", str(workspace.root), "diagnose", "run-3", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    table = out.split("root causes")[0]
    cells = "".join(line.split("│")[1].strip() for line in table.splitlines() if "│" in line)
    for case_id in ids:
        assert case_id in cells  # folded over lines, whole


def test_terminal_escapes_in_agent_text_never_reach_the_terminal(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """An agent's tool calls and answer holding screen-clear, window-title and clipboard
    sequences: the words are shown, the sequences are not (--verbose and --traces)."""
    hostile = "\x1b[2J\x1b]0;owned\x07\x1b]52;c;Y3VybCB4fHNo\x1b\\\r"
    calls = [
        ok("Skill", "vuln-audit"),
        ok("Bash", f"grep -rn Marker{hostile} src", f"found{hostile} nothing"),
    ]
    final = f"Claimed all.{hostile}\nSTEPS DONE: 1, 2, 3, 4\nVERDICT: safe"
    units = [(row(f"fn-{i}", "FN"), session_lines(calls, final)) for i in range(3)]
    write_run(workspace.runs_dir / "run-4", units)

    code = main(["-w", str(workspace.root), "diagnose", "run-4", "--verbose", "--traces"])

    out = capsys.readouterr().out
    assert code == 0
    assert "Marker" in out  # the agent's text is there, its control sequences are not
    assert [c for c in out if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F] == []
