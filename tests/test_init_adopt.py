"""``skillsmith init``: the folder it is told to use, and skill folders it must not adopt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.errors import SkillsmithError
from engine.core.store import SkillStore, check_name
from engine.core.workspace import Workspace
from tests.candidate_helpers import skill_text


def test_init_honours_w(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    assert main(["init", "-w", str(tmp_path / "ws"), "--standalone", "--agent", "demo"]) == 0

    assert (tmp_path / "ws" / "skillsmith.yaml").is_file()
    assert list(elsewhere.iterdir()) == []
    capsys.readouterr()
    code = main(["init", str(tmp_path / "a"), "-w", str(tmp_path / "b"), "--agent", "demo"])
    assert code == 2 and "give one" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("name", ["notes\n", "notes\r", "no\ttab", "bell\x07", "esc\x1b[2J"])
def test_a_skill_folder_named_with_control_characters_is_not_adopted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    project = tmp_path / "project"
    for folder in (name, "notes-ok"):
        skill = project / ".claude" / "skills" / folder
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(skill_text("notes"), encoding="utf-8")

    assert main(["init", str(project), "--project", "--agent", "demo", "--json"]) == 0

    report = json.loads(capsys.readouterr().out)
    assert report["adopted"] == {"notes-ok": "v0"}
    assert list(report["not_adopted"]) == [name]
    ws = Workspace.at(report["workspace"])
    assert sorted(p.name for p in ws.history_dir.iterdir()) == ["notes-ok"]
    with pytest.raises(SkillsmithError, match="expected letters, digits"):
        SkillStore(ws, name)
    assert check_name("skill", "notes-ok") == "notes-ok"
