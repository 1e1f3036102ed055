"""The sandbox holds when the harness is root (CI, containers): no capabilities, no mounts, no
device nodes, no writes outside the run folder; and a unit over its memory, process or disk
limit is stopped there and recorded with the reason (real bubblewrap, real processes).

The limits in these tests are set low (128 MB, 16 processes, 8 MB), so a hog or a fork bomb
stays small on a shared machine.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

import engine
from engine.core.workspace import Workspace
from engine.evaluation.runner import run_evaluation
from tests.bench_helpers import write_benchmark, write_case
from tests.runner_helpers import AGENTS, LABELS, command_workspace, require_bwrap

ROOT_AGENT = AGENTS / "root_agent.py"


def _workspace(tmp_path: Path, **limits: int) -> Workspace:
    ws = command_workspace(tmp_path / "ws", ROOT_AGENT, env_allow=(), timeout_s=60)
    cfg = ws.load_config()
    for name, value in limits.items():
        setattr(cfg.agent, name, value)
    ws.save_config(cfg)
    return ws


def _cases(ws: Workspace, cases: dict[str, dict[str, str]]) -> None:
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    for case_id, files in cases.items():
        write_case(root, case_id, {"expected": "safe"}, files=files)


def test_an_agent_run_by_root_has_no_capabilities_and_cannot_mount_mknod_or_write_out(
    tmp_path: Path,
) -> None:
    require_bwrap()
    if os.geteuid() != 0:
        pytest.skip("this test is about a harness run as root (as CI runs it)")
    ws = _workspace(tmp_path)
    token = f"root-{uuid.uuid4().hex}"
    engine_dir = Path(engine.__file__).resolve().parent
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o777)  # even a folder anyone may write stays out of the agent's reach
    targets = [engine_dir, Path(os.__file__).parent, Path("/usr"), Path("/etc"), ws.root, outside]
    files = {"mode.txt": "probe", "token.txt": token, "targets.txt": "\n".join(map(str, targets))}
    _cases(ws, {"one": files})

    result = run_evaluation(ws, "b")

    (row,) = result.rows
    session = (result.run_dir / row["session_file"]).read_text().splitlines()
    text = next(json.loads(ln)["content"] for ln in session if '"assistant"' in ln)
    report = json.loads(bytes.fromhex(text.split("REPORT ", 1)[1].split()[0]))
    assert report["caps"]["CapEff"] == "0" * 16 and report["caps"]["CapPrm"] == "0" * 16
    assert report["uid"] != 0
    assert report["mount"] == "EPERM" and report["remount"] == "EPERM"
    assert report["mknod"] == {"block": "EPERM", "char": "EPERM"}
    # a user namespace of its own gives it no way to make the engine writable either
    assert report["nested"]["remount"] is not None and report["nested"]["wrote"] is False
    assert report["writes"] == dict.fromkeys(map(str, targets), False)
    planted = [p for t in targets for p in t.glob(f"{token}*")]
    assert planted == []


@pytest.mark.parametrize(
    ("mode", "limits", "reason"),
    [
        ("hog", {"memory_mb": 128}, "over the memory limit (agent.memory_mb 128): MemoryError"),
        ("hog-many", {"memory_mb": 128}, "over the memory limit (agent.memory_mb 128): "),
        ("forkbomb", {"max_processes": 16}, "over the process limit (agent.max_processes 16): "),
        ("disk", {"disk_mb": 8}, "over the disk limit (agent.disk_mb 8): "),
        ("disk-many", {"disk_mb": 8}, "over the disk limit (agent.disk_mb 8): "),
    ],
)
def test_a_unit_over_a_limit_is_stopped_there_and_recorded_with_the_reason(
    tmp_path: Path, mode: str, limits: dict[str, int], reason: str
) -> None:
    require_bwrap()
    ws = _workspace(tmp_path, **limits)
    _cases(ws, {"over": {"mode.txt": mode, "disk.txt": "8"}})

    result = run_evaluation(ws, "b")

    (row,) = result.rows
    assert row["pass_fail"] == "invalid"
    # stopped at the limit, not by the unit's timeout (60 s), and said so
    assert row["invalid_reason"].startswith(reason), row["invalid_reason"]
