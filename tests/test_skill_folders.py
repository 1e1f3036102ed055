"""Skills are folders: publish, rollback, fork, diff, snapshot and restore carry every file of a
skill folder byte for byte, with its permission bits (a real skill: mcp-server-kit)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.core.errors import SkillsmithError
from engine.core.skill_folder import Resource, folder_changes, read_resources
from engine.core.snapshots import create_snapshot, restore
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation.runner import run_evaluation
from tests.bench_helpers import write_benchmark, write_case
from tests.runner_helpers import ADVERSARIAL, LABELS, add_skill, command_workspace
from tests.store_helpers import MCP_SERVER_KIT, files_with_modes, run, tree

SCRIPT = "scripts/evaluation.py"


def _adopt_mcp_server_kit(ws: Workspace) -> tuple[SkillStore, dict[str, tuple[bytes, int]]]:
    live = ws.skills_dir / "mcp-server-kit"
    shutil.copytree(MCP_SERVER_KIT, live)
    (live / SCRIPT).chmod(0o755)  # a script the skill runs: it must stay executable
    original = files_with_modes(live)
    store = SkillStore(ws, "mcp-server-kit")
    assert store.ensure_adopted() == "v0"
    return store, original


def test_every_version_is_the_whole_folder(workspace: Workspace) -> None:
    store, original = _adopt_mcp_server_kit(workspace)
    live = workspace.skills_dir / "mcp-server-kit"
    v0 = store.resources("v0")
    assert v0 is not None and set(v0) == set(original) - {"SKILL.md"}
    assert v0[SCRIPT].mode == 0o755 and v0["LICENSE.txt"].data == original["LICENSE.txt"][0]

    # a SKILL.md-only edit keeps every other file; its patch is exactly the SKILL.md diff
    text = original["SKILL.md"][0].decode() + "\n## Checklist\n\n- run the evaluation\n"
    assert store.publish(text, why="checklist") == "v1"
    assert store.resources("v1") == v0
    patch = (store.dir / "v1" / "patch.diff").read_text()
    assert patch.startswith("--- a/SKILL.md\n+++ b/SKILL.md\n") and "+- run the evaluation" in patch

    # a folder publish: one reference edited, one file added, one removed, a mode changed
    files = dict(v0)
    ref = "reference/best_practices.md"
    files[ref] = Resource(files[ref].data + b"\nPrefer small tools.\n", files[ref].mode)
    files["assets/logo.bin"] = Resource(bytes(range(256)), 0o644)
    del files["scripts/requirements.txt"]
    files["scripts/connections.py"] = Resource(files["scripts/connections.py"].data, 0o755)
    assert store.publish(text, why="folder edit", resources=files) == "v2"
    assert read_resources(live) == files
    assert not (live / "scripts/requirements.txt").exists()
    kinds = {c.path: c.kind for c in folder_changes(text, v0, text, files)}
    assert kinds == {
        ref: "modified",
        "assets/logo.bin": "added",
        "scripts/requirements.txt": "removed",
        "scripts/connections.py": "mode",
    }
    diff = store.diff("v1", "v2")
    assert f"--- a/{ref}\n+++ b/{ref}\n" in diff and "+Prefer small tools." in diff
    assert "Binary files a/assets/logo.bin and b/assets/logo.bin differ" in diff
    assert "--- a/scripts/requirements.txt\n+++ /dev/null" in diff

    # rollback brings back the original bytes and modes of the whole folder
    store.rollback("v0", why="back to the adopted folder")
    assert files_with_modes(live) == original
    assert not (live / "assets").exists()  # a folder the version lacks is gone too


def test_fork_snapshot_and_restore_carry_the_folder(workspace: Workspace) -> None:
    store, original = _adopt_mcp_server_kit(workspace)
    branch = store.fork("exp")
    assert branch.resources("v0") == store.resources("v0")
    snap = create_snapshot(workspace, "adopted")
    live = workspace.skills_dir / "mcp-server-kit"

    files = read_resources(live)
    files["reference/new.md"] = Resource(b"# new\n", 0o644)
    store.publish(original["SKILL.md"][0].decode() + "x\n", why="change", resources=files)
    assert (live / "reference/new.md").is_file()
    restore(workspace, snap, yes=True)
    assert files_with_modes(live) == original
    assert SkillStore(workspace, "mcp-server-kit").current() == "v0"


def test_a_hand_edit_of_any_file_is_never_overwritten(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    store, original = _adopt_mcp_server_kit(workspace)
    live = workspace.skills_dir / "mcp-server-kit"
    (live / "reference/evaluation.md").write_bytes(b"rewritten by hand\n")
    with pytest.raises(SkillsmithError, match=r"evaluation\.md: edited by hand since v0"):
        store.publish("---\nname: mcp-server-kit\n---\n", why="would lose the hand edit")
    assert (live / "reference/evaluation.md").read_bytes() == b"rewritten by hand\n"

    # publishing the folder (or the SKILL.md inside it) from the command line keeps the edit
    done = run(
        workspace, capsys, "publish", "mcp-server-kit", str(live / "SKILL.md"), "--why", "keep"
    )
    assert done.returncode == 0, done.stderr
    kept = store.resources("v1")
    assert kept is not None and kept["reference/evaluation.md"].data == b"rewritten by hand\n"
    assert kept[SCRIPT].mode == 0o755
    done = run(workspace, capsys, "rollback", "mcp-server-kit", "v0", "--why", "undo")
    assert done.returncode == 0, done.stderr
    assert files_with_modes(live) == original


def test_a_folder_with_a_link_outside_is_refused(workspace: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("private\n")
    live = workspace.skills_dir / "leaky"
    live.mkdir(parents=True)
    (live / "SKILL.md").write_text("---\nname: leaky\n---\n")
    (live / "notes.md").symlink_to(secret)
    with pytest.raises(SkillsmithError, match=r"notes\.md: links outside its skill folder"):
        SkillStore(workspace, "leaky").ensure_adopted()
    assert "history/leaky/v0" not in tree(workspace.root)


def test_an_older_version_is_evaluated_with_its_own_files(tmp_path: Path) -> None:
    """``eval --baseline v0`` runs v0's whole folder: its references, not today's."""
    ws = command_workspace(tmp_path / "ws", ADVERSARIAL, env_allow=())
    add_skill(ws, "audit", "1. Read the code.\n", {"references/notes.md": "v0 notes\n"})
    store = SkillStore(ws, "audit")
    files = {"references/notes.md": Resource(b"v1 notes\n", 0o644)}
    assert store.ensure_adopted() == "v0"
    store.publish(store.read("v0") + "2. More.\n", why="v1", resources=files)
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    write_case(root, "one", {"expected": "safe"}, files={"a.py": "x = 1\n"})

    result = run_evaluation(ws, "b", jobs=1, baseline="v0")

    seen = {}
    for row in result.rows:
        lines = (result.run_dir / row["session_file"]).read_text().splitlines()
        answer = next(json.loads(ln)["content"] for ln in reversed(lines) if '"assistant"' in ln)
        report = json.loads(bytes.fromhex(answer.split("REPORT ", 1)[1].split()[0]))
        cwd = Path(report["cwd"])
        seen[row["variant"]] = report["sibling_files"][
            str(cwd / "skills/audit/references/notes.md")
        ]
    assert seen == {"skill": "v1 notes\n", "baseline": "v0 notes\n"}
