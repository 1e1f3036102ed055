"""A Claude subscription login (``claude setup-token``) evaluates without any API key.

The real ``claude`` CLI runs against the local Messages-API server with only
``CLAUDE_CODE_OAUTH_TOKEN`` in the environment; the server accepts that token and nothing else,
so a unit can be valid only if the token travelled from the environment through the sealed
room into the CLI and on to the server (as ``Authorization: Bearer`` with the OAuth beta). The
pre-flight names the credential, and the token is in no file the evaluation wrote.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main
from engine.core.runs import RunFolder
from engine.core.vault import write_secret
from engine.core.workspace import Workspace
from engine.evaluation.agents import make_agent
from tests.llm_server import MessagesServer
from tests.test_e2e_claude import _claude_available, audit_setup, auditor

TOKEN = "sk-ant-oat01-e2e-subscription-token-not-real-0000"


@pytest.mark.e2e
def test_claude_code_runs_on_an_oauth_token_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _claude_available()
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", TOKEN)
    ws = Workspace.init(tmp_path / "ws")
    audit_setup(ws, {"v1": "x = eval(input())\n", "s1": "x = int(input())\n"})
    with MessagesServer(api_key=TOKEN) as server:
        server.respond_with(auditor)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        assert main(["eval", "b", "-j", "2", "-w", str(ws.root)]) == 0
        requests = server.message_requests
    out, err = capsys.readouterr()
    said = " ".join(err.split())
    assert "agent claude-code: CLAUDE_CODE_OAUTH_TOKEN (from $CLAUDE_CODE_OAUTH_TOKEN)" in said
    assert requests and all(r.has_credentials for r in requests)
    assert all("oauth-2025-04-20" in r.headers.get("anthropic-beta", "") for r in requests)
    (run,) = [p for p in ws.runs_dir.iterdir() if p.name.startswith("run")]
    rows = RunFolder(run).latest_rows().values()
    assert len(rows) == 2
    assert all(r["pass_fail"] == "pass" for r in rows), [r.get("invalid_reason") for r in rows]
    # the token is in no file of the workspace (runs, sessions, event logs) nor in the output
    assert TOKEN not in out + err
    for path in ws.root.rglob("*"):
        if path.is_file():
            assert TOKEN not in path.read_text(errors="replace"), path


def test_the_vault_holds_the_token_and_an_api_key_comes_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``vault/claude_code_oauth_token`` serves when the environment has nothing; an API key, when
    there is one, is what the agent gets (and what its pre-flight names)."""
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SKILLSMITH_CLAUDE_BIN", __file__)  # any file: the CLI is not started
    ws = Workspace.init(tmp_path / "ws")
    cfg = ws.load_config()
    cfg.agent.kind = "claude-code"
    cfg.agent.sandbox = "none"
    write_secret(ws, "claude_code_oauth_token", TOKEN)
    agent = make_agent(ws, cfg.agent)
    assert agent.secret_env == {"CLAUDE_CODE_OAUTH_TOKEN": TOKEN}
    assert agent.credential == "CLAUDE_CODE_OAUTH_TOKEN (from vault/claude_code_oauth_token)"
    assert TOKEN not in str(agent.describe())
    write_secret(ws, "anthropic_api_key", "sk-ant-api03-vault-key-not-real-000000")
    agent = make_agent(ws, cfg.agent)
    assert set(agent.secret_env) == {"ANTHROPIC_API_KEY"}
    assert agent.credential == "ANTHROPIC_API_KEY (from vault/anthropic_api_key)"
