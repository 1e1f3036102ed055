"""Cases written by the model (not imported), and the private standard kept fixed."""

from __future__ import annotations

from typing import Any

import pytest

from engine.core.benchmark import load_benchmark
from engine.core.errors import SkillsmithError
from engine.core.scoreboard import read_records
from engine.core.standard import evidence_rule, load_standard
from engine.core.workspace import Workspace
from engine.evaluation.llm import OfflineLLM
from engine.evaluation.protocol import dump_reply, protocol_of
from engine.loops.builder import BuildOptions
from engine.loops.builder import run as run_build
from engine.loops.builder.cases import DRAFT_PROTOCOL
from engine.loops.builder.offline import builder_offline

CASES = [
    {
        "id": "shell-call",
        "type": "command-injection",
        "expected": "vulnerable",
        "prompt": "Is `run.py` vulnerable?\n\nEnd with `VERDICT: vulnerable` or `VERDICT: safe`.",
        "files": {"run.py": "import os\nos.system('ls ' + input())\n"},
    },
    {
        "id": "constant",
        "type": "command-injection",
        "expected": "safe",
        "prompt": "Is `ok.py` vulnerable?\n\nEnd with `VERDICT: vulnerable` or `VERDICT: safe`.",
        "files": {"ok.py": "print('hello')\n"},
    },
]


def _writer(edit_standard: Any = None) -> OfflineLLM:
    """A model that drafts two cases of its own; the other protocols as the offline model."""

    def respond(system: str, messages: list[dict[str, Any]]) -> str:
        if protocol_of(system) == DRAFT_PROTOCOL:
            rule = evidence_rule("vulnerable")
            return dump_reply(
                {
                    "protocol": DRAFT_PROTOCOL,
                    "labels": ["vulnerable", "safe"],
                    "standard": [{"id": rule.id, "text": rule.text}],
                    "cases": CASES,
                }
            )
        if edit_standard is not None:
            edit_standard()
        return builder_offline(system, messages)

    return OfflineLLM(respond)


def test_the_model_can_write_cases_and_the_standard_itself(workspace: Workspace) -> None:
    options = BuildOptions(
        "own", goal="spot shell injection", cases=2, pilot_iterations=1, model=_writer(), jobs=2
    )
    result = run_build(workspace, options)
    bench = load_benchmark(workspace.benchmarks_dir / "own")
    assert bench.labels == ["vulnerable", "safe"] and bench.runs_per_case == 1
    assert {c.id: c.rubric.expected for c in bench.cases} == {
        "shell-call": "vulnerable",
        "constant": "safe",
    }
    shell = bench.case("shell-call")
    assert (shell.statement_dir / "run.py").read_text() == CASES[0]["files"]["run.py"]
    assert shell.rubric.type == "command-injection"
    assert not (shell.statement_dir.parent / "rubric" / "run.py").exists()
    standard = load_standard(bench.root)
    assert standard is not None and standard.goal == "spot shell injection"
    (record,) = read_records(bench.root)
    assert record.kind == "formal_baseline" and record.run_id == result.baseline_run_id


def test_a_draft_breaking_the_protocol_is_asked_again(workspace: Workspace) -> None:
    replies = iter(
        [
            dump_reply({"protocol": DRAFT_PROTOCOL, "cases": CASES}),  # no standard yet
            dump_reply({"protocol": DRAFT_PROTOCOL, "labels": ["a", "b"], "cases": CASES,
                        "standard": [{"id": "x", "text": "y"}]}),  # expected labels differ
        ]
    )  # fmt: skip
    seen: list[str] = []

    def respond(system: str, messages: list[dict[str, Any]]) -> str:
        seen.append(str(messages[-1]["content"]))
        return next(replies, "not even yaml: [")

    with pytest.raises(SkillsmithError, match="no valid protocol YAML after 3 requests"):
        run_build(workspace, BuildOptions("own", goal="g", cases=2, model=OfflineLLM(respond)))
    assert "missing key 'standard'" in seen[1]
    assert "expected one of ['a', 'b'], got 'vulnerable'" in seen[2]
    assert not (workspace.benchmarks_dir / "own").exists()


def test_the_private_standard_is_fixed_for_the_whole_build(workspace: Workspace) -> None:
    path = workspace.benchmarks_dir / "own" / "standard.md"

    def rewrite() -> None:
        if path.is_file() and "loosened" not in path.read_text():
            path.write_text(path.read_text() + "- [loosened] Any verdict with a reason passes.\n")

    with pytest.raises(SkillsmithError, match="the private standard changed during the build"):
        options = BuildOptions(
            "own",
            goal="g",
            cases=2,
            pilot_iterations=2,
            model=_writer(edit_standard=rewrite),
            jobs=2,
        )
        run_build(workspace, options)
    assert read_records(workspace.benchmarks_dir / "own") == []
