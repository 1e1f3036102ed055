"""skillsmith.yaml's parsed twin (engine.core.yaml_twin): read instead of the file while the file
is what it was, never when it changed, never for a file changed a moment ago."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.core import fsutil
from engine.core.errors import FormatError
from engine.core.workspace import CONFIG_TWIN, Workspace
from engine.core.yaml_twin import load_yaml_twinned


@pytest.fixture
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files count as settled as soon as written, so a test need not wait two seconds."""
    monkeypatch.setattr(fsutil, "SETTLED_AFTER_S", 0.0)


@pytest.mark.usefixtures("settled_at_once")
def test_the_twin_stands_for_the_file_until_the_file_changes(tmp_path: Path) -> None:
    path, twin = tmp_path / "s.yaml", tmp_path / "twin.json"
    path.write_text("gates:\n  approval_timeout_s: 30\nlist: [a, b]\n", encoding="utf-8")
    expected = {"gates": {"approval_timeout_s": 30}, "list": ["a", "b"]}
    assert load_yaml_twinned(path, twin) == expected
    kept = json.loads(twin.read_text(encoding="utf-8"))
    assert kept["data"] == expected
    # What the twin says is what a read gives while the file keeps its stamp: no YAML is parsed.
    kept["data"]["list"] = ["from the twin"]
    twin.write_text(json.dumps(kept), encoding="utf-8")
    assert load_yaml_twinned(path, twin)["list"] == ["from the twin"]
    # An edit in place that keeps the size moves the stamp (mtime and ctime): parsed again.
    before = path.stat()
    path.write_text("gates:\n  approval_timeout_s: 90\nlist: [a, b]\n", encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert path.stat().st_size == before.st_size
    assert load_yaml_twinned(path, twin)["gates"] == {"approval_timeout_s": 90}
    # An atomic replace is a new file: parsed again.
    fsutil.atomic_write_text(path, "gates: {}\n")
    assert load_yaml_twinned(path, twin) == {"gates": {}}


def test_a_file_changed_a_moment_ago_is_not_twinned(tmp_path: Path) -> None:
    """Within the filesystem's timestamp tick a second edit could keep the stamp, so a file
    younger than two seconds is parsed every time ("racy git")."""
    path, twin = tmp_path / "s.yaml", tmp_path / "twin.json"
    path.write_text("a: 1\n", encoding="utf-8")
    assert load_yaml_twinned(path, twin) == {"a": 1}
    assert not twin.exists()


@pytest.mark.usefixtures("settled_at_once")
@pytest.mark.parametrize(
    "text",
    [
        "when: 2026-12-06\n",  # a date: JSON has no such type
        "1: one\n",  # a key that is not text: JSON would give it back as "1"
        "x: .nan\n",  # not equal to itself: cannot be checked as given back
    ],
)
def test_data_json_cannot_give_back_exactly_is_parsed_each_time(tmp_path: Path, text: str) -> None:
    path, twin = tmp_path / "s.yaml", tmp_path / "twin.json"
    path.write_text(text, encoding="utf-8")
    first = load_yaml_twinned(path, twin)
    assert not twin.exists()
    assert repr(load_yaml_twinned(path, twin)) == repr(first)


@pytest.mark.usefixtures("settled_at_once")
def test_a_broken_twin_is_a_miss_and_bad_yaml_is_still_reported(tmp_path: Path) -> None:
    path, twin = tmp_path / "s.yaml", tmp_path / "twin.json"
    path.write_text("a: 1\n", encoding="utf-8")
    twin.write_text("{not json", encoding="utf-8")
    assert load_yaml_twinned(path, twin) == {"a": 1}
    assert json.loads(twin.read_text(encoding="utf-8"))["data"] == {"a": 1}
    path.write_text("a: [unclosed\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"s\.yaml:\d+: invalid YAML"):
        load_yaml_twinned(path, twin)
    with pytest.raises(FormatError, match="file not found"):
        load_yaml_twinned(tmp_path / "missing.yaml", twin)


@pytest.mark.usefixtures("settled_at_once")
def test_a_workspace_reads_an_edited_skillsmith_yaml_through_its_twin(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws")
    assert ws.load_config().gates.approval_timeout_s is None
    assert (ws.runs_dir / CONFIG_TWIN).is_file()
    text = ws.config_path.read_text(encoding="utf-8")
    assert "  approval_timeout_s: null\n" in text
    edit = text.replace("  approval_timeout_s: null\n", "  approval_timeout_s: 45\n")
    ws.config_path.write_text(edit, encoding="utf-8")  # in place, as an editor saves
    assert ws.load_config().gates.approval_timeout_s == 45
    edit = text.replace("  approval_timeout_s: null\n", "  approval_timeout_s: -1\n")
    ws.config_path.write_text(edit, encoding="utf-8")
    with pytest.raises(FormatError, match=r"skillsmith\.yaml.*approval_timeout_s"):
        ws.load_config()  # a twin holds the parse, not a judgement: every value is checked


@pytest.mark.usefixtures("settled_at_once")
def test_a_file_holding_a_secret_is_never_twinned(tmp_path: Path) -> None:
    """A key pasted into skillsmith.yaml (an agent's command line) stays in that one file: no
    copy of it is made beside the runs."""
    path, twin = tmp_path / "s.yaml", tmp_path / "twin.json"
    key = "sk-ant-api03-" + "Xq7vR2mK9pL4wN8sT1yB6cF3hJ5dG0aZ" * 2
    path.write_text(f"agent:\n  command: [my-agent, --api-key, {key}]\n", encoding="utf-8")
    assert load_yaml_twinned(path, twin)["agent"]["command"][2] == key
    assert not twin.exists()
