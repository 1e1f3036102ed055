from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.core.errors import FormatError, LockError, SkillsmithError
from engine.core.workspace import LAYOUT_DIRS, Workspace
from tests.runner_helpers import lock_held_elsewhere


def test_init_creates_layout_and_valid_config(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "w")
    for name in LAYOUT_DIRS:
        assert (ws.root / name).is_dir()
    assert ws.version() == 0
    assert (ws.vault_dir.stat().st_mode & 0o777) == 0o700
    with pytest.raises(SkillsmithError, match="already exists"):
        Workspace.init(ws.root)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("version: two\n", "field 'version': expected an integer, got 'two'"),
        ("agent:\n  kind: robot\n", "field 'agent.kind': expected one of 'demo', 'claude-code'"),
        ("gates:\n  holdout_everyy: 3\n", "field 'gates.holdout_everyy': unknown key"),
        ("splits: [1, 2]\n", "field 'splits': expected a mapping"),
        ("version: 1\n  bad: [\n", "invalid YAML"),
    ],
)
def test_bad_config_names_file_and_field(workspace: Workspace, body: str, expected: str) -> None:
    workspace.config_path.write_text(body)
    with pytest.raises(FormatError) as info:
        workspace.load_config()
    message = str(info.value)
    assert "\n" not in message
    assert str(workspace.config_path) in message
    assert expected in message


def test_second_writer_waits_then_names_holder(workspace: Workspace) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys, time
            from engine.core.workspace import Workspace
            ws = Workspace.at({str(workspace.root)!r})
            with ws.lock("publish"):
                print("held", flush=True)
                sys.stdin.readline()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "held"
    try:
        with (
            pytest.raises(LockError, match=rf"pid {holder.pid} \(publish"),
            workspace.lock(wait_s=0.3),
        ):
            pass
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=10)
    with workspace.lock(wait_s=0.3), workspace.lock():  # free again, and re-entrant
        pass


def test_lock_excludes_other_threads_of_the_same_process(workspace: Workspace) -> None:
    with (
        lock_held_elsewhere(workspace, "evaluation"),
        pytest.raises(LockError, match="evaluation"),
        workspace.lock(wait_s=0.2),
    ):
        raise AssertionError("took the lock another thread holds")
    with workspace.lock(wait_s=0.5):
        pass
