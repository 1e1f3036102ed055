"""User checkers from the workspace's checkers/ folder, without touching the engine."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from engine.core.errors import FormatError, SkillsmithError
from engine.evaluation.diagnosis import BUILTIN_RULE_IDS, Registry
from engine.evaluation.diagnosis.run import diagnose_run, load_run
from tests.diag_helpers import thirteen_failures_run

FUNCTION_CHECKER = """
from engine.evaluation.diagnosis import checker

@checker("scanner_not_run", "the audit never ran scan.py")
def scanner_not_run(ctx):
    if any("scan.py" in call.args for call in ctx.trace.calls):
        return None
    return [f"no call ran scan.py in {ctx.summary.stats.tool_calls_total} calls"]
"""

CLASS_CHECKER = '''
class VerdictMissing:
    """the final answer has no VERDICT line"""

    rule_id = "verdict_missing"

    def check(self, ctx):
        return None if ctx.summary.conclusion else ["no VERDICT in the final answer"]
'''


def write_checker(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_folder_checkers_join_the_builtin_rules(tmp_path: Path) -> None:
    folder = tmp_path / "checkers"
    write_checker(folder, "b_scanner.py", FUNCTION_CHECKER)
    write_checker(folder, "a_verdict.py", CLASS_CHECKER)
    write_checker(folder, "_helpers.py", "raise RuntimeError('never imported')\n")
    registry = Registry.for_folder(folder)
    assert registry.ids() == [*BUILTIN_RULE_IDS, "verdict_missing", "scanner_not_run"]
    assert registry.get("verdict_missing").description == "the final answer has no VERDICT line"
    assert registry.get("scanner_not_run").origin.endswith("b_scanner.py:scanner_not_run")


def test_a_user_rule_becomes_a_root_cause(tmp_path: Path) -> None:
    folder = tmp_path / "checkers"
    write_checker(folder, "scanner.py", FUNCTION_CHECKER)
    run = load_run(thirteen_failures_run(tmp_path / "run-1"))
    diagnosis = diagnose_run(run, registry=Registry.for_folder(folder))
    causes = {rc.id: rc for rc in diagnosis.root_causes}
    # every failing case skipped the scanner: FN 10 of 13, FP 3 of 13
    assert causes["FN + scanner_not_run"].count == 10
    assert causes["FN + scanner_not_run"].worth_patch
    assert causes["FN + scanner_not_run"].explanation.startswith("the audit never ran scan.py")
    assert diagnosis.undiagnosed_case_ids == []
    # the passing case that did run scan.py is not flagged by it
    assert "scanner_not_run" not in diagnosis.low_priority["pass-0"]


def test_a_missing_folder_means_builtins_only(tmp_path: Path) -> None:
    assert Registry.for_folder(tmp_path / "absent").ids() == list(BUILTIN_RULE_IDS)


def test_a_checker_with_a_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = write_checker(tmp_path / "checkers", "bad.py", "x = 1\ndef broken(:\n")
    with pytest.raises(FormatError) as info:
        Registry.for_folder(path.parent)
    assert str(info.value).startswith(f"{path}:2:") and "invalid Python" in str(info.value)


def test_a_module_without_checkers_or_failing_import_is_refused(tmp_path: Path) -> None:
    empty = write_checker(tmp_path / "c1", "empty.py", "VALUE = 1\n")
    with pytest.raises(FormatError, match="defines no checker"):
        Registry.for_folder(empty.parent)
    boom = write_checker(tmp_path / "c2", "boom.py", "import no_such_module_xyz\n")
    with pytest.raises(FormatError, match=r"boom\.py: checker module failed to import"):
        Registry.for_folder(boom.parent)


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    body = FUNCTION_CHECKER.replace('"scanner_not_run"', '"tool_loop"')
    write_checker(tmp_path / "checkers", "dup.py", body)
    with pytest.raises(SkillsmithError, match="checker id 'tool_loop' is already registered"):
        Registry.for_folder(tmp_path / "checkers")


def test_a_failing_checker_names_itself_and_the_case(tmp_path: Path) -> None:
    body = """
    from engine.evaluation.diagnosis import checker

    @checker("crashy")
    def crashy(ctx):
        return 1 / 0
    """
    write_checker(tmp_path / "checkers", "crashy.py", body)
    run = load_run(thirteen_failures_run(tmp_path / "run-1"))
    with pytest.raises(SkillsmithError) as info:
        diagnose_run(run, registry=Registry.for_folder(tmp_path / "checkers"))
    message = str(info.value)
    assert "checker 'crashy' failed on case fn-0: ZeroDivisionError" in message
    assert "crashy.py" in message


def test_a_checker_must_return_evidence_strings(tmp_path: Path) -> None:
    body = """
    from engine.evaluation.diagnosis import checker

    @checker("sloppy")
    def sloppy(ctx):
        return "one string"
    """
    write_checker(tmp_path / "checkers", "sloppy.py", body)
    run = load_run(thirteen_failures_run(tmp_path / "run-1"))
    with pytest.raises(SkillsmithError, match="must return a list of evidence strings"):
        diagnose_run(run, registry=Registry.for_folder(tmp_path / "checkers"))


def test_checker_ids_must_be_snake_case() -> None:
    from engine.evaluation.diagnosis import checker

    with pytest.raises(SkillsmithError, match="lower_snake_case"):
        checker("Bad-Id")
