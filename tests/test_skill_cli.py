"""``skillsmith skill lint|render`` as a user runs them: exit codes, output lines, exact bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from tests.conftest import REAL_STYLE, REAL_STYLE_FILES

CORPUS = Path(__file__).parent / "data" / "skills"
ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", "skill", *args],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_render_check_passes_on_every_real_and_corpus_skill() -> None:
    result = _run("render", "--check", str(REAL_STYLE), str(CORPUS))
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    expected = len(REAL_STYLE_FILES) + len(list(CORPUS.glob("*/SKILL.md")))
    assert len(lines) == expected
    assert all(line.endswith(": byte-identical") for line in lines)


@pytest.mark.parametrize("name", ["crlf-endings", "bom-start", "mixed-eol", "no-final-newline"])
def test_render_prints_the_exact_bytes(name: str) -> None:
    path = CORPUS / name / "SKILL.md"
    result = _run("render", str(path))
    assert result.returncode == 0
    assert result.stdout == path.read_bytes()


def test_lint_real_skills_exits_0_and_prints_verify_scores() -> None:
    result = _run("lint", str(REAL_STYLE))
    assert result.returncode == 0, result.stdout.decode()
    out = result.stdout.decode().splitlines()
    scores = [line for line in out if ": verify score " in line]
    assert len(scores) == len(REAL_STYLE_FILES)
    assert not [line for line in out if ": error " in line]


def _unsafe(tmp_path: Path) -> Path:
    path = tmp_path / "cleanup" / "SKILL.md"
    path.parent.mkdir()
    path.write_text(
        "---\nname: cleanup\ndescription: Cleans disks. Use when space runs out.\nfoo: 1\n---\n\n"
        "## Steps\n\n1. Run `rm -rf ./build`.\n2. Run `rm -rf ~`.\n",
        encoding="utf-8",
    )
    return path


def test_lint_errors_exit_1_with_one_line_per_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _unsafe(tmp_path)
    assert main(["skill", "lint", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"{path}:4: warning spec.unknown_key unknown frontmatter key 'foo' "
        "(known: name, description, license, allowed-tools, metadata, compatibility, "
        "when_to_use, version, argument-hint, arguments, disable-model-invocation, "
        "user-invocable, model, effort, context, agent, hooks, paths, shell, disallowed-tools)"
    )
    assert out[1].startswith(f"{path}:10: error destructive.rm_rf recursive delete")
    assert out[2].startswith(f"{path}: verify score ")
    assert len(out) == 3


def test_lint_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _unsafe(tmp_path)
    good = REAL_STYLE / "team-updates"
    assert main(["skill", "lint", "--json", str(path), str(good)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == 1
    first, second = data["files"]
    assert first["path"] == str(path)
    assert [(f["rule_id"], f["severity"], f["line"]) for f in first["findings"]] == [
        ("spec.unknown_key", "warning", 4),
        ("destructive.rm_rf", "error", 10),
    ]
    assert second["path"] == str(good / "SKILL.md")
    assert second["errors"] == 0
    assert second["verify"]["score"] == sum(i["points"] for i in second["verify"]["items"])
    assert len(second["verify"]["items"]) == 8


def test_lint_reports_an_unreadable_file_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad" / "SKILL.md"
    bad.parent.mkdir()
    bad.write_bytes(b"---\nname: bad\n---\n\xff\n")
    good = REAL_STYLE / "visual-direction" / "SKILL.md"
    assert main(["skill", "lint", str(bad), str(good)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{bad}:4: error file.unreadable file is not UTF-8 text"
    assert out[1].startswith(f"{good}: verify score ")


def test_render_refuses_bad_yaml_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broken" / "SKILL.md"
    path.parent.mkdir()
    path.write_text("---\nname: broken\ndescription: [x\n---\n", encoding="utf-8")
    result = _run("render", "--check", str(path))
    assert result.returncode == 1
    err = result.stderr.decode()
    assert err.count("\n") == 1
    assert err.startswith(f"skillsmith: error: {path}:4: field 'frontmatter': invalid YAML")
    assert result.stdout == b""


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["skill"])
    assert info.value.code == 2
    assert main(["skill", "render", str(REAL_STYLE)]) == 2
    assert "give one PATH" in capsys.readouterr().err
    assert main(["skill", "lint", str(tmp_path / "missing")]) == 1
    assert "file not found" in capsys.readouterr().err
    assert main(["skill", "lint", str(tmp_path)]) == 1
    assert f"{tmp_path}: no SKILL.md in this folder" in capsys.readouterr().err


def test_render_check_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = CORPUS / "crlf-endings"
    assert main(["skill", "render", "--check", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"path": str(path / "SKILL.md"), "identical": True, "first_difference_line": None}
    ]
