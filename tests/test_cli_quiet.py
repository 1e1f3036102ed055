"""Quiet by default, like uv and cargo: a loop prints its steps, verdicts and results; the raw
log of the library it drives (GEPA's: the whole skill each iteration, Pareto dicts) goes to the
session log, and ``-v`` prints it too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.cli.progress import LoopProgress
from engine.core.events import Event
from tests.tui_workspace import BENCH, SKILL, build_workspace, demo_cases


def test_gepa_log_stays_in_the_session_log_unless_verbose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = build_workspace(tmp_path / "ws", candidates=0, cases=demo_cases(16))
    argv = ["optimize", SKILL, "--bench", BENCH, "--iterations", "1", "--max-metric-calls", "40"]
    assert main([*argv, "--no-submit", "-w", str(ws.root)]) == 0
    out, err = capsys.readouterr()
    (log,) = [p for p in ws.sessions_dir.glob("exp-*.jsonl")]
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    raw = [r["text"] for r in records if r.get("source") == "gepa"]
    assert raw  # GEPA did log: every line is kept in the session log
    printed = out + err
    shown = [line for text in raw for line in text.splitlines() if line.strip()]
    assert not [line for line in shown if line in printed.splitlines()]
    assert len(printed.splitlines()) <= 80

    # -v: the same session's events, drawn as the CLI draws them, print GEPA's lines too
    with LoopProgress("optimize", verbose=True) as progress:
        for r in records:
            data = {k: v for k, v in r.items() if k not in ("time", "kind", "session_id")}
            progress(Event(r["kind"], r["session_id"], data, r["time"]))
    verbose = capsys.readouterr().err
    assert all(line.strip() in verbose for line in raw[0].splitlines()[:3] if line.strip())
