"""The three layers of a trace summary, and its compression of a large transcript."""

from __future__ import annotations

import json
from pathlib import Path

from engine.core.config import DiagnosisConfig
from engine.core.skill import SkillDoc
from engine.evaluation.traces import load_trace, skeleton, summarise
from tests.diag_helpers import (
    WORKED_FINAL,
    err,
    ok,
    session_lines,
    skill_steps,
    worked_example_calls,
    write_jsonl,
)


def test_worked_example_layers_match_the_article(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "biz-vul-037.jsonl", session_lines(worked_example_calls(), WORKED_FINAL)
    )
    data = summarise(load_trace(path), skill_steps()).to_dict()
    assert data["tool_calls_total"] == 67
    assert data["tool_breakdown"] == {"Read": 38, "Grep": 21, "Bash": 8}
    assert data["errors"] == 1 and data["benign_errors"] == 0
    assert data["steps_claimed"] == [1, 2, 3, 4]
    assert data["steps_evidenced"] == [1, 2, 4]
    assert data["steps_missing"] == [3]
    assert data["steps_unverifiable"] == [5]
    assert data["conclusion"] == "safe"
    assert data["retries"] == 0 and data["max_repeat"] == 1


def test_stage_stats_count_retries_duplicates_and_benign_errors(tmp_path: Path) -> None:
    calls = [
        err("Bash", "python  scan.py", "Traceback"),
        err("Bash", "python scan.py", "Traceback"),  # same call, other spacing: a retry
        ok("Read", "a.java"),
        ok("Read", "a.java"),  # duplicate, not a retry (never failed)
        err("Bash", "grep -rn foo src", "Exit code 1"),  # grep found nothing: benign
        err("Grep", "foo", "No matches found"),
        err("Glob", "**/*.kt", "No files found"),
    ]
    path = write_jsonl(tmp_path / "s.jsonl", session_lines(calls, "VERDICT: safe"))
    stats = summarise(load_trace(path)).stats
    assert stats.errors == 5 and stats.benign_errors == 3
    assert stats.retries == 1 and stats.duplicate_calls == 2
    assert stats.max_repeat == 2


def test_benign_patterns_come_from_the_config(tmp_path: Path) -> None:
    calls = [err("Grep", "foo", "nothing here, boss")]
    path = write_jsonl(tmp_path / "s.jsonl", session_lines(calls, "VERDICT: safe"))
    trace = load_trace(path)
    assert summarise(trace).stats.benign_errors == 0
    config = DiagnosisConfig(benign_error_patterns=["nothing here"])
    assert summarise(trace, config=config).stats.benign_errors == 1


def test_skeleton_folds_repeats_marks_errors_and_elides_the_middle(tmp_path: Path) -> None:
    calls = [ok("Read", "x.java")] * 12 + [err("Bash", "make", "boom")]
    calls += [ok("Grep", f"p{i}") for i in range(100)]
    path = write_jsonl(tmp_path / "s.jsonl", session_lines(calls, "VERDICT: safe"))
    entries, hidden = skeleton(load_trace(path).calls, max_entries=10)
    assert entries[0] == "Read x.java ×12"
    assert entries[1] == "Bash! make"
    assert entries[5] == "Grep p3"  # head: 6 folded entries
    assert entries[6] == "… 92 calls elided …" and hidden == 92
    assert entries[-1] == "Grep p99" and len(entries) == 11


def test_render_text_is_compact_and_complete(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", session_lines(worked_example_calls(), WORKED_FINAL))
    text = summarise(load_trace(path), skill_steps()).render_text()
    first = text.splitlines()[0]
    assert "67 calls (Read 38, Grep 21, Bash 8)" in first and "errors 1 (0 benign)" in first
    assert "steps claimed [1, 2, 3, 4]; evidenced [1, 2, 4]; missing [3]" in text
    assert "conclusion: safe" in text


def test_a_one_megabyte_transcript_becomes_a_few_kilobytes(tmp_path: Path) -> None:
    body = "x" * 3000
    calls = [ok("Read", f"src/main/java/pay/File{i:03d}.java", body) for i in range(330)]
    path = write_jsonl(tmp_path / "big.jsonl", session_lines(calls, "VERDICT: safe"))
    assert path.stat().st_size > 1_000_000
    data = summarise(load_trace(path)).to_dict()
    assert data["raw_bytes"] == path.stat().st_size
    encoded = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())
    assert encoded < 8_000  # a few KB, not a transcript
    assert data["compression_ratio"] >= 100
    assert data["compression_ratio"] == round(data["raw_bytes"] / data["summary_bytes"], 1)


TOOL_STEPS = """---
name: java-audit
description: Audits a Java file. Use when asked whether a Java class is vulnerable.
---

## Steps

1. `Read task/Pay.java`
2. `Grep checkOwner task/`
3. Read `task/Refund.java`

## Next Steps

- `Read task/Report.java` if the user asks for a report.
"""


def test_a_tool_and_path_step_is_evidenced_by_that_tool_on_that_path(tmp_path: Path) -> None:
    steps = SkillDoc.parse(TOOL_STEPS).steps
    assert [s.number for s in steps] == [1, 2, 3]  # "Next Steps" bullets are not steps
    calls = [
        ok("Read", "task/Pay.java"),
        ok("Bash", "grep checkOwner task/"),  # another tool: not step 2's evidence
        ok("Read", "task/Refund.java"),
    ]
    path = write_jsonl(tmp_path / "s.jsonl", session_lines(calls, "STEPS DONE: 1-3\nVERDICT: safe"))
    progress = summarise(load_trace(path), steps).progress
    assert progress.evidenced == [1, 3] and progress.missing == [2]
