"""A malformed judge reply is re-requested from the same judge — the agent is not run again."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.core.config import ModelConfig
from engine.core.standard import evidence_rule
from engine.core.workspace import Workspace
from engine.evaluation.demo import copy_demo
from engine.evaluation.judge import offline_judge
from engine.loops.agent_optimizer import AgentOptimizerOptions
from engine.loops.agent_optimizer import run as run_optimizer
from engine.loops.builder import BuildOptions
from engine.loops.builder import run as run_build
from tests.builder_helpers import BENCH, COUNT_ENV, events, launches, result_rows
from tests.builder_helpers import use_counting_agent as counting
from tests.llm_server import MessagesServer

POOL = ("cmdi-js-execfile", "sqli-py-format", "crypto-py-md5-password", "sqli-py-params")
KEY = "test-key-for-the-local-server"


def _pool_with_judged_positives(ws: Workspace) -> None:
    """A pool whose positive cases grade the standard's evidence rule (an llm_judge check)."""
    source, pool = ws.benchmarks_dir / "vuln-detect", ws.benchmarks_dir / "pool"
    pool.mkdir()
    config = yaml.safe_load((source / "benchmark.yaml").read_text())
    (pool / "benchmark.yaml").write_text(yaml.safe_dump({**config, "id": "pool"}))
    for case_id in POOL:
        shutil.copytree(source / case_id, pool / case_id)
        rubric_path = pool / case_id / "rubric" / "rubric.yaml"
        rubric = yaml.safe_load(rubric_path.read_text())
        if rubric["expected"] == "vulnerable":
            rubric["checks"] = [
                {"kind": "label", "weight": 1},
                {"kind": "llm_judge", "criteria": evidence_rule("vulnerable").criteria},
            ]
            rubric_path.write_text(yaml.safe_dump(rubric))


def test_a_malformed_judge_reply_is_rerequested_and_the_agent_is_not_rerun(
    tmp_path: Path, messages_server: MessagesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = Workspace.at(copy_demo(tmp_path / "ws"))
    _pool_with_judged_positives(ws)
    run_build(ws, BuildOptions(BENCH, source="pool", cases=len(POOL), pilot_iterations=1, jobs=2))
    count = counting(ws, tmp_path / "count")
    cfg = ws.load_config()
    cfg.models.judge = ModelConfig(
        provider="anthropic", model="claude-haiku-4-5", timeout_s=10.0, max_retries=0
    )
    ws.save_config(cfg)
    monkeypatch.setenv(COUNT_ENV, str(count))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)

    def judge(request: dict[str, Any]) -> str:
        if len(request["messages"]) == 1:  # a first ask: prose around a verdict
            return "PASS. The answer cites the vulnerable line, good job."
        return offline_judge("", request["messages"])  # the re-request: valid protocol YAML

    messages_server.respond_with(judge)
    cfg.gates.max_extra_runs = 0  # the test counts every unit and judge request of the round
    ws.save_config(cfg)
    result = run_optimizer(
        ws, AgentOptimizerOptions(BENCH, auto_approve=True, rounds=1, runs=1, jobs=2)
    )

    (attempt,) = result.attempts
    rows = [
        *result_rows(ws.runs_dir / attempt["parent_run_id"]),
        *result_rows(ws.runs_dir / attempt["run_id"]),
    ]
    judged = [r for r in rows if any(c["text"].startswith("judge:") for c in r["checks"])]
    assert len(judged) == 4 and all(r["pass_fail"] != "invalid" for r in rows)
    # every unit of the parent's and the candidate's evaluation ran once; every judged unit cost
    # two judge requests, the second a re-request
    assert len(launches(count)) == attempt["launched"] == len(rows) == 2 * len(POOL)
    requests = [r.json["messages"] for r in messages_server.message_requests]
    firsts = [m for m in requests if len(m) == 1]
    retries = [m for m in requests if len(m) == 3]
    assert len(firsts) == len(retries) == len(judged) and len(requests) == 2 * len(judged)
    assert sorted(m[0]["content"] for m in retries) == sorted(m[0]["content"] for m in firsts)
    assert all(m[1]["content"].startswith("PASS.") for m in retries)
    for row in judged:  # the verdict read is the validated one, with its evidence
        (check,) = [c for c in row["checks"] if c["text"].startswith("judge:")]
        assert check["evidence"].startswith(("vulnerable, citing", "the verdict is"))
    rerequests = [e for e in events(ws, result.session_id) if e.get("stage") == "judge_rerequest"]
    assert len(rerequests) == len(judged)
    assert all("not one YAML mapping" in e["problem"] for e in rerequests)
