"""The state a restore replaces: kept by a rename, archived after the restore returned."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.core import snapshots
from engine.core.errors import SkillsmithError
from engine.core.snapshots import create_snapshot, finish_pending, list_snapshots, restore
from engine.core.workspace import Workspace
from tests.store_helpers import cli, leftovers, make_skill, state, untar

REPO = Path(__file__).resolve().parents[1]


def _two_states(ws: Workspace) -> tuple[Path, dict[str, str]]:
    """A snapshot of state A, then the live workspace moved on to state B (returned)."""
    make_skill(ws, "alpha", "---\nname: alpha\n---\nstate A\n")
    target = create_snapshot(ws, note="A")
    make_skill(ws, "alpha", "---\nname: alpha\n---\nstate B\n")
    make_skill(ws, "beta", "---\nname: beta\n---\nonly in B\n")
    return target, state(ws.root)


def _pending(ws: Workspace) -> list[str]:
    return sorted(p.name for p in ws.snapshots_dir.iterdir() if p.name.startswith(".pending-"))


def test_the_archiver_process_writes_the_snapshot_that_undoes_the_restore(
    workspace: Workspace, tmp_path: Path
) -> None:
    target, replaced = _two_states(workspace)
    pre = restore(workspace, target, yes=True)
    assert not workspace.skill_path("beta").exists()
    assert _pending(workspace) == [f".pending-{pre.name.removesuffix('.tar.gz')}"]
    done = subprocess.run(
        [sys.executable, "-m", "engine.core.archive_pending", str(workspace.root)],
        cwd=tmp_path,  # not the repository: the module is found as an installed one would be
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert _pending(workspace) == [] and leftovers(workspace) == []
    assert state(untar(pre, tmp_path / "pre")) == replaced
    (info,) = [s for s in list_snapshots(workspace) if s.path == pre]
    assert info.note == f"before restoring {target.name}"
    assert finish_pending(workspace) == []  # nothing left, nothing written twice


def test_the_cli_restore_leaves_the_archive_to_a_background_process(
    workspace: Workspace, tmp_path: Path
) -> None:
    target, replaced = _two_states(workspace)
    done = cli(workspace, "restore", target.name.removesuffix(".tar.gz"), "--yes")
    assert done.returncode == 0, done.stderr
    pre = Path(done.stdout.strip().rsplit(" ", 1)[1])
    # the listing waits for the background archiver (or finishes its work) before it lists
    listing = cli(workspace, "snapshot", "--list")
    assert pre.name.removesuffix(".tar.gz") in listing.stdout
    assert _pending(workspace) == []
    assert state(untar(pre, tmp_path / "pre")) == replaced


def test_a_restore_killed_after_its_swap_keeps_the_replaced_state(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, replaced = _two_states(workspace)

    def killed(stage: Path, before: Path) -> None:
        raise KeyboardInterrupt  # dies between the swap and the move of the replaced state

    monkeypatch.setattr(snapshots, "_keep_replaced", killed)
    with pytest.raises(KeyboardInterrupt):
        restore(workspace, target, yes=True)
    monkeypatch.undo()
    assert (workspace.root / ".restore.json").exists()
    # the next snapshot command replays the journal, moves the replaced state out of the stage
    # (which the sweep deletes) and archives it
    again = create_snapshot(workspace, note="after the kill")
    assert leftovers(workspace) == [] and _pending(workspace) == []
    (pre,) = [s.path for s in list_snapshots(workspace) if s.note.startswith("before restoring")]
    assert state(untar(pre, tmp_path / "pre")) == replaced
    assert state(untar(again, tmp_path / "again")) == state(untar(target, tmp_path / "target"))


def test_a_secret_in_the_replaced_state_is_kept_out_of_the_archive(
    workspace: Workspace, tmp_path: Path
) -> None:
    target, _ = _two_states(workspace)
    leak = "token ghp_" + "a1B2c3D4" * 5 + "\n"
    workspace.agents_md.write_text(leak)
    pre = restore(workspace, target, yes=True)  # the restore itself needs no archive
    (folder,) = _pending(workspace)
    with pytest.raises(SkillsmithError, match=rf"{folder}/AGENTS.md:1: holds a secret") as info:
        finish_pending(workspace)
    assert "\n" not in str(info.value) and not pre.exists()
    with pytest.raises(SkillsmithError, match="holds a secret"):  # no snapshot until it is fixed
        create_snapshot(workspace)
    (workspace.snapshots_dir / folder / "AGENTS.md").write_text("token in the vault\n")
    assert finish_pending(workspace) == [pre]
    assert untar(pre, tmp_path / "pre").joinpath("AGENTS.md").read_text() == "token in the vault\n"
