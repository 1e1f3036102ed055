"""One agent process: timeouts, caps, cancel and orphans — nothing may outlive its unit."""

from __future__ import annotations

import os
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from engine.evaluation.agents import run_process, survivors
from engine.evaluation.agents.sandbox import make_sandbox
from tests.runner_helpers import alive, require_bwrap, running


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def _env() -> dict[str, str]:
    return {"PATH": os.environ["PATH"]}


def _pids(stdout: bytes) -> list[int]:
    return [int(x) for x in stdout.decode().split() if x.isdigit()]


def _wait_dead(pids: list[int], limit_s: float = 5.0) -> list[int]:
    """The pids still running after up to ``limit_s`` (killing is asynchronous in the kernel)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        living = [p for p in pids if alive(p)]
        if not living:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


ORPHAN = """
    import os, sys, time
    pid = os.fork()
    if pid == 0:
        {child_setup}
        time.sleep(60)
        os._exit(0)
    print(pid, flush=True)
"""


def test_orphan_left_after_a_normal_exit_is_killed(tmp_path: Path) -> None:
    code = ORPHAN.format(child_setup="sys.stdout.close()")
    result = run_process(
        _python(code), cwd=tmp_path, env=_env(), timeout_s=20, max_output_bytes=10_000
    )
    assert result.exit_code == 0 and not result.timed_out
    (orphan,) = _pids(result.stdout)
    assert _wait_dead([orphan]) == []
    assert result.duration_ms < 10_000  # it did not wait for the orphan's sleep


def test_helper_holding_stdout_open_does_not_stall_the_unit(tmp_path: Path) -> None:
    code = ORPHAN.format(child_setup="pass")  # the orphan keeps the stdout pipe open
    result = run_process(
        _python(code), cwd=tmp_path, env=_env(), timeout_s=30, max_output_bytes=10_000
    )
    assert result.exit_code == 0 and not result.timed_out
    (orphan,) = _pids(result.stdout)
    assert _wait_dead([orphan]) == []


def test_process_that_left_the_group_but_stays_in_the_run_dir_is_killed(tmp_path: Path) -> None:
    code = ORPHAN.format(child_setup="os.setsid(); sys.stdout.close()")
    result = run_process(
        _python(code), cwd=tmp_path, env=_env(), timeout_s=20, max_output_bytes=10_000
    )
    (escaped,) = _pids(result.stdout)
    assert _wait_dead([escaped]) == []
    assert survivors(result.pid, tmp_path) == []


def test_timeout_kills_an_agent_that_ignores_sigterm(tmp_path: Path) -> None:
    code = """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("started", flush=True)
        time.sleep(60)
    """
    started = time.monotonic()
    result = run_process(
        _python(code),
        cwd=tmp_path,
        env=_env(),
        timeout_s=0.5,
        max_output_bytes=10_000,
        grace_s=0.3,
    )
    assert result.timed_out
    assert result.exit_code == -9  # SIGTERM was ignored, SIGKILL was not
    assert result.stdout == b"started\n"
    assert time.monotonic() - started < 10
    assert not alive(result.pid)


def test_output_over_the_cap_stops_reading_and_kills(tmp_path: Path) -> None:
    code = """
        import sys
        while True:
            sys.stdout.write("y" * 65536)
    """
    result = run_process(
        _python(code), cwd=tmp_path, env=_env(), timeout_s=30, max_output_bytes=200_000
    )
    assert result.over_cap and not result.timed_out
    assert len(result.stdout) == 200_000
    assert not alive(result.pid)


def test_stderr_flood_counts_toward_the_cap_and_only_its_tail_is_kept(tmp_path: Path) -> None:
    code = """
        import sys
        for i in range(100000):
            sys.stderr.write(f"line {i}\\n")
    """
    result = run_process(
        _python(code), cwd=tmp_path, env=_env(), timeout_s=30, max_output_bytes=100_000
    )
    assert result.over_cap
    assert len(result.stderr_tail) <= 70_000


def test_cancel_stops_the_process_group(tmp_path: Path) -> None:
    code = ORPHAN.format(child_setup="pass") + "    time.sleep(60)\n"
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    result = run_process(
        _python(code),
        cwd=tmp_path,
        env=_env(),
        timeout_s=30,
        max_output_bytes=10_000,
        should_stop=stop.is_set,
    )
    assert result.cancelled and not result.timed_out
    (child,) = _pids(result.stdout)
    assert _wait_dead([child, result.pid]) == []


def test_exact_environment_and_cwd_reach_the_process(tmp_path: Path) -> None:
    code = """
        import json, os
        print(json.dumps({"env": dict(os.environ), "cwd": os.getcwd()}))
    """
    env = {"PATH": os.environ["PATH"], "ONLY": "this"}
    result = run_process(
        _python(code), cwd=tmp_path, env=env, timeout_s=20, max_output_bytes=10_000
    )
    import json

    seen = json.loads(result.stdout)
    assert {k: v for k, v in seen["env"].items() if k != "LC_CTYPE"} == env
    assert Path(seen["cwd"]).resolve() == tmp_path.resolve()


ESCAPER = """
    import signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sleeper = "import os, time; os.setsid(); os.chdir('/'); time.sleep(120)  # {token}"
    subprocess.Popen([sys.executable, "-c", sleeper], start_new_session=True)
    print("started", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("end", ["timeout", "cancel"])
def test_a_sandboxed_unit_that_times_out_or_is_cancelled_takes_its_escaped_grandchild_along(
    tmp_path: Path, end: str
) -> None:
    require_bwrap()
    token = f"escaper-{uuid.uuid4().hex}"
    room = tmp_path / "room"
    room.mkdir()
    argv = _python(ESCAPER.format(token=token))
    sandbox = make_sandbox("bwrap", network=False, command=argv, workspace=tmp_path / "ws")
    stop = threading.Event()
    if end == "cancel":
        threading.Timer(1.5, stop.set).start()
    result = run_process(
        argv,
        cwd=room,
        env=_env(),
        timeout_s=1.5 if end == "timeout" else 30,
        max_output_bytes=10_000,
        grace_s=0.3,
        should_stop=stop.is_set,
        sandbox=sandbox,
    )
    assert sandbox.kind == "bwrap"
    assert (result.timed_out, result.cancelled) == (end == "timeout", end == "cancel")
    assert result.stdout == b"started\n"  # the grandchild was up before the unit ended
    deadline = time.monotonic() + 5  # the kernel ends a dead namespace's processes promptly
    while running(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running(token) == []
