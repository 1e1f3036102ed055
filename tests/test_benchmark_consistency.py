"""The consistency check: private rubric text must not leak into what the agent sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.benchmark import check_benchmark, load_benchmark
from engine.core.errors import FormatError
from tests.bench_helpers import write_benchmark, write_case

CODE = 'def login(user):\n    q = "SELECT * FROM users WHERE name=\'" + user + "\'"  # safe?\n'


def _bench(tmp_path: Path, rubric: dict[str, object], files: dict[str, str]) -> Path:
    root = write_benchmark(tmp_path / "b", {})
    write_case(root, "c1", rubric, files=files)
    return root


def test_expected_answer_in_the_statement_is_refused(tmp_path: Path) -> None:
    root = _bench(
        tmp_path,
        {
            "expected": "vulnerable",
            "checks": [{"kind": "contains", "value": "string concatenation"}],
        },
        {"app.py": CODE + "# TODO: String  Concatenation builds the query\n"},
    )
    with pytest.raises(FormatError) as err:
        load_benchmark(root)
    text = str(err.value)
    assert "c1/rubric/rubric.yaml: field 'checks[0].value'" in text
    assert "'string concatenation' appears in statement/app.py" in text


def test_a_leak_in_a_nested_or_temp_named_statement_file_is_found(tmp_path: Path) -> None:
    """The check walks the statement as the room will hold it: every file at any depth, one
    named like an interrupted write's temp file too (the room gets a copy of it)."""
    for name in ("src/db/query.py", ".notes.abcd1234.tmp"):
        root = _bench(
            tmp_path / name.replace("/", "-"),
            {"expected": "vulnerable", "checks": [{"kind": "contains", "value": "unsafe join"}]},
            {"app.py": CODE, name: "# an unsafe join of user input\n"},
        )
        with pytest.raises(FormatError, match=f"'unsafe join' appears in statement/{name}"):
            load_benchmark(root)


def test_free_text_expected_answer_leak(tmp_path: Path) -> None:
    root = write_benchmark(tmp_path / "b", {}, config={"seed": 1})
    write_case(root, "c1", {"expected": "Paris"}, prompt="What is the capital? (hint: paris)\n")
    with pytest.raises(FormatError, match=r"field 'expected': private rubric text 'paris'"):
        load_benchmark(root)


def test_copied_note_sentence_is_a_leak(tmp_path: Path) -> None:
    note = "The query is built from user input without parameters. Look at line 2."
    root = _bench(
        tmp_path,
        {"expected": "vulnerable", "notes": note},
        {"README.md": "Context: the query is built from user input without parameters.\n"},
    )
    with pytest.raises(FormatError, match=r"field 'notes'"):
        load_benchmark(root)


def test_near_misses_are_not_leaks(tmp_path: Path) -> None:
    root = _bench(
        tmp_path,
        {
            "expected": "vulnerable",
            "notes": "Short note.",
            "checks": [
                {"kind": "label"},
                {"kind": "contains", "value": "line 12", "weight": 0.5},  # statement has "line 120"
                {"kind": "contains", "value": "sql", "weight": 0.1},  # < 4 chars: ignored
                {"kind": "regex", "value": "SELECT", "weight": 0.1},  # patterns are not text
                {"kind": "json_field", "path": "verdict", "value": "safe"},  # a declared label
            ],
        },
        # Labels are the public vocabulary: "safe" and "vulnerable" in code or prompt are fine.
        {"app.py": CODE + "# raw sql; see line 120; is this vulnerable or safe?\n"},
    )
    bench = load_benchmark(root)
    assert check_benchmark(bench) == []


def test_expected_label_outside_the_declared_set(tmp_path: Path) -> None:
    root = _bench(tmp_path, {"expected": "critical"}, {"app.py": CODE})
    with pytest.raises(FormatError, match=r"field 'expected': expected one of the declared labels"):
        load_benchmark(root)


def test_check_false_loads_and_check_benchmark_lists_every_case(tmp_path: Path) -> None:
    root = write_benchmark(tmp_path / "b", {})
    write_case(root, "c1", {"expected": "unsure"})
    write_case(root, "c2", {"expected": "vulnerable", "notes": "x"}, files={"a.py": CODE})
    write_case(
        root,
        "c3",
        {"expected": "safe", "checks": [{"kind": "contains", "value": "parameterised"}]},
        files={"parameterised.py": "x = 1\n"},  # a file NAME can give the answer away too
    )
    bench = load_benchmark(root, check=False)
    problems = check_benchmark(bench)
    assert [p.path.parent.parent.name for p in problems] == ["c1", "c3"]
    assert "parameterised.py" in str(problems[1])
