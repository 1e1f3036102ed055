"""Strict protocol YAML and the judge: validated before any score is read, re-requested in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.core.benchmark import load_benchmark
from engine.core.config import ModelConfig
from engine.core.errors import SkillsmithError
from engine.core.standard import evidence_rule
from engine.evaluation.grading import grade
from engine.evaluation.judge import (
    JUDGE_PROTOCOL,
    ProtocolJudge,
    make_judge,
    offline_judge,
    parse_judge_reply,
)
from engine.evaluation.llm import AnthropicLLM, OfflineLLM
from engine.evaluation.protocol import ProtocolError, ask, load_reply
from tests.bench_helpers import write_benchmark, write_case
from tests.llm_server import MessagesServer, Reply

KEY = "test-key-not-a-real-one-0123"
VALID = f"protocol: {JUDGE_PROTOCOL}\nstatus: graded\nverdict: pass\nevidence: cites app.py:3\n"
RULE = evidence_rule("vulnerable")


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (f"```yaml\n{VALID}```\n", "code fence"),
        (f"Here is my grade:\n{VALID}", "unknown key .Here is my grade."),
        (f"Grade: {VALID}", "not YAML"),
        ("PASS\nthe answer cites the sink", "not one YAML mapping"),
        (VALID.replace(JUDGE_PROTOCOL, "judge/0"), "expected 'protocol: skillsmith-judge/1'"),
        (VALID + "confidence: high\n", "unknown key 'confidence'"),
        (VALID.replace("verdict: pass", "verdict: maybe"), "expected pass or fail"),
        (VALID.replace("evidence: cites app.py:3", "evidence: ''"), "non-empty string"),
        (f"protocol: {JUDGE_PROTOCOL}\nstatus: graded\nverdict: pass\n", "missing key 'evidence'"),
        (f"protocol: {JUDGE_PROTOCOL}\nstatus: done\n", "expected graded or ungradable"),
    ],
)
def test_malformed_judge_replies_are_refused_with_the_reason(reply: str, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        parse_judge_reply(reply)


def test_valid_replies_parse() -> None:
    graded = parse_judge_reply(VALID)
    assert (graded.status, graded.verdict, graded.evidence) == ("graded", "pass", "cites app.py:3")
    ungradable = parse_judge_reply(
        f"protocol: {JUDGE_PROTOCOL}\nstatus: ungradable\nreason: no answer given\n"
    )
    assert (ungradable.status, ungradable.reason) == ("ungradable", "no answer given")


def test_ask_rerequests_in_the_same_conversation_until_valid() -> None:
    seen: list[list[dict[str, Any]]] = []
    replies = iter(["not yaml: [", "- a list", "protocol: p/1\nvalue: 3\n"])

    def respond(system: str, messages: list[dict[str, Any]]) -> str:
        seen.append(list(messages))
        return next(replies)

    problems: list[tuple[str, int]] = []
    exchange = ask(
        OfflineLLM(respond),
        "protocol: p/1",
        [{"role": "user", "content": "the question"}],
        lambda text: load_reply(text, "p/1")["value"],
        on_rerequest=lambda problem, n: problems.append((problem, n)),
    )
    assert exchange.value == 3 and exchange.requests == 3
    assert [n for _, n in problems] == [1, 2]
    # every request carries the original question first; each retry adds the bad reply + why
    assert [len(m) for m in seen] == [1, 3, 5]
    assert all(m[0]["content"] == "the question" for m in seen)
    assert seen[1][1] == {"role": "assistant", "content": "not yaml: ["}
    assert "not valid protocol YAML" in seen[1][2]["content"]


def test_ask_gives_up_after_max_requests_naming_the_last_problem() -> None:
    llm = OfflineLLM(lambda s, m: "PASS")
    with pytest.raises(SkillsmithError, match="no valid protocol YAML after 3 requests"):
        ask(llm, "", [{"role": "user", "content": "q"}], lambda t: load_reply(t, "p/1"))
    assert llm.calls == 3


def _judge_prompt(answer: str, criteria: str = RULE.criteria) -> list[dict[str, Any]]:
    text = f"Criterion: {criteria}\nExpected answer: vulnerable\n<answer>\n{answer}\n</answer>"
    return [{"role": "user", "content": text}]


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("Findings:\n- app.py:12 (step 3): query(...)\nVERDICT: vulnerable", "pass"),
        ("Looked at it quickly.\nVERDICT: vulnerable", "fail"),  # the shortcut: no finding
        ("- app.py:12 (step 3)\nVERDICT: safe", "fail"),  # the wrong verdict
        ("no verdict at all", "fail"),
    ],
)
def test_offline_judge_grades_the_evidence_rule(answer: str, verdict: str) -> None:
    reply = parse_judge_reply(offline_judge("", _judge_prompt(answer)))
    assert reply.status == "graded" and reply.verdict == verdict


def test_offline_judge_says_ungradable_rather_than_guessing() -> None:
    reply = parse_judge_reply(offline_judge("", _judge_prompt("VERDICT: safe", "Names the sink.")))
    assert reply.status == "ungradable"


def _judged_bench(tmp_path: Path) -> Any:
    root = write_benchmark(tmp_path / "b", {}, config={"labels": ["vulnerable", "safe"]})
    write_case(
        root,
        "c1",
        {
            "expected": "vulnerable",
            "checks": [{"kind": "label"}, {"kind": "llm_judge", "criteria": RULE.criteria}],
        },
        files={"app.py": "x = 1\n"},
    )
    return load_benchmark(root)


ANSWER = "Findings:\n- app.py:1 (step 3): x = 1\nVERDICT: vulnerable"


def test_grading_through_the_real_sdk_rerequests_a_malformed_reply(
    tmp_path: Path, messages_server: MessagesServer
) -> None:
    bench = _judged_bench(tmp_path)
    messages_server.reply(
        Reply(text=f"Sure! Here is the grade:\n```yaml\n{VALID}```"),
        Reply(text=VALID),
    )
    cfg = ModelConfig(provider="anthropic", model="claude-haiku-4-5", timeout_s=10.0)
    judge = ProtocolJudge(AnthropicLLM(cfg, api_key=KEY, base_url=messages_server.url))
    graded = grade(bench, bench.cases[0], ANSWER, llm=judge)

    assert graded.valid and graded.score == 1.0
    assert graded.checks[1].evidence == "cites app.py:3"
    requests = messages_server.message_requests
    assert len(requests) == 2 and judge.requests == 2 and judge.rerequests == 1
    first, second = (r.json["messages"] for r in requests)
    assert second[0] == first[0]  # the same agent answer, asked again
    assert ANSWER in first[0]["content"]
    assert second[1]["role"] == "assistant" and "```yaml" in second[1]["content"]
    assert "not valid protocol YAML" in second[2]["content"]
    assert f"protocol: {JUDGE_PROTOCOL}" in requests[0].json["system"][0]["text"]


def test_a_judge_that_stays_malformed_makes_the_unit_invalid_not_failed(
    tmp_path: Path, messages_server: MessagesServer
) -> None:
    bench = _judged_bench(tmp_path)
    messages_server.respond_with(lambda request: "PASS — looks fine")
    cfg = ModelConfig(provider="anthropic", model="claude-haiku-4-5", timeout_s=10.0)
    judge = ProtocolJudge(AnthropicLLM(cfg, api_key=KEY, base_url=messages_server.url))
    graded = grade(bench, bench.cases[0], ANSWER, llm=judge)
    assert not graded.valid and graded.pass_fail == "invalid"
    assert "no valid protocol YAML after 3 requests" in str(graded.invalid_reason)
    assert len(messages_server.message_requests) == 3


def test_an_ungradable_verdict_is_not_read_as_a_score(tmp_path: Path) -> None:
    bench = _judged_bench(tmp_path)
    reply = f"protocol: {JUDGE_PROTOCOL}\nstatus: ungradable\nreason: the answer is cut off\n"
    graded = grade(bench, bench.cases[0], ANSWER, llm=ProtocolJudge(OfflineLLM(lambda s, m: reply)))
    assert graded.pass_fail == "invalid" and "the answer is cut off" in str(graded.invalid_reason)


def test_make_judge_offline_grades_by_the_offline_judge(tmp_path: Path) -> None:
    bench = _judged_bench(tmp_path)
    judge = make_judge(None, ModelConfig(provider="offline"))
    shortcut = grade(bench, bench.cases[0], "VERDICT: vulnerable", llm=judge)
    reasoned = grade(bench, bench.cases[0], ANSWER, llm=judge)
    assert (shortcut.score, reasoned.score) == (0.5, 1.0)
    assert yaml.safe_load(offline_judge("", _judge_prompt(ANSWER)))["protocol"] == JUDGE_PROTOCOL


def test_an_evaluation_grades_judge_checks_by_the_protocol_judge_by_default(
    tmp_path: Path,
) -> None:
    from engine.evaluation.runner import run_evaluation
    from tests.runner_helpers import command_workspace

    ws = command_workspace(tmp_path / "ws")
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config={"labels": ["vulnerable", "safe"]})
    checks = [{"kind": "label"}, {"kind": "llm_judge", "criteria": RULE.criteria}]
    write_case(root, "c1", {"expected": "vulnerable", "checks": checks},
               files={"mode.txt": "answer", "code.txt": "eval(x)\n"})  # fmt: skip
    result = run_evaluation(ws, "b", jobs=1)  # the configured (offline) judge, strict protocol
    (row,) = result.rows
    assert row["pass_fail"] == "fail" and row["score"] == 0.5  # a bare verdict: label only
    assert row["checks"][1]["evidence"] == "a vulnerable verdict without any file:line finding"
