"""Fail fast on a broken agent: an evaluation that cannot measure anything stops with one line.

The claude-code cases use the real claude CLI against the local Messages-API server (or a closed
port); the command-agent cases use a real subprocess.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.runs import RunFolder, run_folders
from engine.core.workspace import Workspace
from engine.evaluation.agents import make_agent
from engine.evaluation.failfast import PREFLIGHT_TIMEOUT_S, FirstUnits, environment_fault
from tests.bench_helpers import write_benchmark, write_case
from tests.llm_server import MessagesServer
from tests.runner_helpers import COUNT_ENV, LABELS, command_workspace, mode_benchmark
from tests.test_e2e_claude import API_KEY, _claude_available

SAFE = "x = int(input())\n"


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _claude_workspace(root: Path, cases: int = 3, env_allow: tuple[str, ...] = ()) -> Workspace:
    ws = Workspace.init(root)
    cfg = ws.load_config()
    cfg.agent.kind = "claude-code"
    cfg.agent.timeout_s = 120  # a unit left to its timeout would take minutes, not seconds
    cfg.agent.max_turns = 3
    cfg.agent.env_allow = list(env_allow)
    ws.save_config(cfg)
    bench = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    for i in range(cases):
        write_case(bench, f"c{i}", {"expected": "safe"}, files={"code.py": SAFE})
    return ws


def _one_error_line(err: str) -> str:
    """The one error line; a started job's plan, and a model CLI's pre-flight line naming its
    credential (never the value), are not errors."""
    info = ("agent claude-code: ", "plan: ")
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith(info)]
    assert API_KEY not in err
    assert len(lines) == 1, err
    return lines[0]


def _stopped_before_any_unit(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    """Evaluate against ``url``: exit 1 before any unit (no run folder, no claude process left
    waiting on its retries); the one error line."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    ws = _claude_workspace(tmp_path / "ws")
    assert main(["eval", "b", "-w", str(ws.root)]) == 1
    assert not ws.runs_dir.exists() or list(ws.runs_dir.iterdir()) == []
    return _one_error_line(capsys.readouterr().err)


@pytest.mark.e2e
def test_claude_with_an_unreachable_api_stops_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _claude_available()
    url = f"http://127.0.0.1:{_closed_port()}"
    line = _stopped_before_any_unit(url, tmp_path, monkeypatch, capsys)
    assert line == f"skillsmith: error: cannot reach the Messages API at {url}: connection refused"


