"""Outputs are part of the run: what the agent leaves is kept under runs/<id>/ and graded.

A real command agent (tests/agents/output_agent.py) writes a report, a JSON file, a binary and a
link to a host file; a ``file`` check and the LLM judge (the real anthropic SDK against the local
Messages-API server, chosen with ``eval --judge anthropic``) grade the case by those files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.core.outputs import MAX_FILES, collect
from engine.core.workspace import Workspace
from engine.evaluation.judge import JUDGE_PROTOCOL
from engine.evaluation.protocol import dump_reply
from tests.bench_helpers import write_benchmark, write_case
from tests.llm_server import MessagesServer, request_text
from tests.runner_helpers import AGENTS, command_workspace

AGENT = AGENTS / "output_agent.py"
HOST_CONTENT = "host-only text 7f3a9c that no run may hold\n"
WORDS = "alpha beta gamma\n"
JUDGED = "The report summarises the words it was given."
KEY = "sk-ant-api03-" + "k" * 40


def _file_checks() -> list[dict[str, Any]]:
    return [
        {"kind": "file", "path": "report.md", "match": "regex", "value": "^# Summary$"},
        {
            "kind": "file",
            "path": "out/data.json",
            "match": "json_field",
            "field": "summary.words",
            "value": 3,
        },
        {"kind": "file", "path": "chart.png"},
        {"kind": "llm_judge", "criteria": JUDGED},
    ]


def _bench(ws: Workspace, host: Path) -> None:
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config={"runs_per_case": 1, "seed": 3})
    for case_id in ("report", "claim"):
        write_case(
            root,
            case_id,
            {"checks": _file_checks()},
            prompt="Write report.md summarising words.txt.\n",
            files={"task.txt": case_id, "words.txt": WORDS, "host.txt": f"{host}\n"},
        )


def _judge(request: dict[str, Any]) -> str:
    """A judge that passes a run only when the report file itself is in front of it."""
    shown = request_text(request)
    seen = '<file path="report.md"' in shown and "alpha beta gamma" in shown
    verdict = "pass" if seen else "fail"
    evidence = "report.md holds the words" if seen else "no report.md among the outputs"
    return dump_reply(
        {"protocol": JUDGE_PROTOCOL, "status": "graded", "verdict": verdict, "evidence": evidence}
    )


def _walk_bytes(folder: Path) -> list[tuple[Path, bytes]]:
    """Every regular file under ``folder``, never through a link."""
    found = []
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink():
                found.append((path, path.read_bytes()))
    return found


def test_a_case_is_graded_by_the_files_the_agent_wrote(
    tmp_path: Path,
    messages_server: MessagesServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    host = tmp_path / "host-secret.txt"
    host.write_text(HOST_CONTENT)
    ws = command_workspace(tmp_path / "ws", AGENT, env_allow=())
    _bench(ws, host)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    messages_server.respond_with(_judge)

    code = main(["eval", "b", "--judge", "anthropic", "--json", "-w", str(ws.root)])

    out = json.loads(capsys.readouterr().out)
    run_dir = Path(out["run_dir"])
    rows = {r["case_id"]: r for r in map(json.loads, (run_dir / "results.jsonl").open())}
    assert code == 0
    report, claim = rows["report"], rows["claim"]
    assert report["pass_fail"] == "pass", report["checks"]
    # the agent that only claimed a report fails every file check and the judge
    assert claim["pass_fail"] == "fail"
    assert [c["passed"] for c in claim["checks"]] == [False, False, False, False]
    assert claim["checks"][0]["evidence"] == "no output report.md"
    # the kept files are under runs/<id>/outputs/<unit>/, the row lists them and the caps
    kept = run_dir / "outputs" / "report.0"
    assert report["outputs"]["dir"] == "outputs/report.0"
    assert (kept / "report.md").read_text() == "# Summary\n\nalpha beta gamma\n"
    assert json.loads((kept / "out" / "data.json").read_text()) == {"summary": {"words": 3}}
    assert (kept / "chart.png").read_bytes().startswith(b"\x89PNG")
    listed = {e["path"]: e for e in report["outputs"]["entries"]}
    assert set(listed) == {"report.md", "out/data.json", "chart.png", "host-link.txt"}
    assert listed["chart.png"]["type"] == "image/png"
    assert report["outputs"]["caps"]["max_files"] == MAX_FILES
    # the statement's own inputs are not outputs
    assert not (kept / "words.txt").exists() and not (kept / "task.txt").exists()
    # the link is kept as a link, never read through
    link = kept / "host-link.txt"
    assert link.is_symlink() and os.readlink(link) == str(host)
    assert listed["host-link.txt"] == {
        "path": "host-link.txt",
        "kind": "link",
        "size": len(str(host)),
        "target": str(host),
    }
    assert all(b"7f3a9c" not in data for _, data in _walk_bytes(ws.root))
    # the judge request held the output file's text, the tool calls and the failed one's error
    requests = [request_text(r.json) for r in messages_server.message_requests]
    judged = next(t for t in requests if "alpha beta gamma" in t)
    assert "# Summary" in judged and JUDGED in judged
    assert "Write report.md" in judged and "Bash! make-chart --missing-flag" in judged
    assert "make-chart: unknown flag --missing-flag" in judged
    assert '<file path="chart.png" size="264" type="image/png" binary/>' in judged
    assert f'<link path="host-link.txt" target="{host}" (not followed)/>' in judged
    assert "Write report.md summarising words.txt." in judged  # the task
    assert all("7f3a9c" not in t for t in requests)


def test_a_case_limits_what_the_judge_sees(
    tmp_path: Path, messages_server: MessagesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = tmp_path / "host.txt"
    host.write_text(HOST_CONTENT)
    ws = command_workspace(tmp_path / "ws", AGENT, env_allow=())
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config={"runs_per_case": 1})
    write_case(
        root,
        "report",
        {"checks": [{"kind": "llm_judge", "criteria": JUDGED}], "judge_sees": ["answer"]},
        prompt="Write report.md.\n",
        files={"task.txt": "report", "words.txt": WORDS, "host.txt": f"{host}\n"},
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    messages_server.respond_with(_judge)

    assert main(["eval", "b", "--judge", "anthropic", "-w", str(ws.root)]) == 0

    # shown only the answer, the judge cannot see the report: the run fails, it is not invalid
    (row,) = [json.loads(line) for line in next(ws.runs_dir.glob("*/results.jsonl")).open()]
    assert row["pass_fail"] == "fail"
    (request,) = [request_text(r.json) for r in messages_server.message_requests]
    assert "The report is written." in request  # the answer
    for hidden in ("<outputs>", "<transcript>", "<task>", "alpha beta gamma", "make-chart"):
        assert hidden not in request


def test_the_offline_judge_on_the_command_line_grades_no_free_criterion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = tmp_path / "host.txt"
    host.write_text(HOST_CONTENT)
    ws = command_workspace(tmp_path / "ws", AGENT, env_allow=())
    _bench(ws, host)

    code = main(["eval", "b", "--judge", "offline", "--json", "-w", str(ws.root)])

    out = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in (Path(out["run_dir"]) / "results.jsonl").open()]
    assert code == 1  # nothing was measured: the offline judge cannot grade the criterion
    assert {r["pass_fail"] for r in rows} == {"invalid"}
    assert all("offline judge grades only" in r["invalid_reason"] for r in rows)


def test_collect_keeps_links_as_links_and_caps_what_it_keeps(tmp_path: Path) -> None:
    statement = tmp_path / "statement"
    statement.mkdir()
    (statement / "input.txt").write_text("as given\n")
    (statement / "edited.txt").write_text("before\n")
    room = tmp_path / "room"
    room.mkdir()
    (room / "input.txt").write_text("as given\n")  # unchanged input: not an output
    (room / "edited.txt").write_text("after\n")  # an edited input is an output
    (room / "PROMPT.md").write_text("the harness's\n")
    os.symlink("/etc/passwd", room / "passwd")
    os.symlink(str(tmp_path), room / "dir-link")
    os.mkfifo(room / "pipe")
    (room / "big.bin").write_bytes(b"\0" * 2_000_001)
    (room / "many").mkdir()
    for i in range(MAX_FILES + 3):
        (room / "many" / f"{i:04d}.txt").write_text(f"{i}\n")

    secret = "agent-secret-" + "z" * 24
    (room / "notes.txt").write_text(f"the key is {secret}\n")
    (room / "blob.bin").write_bytes(b"\0\xff" + secret.encode())

    outputs = collect(room, statement, skip={"PROMPT.md"}, secrets=[secret])

    by_path = {e.path: e for e in outputs.entries}
    assert "input.txt" not in by_path and "PROMPT.md" not in by_path
    assert by_path["edited.txt"].text == "after\n"
    assert (by_path["passwd"].kind, by_path["passwd"].target) == ("link", "/etc/passwd")
    assert by_path["dir-link"].kind == "link" and by_path["dir-link"].data is None
    assert by_path["pipe"].kind == "other" and by_path["pipe"].data is None
    assert by_path["big.bin"].data is None and "not kept" in (by_path["big.bin"].note or "")
    # the agent's secrets are masked in text and binaries alike
    assert by_path["notes.txt"].text == "the key is [REDACTED]\n"
    assert by_path["blob.bin"].data == b"\0\xff[REDACTED]"
    assert len(outputs.entries) == MAX_FILES
    assert outputs.left_out is not None and outputs.left_out.startswith("10 not kept")
    kept = tmp_path / "kept"
    outputs.write(kept)
    assert os.readlink(kept / "passwd") == "/etc/passwd"
    assert not (kept / "pipe").exists() and not (kept / "big.bin").exists()


def test_a_script_check_sees_the_kept_outputs(tmp_path: Path) -> None:
    host = tmp_path / "host.txt"
    host.write_text(HOST_CONTENT)
    ws = command_workspace(tmp_path / "ws", AGENT, env_allow=())
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config={"runs_per_case": 1})
    script = (
        "import os, sys\n"
        "kept = sys.argv[2]\n"
        "assert open(os.path.join(kept, 'report.md')).read().startswith('# Summary')\n"
        "assert os.path.islink(os.path.join(kept, 'host-link.txt'))\n"
        "assert not os.path.exists(os.path.join(kept, 'words.txt'))\n"
    )
    write_case(
        root,
        "report",
        {"checks": [{"kind": "script", "path": "check.py"}]},
        prompt="Write report.md.\n",
        files={"task.txt": "report", "words.txt": WORDS, "host.txt": f"{host}\n"},
        rubric_files={"check.py": script},
    )

    assert main(["eval", "b", "-w", str(ws.root)]) == 0


def test_import_evals_says_which_judge_its_expectations_need(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = Workspace.init(tmp_path / "ws")
    evals = tmp_path / "skill" / "evals" / "evals.json"
    evals.parent.mkdir(parents=True)
    evals.write_text(
        json.dumps(
            {
                "skill_name": "reports",
                "evals": [
                    {
                        "id": 1,
                        "prompt": "Summarise the notes into report.md.",
                        "expected_output": "a report file",
                        "expectations": ["report.md exists", "it has a Summary heading"],
                    }
                ],
            }
        )
    )

    assert main(["import", "evals", str(evals), "--bench", "rep", "-w", str(ws.root)]) == 0

    err = capsys.readouterr().err
    assert "the 2 expectations are graded by an LLM judge" in err
    assert "skillsmith eval rep --judge anthropic" in err
    cfg = ws.load_config()
    cfg.models.judge.provider = "anthropic"
    ws.save_config(cfg)
    assert (
        main(["import", "evals", str(evals), "--bench", "rep2", "--json", "-w", str(ws.root)]) == 0
    )
    captured = capsys.readouterr()
    assert "--judge anthropic" not in captured.err  # the configured judge can grade them
    assert json.loads(captured.out)["judge_needed"] == "anthropic"
