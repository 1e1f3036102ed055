"""Importers: run exports, skill-creator evals.json and JSONL/CSV test sets — real files only."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main
from engine.core import importers
from engine.core.benchmark import load_benchmark
from engine.core.errors import FormatError, SkillsmithError
from engine.core.importers import import_cases, import_evals, import_run
from engine.core.results import read_results
from engine.core.runs import RunFolder
from engine.core.workspace import Workspace
from engine.evaluation.grading import grade
from engine.evaluation.llm import OfflineLLM
from engine.evaluation.metrics import metrics
from tests.bench_helpers import labelled_cases, tree_state, write_benchmark

ARTICLE_ROWS = [
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
    {
        "case_id": "biz-vul-003",
        "ground_truth": "false",
        "judge_verdict": "false",
        "pass_fail": "pass",
    },
]
SESSION = [
    {
        "type": "assistant",
        "content": "我来分析",
        "tool_calls": [{"name": "Read", "args": "Pay.java"}],
    },
    {"type": "tool", "tool_name": "Read", "result": "public class Pay {}"},
    {"type": "assistant", "content": "# 审计结论\n存在漏洞"},
]


def _jsonl(items: list[Any]) -> str:
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items)


def _export(root: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    rows = ARTICLE_ROWS if rows is None else rows
    (root / "sessions").mkdir(parents=True)
    (root / "results.jsonl").write_text(_jsonl(rows), encoding="utf-8")
    for row in rows:
        (root / "sessions" / f"{row['case_id']}.jsonl").write_text(_jsonl(SESSION), "utf-8")
    manifest = {"dataset": "营销漏洞", "agent": "claude-code-biz-vul", "judge_model": "m"}
    (root / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False))
    return root


def test_run_export_round_trips(workspace: Workspace, tmp_path: Path) -> None:
    src = _export(tmp_path / "export")
    result = import_run(workspace, src, run_id="glm-v1")
    run = workspace.runs_dir / "glm-v1"
    assert result.path == run and result.count == 3
    rows = read_results(run / "results.jsonl")
    assert [r["case_id"] for r in rows] == [r["case_id"] for r in ARTICLE_ROWS]
    assert rows[1]["failure_kind"] == "FN" and rows[1]["score"] == 0.0 and rows[0]["score"] == 1.0
    assert rows[0]["session_file"] == "sessions/biz-vul-001.jsonl"
    assert rows[0]["session_id"] == "glm-v1/biz-vul-001.0"
    assert (run / rows[0]["session_file"]).read_text("utf-8") == _jsonl(SESSION)
    manifest = json.loads((run / "manifest.json").read_text("utf-8"))
    assert manifest["agent"] == "claude-code-biz-vul" and manifest["benchmark"] == "营销漏洞"
    assert manifest["run_id"] == "glm-v1" and manifest["status"] == "finished"
    m = metrics(rows, "true")
    assert (m.tp, m.fn, m.tn, m.fp) == (1, 1, 1, 0)
    # The runner's reader accepts the imported folder too.
    assert len(RunFolder(run).latest_rows()) == 3
    with pytest.raises(SkillsmithError, match="already exists"):
        import_run(workspace, src, run_id="glm-v1")


def test_zip_export_and_errors_name_the_member(workspace: Workspace, tmp_path: Path) -> None:
    src = _export(tmp_path / "export")
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for file in sorted(src.rglob("*")):
            zf.write(file, Path("export") / file.relative_to(src))
    assert import_run(workspace, archive, run_id="zipped").count == 3
    (src / "results.jsonl").write_text(_jsonl(ARTICLE_ROWS[:1]) + "{oops\n")
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        for file in sorted(src.rglob("*")):
            zf.write(file, file.relative_to(src))
    with pytest.raises(FormatError, match=r"bad\.zip!results\.jsonl:2: line is not valid JSON"):
        import_run(workspace, bad, run_id="bad")
    assert sorted(p.name for p in workspace.runs_dir.iterdir()) == ["zipped"]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda src: (src / "results.jsonl").write_text(
                _jsonl(ARTICLE_ROWS[:2]) + '{"case_id": "x", "pass_fail": "maybe"}\n'
            ),
            r"export/results\.jsonl:3: field 'pass_fail'",
        ),
        (
            lambda src: (src / "sessions" / "biz-vul-002.jsonl").unlink(),
            r"results\.jsonl:2: field 'case_id': no session file sessions/biz-vul-002\.jsonl",
        ),
        (
            lambda src: (src / "sessions" / "biz-vul-003.jsonl").write_text(
                _jsonl(SESSION) + '{"content": "no type"}\n'
            ),
            r"sessions/biz-vul-003\.jsonl:4: field 'type'",
        ),
        (
            lambda src: (src / "results.jsonl").write_text(
                _jsonl([*ARTICLE_ROWS, ARTICLE_ROWS[0]])
            ),
            r"results\.jsonl:4: field 'case_id': duplicate",
        ),
        (
            lambda src: (src / "manifest.json").write_text("{\n  'x'\n}"),
            r"manifest\.json:2: invalid JSON",
        ),
    ],
)
def test_bad_export_writes_nothing(
    workspace: Workspace, tmp_path: Path, mutate: Any, message: str
) -> None:
    src = _export(tmp_path / "export")
    mutate(src)
    before = tree_state(workspace.root)
    with pytest.raises(FormatError, match=message) as err:
        import_run(workspace, src, run_id="r1")
    assert "\n" not in str(err.value)
    assert tree_state(workspace.root) == before
    assert list(workspace.runs_dir.iterdir()) == []


def test_run_import_against_a_benchmark(workspace: Workspace, tmp_path: Path) -> None:
    write_benchmark(workspace.benchmarks_dir / "vuln", labelled_cases(3, 3))
    rows = [
        {"case_id": "vuln-000", "ground_truth": "vulnerable", "judge_verdict": "vulnerable",
         "pass_fail": "pass"},
        {"case_id": "nope", "ground_truth": "safe", "judge_verdict": "safe", "pass_fail": "pass"},
    ]  # fmt: skip
    src = _export(tmp_path / "export", rows)
    with pytest.raises(FormatError, match=r"results\.jsonl:2: field 'case_id': not a case of"):
        import_run(workspace, src, bench="vuln", run_id="r1")
    (src / "results.jsonl").write_text(_jsonl(rows[:1]))
    import_run(workspace, src, bench="vuln", run_id="r1")
    row = read_results(workspace.runs_dir / "r1" / "results.jsonl")[0]
    bench = load_benchmark(workspace.benchmarks_dir / "vuln")
    assert row["split"] == bench.case("vuln-000").split
    manifest = json.loads((workspace.runs_dir / "r1" / "manifest.json").read_text())
    assert manifest["benchmark"] == "vuln"


def _evals(root: Path, evals: list[dict[str, Any]]) -> Path:
    (root / "evals" / "files").mkdir(parents=True)
    (root / "evals" / "files" / "sales.csv").write_text("region,total\nnorth,3\n")
    path = root / "evals" / "evals.json"
    path.write_text(json.dumps({"skill_name": "csv-report", "evals": evals}, indent=2))
    return path


EVALS = [
    {
        "id": 1,
        "prompt": "Summarise the sales file by region.",
        "expected_output": "A table with one row per region",
        "files": ["evals/files/sales.csv"],
        "expectations": ["The output names the north region", "The output gives total 3"],
    },
    {"id": 2, "prompt": "Say hello.", "expected_output": "A greeting", "assertions": ["Greets"]},
]


def test_skill_creator_evals_round_trip(workspace: Workspace, tmp_path: Path) -> None:
    path = _evals(tmp_path / "skill", EVALS)
    result = import_evals(workspace, path, bench="csv")
    bench = load_benchmark(result.path)
    assert [c.id for c in bench.cases] == ["eval-1", "eval-2"] and bench.labels == []
    one = bench.case("eval-1")
    assert one.prompt() == "Summarise the sales file by region.\n"
    # The file keeps the path the skill folder gives it (evals/files/sales.csv).
    assert (one.statement_dir / "evals/files/sales.csv").read_text().startswith("region,total")
    assert [c.criteria for c in one.rubric.checks] == EVALS[0]["expectations"]
    assert bench.case("eval-2").rubric.checks[0].criteria == "Greets"

    def judge(system: str, messages: list[dict[str, Any]]) -> str:
        text = str(messages[0]["content"])
        if "north" in text.split("<answer>")[0]:
            return "PASS north named" if "north" in text.split("<answer>")[1] else "FAIL"
        return "PASS" if "3" in text.split("<answer>")[1] else "FAIL"

    g = grade(bench, one, "north: 3", llm=OfflineLLM(judge))
    assert g.passed and [c.passed for c in g.checks] == [True, True]
    assert not grade(bench, one, "south: 4", llm=OfflineLLM(judge)).passed


@pytest.mark.parametrize(
    ("evals", "message"),
    [
        (
            [{"id": 1, "prompt": 7, "expectations": ["y"]}],
            r"evals\.json:6: field 'evals\[0\]\.prompt'",
        ),
        ([{"id": 1, "prompt": "x"}], r"'evals\[0\]': expected expectations"),
        ([{"id": 1, "prompt": "x", "expectations": ["y"], "files": ["no.csv"]}], r"files\[0\]"),
        ([{"id": 1, "prompt": "x", "expectations": ["y"]}] * 2, r"'evals\[1\]\.id': expected a"),
        ([], r"field 'evals': expected at least one"),
    ],
)
def test_bad_evals_write_nothing(
    workspace: Workspace, tmp_path: Path, evals: list[dict[str, Any]], message: str
) -> None:
    path = _evals(tmp_path / "skill", evals)
    with pytest.raises(FormatError, match=message):
        import_evals(workspace, path, bench="csv")
    assert list(workspace.benchmarks_dir.iterdir()) == []
    path.write_text('{"evals": [\n  {"id": 1,}\n]}')
    with pytest.raises(FormatError, match=r"evals\.json:2: invalid JSON"):
        import_evals(workspace, path, bench="csv")


def test_jsonl_cases_with_labels(workspace: Workspace, tmp_path: Path) -> None:
    src = tmp_path / "cases.jsonl"
    records = [
        {"id": f"c{i}", "input": f"Is snippet {i} exploitable?\n\nx = {i}", "expected": label}
        for i, label in enumerate(["vulnerable", "safe"] * 5)
    ]
    records[0]["critical"] = True
    records[1]["type"] = "xss"
    src.write_text(_jsonl(records))
    result = import_cases(workspace, src, bench="mini", labels=["vulnerable", "safe"], seed=3)
    bench = load_benchmark(result.path)
    assert bench.labels == ["vulnerable", "safe"] and bench.seed == 3 and len(bench.cases) == 10
    c0, c1 = bench.case("c0"), bench.case("c1")
    assert c0.rubric.critical and c1.rubric.type == "xss" and c0.rubric.expected == "vulnerable"
    assert "VERDICT: <label>" in c0.prompt() and "vulnerable, safe" in c0.prompt()
    assert grade(bench, c0, "VERDICT: vulnerable").passed
    assert grade(bench, c1, "VERDICT: vulnerable").failure_kind == "FP"


def test_csv_cases_without_labels(workspace: Workspace, tmp_path: Path) -> None:
    src = tmp_path / "qa.csv"
    src.write_text('input,expected\n"Capital of France, in one word?",Paris\nTwo plus two?,four\n')
    bench = load_benchmark(import_cases(workspace, src, bench="qa").path)
    assert [c.id for c in bench.cases] == ["case-001", "case-002"]
    first = bench.case("case-001")
    assert first.rubric.checks[0].kind == "contains"
    assert grade(bench, first, "It is Paris.").passed
    assert not grade(bench, first, "Parisian food").passed


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("a.csv", "input,answer\nx,y\n", r"a\.csv:1: field 'expected': missing column"),
        ("a.csv", "input,expected\nx,y\nz,\n", r"a\.csv:3: field 'expected': expected a non-empty"),
        ("a.jsonl", '{"input": "x", "expected": "y"}\n{"input": "z"\n', r"a\.jsonl:2: line is not"),
        ("a.jsonl", '{"input": "x", "expected": "y", "files": 1}\n', r"a\.jsonl:1: field 'files'"),
        ("a.csv", 'input,expected\n"open quote,y\n', r"a\.csv:2: malformed CSV"),
        ("a.jsonl", '{"id": "a b", "input": "x", "expected": "y"}\n', r"a\.jsonl:1: field 'id'"),
        # The leak check runs on the staged benchmark: the answer is in the question.
        (
            "a.jsonl",
            '{"input": "Is Paris the capital?", "expected": "Paris"}\n',
            r"a\.jsonl:1: .*appears",
        ),
    ],
)
def test_bad_case_files_write_nothing(
    workspace: Workspace, tmp_path: Path, name: str, text: str, message: str
) -> None:
    src = tmp_path / name
    src.write_text(text)
    before = tree_state(workspace.root)
    with pytest.raises(FormatError, match=message):
        import_cases(workspace, src, bench="x")
    assert tree_state(workspace.root) == before
    assert list(workspace.benchmarks_dir.iterdir()) == []


def test_import_command(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "cases.jsonl"
    src.write_text(
        _jsonl([{"input": "q?", "expected": "safe"}, {"input": "r?", "expected": "safe"}])
    )
    ws = str(workspace.root)
    code = main(["import", "cases", str(src), "--bench", "b1", "--labels", "vulnerable,safe",
                 "-w", ws, "--json"])  # fmt: skip
    assert code == 0
    assert json.loads(capsys.readouterr().out)["count"] == 2
    assert main(["import", "run", str(_export(tmp_path / "e")), "--run-id", "r9", "-w", ws]) == 0
    assert capsys.readouterr().out == f"imported 3 rows into {workspace.runs_dir / 'r9'}\n"
    assert main(["import", "cases", str(src), "-w", ws]) == 2
    assert capsys.readouterr().err == "skillsmith: error: import cases: --bench ID is required\n"
    assert main(["import", "cases", str(src), "--bench", "b1", "-w", ws]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists" in err


DATA = Path(__file__).parent / "data" / "importers"


def test_csv_multiline_cells_and_input_files(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = DATA / "cases" / "support.csv"
    code = main(["import", "cases", str(src), "--bench", "support", "-w", str(workspace.root)])
    assert code == 0
    warning = capsys.readouterr().err
    assert warning == (
        f"skillsmith: warning: {src}:2: field 'refund-1.owner': unknown key (2 times), "
        "kept aside in benchmarks/support/import-extras.yaml\n"
    )
    bench = load_benchmark(workspace.benchmarks_dir / "support")
    one, two = bench.case("refund-1"), bench.case("refund-2")
    # The quoted cell keeps its line breaks and its blank line (CRLF read as text: LF).
    assert one.prompt_path.read_bytes().startswith(
        b"Read the ticket and the orders table.\n\nHow much was the customer charged"
    )
    statement = sorted(p.relative_to(one.statement_dir).as_posix()
                       for p in one.statement_dir.rglob("*") if p.is_file())  # fmt: skip
    assert statement == ["inputs/orders.csv", "inputs/ticket.txt", "prompt.md"]
    assert (one.statement_dir / "inputs" / "ticket.txt").read_bytes() == (
        DATA / "cases" / "inputs" / "ticket.txt"
    ).read_bytes()
    # A folder per case: its contents become the statement, so the prompt's path exists.
    assert "task/Refund.java" in two.prompt()
    assert (two.statement_dir / "task" / "Refund.java").is_file()
    extras = yaml.safe_load((bench.root / "import-extras.yaml").read_text())
    assert extras["unknown_keys"] == {"refund-1.owner": "alice", "refund-2.owner": "bob"}
    assert grade(bench, one, "240").passed and not grade(bench, one, "120").passed

    # An error after a multi-line cell names the line the record starts on (6, not 3).
    broken = tmp_path / "cases" / "support.csv"
    shutil.copytree(DATA / "cases", broken.parent)
    broken.write_bytes(src.read_bytes().replace(b",twice,", b",,"))
    with pytest.raises(FormatError, match=r"support\.csv:6: field 'expected'"):
        import_cases(workspace, broken, bench="again")


def _case_file(tmp_path: Path, files: Any) -> Path:
    (tmp_path / "set").mkdir()
    (tmp_path / "vault").mkdir()
    (tmp_path / "vault" / "anthropic_api_key").write_text("sk-ant-not-for-agents")
    src = tmp_path / "set" / "cases.jsonl"
    src.write_text(_jsonl([{"input": "q1", "expected": "safe"},
                           {"input": "q2", "expected": "safe", "files": files}]))  # fmt: skip
    return src


@pytest.mark.parametrize(
    ("files", "kind"),
    [
        (["/etc/passwd"], "evals"),
        (["../../vault/anthropic_api_key"], "evals"),
        (["evals/files/../../../vault/anthropic_api_key"], "evals"),
        (["link.txt"], "evals"),
        ("/etc/passwd", "cases"),
        (["../vault/anthropic_api_key"], "cases"),
    ],
)
def test_input_files_outside_their_folder_are_refused(
    workspace: Workspace, tmp_path: Path, files: Any, kind: str
) -> None:
    if kind == "evals":
        path = _evals(tmp_path / "skill", [{"id": 1, "prompt": "x", "expectations": ["y"]},
                                           {"id": 2, "prompt": "x", "expectations": ["y"],
                                            "files": files}])  # fmt: skip
        (tmp_path / "vault").mkdir()
        (tmp_path / "vault" / "anthropic_api_key").write_text("sk-ant-not-for-agents")
        (path.parent / "link.txt").symlink_to(tmp_path / "vault" / "anthropic_api_key")
        where = r"evals\.json:18: field 'evals\[1\]\.files\[0\]'"
    else:
        path = _case_file(tmp_path, files)
        where = r"cases\.jsonl:2: field 'files\[0\]'"
    name = files if isinstance(files, str) else files[0]
    before = tree_state(workspace.root)
    with pytest.raises(FormatError, match=rf"{where}: '{re.escape(name)}' lies outside") as err:
        (import_evals if kind == "evals" else import_cases)(workspace, path, bench="b")
    assert "\n" not in str(err.value)
    assert tree_state(workspace.root) == before


def test_real_evals_file_keeps_paths_and_sets_unknown_keys_aside(workspace: Workspace) -> None:
    src = DATA / "pdf-skill" / "evals" / "evals.json"
    result = import_evals(workspace, src, bench="pdf")
    assert result.warnings == [
        f"{src}:3: field 'version': unknown key, kept aside in benchmarks/pdf/import-extras.yaml",
        f"{src}:7: field 'evals[0].category': unknown key (2 times), kept aside in "
        "benchmarks/pdf/import-extras.yaml",
        f"{src}:19: field 'evals[1].must_have': unknown key, kept aside in "
        "benchmarks/pdf/import-extras.yaml",
    ]
    bench = load_benchmark(result.path)
    one, two = bench.case("eval-1"), bench.case("eval-2")
    # The prompt's own path names a file of the statement, as it did in the skill folder.
    assert "evals/files/report.pdf" in one.prompt()
    report = one.statement_dir / "evals" / "files" / "report.pdf"
    assert report.read_bytes() == (src.parent / "files" / "report.pdf").read_bytes()
    # Two files called data.csv in different folders both arrive, each at its own path.
    q1 = two.statement_dir / "evals" / "files" / "q1" / "data.csv"
    q2 = two.statement_dir / "files" / "q2" / "data.csv"
    assert q1.read_text() != q2.read_text()
    assert q2.read_bytes() == (src.parent / "files" / "q2" / "data.csv").read_bytes()
    extras = yaml.safe_load((bench.root / "import-extras.yaml").read_text())["unknown_keys"]
    assert extras == {"version": "1.2", "evals[0].category": "extraction",
                      "evals[1].category": "merge", "evals[1].must_have": ["row ids"]}  # fmt: skip


def test_leak_error_names_the_source_line_not_the_staging_copy(
    workspace: Workspace, tmp_path: Path
) -> None:
    src = tmp_path / "labels.jsonl"
    src.write_text(_jsonl([{"input": "q", "expected": "safe"},
                           {"input": "Is Paris the capital?", "expected": "Paris"}]))  # fmt: skip
    with pytest.raises(FormatError) as err:
        import_cases(workspace, src, bench="x")
    assert str(err.value).startswith(f"{src}:2: field 'expected': private rubric text 'paris'")
    assert ".import-" not in str(err.value) and err.value.path == src and err.value.line == 2


def _zip_of_zeros(path: Path, size: int) -> None:
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("results.jsonl", "w") as f:
        for _ in range(size >> 20):
            f.write(chunk)


def _refused_by_the_cli(
    workspace: Workspace, capsys: pytest.CaptureFixture[str], archive: Path, message: str
) -> None:
    """``skillsmith import run`` of ``archive``: exit 1, one line holding ``message``."""
    capsys.readouterr()
    assert main(["import", "run", str(archive), "-w", str(workspace.root)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err


def test_zip_bomb_and_duplicates_are_refused_before_unpacking(
    workspace: Workspace,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = tree_state(workspace.root)
    bomb = tmp_path / "bomb.zip"
    _zip_of_zeros(bomb, 64 << 20)  # the cap reads the directory: any size is refused as fast
    assert bomb.stat().st_size < 2 << 20
    with pytest.raises(FormatError, match=r"bomb\.zip: field 'results\.jsonl': compression ratio"):
        import_run(workspace, bomb, run_id="r1")
    _refused_by_the_cli(workspace, capsys, bomb, "compression ratio")

    src = _export(tmp_path / "export")
    twice = tmp_path / "twice.zip"
    with zipfile.ZipFile(twice, "w") as zf, pytest.warns(UserWarning, match="Duplicate name"):
        zf.write(src / "results.jsonl", "results.jsonl")
        zf.writestr("results.jsonl", _jsonl(ARTICLE_ROWS[:1]))
    with pytest.raises(FormatError, match=r"twice\.zip: field 'results\.jsonl': duplicate zip"):
        import_run(workspace, twice, run_id="r2")
    _refused_by_the_cli(workspace, capsys, twice, "duplicate zip member name")

    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as zf:
        for file in sorted(src.rglob("*")):
            zf.write(file, file.relative_to(src))
    monkeypatch.setattr(importers, "MAX_ZIP_MEMBERS", 3)
    with pytest.raises(FormatError, match=r"many\.zip: zip holds 6 members \(at most 3\)"):
        import_run(workspace, many, run_id="r3")
    monkeypatch.setattr(importers, "MAX_ZIP_MEMBERS", 100)
    monkeypatch.setattr(importers, "MAX_ZIP_BYTES", 100)
    with pytest.raises(FormatError, match=r"many\.zip: zip inflates to more than"):
        import_run(workspace, many, run_id="r3")
    assert list(workspace.runs_dir.iterdir()) == []
    assert tree_state(workspace.root) == before  # byte for byte, and not touched


@pytest.mark.parametrize("kind", ["cases", "evals", "run"])
def test_a_path_too_long_is_one_short_line(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path = tmp_path / ("a" * 6000 + ".csv")
    before = tree_state(workspace.root)
    assert main(["import", kind, str(path), "--bench", "b", "-w", str(workspace.root)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 300 and "File name too long" in err
    assert tree_state(workspace.root) == before


def test_a_killed_imports_stage_is_removed_when_the_workspace_next_opens(
    workspace: Workspace,
) -> None:
    """An import fills ``benchmarks/.import-*/<id>`` under the workspace lock; a kill leaves the
    stage behind, and the next opening (which takes that lock) removes it and nothing else."""
    for folder in (workspace.benchmarks_dir, workspace.runs_dir):
        stage = folder / ".import-0badf00d" / "half-done"
        stage.mkdir(parents=True)
        (stage / "cases.jsonl").write_text('{"id": "a"}\n')
    kept = workspace.benchmarks_dir / ".notes"
    kept.mkdir()

    Workspace.at(workspace.root)

    assert not (workspace.benchmarks_dir / ".import-0badf00d").exists()
    assert not (workspace.runs_dir / ".import-0badf00d").exists()
    assert kept.is_dir()
