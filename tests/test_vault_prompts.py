"""Vault values never reach a prompt, a session log or a candidate (issue 26 Build 3).

``skillsmith review`` is the loop the hostile pass caught: it built its prompt without reading the
vault and cut each message before masking it. These tests plant a vault value in a transcript
(in a command, a tool result, and straddling the point where a long message is cut) and look for
it — and for any 10-character piece of it — in every request the real anthropic SDK sent to the
local Messages-API server and in every file the workspace holds outside ``vault/``.

Each test draws a fresh value: the redaction registry is per process, so a value no earlier test
could have registered proves that this command registered the vault itself.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.core.queue import CandidateQueue
from engine.core.transcripts import read_transcript
from engine.core.vault import remember_vault
from engine.core.workspace import Workspace
from engine.loops.online.reviewer import ReviewRequest, build_prompt
from tests.llm_server import MessagesServer, last_user_text
from tests.online_helpers import KEY

CUT_AT = 400  # online.message_max_chars for these tests; the head kept is 3/4 of it


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def plant_secret(ws: Workspace) -> str:
    """A database password in ``vault/db_password``, written the way a user would (not through
    Skillsmith, which would register it in this process)."""
    value = f"Db-{secrets.token_hex(6)}-Pw{secrets.token_hex(4)}"
    ws.vault_dir.mkdir(exist_ok=True)
    (ws.vault_dir / "db_password").write_text(value + "\n", encoding="utf-8")
    (ws.vault_dir / "db_password").chmod(0o600)
    return value


def transcript(folder: Path, secret: str) -> Path:
    """An export session that uses the password on its command lines, gets it echoed back in an
    error, and has it straddle the cut of one long tool result."""
    head = CUT_AT * 3 // 4
    long_result = "rows: " + "r" * (head - 6 - 10) + secret + " " + "s" * (CUT_AT * 2)
    assert long_result.index(secret) < head < long_result.index(secret) + len(secret)
    lines: list[dict[str, Any]] = [
        {
            "type": "user",
            "content": f"Export the orders table to orders.csv; the db password is {secret}.",
        },
        {
            "type": "assistant",
            "content": "Connecting to the replica.",
            "tool_calls": [
                {
                    "id": "t1",
                    "name": "bash",
                    "args": f"mysql -u app -p{secret} orders -e 'select 1'",
                }
            ],
        },
        {
            "type": "tool",
            "tool_name": "bash",
            "tool_call_id": "t1",
            "result": f"ERROR 1045: access denied for app (using password {secret}) on replica",
            "is_error": True,
        },
        {
            "type": "assistant",
            "content": "The replica refuses the login; exporting from the primary instead.",
            "tool_calls": [
                {
                    "id": "t2",
                    "name": "bash",
                    "args": f"mysql -h primary -u app -p{secret} orders -e 'select *' > orders.csv",
                }
            ],
        },
        {
            "type": "tool",
            "tool_name": "bash",
            "tool_call_id": "t2",
            "result": long_result,
            "is_error": False,
        },
        {"type": "assistant", "content": "orders.csv written from the primary."},
    ]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "export.session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def echoing_reviewer(request: dict[str, Any]) -> str:
    """A model that copies every command line it was shown into the skill it proposes: whatever
    reached the prompt reaches the candidate."""
    shown = [line.strip() for line in last_user_text(request).splitlines() if "mysql" in line]
    return json.dumps(
        {
            "skip_reason": "",
            "skills": [
                {
                    "name": "Orders Export",
                    "description": "Export a database table to CSV.",
                    "when_to_use": "A task asks to export a table to a CSV file.",
                    "steps": [*shown, "Check the CSV has a header and the expected rows."],
                    "pitfalls": ["A replica may refuse the application login; use the primary."],
                }
            ],
            "updates": [],
            "deletions": [],
        }
    )


def fragments(secret: str, width: int = 10) -> list[str]:
    """Every 10-character piece of the value: a partial leak counts as a leak."""
    return [secret[i : i + width] for i in range(len(secret) - width + 1)]


def files_holding(ws: Workspace, secret: str) -> list[str]:
    """Every file outside vault/ that holds a piece of the value."""
    found = []
    for path in sorted(ws.root.rglob("*")):
        if path.is_file() and ws.vault_dir not in path.parents:
            data = path.read_bytes()
            if any(part.encode() in data for part in fragments(secret)):
                found.append(str(path.relative_to(ws.root)))
    return found


def configure(ws: Workspace, provider: str) -> None:
    cfg = ws.load_config()
    cfg.models.reviewer.provider = provider
    cfg.models.reviewer.max_retries = 0
    cfg.online.message_max_chars = CUT_AT
    ws.save_config(cfg)


def test_anthropic_review_sends_and_writes_no_vault_value(
    workspace: Workspace,
    messages_server: MessagesServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure(workspace, "anthropic")
    secret = plant_secret(workspace)
    session = transcript(tmp_path / "exports", secret)
    messages_server.respond_with(echoing_reviewer)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)

    code = main(["-w", str(workspace.root), "review", str(session), "--json"])

    out = capsys.readouterr()
    assert code == 0, out.err
    [request] = messages_server.message_requests
    sent = json.dumps(request.json)
    assert "mysql -u app -p[REDACTED]" in sent  # the command reached the model, masked
    assert [part for part in fragments(secret) if part in sent] == []
    [candidate] = CandidateQueue(workspace).list()
    assert "mysql -h primary -u app -p[REDACTED]" in candidate.skill_text()
    assert files_holding(workspace, secret) == []
    assert all(part not in out.out + out.err for part in fragments(secret))


def test_offline_review_quotes_the_transcript_redacted(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The offline reviewer sends nothing, but drafts its steps from the commands it read: the
    candidate, the decision in the session log and the queue must all hold the masked form."""
    configure(workspace, "offline")
    secret = plant_secret(workspace)
    session = transcript(tmp_path / "exports", secret)

    code = main(["-w", str(workspace.root), "review", str(session), "--json"])

    out = capsys.readouterr()
    assert code == 0, out.err
    [candidate] = CandidateQueue(workspace).list()
    assert "-p[REDACTED]" in candidate.skill_text()
    assert files_holding(workspace, secret) == []
    assert all(part not in out.out for part in fragments(secret))


def test_a_value_straddling_the_cut_is_masked_before_the_cut(workspace: Workspace) -> None:
    """Cut first, mask second leaves the head's part of the value, which no longer matches."""
    secret = plant_secret(workspace)
    remember_vault(workspace)
    result = read_transcript(transcript(workspace.root / "t", secret)).messages[4]
    assert len(result.text) > CUT_AT

    prompt = build_prompt(ReviewRequest("s", [result], [], 1, 6), message_max_chars=CUT_AT)

    assert "[REDACTED]" in prompt and "chars omitted" in prompt
    assert [part for part in fragments(secret) if part in prompt] == []
