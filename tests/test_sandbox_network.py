"""Network by allow-list: a claude-code room reaches its Messages endpoint and the hosts the user
lists, through the harness's proxy, and nothing else — not the host's other loopback services,
not an unlisted host (real bubblewrap, a real HTTP server on the host's loopback)."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from engine.core.workspace import Workspace
from engine.evaluation.agents import RoomSpec, build_room, make_agent, remove_room, room_env
from engine.evaluation.agents.kinds import kind_endpoint
from engine.evaluation.agents.network import allows, url_host
from engine.evaluation.agents.process import run_process
from tests.llm_server import MessagesServer
from tests.runner_helpers import AGENTS, require_bwrap

PROBE = AGENTS / "net_probe_agent.py"


def test_a_claude_code_room_reaches_its_endpoint_and_listed_hosts_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, messages_server: MessagesServer
) -> None:
    require_bwrap()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-network")
    probe = tmp_path / "claude"  # stands where the claude CLI would: what the room lets out
    probe.write_text(f"#!{sys.executable}\n" + PROBE.read_text())
    probe.chmod(0o755)
    monkeypatch.setenv("SKILLSMITH_CLAUDE_BIN", str(probe))
    with (
        socket.create_server(("127.0.0.1", 0)) as listed,
        socket.create_server(("127.0.0.1", 0)) as private,
    ):
        listed.listen(8)
        private.listen(8)
        listed_at = f"127.0.0.1:{listed.getsockname()[1]}"
        ws = Workspace.init(tmp_path / "ws")
        cfg = ws.load_config()
        cfg.agent.kind = "claude-code"
        cfg.agent.allow_hosts = [listed_at]
        ws.save_config(cfg)
        agent = make_agent(ws)
        statement = tmp_path / "statement"
        statement.mkdir()
        plan = {
            "endpoint": messages_server.url,
            "allowed": listed_at,
            "host_loopback": private.getsockname()[1],
            "unlisted": "example.com:443",
        }
        (statement / "net.json").write_text(json.dumps(plan))
        room = build_room(RoomSpec(statement, "p", (), agent.skills_subdir), tmp_path / "runs")
        try:
            done = run_process(
                [str(probe)],
                cwd=room,
                env=room_env(room, allow=(), extra=agent.secret_env),
                timeout_s=60,
                max_output_bytes=100_000,
                sandbox=agent.sandbox,
            )
        finally:
            remove_room(room)
    assert done.exit_code == 0, done.stderr_tail
    report = json.loads(done.stdout)
    assert agent.describe()["sandbox"]["network"] == "allow-list"
    assert agent.describe()["sandbox"]["allow_hosts"] == [url_host(messages_server.url), listed_at]
    assert isinstance(report["endpoint"], int)  # the Messages server answered (any status)
    assert messages_server.message_requests  # ...and saw the request
    assert report["allowed"] == "open"
    assert report["host_loopback"].startswith("error:")  # nothing listens in the room
    assert report["host_loopback_via_proxy"] == 403
    assert report["unlisted_via_proxy"] == 403
    assert report["unlisted_direct"].startswith("error:")  # no route out of the namespace
    assert report["proxy_env"].startswith("http://127.0.0.1:")


def test_the_allow_list_is_data_per_kind_and_matches_host_and_port() -> None:
    assert url_host(kind_endpoint("claude-code", {}) or "") == "api.anthropic.com:443"
    local = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8123/x"}
    assert url_host(kind_endpoint("claude-code", local) or "") == "127.0.0.1:8123"
    assert url_host(kind_endpoint("codex", {}) or "") == "api.openai.com:443"
    assert kind_endpoint("command", {}) is None and kind_endpoint("demo", {}) is None
    allow = ["api.anthropic.com:443", "pypi.org", "[::1]:9000"]
    assert allows(allow, "API.anthropic.com", 443)
    assert not allows(allow, "api.anthropic.com", 80)
    assert allows(allow, "pypi.org", 80) and allows(allow, "pypi.org", 443)
    assert not allows(allow, "pypi.org", 22) and not allows(allow, "evil.org", 443)
    assert allows(allow, "::1", 9000) and not allows(allow, "127.0.0.1", 9000)
