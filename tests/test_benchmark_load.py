"""Loading benchmark folders: config, cases, rubrics, and one-line errors for every bad file."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from engine.core import fsutil
from engine.core.benchmark import Check, load_benchmark, normalise_label
from engine.core.errors import FormatError
from tests.bench_helpers import labelled_cases, tree_state, write_benchmark, write_case


def test_loads_cases_rubrics_and_config(tmp_path: Path) -> None:
    root = write_benchmark(
        tmp_path / "vuln",
        {
            "b-case": {
                "expected": "vulnerable",
                "type": "sql-injection",
                "critical": True,
                "checks": [
                    {"kind": "label", "weight": 1},
                    {"kind": "contains", "value": "line 12", "weight": 0.5},
                ],
            },
            "a-case": {"expected": "safe"},
        },
        config={
            "id": "vuln",
            "description": "demo",
            "labels": ["vulnerable", "safe"],
            "runs_per_case": 3,
            "seed": 11,
            "pass_threshold": 0.5,
        },
    )
    bench = load_benchmark(root)
    assert bench.id == "vuln" and bench.source == root.resolve() / "benchmark.yaml"
    assert [c.id for c in bench.cases] == ["a-case", "b-case"]
    assert bench.runs_per_case == 3 and bench.seed == 11 and bench.pass_threshold == 0.5
    assert bench.positive_label == "vulnerable" and bench.binary
    a, b = bench.cases
    assert a.rubric.checks == [Check()]  # default: one label check of weight 1
    assert b.rubric.critical and b.rubric.type == "sql-injection"
    assert b.rubric.checks[1].value == "line 12" and b.rubric.checks[1].weight == 0.5
    assert a.prompt().startswith("Audit the code")
    assert b.statement_dir == root.resolve() / "b-case" / "statement"
    assert {c.split for c in bench.cases} <= {"selection", "holdout", "golden"}
    assert bench.case("b-case") is b


def test_yaml_booleans_become_label_text(tmp_path: Path) -> None:
    # The outcome-driven article labels are "true"/"false"; YAML would read them as booleans.
    root = write_benchmark(
        tmp_path / "b",
        {"c1": "expected: true\n", "c2": "expected: false\n"},
        config="labels: [true, false]\n",
    )
    bench = load_benchmark(root)
    assert bench.labels == ["true", "false"]
    assert [c.rubric.expected for c in bench.cases] == ["true", "false"]


def test_penguinharness_toml_config_is_read(tmp_path: Path) -> None:
    root = tmp_path / "ph"
    write_case(root, "c1", {"expected": "yes"})
    (root / "benchmark_config.toml").write_text(
        'description = "PH bench"\nruns = 1\nlabels = ["yes", "no"]\nseed = 3\n'
        "[splits]\nfeedback = 0.5\nvalidation = 0.3\nholdout = 0.2\n",
        encoding="utf-8",
    )
    bench = load_benchmark(root)
    assert bench.source.name == "benchmark_config.toml"
    assert bench.runs_per_case == 1 and bench.labels == ["yes", "no"]
    assert bench.cases[0].split in {"feedback", "validation", "holdout"}


def test_case_list_in_the_file_selects_cases(tmp_path: Path) -> None:
    cases = labelled_cases(2, 2)
    root = write_benchmark(
        tmp_path / "b", cases, config={"labels": ["vulnerable", "safe"], "cases": ["safe-001"]}
    )
    assert [c.id for c in load_benchmark(root).cases] == ["safe-001"]


def test_label_normalisation() -> None:
    assert normalise_label("**Vulnerable**.") == "vulnerable"
    assert normalise_label("Not_Vulnerable") == normalise_label("not vulnerable")
    assert normalise_label("`SAFE`") == "safe"


@pytest.mark.parametrize(
    ("config", "rubric", "message"),
    [
        ("labels: [a, b\n", None, "benchmark.yaml:2: invalid YAML"),
        ("labels: [a, b]\nrunz: 2\n", None, "benchmark.yaml: field 'runz': unknown key"),
        ("runs_per_case: two\n", None, "field 'runs_per_case': expected an integer"),
        (
            "runs_per_case: 0\n",
            None,
            "field 'runs_per_case': expected a number in [1, 1000], got 0",
        ),
        ("id: other\n", None, "field 'id': expected the folder name 'b'"),
        ("label_pattern: 'VERDICT: \\S+'\n", None, "field 'label_pattern': expected a regex"),
        ("label_pattern: '(unclosed'\n", None, "field 'label_pattern': invalid regex"),
        ("splits: {selection: 0.5, holdout: 0.1}\n", None, "field 'splits': expected the keys"),
        (
            "splits: {selection: 0.5, holdout: 0.25, golden: 0.1}\n",
            None,
            "field 'splits': expected ratios summing to 1",
        ),
        ("labels: [a, A]\n", None, "field 'labels[1]': duplicate label"),
        (None, "expected: vulnerable\nchecks:\n  - {kind: grep}\n", "field 'checks[0].kind'"),
        (None, "expected: vulnerable\nchecks: [\n", "rubric.yaml:3: invalid YAML"),
        (None, "expected: vulnerable\nsplit: nowhere\n", "field 'split': expected one of"),
        (None, "expected: vulnerable\nchecks: []\n", "field 'checks': expected at least one"),
        (
            None,
            "expected: vulnerable\nchecks:\n  - {kind: regex, value: '(x'}\n",
            "field 'checks[0].value': invalid regex",
        ),
        (
            None,
            "expected: vulnerable\nchecks:\n  - {kind: contains}\n",
            "field 'checks[0].value': expected a string",
        ),
        (
            None,
            "expected: vulnerable\nchecks:\n  - {kind: script, path: nope.py}\n",
            "field 'checks[0].path': script not found",
        ),
        (
            None,
            "expected: vulnerable\nchecks:\n  - {kind: script, path: ../statement/prompt.md}\n",
            "field 'checks[0].path': expected a path inside rubric/",
        ),
        (
            None,
            "expected: vulnerable\nchecks:\n  - {kind: llm_judge}\n",
            "field 'checks[0].criteria'",
        ),
        (None, "checks:\n  - {kind: label}\n", "field 'expected': is required by the label"),
        (None, "expected: maybe\n", "field 'expected': expected one of the declared labels"),
    ],
)
def test_malformed_files_give_one_line_and_write_nothing(
    tmp_path: Path, config: str | None, rubric: str | None, message: str
) -> None:
    root = write_benchmark(
        tmp_path / "b",
        {"c1": rubric or "expected: vulnerable\n"},
        config=config or "labels: [vulnerable, safe]\n",
    )
    before = tree_state(root)
    with pytest.raises(FormatError) as err:
        load_benchmark(root)
    text = str(err.value)
    assert "\n" not in text
    assert message in text
    bad_file = "benchmark.yaml" if config else "rubric.yaml"
    assert bad_file in text
    assert tree_state(root) == before


def test_missing_pieces_are_named(tmp_path: Path) -> None:
    root = write_benchmark(tmp_path / "b", {"c1": {"expected": "safe"}})
    (root / "c1" / "statement" / "prompt.md").unlink()
    with pytest.raises(FormatError, match=r"c1/statement/prompt.md: file not found"):
        load_benchmark(root)
    (root / "c1" / "statement" / "prompt.md").write_text("task")
    (root / "c1" / "rubric" / "rubric.yaml").unlink()
    with pytest.raises(FormatError, match=r"c1/rubric/rubric.yaml: file not found"):
        load_benchmark(root)
    (root / "lonely" / "rubric").mkdir(parents=True)
    with pytest.raises(FormatError, match=r"lonely: case folder has rubric/ but no statement/"):
        load_benchmark(root)


def test_both_config_files_are_ambiguous(tmp_path: Path) -> None:
    root = write_benchmark(tmp_path / "b", {"c1": {"expected": "safe"}})
    (root / "benchmark_config.toml").write_text("runs = 1\n")
    with pytest.raises(FormatError, match="keep exactly one"):
        load_benchmark(root)


def test_bad_toml_names_the_line(tmp_path: Path) -> None:
    root = tmp_path / "ph"
    write_case(root, "c1", {"expected": "yes"})
    (root / "benchmark_config.toml").write_text("runs = 1\nlabels = = 2\nseed = 3\n")
    with pytest.raises(FormatError, match=r"benchmark_config.toml:2: invalid TOML"):
        load_benchmark(root)
    (root / "benchmark_config.toml").write_text('runs = 1\nlabels = ["yes"\n')
    with pytest.raises(FormatError, match=r"benchmark_config.toml:2: invalid TOML: Unclosed"):
        load_benchmark(root)


def test_listed_case_must_exist(tmp_path: Path) -> None:
    root = write_benchmark(
        tmp_path / "b",
        {"c1": {"expected": "safe"}},
        config={"labels": ["vulnerable", "safe"], "cases": ["c1", "c9"]},
    )
    with pytest.raises(FormatError, match=r"field 'cases\[1\]': no folder c9/statement/"):
        load_benchmark(root)


def test_empty_benchmark_is_refused(tmp_path: Path) -> None:
    root = write_benchmark(tmp_path / "b", {})
    with pytest.raises(FormatError, match="has no cases"):
        load_benchmark(root)


# -- the in-process cache (by file stamps) -----------------------------------------------------


def _settle_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the cache keep files written a moment ago (it normally waits SETTLED_AFTER_S, 2 s):
    the tests below then see the cache both keep a value and drop it."""
    monkeypatch.setattr(fsutil, "SETTLED_AFTER_S", 0.0)


