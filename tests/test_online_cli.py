"""``skillsmith review`` on a real workspace: in-process, and once as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.queue import CandidateQueue
from engine.core.workspace import Workspace
from tests.llm_server import MessagesServer
from tests.online_helpers import CLAUDE, KEY, PLAIN, add_weather_skill, copy_session

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def run(capsys: pytest.CaptureFixture[str], ws: Workspace, *args: str) -> tuple[int, str, str]:
    code = main(["-w", str(ws.root), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_review_files_and_folders_once(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    add_weather_skill(workspace)
    folder = tmp_path / "exports"
    copy_session(CLAUDE, folder)
    copy_session(PLAIN, folder / "nested")

    code, out, err = run(capsys, workspace, "review", str(folder), "--json")

    assert code == 0, err
    report = json.loads(out)
    assert report["reviewer"] == "offline"
    by_name = {Path(r["source"]).name: r for r in report["results"]}
    assert set(by_name) == {CLAUDE.name, PLAIN.name}
    assert all(r["cursor_advanced"] for r in report["results"])
    assert report["workers"]["submitted"] == 2
    queued = [c for r in report["results"] for c in r["candidates"]]
    assert {c["status"] for c in queued} <= {"pending_approval"}
    assert len(CandidateQueue(workspace).list()) == len(queued)
    log = [json.loads(line) for line in Path(report["session_log"]).read_text().splitlines()]
    assert (log[0]["kind"], log[-1]["kind"]) == ("started", "finished")

    code, out, err = run(capsys, workspace, "review", str(folder))
    assert code == 0, err
    assert out.count(": unchanged") == 2
    assert "0 candidates queued for approval; log" in out  # no failures, none inline: unsaid


def test_reviewer_failure_exits_1_and_keeps_the_segment(
    workspace: Workspace,
    messages_server: MessagesServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = workspace.load_config()
    cfg.models.reviewer.provider = "anthropic"
    cfg.models.reviewer.max_retries = 0
    workspace.save_config(cfg)
    session = copy_session(PLAIN, tmp_path)
    messages_server.fail_next(1, status=500)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)

    code, out, err = run(capsys, workspace, "review", str(session))

    assert code == 1
    assert ": error " in out and "reviewer model failed" in out
    assert KEY not in out + err
    messages_server.reply('{"skip_reason": "nothing reusable"}')
    code, out, err = run(capsys, workspace, "review", str(session), "--json")
    assert code == 0, err
    [result] = json.loads(out)["results"]
    assert (result["status"], result["lines"]) == ("skipped", [1, 11])


def test_watch_for_a_while_as_a_subprocess(workspace: Workspace, tmp_path: Path) -> None:
    folder = tmp_path / "live"
    copy_session(PLAIN, folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}

    watched = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli",
            "-w",
            str(workspace.root),
            "review",
            "--watch",
            str(folder),
            "--for",
            "2",
            "--json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert watched.returncode == 0, watched.stderr
    [result] = json.loads(watched.stdout)["results"]
    assert result["lines"] == [1, 11] and result["cursor_advanced"]


def test_usage_errors(workspace: Workspace, tmp_path: Path) -> None:
    assert main(["-w", str(workspace.root), "review"]) == 2
    assert main(["-w", str(workspace.root), "review", str(tmp_path / "missing.jsonl")]) == 1
    assert main(["-w", str(workspace.root), "review", str(PLAIN), "--score", "3"]) == 1
