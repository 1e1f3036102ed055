"""A prompt is the case's own: the answer protocol only where the benchmark or the case asks.

A benchmark without labels gets its statement byte for byte (CRLF, a leading "-", no final
newline), with the skills and AGENTS.md beside it in the run folder as the harness documents;
diagnosis rules that read the protocol skip the runs that were never asked for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.workspace import Workspace
from tests.bench_helpers import write_benchmark, write_case
from tests.runner_helpers import AGENTS, add_skill, command_workspace

AGENT = AGENTS / "output_agent.py"
STATEMENT = (
    "- Fix the summary.\r\nKeep “these quotes” and the trailing spaces  \n\nlast line".encode()
)
SEEN = {"kind": "file", "path": "seen-prompt.md"}


def _rows(ws: Workspace, run_dir: str) -> dict[str, dict[str, object]]:
    lines = (Path(run_dir) / "results.jsonl").read_text().splitlines()
    return {row["case_id"]: row for row in map(json.loads, lines)}


def _eval(ws: Workspace, bench: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["eval", bench, "--json", "-w", str(ws.root)]) == 0
    run_dir: str = json.loads(capsys.readouterr().out)["run_dir"]
    return run_dir


def test_a_free_text_case_gets_its_statement_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = command_workspace(tmp_path / "ws", AGENT, env_allow=())
    add_skill(ws, "summaries", "Keep summaries short.\n", {"reference.md": "Style notes.\n"})
    ws.agents_md.write_text("House rules for agents.\n")
    root = write_benchmark(ws.benchmarks_dir / "free", {}, config={"runs_per_case": 1})
    for case_id, extra in (("plain", {}), ("asks", {"answer_protocol": True})):
        case = write_case(
            root, case_id, {"checks": [SEEN], **extra}, files={"task.txt": "echo-prompt"}
        )
        (case / "statement" / "prompt.md").write_bytes(STATEMENT)

    run_dir = _eval(ws, "free", capsys)

    kept = Path(run_dir) / "outputs"
    assert (kept / "plain.0" / "seen-prompt.md").read_bytes() == STATEMENT
    context = (kept / "plain.0" / "seen-context.txt").read_text().splitlines()
    # beside the prompt: the statement's files, the skills and AGENTS.md, as documented
    assert {"PROMPT.md", "AGENTS.md", "task.txt", "skills"} <= set(context)
    assert "skills/summaries/SKILL.md" in context and "skills/summaries/reference.md" in context
    # a case that asks for the protocol gets it, after its statement as written
    asked = (kept / "asks.0" / "seen-prompt.md").read_bytes().decode()
    assert STATEMENT.decode() in asked and "STEPS DONE" in asked
    rows = _rows(ws, run_dir)
    assert (rows["plain"]["answer_protocol"], rows["asks"]["answer_protocol"]) == (False, True)


def test_a_labelled_benchmark_still_asks_for_the_label_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = command_workspace(tmp_path / "ws", AGENT, env_allow=())
    root = write_benchmark(
        ws.benchmarks_dir / "labelled", {}, config={"labels": ["yes", "no"], "runs_per_case": 1}
    )
    write_case(
        root, "one", {"expected": "yes", "checks": [SEEN]}, files={"task.txt": "echo-prompt"}
    )

    run_dir = _eval(ws, "labelled", capsys)

    seen = (Path(run_dir) / "outputs" / "one.0" / "seen-prompt.md").read_text()
    assert "`VERDICT: <label>` where <label> is one of: yes, no" in seen


def test_diagnosis_reads_no_protocol_from_runs_never_asked_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = command_workspace(tmp_path / "ws", AGENT, env_allow=())
    host = tmp_path / "host.txt"
    host.write_text("elsewhere\n")
    root = write_benchmark(ws.benchmarks_dir / "free", {}, config={"runs_per_case": 1})
    report = {"kind": "file", "path": "report.md"}
    for case_id, extra in (("plain", {}), ("asks", {"answer_protocol": True})):
        write_case(
            root,
            case_id,
            {"checks": [report], **extra},
            files={"task.txt": "report", "words.txt": "one two\n", "host.txt": f"{host}\n"},
        )
    run_dir = _eval(ws, "free", capsys)
    assert {r["pass_fail"] for r in _rows(ws, run_dir).values()} == {"pass"}

    assert main(["diagnose", Path(run_dir).name, "--json", "-w", str(ws.root)]) == 0

    cases = json.loads(capsys.readouterr().out)["diagnosis"]["cases"]
    fired = {c["case_id"]: {h["rule_id"] for h in c["hits"]} for c in cases}
    # two tool calls and a conclusion: premature for a run asked to conclude by protocol only
    assert "premature_conclusion" in fired["asks"]
    assert "premature_conclusion" not in fired.get("plain", set())