def _next_tick() -> None:
    """Past the filesystem's timestamp granularity, so an edit moves mtime and ctime."""
    time.sleep(0.05)


def test_a_rubric_edited_in_place_after_loading_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _settle_now(monkeypatch)
    root = write_benchmark(tmp_path / "b", {"a": {"expected": "safe", "notes": "aaaa"}})
    rubric = root / "a" / "rubric" / "rubric.yaml"
    assert load_benchmark(root).cases[0].rubric.notes == "aaaa"
    assert load_benchmark(root).cases[0].rubric.notes == "aaaa"  # kept: the same stamps
    _next_tick()
    with rubric.open("r+", encoding="utf-8") as fh:  # same size, same inode: only times move
        text = fh.read()
        fh.seek(0)
        fh.write(text.replace("aaaa", "bbbb"))
    assert load_benchmark(root).cases[0].rubric.notes == "bbbb"


def test_a_loaded_rubric_is_a_copy_the_cache_does_not_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _settle_now(monkeypatch)
    root = write_benchmark(tmp_path / "b", {"a": {"expected": "safe"}})
    first = load_benchmark(root).cases[0].rubric
    first.expected = "vulnerable"
    first.checks[0].weight = 5.0
    again = load_benchmark(root).cases[0].rubric
    assert again.expected == "safe" and again.checks == [Check()]


