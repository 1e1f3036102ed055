"""history / publish / rollback / fork as separate processes: exit codes, errors, output."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from tests.runner_helpers import command_workspace, mode_benchmark
from tests.store_helpers import REPO, cli, make_skill, run

HEAD = "---\nname: x\ndescription: Do x. Use when x is asked for.\n---\n"


def test_bad_config_is_one_line_naming_file_and_field(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """`history` as a real process (exactly one line, no traceback); the others in-process."""
    make_skill(workspace, "x", "---\nname: x\n---\n")
    workspace.config_path.write_text("version: 0\nlimits: {max_rounds: many}\n")
    for args in (["history", "x"], ["snapshot"], ["queue"], ["restore", "v0"], ["fork", "x", "b"]):
        done = cli(workspace, *args) if args[0] == "history" else run(workspace, capsys, *args)
        assert done.returncode == 1, args
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert str(workspace.config_path) in lines[0]
        assert "limits.max_rounds" in lines[0] and "expected an integer" in lines[0]
        assert "Traceback" not in done.stderr
    assert not (workspace.history_dir / "x").exists()  # nothing was adopted on a broken config


def test_publish_rollback_fork_history_from_the_command_line(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def cli(ws: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
        return run(ws, capsys, *args)

    make_skill(workspace, "x", f"{HEAD}v0 body\n")
    new = tmp_path / "new.md"
    for n in (1, 2):  # publish takes only a skill lint passes: it needs its description
        new.write_text(f"{HEAD}v{n} body\n")
        done = cli(workspace, "publish", "x", str(new), "--why", f"round {n}")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"published x v{n} (main)"
    done = cli(workspace, "rollback", "x", "v1", "--why", "v2 broke holdout")
    assert done.returncode == 0 and "current v2 → v1" in done.stdout
    done = cli(workspace, "fork", "x", "exp")
    assert done.returncode == 0 and "forked x at v1 into branch exp: exp/v1" in done.stdout
    new.write_text(f"{HEAD}branch text\n")
    done = cli(workspace, "publish", "x", str(new), "--why", "b", "--branch", "exp")
    assert done.returncode == 0 and done.stdout.strip() == "published x exp/v2"

    done = cli(workspace, "history", "x", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["current"] == "v1" and data["branches"] == ["exp"]
    assert [(v["version"], v["current"]) for v in data["versions"]] == [
        ("v0", False),
        ("v1", True),
        ("v2", False),
    ]
    assert [t["op"] for t in data["timeline"]] == ["publish"] * 3 + ["rollback", "fork", "publish"]
    assert len(data["audit"]) == 6
    assert workspace.skill_path("x").read_text() == f"{HEAD}v1 body\n"

    text = cli(workspace, "history", "x", "--branch", "exp").stdout
    assert text.splitlines()[0] == "x (exp): current exp/v2"  # a branch's v2 is not main's v2
    assert "fork" in text and "v2 broke holdout" in text
    assert "[exp] publish      exp/v1 → exp/v2  b" in text
    done = cli(workspace, "rollback", "x", "exp/v1", "--why", "back")  # the branch from the name
    assert done.returncode == 0 and done.stdout.strip() == "x (exp): current exp/v2 → exp/v1"
    assert SkillStore(workspace, "x").current() == "v1"  # main did not move
    done = cli(workspace, "rollback", "x", "exp/v2", "--why", "w", "--branch", "other")
    assert done.returncode == 2 and "a version of branch exp, not of --branch other" in done.stderr

    # refusals: exit 1 and one line; bad usage: exit 2
    for args, message in (
        (["rollback", "x", "v9", "--why", "w"], "no version v9"),
        (["publish", "x", str(tmp_path / "missing.md"), "--why", "w"], "missing.md: no such file"),
        (["history", "nope"], "nope/SKILL.md: no such skill"),
        (["fork", "x", "exp"], "branch 'exp' already exists"),
    ):
        done = cli(workspace, *args)
        assert done.returncode == 1, (args, done.stderr)
        assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr
    assert cli(workspace, "publish", "x", str(new)).returncode == 2  # --why is required


def test_a_second_writer_waits_then_names_the_holder(workspace: Workspace, tmp_path: Path) -> None:
    make_skill(workspace, "x", "---\nname: x\n---\nv0\n")
    SkillStore(workspace, "x").ensure_adopted()  # v0 exists before anybody holds the lock
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys
            from engine.core.workspace import Workspace
            with Workspace.at({str(workspace.root)!r}).lock("evolve round"):
                print("held", flush=True)
                sys.stdin.readline()
            """),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline() == "held\n"
        new = tmp_path / "new.md"
        new.write_text(f"{HEAD}v1\n")
        done = cli(workspace, "publish", "x", str(new), "--why", "w", SKILLSMITH_LOCK_WAIT="0.3")
        assert done.returncode == 1
        assert done.stderr.splitlines() == [
            f"skillsmith: error: {workspace.root / '.skillsmith.lock'}: workspace is locked by "
            f"pid {holder.pid} (evolve round: -c); try again when it finishes"
        ]
        assert cli(workspace, "snapshot", SKILLSMITH_LOCK_WAIT="0.3").returncode == 1
        assert cli(workspace, "history", "x").returncode == 0  # readers are never blocked
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=10)
    assert workspace.skill_path("x").read_text() == "---\nname: x\n---\nv0\n"
    assert list(workspace.snapshots_dir.iterdir()) == []
    assert SkillStore(workspace, "x").publish("v1\n", why="free again") == "v1"


def test_eval_of_a_branch_version_runs_its_text_and_names_it_by_branch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {"c1": ("answer", "q = eval(x)\n", "vulnerable")})
    make_skill(ws, "x", f"{HEAD}main body\n")
    store = SkillStore(ws, "x")
    store.ensure_adopted()
    branch = store.fork("exp1")
    branch.publish(f"{HEAD}branch body\n", why="an experiment")
    done = run(ws, capsys, "eval", "b", "--skill", "x@exp1/v1", "--json")
    assert done.returncode == 0, done.stderr
    run_dir = ws.runs_dir / json.loads(done.stdout)["run_id"]
    assert (run_dir / "inputs").is_dir()
    inputs = [p.read_text() for p in (run_dir / "inputs").rglob("*.md")]
    assert f"{HEAD}branch body\n" in inputs  # the branch's text ran, not main's
    board = run(ws, capsys, "scoreboard", "b").stdout
    assert "x@exp1/v1" in board and "x@v1" not in board
    missing = run(ws, capsys, "eval", "b", "--skill", "x@exp2/v1")
    assert missing.returncode == 1 and "no branch 'exp2'" in missing.stderr
