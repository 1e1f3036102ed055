"""``skillsmith demo``: the bundled workspace is copied whole, valid and loadable."""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.benchmark import load_benchmark
from engine.core.skill import SkillDoc
from engine.core.workspace import LAYOUT_DIRS, Workspace
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL, copy_demo
from engine.evaluation.demo.tools import tool_of

LANGUAGES = {".py", ".js", ".java", ".go", ".php"}


def test_demo_no_tui_creates_a_valid_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "demo"
    assert main(["demo", str(target), "--no-tui"]) == 0
    assert capsys.readouterr().out.strip() == str(target.resolve())
    ws = Workspace.at(target)
    cfg = ws.load_config()
    assert cfg.agent.kind == "demo"
    assert {m.provider for m in vars(cfg.models).values()} == {"offline"}
    for name in LAYOUT_DIRS:
        assert (ws.root / name).is_dir()
    assert (ws.vault_dir.stat().st_mode & 0o777) == 0o700
    assert ws.agents_md.is_file()
    assert ws.skill_names() == [DEMO_SKILL]
    assert not list(ws.root.rglob(".*"))  # no hidden leftovers (caches, editor files)


def test_the_skill_is_a_realistic_numbered_procedure(tmp_path: Path) -> None:
    ws = Workspace.at(copy_demo(tmp_path / "demo"))
    doc = SkillDoc.load(ws.skill_path(DEMO_SKILL))
    assert doc.name == DEMO_SKILL
    assert "audit" in (doc.description or "")
    assert doc.section("when_to_use") and doc.section("pitfalls")
    assert len(doc.steps) >= 8
    for step in doc.steps:
        spans = re.findall(r"`([^`]+)`", step.text)
        assert any(tool_of(s) for s in spans), f"step {step.number} names no command"


def test_the_benchmark_covers_languages_families_and_near_misses(tmp_path: Path) -> None:
    ws = Workspace.at(copy_demo(tmp_path / "demo"))
    bench = load_benchmark(ws.benchmarks_dir / DEMO_BENCHMARK)
    assert bench.labels == ["vulnerable", "safe"]
    assert bench.runs_per_case == 2
    assert len(bench.cases) >= 60
    languages: Counter[str] = Counter()
    by_type: dict[str, Counter[str]] = {}
    for case in bench.cases:
        files = [p for p in case.statement_dir.iterdir() if p.suffix in LANGUAGES]
        assert len(files) == 1, case.id
        languages[files[0].suffix] += 1
        prompt = (case.statement_dir / "prompt.md").read_text()
        assert f"`{files[0].name}`" in prompt or f"/{files[0].name}`" in prompt
        assert case.rubric.type is not None
        by_type.setdefault(case.rubric.type, Counter())[str(case.rubric.expected)] += 1
    assert len(languages) >= 3 and min(languages.values()) >= 10
    assert len(by_type) >= 5
    for family, labels in by_type.items():
        assert labels["vulnerable"] >= 2 and labels["safe"] >= 2, family
    assert any(c.rubric.critical for c in bench.cases)
    assert {c.split for c in bench.cases} == {"selection", "holdout", "golden"}


def test_demo_refuses_a_folder_that_is_not_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    assert main(["demo", str(target), "--no-tui"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not empty" in err and str(target) in err
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".busy")]


def test_demo_fills_an_empty_folder(tmp_path: Path) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    assert copy_demo(target) == target.resolve()
    assert Workspace.at(target).skill_names() == [DEMO_SKILL]


def test_default_folder_is_a_new_demo_n_in_the_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert main(["demo", "--no-tui"]) == 0
    assert main(["demo", "--json"]) == 0
    out = capsys.readouterr().out
    first, rest = out.split("\n", 1)
    base = tmp_path / "data" / "skillsmith"
    assert first == str(base / "demo-1")
    assert json.loads(rest) == {"workspace": str(base / "demo-2")}
    assert Workspace.at(base / "demo-2").skill_names() == [DEMO_SKILL]


def test_demo_opens_the_tui_on_the_copy(tmp_path: Path) -> None:
    opened: list[Path] = []

    def open_tui(ws: Workspace, args: argparse.Namespace) -> int:
        opened.append(ws.root)
        return 7

    assert main(["demo", str(tmp_path / "d")], open_tui=open_tui) == 7
    assert opened == [(tmp_path / "d").resolve()]