def test_a_statement_edited_after_a_clean_check_is_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _settle_now(monkeypatch)
    root = write_benchmark(tmp_path / "b", {"a": {"expected": "safe", "notes": "x"}})
    write_case(
        root,
        "a",
        {"expected": "safe", "checks": [{"kind": "contains", "value": "line 12"}]},
        files={"code.py": "x = 1  # line 13\n"},
    )
    load_benchmark(root)
    load_benchmark(root)  # the clean verdict is kept now
    _next_tick()
    (root / "a" / "statement" / "code.py").write_text("x = 1  # line 12\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"'line 12' appears in statement/code\.py"):
        load_benchmark(root)
    _next_tick()
    (root / "a" / "statement" / "code.py").unlink()
    (root / "a" / "statement" / "notes.txt").write_text("see line 12\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"appears in statement/notes\.txt"):
        load_benchmark(root)  # a file added (and one removed) is seen too


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(tmp_path: Path) -> None:
    # as within one timestamp tick, or a copy that keeps mtimes: files changed in the last
    # SETTLED_AFTER_S are not kept, and a stamp holds the ctime, which nothing sets back
    root = write_benchmark(tmp_path / "b", {"a": {"expected": "safe", "notes": "aaaa"}})
    rubric = root / "a" / "rubric" / "rubric.yaml"
    assert load_benchmark(root).cases[0].rubric.notes == "aaaa"
    stat = rubric.stat()
    rubric.write_text(rubric.read_text(encoding="utf-8").replace("aaaa", "bbbb"))
    os.utime(rubric, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the old mtime, as in one tick
    assert load_benchmark(root).cases[0].rubric.notes == "bbbb"
