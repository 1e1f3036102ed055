"""Joint attribution with the article's worked numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.evaluation.diagnosis import CaseInput, diagnose
from engine.evaluation.diagnosis.run import diagnose_run, load_run
from engine.evaluation.traces import load_trace, summarise
from tests.diag_helpers import (
    SKILL_NAME,
    WORKED_FINAL,
    row,
    session_lines,
    skill_steps,
    thirteen_failures_run,
    worked_example_calls,
    write_jsonl,
    write_run,
)


def test_worked_trace_with_fn_gives_the_root_cause(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "biz-vul-037.jsonl", session_lines(worked_example_calls(), WORKED_FINAL)
    )
    steps = skill_steps()
    trace = load_trace(path)
    item = CaseInput(
        row("biz-vul-037", "FN"), trace, summarise(trace, steps), steps=steps, skill_name=SKILL_NAME
    )
    diagnosis = diagnose([item])
    (cause,) = diagnosis.root_causes
    assert cause.id == "FN + progress_mismatch"
    assert cause.case_ids == ["biz-vul-037"] and cause.share == 1.0 and cause.worth_patch
    assert cause.explanation == (
        "claims skill steps that no tool call evidences → missed a positive (false negative)"
    )
    assert diagnosis.direction == "FN" and diagnosis.triggers_evolution


def test_five_of_thirteen_pass_the_threshold_three_do_not(tmp_path: Path) -> None:
    diagnosis = diagnose_run(load_run(thirteen_failures_run(tmp_path / "run-1")))
    assert len(diagnosis.failing_case_ids) == 13
    causes = {rc.id: rc for rc in diagnosis.root_causes}
    assert set(causes) == {"FN + progress_mismatch", "FP + no_tool_calls"}
    fn = causes["FN + progress_mismatch"]
    assert fn.case_ids == [f"fn-{i}" for i in range(5)]
    assert fn.share == pytest.approx(5 / 13) and round(fn.share * 100) == 38
    assert fn.worth_patch
    fp = causes["FP + no_tool_calls"]
    assert fp.count == 3 and round(fp.share * 100) == 23 and not fp.worth_patch
    assert diagnosis.actionable == [fn] and diagnosis.direction == "FN"
    # failing without a flow anomaly: reported, never a root cause
    assert diagnosis.undiagnosed_case_ids == [f"clean-{i}" for i in range(5)]
    # right but flawed: low priority only
    assert diagnosis.low_priority == {"pass-0": ["redundant_retry", "tool_error_burst"]}


def test_the_share_threshold_is_a_parameter(tmp_path: Path) -> None:
    run = load_run(thirteen_failures_run(tmp_path / "run-1"))
    strict = diagnose_run(run, min_share=0.40)
    assert not strict.triggers_evolution and strict.direction is None
    loose = diagnose_run(run, min_share=0.20)
    assert [rc.id for rc in loose.actionable] == ["FN + progress_mismatch", "FP + no_tool_calls"]


def test_a_case_counts_once_across_its_runs_and_baseline_rows_are_not_attributed(
    tmp_path: Path,
) -> None:
    steps = skill_steps()
    path = write_jsonl(tmp_path / "s.jsonl", session_lines(worked_example_calls(), WORKED_FINAL))
    trace = load_trace(path)
    summary = summarise(trace, steps)
    items = [CaseInput(row("c1", "FN", run_index=i), trace, summary, steps=steps) for i in range(3)]
    items.append(CaseInput(row("c2", "FN", variant="baseline"), trace, summary, steps=steps))
    diagnosis = diagnose(items)
    assert diagnosis.failing_case_ids == ["c1"]
    (cause,) = diagnosis.root_causes
    assert cause.case_ids == ["c1"] and cause.count == 1
    assert len(diagnosis.cases) == 4  # every row is still diagnosed and shown


def test_diagnosis_is_json_serialisable_and_complete(tmp_path: Path) -> None:
    diagnosis = diagnose_run(load_run(thirteen_failures_run(tmp_path / "run-1")))
    data = json.loads(json.dumps(diagnosis.to_dict()))
    assert data["run_id"] == "run-1" and data["failing_cases"] == 13
    assert data["direction"] == "FN" and data["triggers_evolution"] is True
    top = data["root_causes"][0]
    assert top["id"] == "FN + progress_mismatch" and top["share"] == round(5 / 13, 4)
    assert top["evidence"][0].startswith("fn-0#0/skill: claimed steps [1, 2, 3, 4]")
    case = next(c for c in data["cases"] if c["case_id"] == "fn-0")
    assert case["hits"][0]["rule_id"] == "progress_mismatch"
    assert case["summary"]["steps_evidenced"] == [1, 2, 4]
    text = diagnosis.attribution_summary()
    assert len(text) <= 2000
    assert "FN + progress_mismatch: 5/13 = 38.5% [PATCH]" in text
    assert "FP + no_tool_calls: 3/13 = 23.1% [below threshold]" in text


def test_missing_session_is_noted_and_undiagnosed(tmp_path: Path) -> None:
    folder = thirteen_failures_run(tmp_path / "run-1")
    (folder / "sessions" / "clean-0.0.jsonl").unlink()
    diagnosis = diagnose_run(load_run(folder))
    case = next(c for c in diagnosis.cases if c.case_id == "clean-0")
    assert case.note == "session file missing" and case.summary is None
    assert "clean-0" in diagnosis.undiagnosed_case_ids


def test_only_the_given_splits_are_attributed(tmp_path: Path) -> None:
    folder = thirteen_failures_run(tmp_path / "run-1")
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    for r in rows:
        if r["case_id"] in ("fn-0", "fn-1", "fp-0"):
            r["split"] = "holdout"
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    diagnosis = diagnose_run(load_run(folder), splits=["selection"])
    assert len(diagnosis.failing_case_ids) == 10
    assert "fn-0" not in diagnosis.failing_case_ids
    causes = {rc.id: rc for rc in diagnosis.root_causes}
    assert causes["FN + progress_mismatch"].case_ids == ["fn-2", "fn-3", "fn-4"]
    assert causes["FN + progress_mismatch"].worth_patch  # 3/10
    assert causes["FP + no_tool_calls"].count == 2 and not causes["FP + no_tool_calls"].worth_patch
    # holdout rows are still diagnosed, only never attributed
    held = next(c for c in diagnosis.cases if c.case_id == "fn-0")
    assert held.rule_ids == ["progress_mismatch"] and not held.attributed


def test_the_skill_under_test_is_taken_from_the_manifest(tmp_path: Path) -> None:
    manifest = {"skills": [{"name": "vuln-audit", "under_test": True}, {"name": "pdf"}]}
    units = [(row("c1", "FN"), session_lines(worked_example_calls(), WORKED_FINAL))]
    for name, extra in (("named", manifest), ("unnamed", {})):
        folder = write_run(tmp_path / name, units, manifest=extra)
        other = folder / "inputs" / "skill" / "pdf" / "SKILL.md"
        other.parent.mkdir(parents=True)
        other.write_text(
            "---\nname: pdf\ndescription: PDFs.\n---\n\n## Steps\n\n1. Run `pdftotext`.\n"
        )
    named = diagnose_run(load_run(tmp_path / "named"))
    assert [rc.id for rc in named.root_causes] == ["FN + progress_mismatch"]
    # two skills and no manifest: the steps to check are unknown, so no mismatch is claimed
    unnamed = diagnose_run(load_run(tmp_path / "unnamed"))
    assert unnamed.root_causes == [] and unnamed.undiagnosed_case_ids == ["c1"]
    explicit = diagnose_run(load_run(tmp_path / "unnamed"), skill="vuln-audit")
    assert [rc.id for rc in explicit.root_causes] == ["FN + progress_mismatch"]
