"""Each built-in rule: one trace that makes it fire, one that must not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.core.config import DiagnosisConfig
from engine.evaluation.diagnosis import BUILTIN_RULE_IDS, CaseInput, Diagnosis, diagnose
from engine.evaluation.traces import load_trace, summarise
from tests.diag_helpers import (
    SKILL_NAME,
    TRACE_DATA,
    WORKED_FINAL,
    Call,
    clean_calls,
    err,
    ok,
    row,
    session_lines,
    skill_steps,
    step_calls,
    worked_example_calls,
    write_jsonl,
)

DONE = "STEPS DONE: 1, 2, 3, 4\nVERDICT: safe"


def _diagnose_file(
    path: Path,
    *,
    outcome: str = "FN",
    variant: str = "skill",
    config: DiagnosisConfig | None = None,
    skill_name: str | None = SKILL_NAME,
    row_extra: dict[str, Any] | None = None,
) -> Diagnosis:
    steps = skill_steps()
    trace = load_trace(path)
    summary = summarise(trace, steps, config=config)
    r = {**row("c1", outcome, variant=variant), **(row_extra or {})}
    item = CaseInput(r, trace, summary, steps=steps, skill_name=skill_name)
    return diagnose([item], config=config)


def hits(tmp_path: Path, calls: list[Call], final: str = DONE, **kw: Any) -> dict[str, list[str]]:
    path = write_jsonl(tmp_path / "c1.jsonl", session_lines(calls, final))
    (case,) = _diagnose_file(path, **kw).cases
    return {h.rule_id: h.evidence for h in case.hits}


def test_builtin_rule_ids_are_the_contract() -> None:
    assert BUILTIN_RULE_IDS == (
        "tool_error_burst",
        "progress_mismatch",
        "no_tool_calls",
        "redundant_retry",
        "tool_loop",
        "skill_not_loaded",
        "premature_conclusion",
        "budget_exhaustion",
    )


def test_a_clean_trace_fires_nothing(tmp_path: Path) -> None:
    assert hits(tmp_path, clean_calls()) == {}


def test_tool_error_burst(tmp_path: Path) -> None:
    burst = [err("Bash", f"python scan{i}.py", "Traceback: ImportError") for i in range(3)]
    found = hits(tmp_path, [*clean_calls(), *burst])
    assert found["tool_error_burst"][0] == "3 failed calls within 10 consecutive calls"
    assert "scan0.py → Traceback: ImportError" in found["tool_error_burst"][1]


def test_tool_error_burst_ignores_benign_search_misses(tmp_path: Path) -> None:
    benign = [
        err("Grep", "campId", "No matches found"),
        err("Bash", "grep -rn campId src", ""),  # grep exit 1 with no output
        err("Bash", "rg campId", "Exit code 1"),
        err("Read", "Config.java", "<tool_use_error>File does not exist.</tool_use_error>"),
        err("Glob", "**/*.kt", "0 results"),
    ]
    assert "tool_error_burst" not in hits(tmp_path, [*clean_calls(), *benign])


def test_tool_error_burst_needs_the_errors_close_together(tmp_path: Path) -> None:
    spread: list[Call] = []
    for i in range(3):
        spread.append(err("Bash", f"make t{i}", "error: boom"))
        spread += [ok("Read", f"f{i}-{j}.java") for j in range(10)]
    assert "tool_error_burst" not in hits(tmp_path, [*clean_calls(), *spread])


def test_progress_mismatch(tmp_path: Path) -> None:
    found = hits(tmp_path, worked_example_calls(), WORKED_FINAL)
    assert found["progress_mismatch"] == [
        "claimed steps [1, 2, 3, 4], evidenced [1, 2, 4]",
        'step 3 claimed but no call ran `grep -rn "ServiceImpl" src/main/java`',
    ]
    assert list(found) == ["progress_mismatch"]


def test_progress_mismatch_not_when_claims_are_evidenced(tmp_path: Path) -> None:
    calls = [ok("Skill", SKILL_NAME), *step_calls(1, 2, 4)]
    found = hits(tmp_path, calls, "STEPS DONE: 1, 2, 4, 5\nVERDICT: safe")
    assert "progress_mismatch" not in found  # step 5 has no command: it cannot be checked


def test_no_tool_calls(tmp_path: Path) -> None:
    found = hits(tmp_path, [ok("Skill", SKILL_NAME)], "VERDICT: safe")
    assert found == {"no_tool_calls": ["0 tool calls before concluding: safe"]}
    assert "no_tool_calls" not in hits(tmp_path, [ok("Skill", SKILL_NAME), ok("Read", "a.java")])


def test_redundant_retry(tmp_path: Path) -> None:
    again = err("Bash", "python scan.py", "Traceback")
    found = hits(tmp_path, [*clean_calls(), again, again, again])
    assert found["redundant_retry"][0] == "2 unchanged retries of failed calls"
    assert found["redundant_retry"][1] == "Bash python scan.py retried 2×"
    changed = [
        err("Bash", "python scan.py", "Traceback"),
        err("Bash", "python3 scan.py", "Traceback"),
        ok("Bash", "python3 -m scan"),
    ]
    assert "redundant_retry" not in hits(tmp_path, [*clean_calls(), *changed])


def test_tool_loop(tmp_path: Path) -> None:
    looping = [ok("Read", "src/PayController.java")] * 6
    found = hits(tmp_path, [*clean_calls(), *looping])
    assert found["tool_loop"][0].startswith("Read src/PayController.java issued 6×")
    not_yet = [ok("Read", "src/PayController.java")] * 4
    assert "tool_loop" not in hits(tmp_path, [*clean_calls(), *not_yet])


def test_tool_loop_threshold_is_configurable(tmp_path: Path) -> None:
    calls = [*clean_calls(), *[ok("Read", "a.java")] * 3]
    assert "tool_loop" in hits(tmp_path, calls, config=DiagnosisConfig(tool_loop_min_repeats=3))


def test_skill_not_loaded(tmp_path: Path) -> None:
    calls = step_calls(1, 2, 3, 4)
    found = hits(tmp_path, calls)
    assert found == {"skill_not_loaded": ["never loaded skill 'vuln-audit' in 4 calls"]}
    # reading the SKILL.md counts as loading it
    read = [ok("Read", f".claude/skills/{SKILL_NAME}/SKILL.md"), *calls]
    assert "skill_not_loaded" not in hits(tmp_path, read)
    # another skill does not count
    other = hits(tmp_path, [ok("Skill", "pdf"), *calls])
    assert other["skill_not_loaded"] == [
        "never loaded skill 'vuln-audit' in 5 calls; loaded only ['pdf']"
    ]
    # a baseline run has no skill to load
    assert "skill_not_loaded" not in hits(tmp_path, calls, variant="baseline")


def test_premature_conclusion_after_too_few_calls(tmp_path: Path) -> None:
    found = hits(tmp_path, [ok("Skill", SKILL_NAME), *step_calls(1, 2)], "VERDICT: safe")
    assert found["premature_conclusion"] == ["concluded safe after only 2 tool calls"]


def test_premature_conclusion_before_the_remaining_steps(tmp_path: Path) -> None:
    calls = [ok("Skill", SKILL_NAME), *step_calls(1, 2), ok("Read", "a.java"), ok("Read", "b.java")]
    found = hits(tmp_path, calls, "STEPS DONE: 1, 2\nVERDICT: safe")
    assert found["premature_conclusion"][0] == "concluded safe after step 2; never reached [3, 4]"
    assert "progress_mismatch" not in found  # nothing was claimed falsely


def test_premature_conclusion_not_for_complete_or_cut_off_runs(tmp_path: Path) -> None:
    assert "premature_conclusion" not in hits(tmp_path, clean_calls())
    path = TRACE_DATA / "claude_stream.jsonl"  # ended by max turns: not a conclusion
    (case,) = _diagnose_file(path).cases
    assert "premature_conclusion" not in case.rule_ids


def test_budget_exhaustion_from_the_result_line() -> None:
    (case,) = _diagnose_file(TRACE_DATA / "claude_stream.jsonl").cases
    (hit,) = [h for h in case.hits if h.rule_id == "budget_exhaustion"]
    assert hit.evidence == ["run ended with error_max_turns"]


def test_budget_exhaustion_from_tokens_and_invalid_reason(tmp_path: Path) -> None:
    config = DiagnosisConfig(token_budget=1000)
    found = hits(tmp_path, clean_calls(), config=config)
    assert found["budget_exhaustion"] == ["1200 tokens used, over the budget of 1000"]
    found = hits(tmp_path, clean_calls(), row_extra={"invalid_reason": "timeout after 120 s"})
    assert found["budget_exhaustion"] == ["invalid: timeout after 120 s"]
    assert "budget_exhaustion" not in hits(tmp_path, clean_calls())


@pytest.mark.parametrize("rule_id", BUILTIN_RULE_IDS)
def test_every_rule_has_a_description(rule_id: str) -> None:
    from engine.evaluation.diagnosis import Registry

    assert Registry.builtin().get(rule_id).description
