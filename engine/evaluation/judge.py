"""The strict-protocol judge (PenguinHarness' Evaluator verdict) for ``llm_judge`` checks.

Grading (engine.evaluation.grading) asks a judge about one finished agent answer and reads a
PASS/FAIL line.
This judge sits between grading and the model: it asks the model for the judge protocol YAML
instead, validates the whole reply before anything is read from it, and on a malformed reply asks
the same model again in the same conversation — about the same answer, so the agent is never
rerun for a judge's formatting mistake. Only a validated verdict is handed to grading, in the
line format grading parses. A judge that stays malformed, or says it cannot grade, makes the check
ungraded, which grading turns into an *invalid* unit (never a failure).

Offline, the judge is :func:`offline_judge`: a deterministic grader of the decision-standard rules
it understands (the ``[evidence]`` rule of engine.core.standard); any other criteria it
reports as ungradable rather than guessing.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from engine.core.benchmark import DEFAULT_LABEL_PATTERN, normalise_label
from engine.core.config import ModelConfig
from engine.core.errors import SkillsmithError
from engine.core.events import SessionLog
from engine.core.standard import EVIDENCE, evidence_label
from engine.core.workspace import Workspace
from engine.evaluation.llm import LLM, make_llm
from engine.evaluation.protocol import (
    MAX_REQUESTS,
    ProtocolError,
    ask,
    check_keys,
    dump_reply,
    load_reply,
    text_field,
)

JUDGE_PROTOCOL = "skillsmith-judge/1"
JUDGE_SYSTEM = f"""You grade one run of an agent against one criterion of a private decision \
standard. What follows is the criterion, the expected answer when there is one, and what the case \
lets you see of the run: its task, a summary of its tool calls and errors, the files it left \
(text inline; binaries and links only named) and its answer. Judge by what the run shows, not by \
what the answer claims.