@pytest.mark.e2e
@pytest.mark.slow
def test_claude_with_a_silent_api_stops_within_the_preflight_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A firewall that swallows packets: the connection opens (the kernel's backlog accepts it)
    but nothing ever answers. The evaluation ends after the one preflight timeout (10 s, well
    inside the 30 s a user waits), not after each unit's 120 s."""
    _claude_available()
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # never accepted, never answered
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        line = _stopped_before_any_unit(url, tmp_path, monkeypatch, capsys)
    assert line == (
        f"skillsmith: error: cannot reach the Messages API at {url}: "
        f"no answer within {PREFLIGHT_TIMEOUT_S:g} s"
    )
    assert PREFLIGHT_TIMEOUT_S < 30


@pytest.mark.e2e
def test_claude_with_a_refused_key_stops_at_once(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _claude_available()
    with MessagesServer(api_key="sk-ant-the-right-key-0000") as server:
        url = server.url
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
        ws = _claude_workspace(tmp_path / "ws")
        assert main(["eval", "b", "-w", str(ws.root)]) == 1
        assert server.message_requests == []
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(f"skillsmith: error: the Messages API at {url} refused the API key")
    assert API_KEY not in line


@pytest.mark.e2e
def test_claude_units_failing_alike_stop_the_evaluation(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    messages_server: MessagesServer,
) -> None:
    """The endpoint answers the preflight but every message request gets a 401: the first
    three units show it and the remaining ones never start."""
    _claude_available()
    messages_server.fail_next(100, status=401, message="invalid x-api-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")  # the CLI's own retries, passed through
    ws = _claude_workspace(tmp_path / "ws", cases=6, env_allow=("CLAUDE_CODE_MAX_RETRIES",))
    assert main(["eval", "b", "-j", "1", "-w", str(ws.root)]) == 1
    line = _one_error_line(capsys.readouterr().err)
    url = messages_server.url
    assert line == f"skillsmith: error: the Messages API at {url} refused the API key (401)"
    (run,) = run_folders(ws.runs_dir)
    rows = RunFolder(run).latest_rows()
    assert len(rows) == 3 and all(r["pass_fail"] == "invalid" for r in rows.values())
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["error"] == line.split("error: ", 1)[1]


def _crashing_workspace(root: Path, message: str) -> Workspace:
    ws = command_workspace(root)
    cfg = ws.load_config()
    cfg.agent.command = [sys.executable, "-c", f"import sys; sys.exit({message!r})"]
    ws.save_config(cfg)
    return ws


def test_identical_crashes_on_different_cases_stop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = _crashing_workspace(tmp_path / "ws", "cannot read /etc/agent.toml: Permission denied")
    mode_benchmark(ws, {f"c{i}": ("answer", SAFE, "safe") for i in range(8)})
    assert main(["eval", "b", "-j", "1", "-w", str(ws.root)]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert line == (
        "skillsmith: error: the agent fails the same way on every case: agent crashed "
        "(exit status 1): cannot read /etc/agent.toml: Permission denied"
    )
    (run,) = run_folders(ws.runs_dir)
    assert len(RunFolder(run).latest_rows()) == 3


def test_a_missing_agent_binary_stops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {f"c{i}": ("answer", SAFE, "safe") for i in range(5)})
    cfg = ws.load_config()
    cfg.agent.command = [str(tmp_path / "no-such-agent")]
    ws.save_config(cfg)
    code = main(["eval", "b", "-j", "1", "-w", str(ws.root)])
    line = _one_error_line(capsys.readouterr().err)
    assert code == 1
    assert line.startswith(f"skillsmith: error: cannot start the agent {tmp_path}/no-such-agent")
    assert "no-such-agent" in line


def test_case_failures_do_not_stop_but_no_valid_unit_exits_1(
    tmp_path: Path, count_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Crashes, garbage and silence, each on its own case: the case's problem, not the agent's.
    The evaluation runs every unit, and, having measured nothing, exits 1."""
    ws = command_workspace(tmp_path / "ws", env_allow=(COUNT_ENV,))
    modes = ["crash", "garbage", "empty", "crash", "garbage"]
    mode_benchmark(ws, {f"c{i}": (mode, SAFE, "safe") for i, mode in enumerate(modes)})
    assert main(["eval", "b", "-j", "1", "-w", str(ws.root)]) == 1
    err = capsys.readouterr().err
    assert err.endswith(
        "no valid unit (agent crashed (exit status 3): Traceback: deliberate crash)\n"
    )
    assert len((count_dir / "launches").read_text().splitlines()) == 5


def test_one_valid_unit_among_the_first_keeps_the_evaluation_going(tmp_path: Path) -> None:
    ws = command_workspace(tmp_path / "ws")
    agent = make_agent(ws)
    watch = FirstUnits(agent, 3)
    crash = "agent crashed (exit status 1): config unreadable"
    assert watch.observe("a", crash) is None
    assert watch.observe("b", None) is None
    assert watch.observe("c", crash) is None and watch.observe("d", crash) is None


@pytest.mark.parametrize(
    ("reason", "fault"),
    [
        # The claude CLI's own words (observed with claude 2.1.328), through
        # engine.evaluation.agents.
        (
            "claude reported an error (success): API Error: Connection refused — a firewall or "
            "proxy may be blocking it (ECONNREFUSED)",
            "cannot reach the Messages API at {url}: connection refused",
        ),
        (
            "timeout after 120s (claude was retrying API status None unknown, attempt 7/10)",
            "cannot reach the Messages API at {url}: no connection",
        ),
        (
            "timeout after 120s (claude was retrying API status 401 unknown, attempt 6/10)",
            "the Messages API at {url} refused the API key (401)",
        ),
        (
            "claude reported an error (API status 403): forbidden",
            "the Messages API at {url} denied access (403)",
        ),
        ("timeout after 120s", None),
        ("no answer (no answer.txt and no final assistant message)", None),
        ("output over cap (1000 bytes)", None),
    ],
)
def test_which_reasons_are_the_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reason: str, fault: str | None
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("SKILLSMITH_CLAUDE_BIN", sys.executable)  # found, never launched here
    ws = Workspace.init(tmp_path / "ws")
    cfg = ws.load_config()
    cfg.agent.kind = "claude-code"
    ws.save_config(cfg)
    expected = fault.format(url="http://127.0.0.1:9") if fault else None
    assert environment_fault(reason, make_agent(ws)) == expected
