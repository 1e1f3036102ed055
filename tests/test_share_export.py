"""``skillsmith export RUN --format skill-creator DIR``: skill-creator's layout and shapes.

Every exported file is validated against the JSON Schemas of docs/export.md (the page a user
reads, written from skill-creator's published references/schemas.md), and the evals.json comes
back through ``skillsmith import evals`` as the same cases.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from engine.core.benchmark import load_benchmark
from engine.core.results import read_results
from engine.core.runs import latest_of
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_BENCHMARK
from tests.evolve_helpers import demo
from tests.share_helpers import ROOT, SECRET, cli

DOCS = ROOT / "docs" / "export.md"


def schemas() -> dict[str, Any]:
    """``<!-- schema: NAME -->`` followed by a ```json block, for each NAME of the page."""
    text = DOCS.read_text(encoding="utf-8")
    found = re.findall(r"<!-- schema: (\S+) -->\s*```json\n(.*?)```", text, re.S)
    return {name: json.loads(body) for name, body in found}


CASES = "deser-py-pickle,path-js-root,crypto-go-des,path-go-join"


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, str]:
    """A demo run of four cases, twice each, with and without the skill (seed fixed only so the
    run is the same every time; the test reads shapes, not outcomes)."""
    ws = demo(tmp_path_factory.mktemp("export") / "ws", ("deser", "path", "crypto"))
    done = cli(ws, "eval", DEMO_BENCHMARK, "--cases", CASES, "--runs", "2", "--baseline", "none",
               "--seed", "5", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return ws, str(json.loads(done.stdout)["run_id"])


def test_the_export_has_skill_creators_layout_and_shapes(
    evaluated: tuple[Workspace, str], tmp_path: Path
) -> None:
    ws, run_id = evaluated
    shapes = schemas()
    assert set(shapes) == {
        "grading.json",
        "timing.json",
        "eval_metadata.json",
        "metrics.json",
        "evals.json",
    }
    session = next((ws.runs_dir / run_id / "sessions").glob("path-js-root.0.jsonl"))
    (ws.vault_dir / "report_token").write_text(SECRET + "\n", encoding="utf-8")
    with session.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "assistant", "content": f"{SECRET}\nVERDICT: safe"}) + "\n")
    dest = tmp_path / "iteration-1"
    done = cli(ws, "export", run_id, "--format", "skill-creator", str(dest))
    assert done.returncode == 0, done.stderr
    rows = latest_of(read_results(ws.runs_dir / run_id / "results.jsonl")).values()
    cases = CASES.split(",")
    evals = sorted(dest.glob("eval-*"), key=lambda p: int(p.name.split("-")[1]))
    assert [p.name for p in evals] == [f"eval-{n}" for n in range(1, len(cases) + 1)]
    seen_cases = set()
    runs = 0
    for eval_dir in evals:
        meta = json.loads((eval_dir / "eval_metadata.json").read_text())
        jsonschema.validate(meta, shapes["eval_metadata.json"])
        assert meta["eval_id"] == int(eval_dir.name.split("-")[1])
        seen_cases.add(meta["eval_name"])
        for config, variant in (("with_skill", "skill"), ("without_skill", "baseline")):
            assert sorted(p.name for p in (eval_dir / config).iterdir()) == ["run-1", "run-2"]
            for run_dir in (eval_dir / config).iterdir():
                runs += 1
                grading = json.loads((run_dir / "grading.json").read_text())
                jsonschema.validate(grading, shapes["grading.json"])
                jsonschema.validate(
                    json.loads((run_dir / "timing.json").read_text()), shapes["timing.json"]
                )
                jsonschema.validate(
                    json.loads((run_dir / "outputs" / "metrics.json").read_text()),
                    shapes["metrics.json"],
                )
                assert json.loads((run_dir / "eval_metadata.json").read_text()) == meta
                row = next(
                    r
                    for r in rows
                    if r["case_id"] == meta["eval_name"]
                    and r["variant"] == variant
                    and r["run_index"] + 1 == int(run_dir.name.split("-")[1])
                )
                want = [
                    {"text": c["text"], "passed": c["passed"], "evidence": c["evidence"]}
                    for c in row["checks"]
                ]
                assert grading["expectations"] == want
                assert grading["summary"]["passed"] == sum(c["passed"] for c in want)
                timing = json.loads((run_dir / "timing.json").read_text())
                assert timing["duration_ms"] == row["duration_ms"]
                assert timing["total_tokens"] == sum(row["tokens"].values())
                transcript = (run_dir / "transcript.md").read_text()
                assert "## Eval Prompt" in transcript
                assert SECRET not in transcript
                assert SECRET not in (run_dir / "outputs" / "answer.md").read_text()
    assert seen_cases == set(cases)
    assert runs == len(rows) == 16
    evalset = json.loads((dest / "evals" / "evals.json").read_text())
    jsonschema.validate(evalset, shapes["evals.json"])
    for ev in evalset["evals"]:
        for name in ev["files"]:
            assert (dest / "evals" / name).is_file()


def test_the_exported_evals_come_back_through_import_evals(
    evaluated: tuple[Workspace, str], tmp_path: Path
) -> None:
    ws, run_id = evaluated
    dest = tmp_path / "sc"
    assert cli(ws, "export", run_id, "--format", "skill-creator", str(dest)).returncode == 0
    done = cli(ws, "import", "evals", str(dest / "evals" / "evals.json"), "--bench", "back")
    assert done.returncode == 0, done.stderr
    source = load_benchmark(ws.benchmarks_dir / DEMO_BENCHMARK)
    back = load_benchmark(ws.benchmarks_dir / "back")
    metas = {
        json.loads((p / "eval_metadata.json").read_text())["eval_id"]: p
        for p in dest.glob("eval-*")
    }
    assert len(back.cases) == len(metas) == 4
    for case in back.cases:
        n = int(case.id.split("-")[1])
        original = source.case(
            json.loads((metas[n] / "eval_metadata.json").read_text())["eval_name"]
        )
        assert case.prompt() == original.prompt()
        # a label is exported as what its check says (docs/export.md says why)
        assert case.rubric.expected == f"verdict is {original.rubric.expected!r}"
        assert [c.criteria for c in case.rubric.checks] == [
            c.describe(original.rubric.expected) for c in original.rubric.checks
        ]
        files = sorted(p.name for p in case.statement_dir.iterdir() if p.name != "prompt.md")
        assert files == sorted(
            p.name for p in original.statement_dir.iterdir() if p.name != "prompt.md"
        )


def test_an_export_into_a_folder_with_files_writes_nothing(
    evaluated: tuple[Workspace, str], tmp_path: Path
) -> None:
    ws, run_id = evaluated
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    done = cli(ws, "export", run_id, "--format", "skill-creator", str(tmp_path / "busy"))
    assert done.returncode == 1
    assert "exists and is not an empty folder" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy"]
    assert [p.name for p in (tmp_path / "busy").iterdir()] == ["notes.txt"]


def test_kept_outputs_reach_the_report_and_the_export_and_links_are_not_followed(
    evaluated: tuple[Workspace, str], tmp_path: Path
) -> None:
    ws, run_id = evaluated
    rows = read_results(ws.runs_dir / run_id / "results.jsonl")
    row = next(r for r in rows if r["pass_fail"] == "fail")  # the report shows failing units
    stem = Path(row["session_file"]).stem
    folder = ws.runs_dir / run_id / "outputs" / stem  # the unit's kept outputs
    folder.mkdir(parents=True)
    (folder / "findings.md").write_text("what the agent wrote down\n", encoding="utf-8")
    outside = tmp_path / "outside.txt"
    outside.write_text("NOT-FOR-THE-REPORT", encoding="utf-8")
    (folder / "escape.txt").symlink_to(outside)
    page = tmp_path / "run.html"
    assert cli(ws, "report", run_id, "-o", str(page)).returncode == 0
    dest = tmp_path / "sc"
    assert cli(ws, "export", run_id, "--format", "skill-creator", str(dest)).returncode == 0
    text = page.read_text(encoding="utf-8")
    assert "what the agent wrote down" in text
    assert "escape.txt" in text and "not followed" in text
    assert "NOT-FOR-THE-REPORT" not in text
    meta = {
        json.loads((p / "eval_metadata.json").read_text())["eval_name"]: p
        for p in dest.glob("eval-*")
    }
    config = "with_skill" if row["variant"] == "skill" else "without_skill"
    run = meta[row["case_id"]] / config / f"run-{row['run_index'] + 1}"
    assert (run / "outputs" / "findings.md").read_text() == "what the agent wrote down\n"
    assert not (run / "outputs" / "escape.txt").exists()
    grading = json.loads((run / "grading.json").read_text())
    assert grading["user_notes_summary"]["needs_review"] == [
        "links in the outputs, not followed: escape.txt"
    ]
    assert json.loads((run / "outputs" / "metrics.json").read_text())["files_created"] == [
        "findings.md"
    ]