Reply with exactly one YAML mapping and nothing else (no prose, no code fence):
protocol: {JUDGE_PROTOCOL}
status: graded        # or ungradable, when the criterion cannot be decided from the answer
verdict: pass         # pass or fail; only when graded
evidence: <one line quoting the part of the answer that decides it>; only when graded
reason: <one line>    # only when ungradable
"""
_CRITERION = re.compile(r"^Criterion: (.*)$", re.MULTILINE)
_ANSWER = re.compile(r"<answer>\n(.*)\n</answer>", re.DOTALL)
_CITATION = re.compile(r"(?<![\w/.-])[\w./-]*\w\.[A-Za-z0-9]{1,8}:\d+\b")


@dataclass(frozen=True)
class JudgeReply:
    status: Literal["graded", "ungradable"]
    verdict: Literal["pass", "fail"] | None
    evidence: str | None
    reason: str | None


def parse_judge_reply(text: str) -> JudgeReply:
    """Validate a judge reply; :class:`ProtocolError` says what is wrong with it."""
    data = load_reply(text, JUDGE_PROTOCOL)
    status = data.get("status")
    if status == "graded":
        check_keys(data, "reply", ("protocol", "status", "verdict", "evidence"))
        verdict = data["verdict"]
        if verdict not in ("pass", "fail"):
            raise ProtocolError(f"reply.verdict: expected pass or fail, got {verdict!r}")
        evidence = text_field(data, "evidence", "reply", one_line=True)
        return JudgeReply("graded", verdict, evidence, None)
    if status == "ungradable":
        check_keys(data, "reply", ("protocol", "status", "reason"))
        return JudgeReply("ungradable", None, None, text_field(data, "reason", "reply"))
    raise ProtocolError(f"reply.status: expected graded or ungradable, got {status!r}")


@dataclass(frozen=True)
class JudgeAnswer:
    """What grading reads: ``text`` is the PASS/FAIL line and the evidence."""

    text: str
    reply: JudgeReply
    requests: int


class ProtocolJudge:
    """A judge model for grading whose every reply is validated protocol YAML."""

    def __init__(
        self,
        llm: LLM,
        *,
        max_requests: int = MAX_REQUESTS,
        on_rerequest: Callable[[str, int], None] | None = None,
    ) -> None:
        self.llm = llm
        self.model = llm.model
        self.max_requests = max_requests
        self._on_rerequest = on_rerequest
        self._lock = threading.Lock()
        self.rerequests = 0

    def _rerequested(self, problem: str, number: int) -> None:
        with self._lock:
            self.rerequests += 1
        if self._on_rerequest is not None:
            self._on_rerequest(problem, number)

    def complete(
        self, system: str, messages: list[dict[str, Any]], *, max_tokens: int | None = None
    ) -> JudgeAnswer:
        """Grade the answer in ``messages``; grading's own PASS/FAIL instruction (``system``) is
        replaced by the judge protocol, whose validated verdict is returned as that line."""
        exchange = ask(
            self.llm,
            JUDGE_SYSTEM,
            messages,
            parse_judge_reply,
            max_requests=self.max_requests,
            max_tokens=max_tokens,
            on_rerequest=self._rerequested,
        )
        reply: JudgeReply = exchange.value
        if reply.status == "ungradable":
            raise SkillsmithError(f"the judge could not grade it: {reply.reason}")
        verdict = "PASS" if reply.verdict == "pass" else "FAIL"
        return JudgeAnswer(f"{verdict}\n{reply.evidence}", reply, exchange.requests)

    @property
    def requests(self) -> int:
        """Model requests made so far (first asks and re-requests)."""
        return self.llm.calls


def offline_judge(system: str, messages: list[dict[str, Any]]) -> str:
    """The offline judge: grades the ``[evidence]`` rule deterministically, nothing else.

    It reads grading's request (``Criterion: …`` and the ``<answer>`` block) from the first user
    message: a re-request of the same answer is graded identically.
    """
    first = next((m for m in messages if m.get("role") == "user"), {})
    prompt = str(first.get("content") or "")
    criterion = _CRITERION.search(prompt)
    answer_match = _ANSWER.search(prompt, max(0, prompt.rfind("<answer>\n")))  # the last one
    answer = answer_match.group(1) if answer_match else ""
    text = criterion.group(1).strip() if criterion else ""
    tag = f"[{EVIDENCE}] "
    positive = evidence_label(text[len(tag) :]) if text.startswith(tag) else None
    if positive is None:
        return dump_reply(
            {
                "protocol": JUDGE_PROTOCOL,
                "status": "ungradable",
                "reason": "the offline judge grades only the [evidence] rule of the standard",
            }
        )
    verdicts = re.findall(DEFAULT_LABEL_PATTERN, answer, re.IGNORECASE | re.MULTILINE)
    said = normalise_label(verdicts[-1]) if verdicts else None
    cited = _CITATION.search(answer)
    if said != normalise_label(positive):
        verdict, evidence = "fail", f"the verdict is {said or 'missing'}, not {positive}"
    elif cited is None:
        verdict, evidence = "fail", f"a {positive} verdict without any file:line finding"
    else:
        verdict, evidence = "pass", f"{positive}, citing {cited.group(0)}"
    reply = {"protocol": JUDGE_PROTOCOL, "status": "graded", "verdict": verdict}
    return dump_reply({**reply, "evidence": evidence})


def make_judge(
    ws: Workspace | None,
    model_cfg: ModelConfig,
    *,
    on_rerequest: Callable[[str, int], None] | None = None,
) -> ProtocolJudge:
    """The configured judge (anthropic, or the offline judge) behind the strict protocol."""
    return ProtocolJudge(make_llm(model_cfg, ws, offline=offline_judge), on_rerequest=on_rerequest)


def session_judge(ws: Workspace, model_cfg: ModelConfig, log: SessionLog) -> ProtocolJudge:
    """The configured judge of a Builder or Optimizer session: each re-request of a malformed
    reply is a ``judge_rerequest`` message in the session's log, next to the decisions it cost."""

    def rerequested(problem: str, number: int) -> None:
        log.emit("message", stage="judge_rerequest", problem=problem, request=number)

    return make_judge(ws, model_cfg, on_rerequest=rerequested)
