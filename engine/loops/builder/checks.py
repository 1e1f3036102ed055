"""Pre-dispatch checks: a new or changed case is checked before any agent sees it.

PenguinHarness requires, before a case's first dispatch and once more for every case before
Freeze: the statement is self-consistent; the rubric agrees with the statement and the fixed
private standard; every check relies only on premises that are defined (declared labels),
provided (files of the statement) or explicitly part of the private standard; and no rubric text
shows up in the statement. The public statement need not determine the answer on its own — a
private rule may hold the decision — but a rubric may never lean on something nobody defined.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engine.core.benchmark import Benchmark, Case, check_benchmark, normalise_label
from engine.core.errors import FormatError
from engine.core.standard import STANDARD_FILE, Standard
from engine.evaluation.agents.isolation import ANSWER_FILE

_SPAN = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_FILE_NAME = re.compile(r"^[\w./-]*\w\.[A-Za-z0-9]{1,8}$")
_FILE_IN_TEXT = re.compile(r"(?<![\w/.-])([\w-][\w./-]*\.[A-Za-z][A-Za-z0-9]{0,7})(?::\d+)?\b")
_NAMED_LABEL = re.compile(r"VERDICT:\s*([A-Za-z][\w-]*)")


def _material(case: Case) -> set[str]:
    return {
        p.relative_to(case.statement_dir).as_posix()
        for p in case.statement_dir.rglob("*")
        if p.is_file()
    }


def _statement_problems(bench: Benchmark, case: Case) -> list[FormatError]:
    prompt = case.prompt()
    if not prompt.strip():
        return [FormatError(case.prompt_path, None, "the task text is empty")]
    problems: list[FormatError] = []
    material = _material(case)
    for name in _SPAN.findall(_FENCE.sub(" ", prompt)):
        name = name.strip()
        if _FILE_NAME.match(name) and name != ANSWER_FILE and name not in material:
            problems.append(
                FormatError(
                    case.prompt_path, None, f"names `{name}`, which is not in the statement"
                )
            )
    declared = {normalise_label(lb) for lb in bench.labels}
    for label in _NAMED_LABEL.findall(prompt):
        if declared and normalise_label(label) not in declared:
            problems.append(
                FormatError(
                    case.prompt_path,
                    None,
                    f"offers the label {label!r}, which the benchmark does not declare "
                    f"({', '.join(bench.labels)})",
                )
            )
    return problems


def _rubric_problems(case: Case, standard: Standard | None) -> list[FormatError]:
    problems: list[FormatError] = []
    material = _material(case)
    for i, check in enumerate(case.rubric.checks):
        name = f"checks[{i}]"
        if check.kind == "llm_judge":
            if standard is None:
                problems.append(
                    FormatError(
                        case.rubric_path,
                        f"{name}.criteria",
                        f"an llm_judge check needs a rule of the private standard "
                        f"({STANDARD_FILE}), and the benchmark has none",
                    )
                )
            elif standard.rule_of_criteria(str(check.criteria)) is None:
                problems.append(
                    FormatError(
                        case.rubric_path,
                        f"{name}.criteria",
                        f"expected '[<rule id>] <rule text>' quoting a rule of {STANDARD_FILE}",
                    )
                )
        if check.kind in ("contains", "exact", "json_field") and isinstance(check.value, str):
            for file_name in _FILE_IN_TEXT.findall(check.value):
                if file_name not in material:
                    problems.append(
                        FormatError(
                            case.rubric_path,
                            f"{name}.value",
                            f"relies on {file_name}, which the statement does not provide",
                        )
                    )
    return problems


def check_cases(
    bench: Benchmark, standard: Standard | None, case_ids: Iterable[str] | None = None
) -> list[FormatError]:
    """Every problem of the given cases (all cases when ``case_ids`` is None)."""
    wanted = None if case_ids is None else set(case_ids)
    cases = [c for c in bench.cases if wanted is None or c.id in wanted]
    problems: list[FormatError] = []
    for case in cases:
        problems += _statement_problems(bench, case) + _rubric_problems(case, standard)
    dirs = {c.dir.resolve() for c in cases}
    for problem in check_benchmark(bench):  # declared labels and rubric text in the statement
        if problem.path.resolve().parents[1] in dirs:
            problems.append(problem)
    return problems


__all__ = ["check_cases"]
