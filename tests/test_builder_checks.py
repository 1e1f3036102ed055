"""Pre-dispatch checks and the fixed private standard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.core.benchmark import load_benchmark
from engine.core.errors import FormatError
from engine.core.standard import (
    Standard,
    evidence_rule,
    load_standard,
    standard_path,
    write_standard,
)
from engine.loops.builder.checks import check_cases
from tests.bench_helpers import write_benchmark, write_case

LABELS = {"labels": ["vulnerable", "safe"]}
RULE = evidence_rule("vulnerable")
PROMPT = "Audit `app.py`.\n\nEnd with `VERDICT: vulnerable` or `VERDICT: safe`.\n"


def _bench(tmp_path: Path, cases: dict[str, dict[str, Any]], *, standard: bool = True) -> Any:
    root = write_benchmark(tmp_path / "b", {}, config=LABELS)
    for case_id, spec in cases.items():
        write_case(
            root,
            case_id,
            spec.get("rubric", {"expected": "vulnerable"}),
            prompt=spec.get("prompt", PROMPT),
            files=spec.get("files", {"app.py": "run(input())\n"}),
        )
    if standard:
        write_standard(root, Standard("find vulnerabilities", (RULE,)))
    return load_benchmark(root, check=False)


def _messages(problems: list[FormatError]) -> list[str]:
    return [str(p) for p in problems]


def test_a_consistent_case_passes(tmp_path: Path) -> None:
    rubric = {
        "expected": "vulnerable",
        "checks": [{"kind": "label"}, {"kind": "llm_judge", "criteria": RULE.criteria}],
    }
    bench = _bench(tmp_path, {"ok": {"rubric": rubric}})
    assert check_cases(bench, load_standard(bench.root)) == []


def test_the_statement_must_provide_what_its_prompt_names(tmp_path: Path) -> None:
    bench = _bench(tmp_path, {"c": {"prompt": "Audit `handler.go`, not `app.py`.\n"}})
    (problem,) = check_cases(bench, load_standard(bench.root))
    assert str(problem) == (
        f"{bench.root / 'c/statement/prompt.md'}: names `handler.go`, which is not in the statement"
    )


def test_the_prompt_may_not_offer_an_undeclared_label(tmp_path: Path) -> None:
    bench = _bench(tmp_path, {"c": {"prompt": "Audit `app.py`. End with `VERDICT: risky`.\n"}})
    (problem,) = check_cases(bench, load_standard(bench.root))
    assert "offers the label 'risky', which the benchmark does not declare" in str(problem)


def test_a_judge_check_must_quote_a_rule_of_the_standard(tmp_path: Path) -> None:
    loose = {"expected": "vulnerable", "checks": [{"kind": "llm_judge", "criteria": "Is good."}]}
    edited = {
        "expected": "vulnerable",
        "checks": [{"kind": "llm_judge", "criteria": RULE.criteria.replace("one", "two")}],
    }
    bench = _bench(tmp_path, {"loose": {"rubric": loose}, "edited": {"rubric": edited}})
    problems = check_cases(bench, load_standard(bench.root))
    assert len(problems) == 2
    assert all(
        "field 'checks[0].criteria'" in p and "standard.md" in p for p in _messages(problems)
    )


def test_a_judge_check_without_any_standard_is_refused(tmp_path: Path) -> None:
    rubric = {"expected": "vulnerable", "checks": [{"kind": "llm_judge", "criteria": "x"}]}
    bench = _bench(tmp_path, {"c": {"rubric": rubric}}, standard=False)
    (problem,) = check_cases(bench, None)
    assert "the benchmark has none" in str(problem)


def test_a_check_may_only_rely_on_provided_files(tmp_path: Path) -> None:
    rubric = {
        "expected": "vulnerable",
        "checks": [{"kind": "label"}, {"kind": "contains", "value": "db.py:12"}],
    }
    bench = _bench(tmp_path, {"c": {"rubric": rubric}})
    (problem,) = check_cases(bench, load_standard(bench.root))
    assert "field 'checks[1].value'" in str(problem)
    assert "relies on db.py, which the statement does not provide" in str(problem)


def test_rubric_text_in_the_statement_is_a_leak(tmp_path: Path) -> None:
    rubric = {"expected": "vulnerable", "notes": "The sink is the run call on line one."}
    bench = _bench(
        tmp_path,
        {"c": {"rubric": rubric, "files": {"app.py": "# The sink is the run call on line one.\n"}}},
    )
    (problem,) = check_cases(bench, load_standard(bench.root))
    assert "field 'notes'" in str(problem) and "the agent would see the answer" in str(problem)


def test_only_the_named_cases_are_checked(tmp_path: Path) -> None:
    bench = _bench(tmp_path, {"bad": {"prompt": "Audit `gone.py`.\n"}, "good": {"prompt": PROMPT}})
    standard = load_standard(bench.root)
    assert check_cases(bench, standard, ["good"]) == []
    assert len(check_cases(bench, standard, ["bad"])) == 1


def test_the_standard_round_trips_and_names_bad_lines(tmp_path: Path) -> None:
    standard = Standard("spot  the\nbug", (RULE,))
    write_standard(tmp_path, standard)
    loaded = load_standard(tmp_path)
    assert loaded is not None and loaded.goal == "spot the bug" and loaded.rules == (RULE,)
    assert loaded.rule_of_criteria(RULE.criteria) == RULE
    assert loaded.rule_of_criteria(RULE.text) is None  # the tag is part of the criteria
    path = standard_path(tmp_path)
    path.write_text(path.read_text() + "- [evidence] again\n")
    with pytest.raises(FormatError, match=r"standard\.md:\d+: duplicate rule \[evidence\]"):
        load_standard(tmp_path)
    path.write_text("# Decision standard\n\n- no id here\n")
    with pytest.raises(FormatError, match=r"standard\.md:3: expected a rule line"):
        load_standard(tmp_path)
