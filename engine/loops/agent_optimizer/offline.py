"""The Optimizer's offline model: a deterministic candidate writer for the demo and for CI.

It answers the candidate protocol from the request's diagnosis the way a careful engineer would
pick the cheapest fix for the biggest root cause, one file at a time:

- the agent ran out of turns or looped (``budget_exhaustion``, ``tool_loop``): raise
  ``agent.max_turns`` in skillsmith.yaml by half;
- it concluded before doing the skill's remaining steps (``premature_conclusion``): add a Pitfalls
  line to the skill telling it to run every step before concluding;
- otherwise: add a line to AGENTS.md asking for every kept finding as ``file:line``.

Ideas whose diff was tried before are skipped, so a rejected candidate is never proposed again; when
nothing new is left it answers ``none_left`` and the session stops proposing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from engine.core.skill import SkillDoc
from engine.core.workspace import CONFIG_NAME
from engine.evaluation.protocol import dump_reply, request_data
from engine.loops.agent_optimizer.candidate import AGENTS, CANDIDATE_PROTOCOL, diff_sha, file_diff

BUDGET_RULES = ("budget_exhaustion", "tool_loop")
HASTE_RULES = ("premature_conclusion",)
THOROUGH_LINE = (
    "- Run every step, through the final `read -n <file>` check, before you conclude, even "
    "after the first finding."
)
EVIDENCE_LINE = "- Before the verdict, list every finding you keep as `file:line` with its step."
_MAX_TURNS = re.compile(r"^(\s+max_turns:\s*)(\d+)\s*$", re.MULTILINE)
_AGENT_BLOCK = re.compile(r"^agent:\s*$", re.MULTILINE)

Idea = tuple[str, str, str, str, str]  # target, new text, rule, summary, hypothesis


def _raise_turns(config: str, cause: Mapping[str, Any]) -> Idea | None:
    block = _AGENT_BLOCK.search(config)
    found = _MAX_TURNS.search(config, block.end()) if block else None
    if found is None:
        return None
    old = int(found.group(2))
    new = old + max(1, old // 2)
    text = config[: found.start(2)] + str(new) + config[found.end(2) :]
    cases = ", ".join(cause["case_ids"])
    return (
        CONFIG_NAME,
        text,
        str(cause["rule_id"]),
        f"agent.max_turns {old} → {new}",
        f"with {new} turns the runs that hit the budget ({cases}) finish their steps",
    )


def _thorough(files: Mapping[str, str | None], cause: Mapping[str, Any]) -> Idea | None:
    for target, text in sorted(files.items()):
        if not target.startswith("skills/") or text is None or THOROUGH_LINE in text:
            continue
        doc = SkillDoc.parse(text)
        if doc.section("pitfalls") is None:
            continue
        pitfalls = doc.section("pitfalls") or ""
        new = text.replace(pitfalls, pitfalls.rstrip("\n") + "\n" + THOROUGH_LINE + "\n", 1)
        return (
            target,
            new,
            str(cause["rule_id"]),
            "run every step before concluding",
            f"without the early stop, {', '.join(cause['case_ids'])} reach the Pitfalls review",
        )
    return None


def _evidence(files: Mapping[str, str | None], cases: list[str]) -> Idea | None:
    text = files.get(AGENTS) or ""
    if EVIDENCE_LINE in text:
        return None
    new = (text.rstrip("\n") + "\n" if text else "") + EVIDENCE_LINE + "\n"
    return (
        AGENTS,
        new,
        "none",
        "ask for every kept finding as file:line",
        f"stating findings as file:line makes the verdicts of {', '.join(cases)} traceable",
    )


def _ideas(data: Mapping[str, Any]) -> Iterator[tuple[Idea, list[str]]]:
    files: Mapping[str, str | None] = data["files"]
    causes = sorted(data.get("root_causes") or [], key=lambda rc: -float(rc.get("share") or 0))
    for cause in causes:
        idea: Idea | None = None
        if cause.get("rule_id") in BUDGET_RULES:
            idea = _raise_turns(str(files[CONFIG_NAME]), cause)
        elif cause.get("rule_id") in HASTE_RULES:
            idea = _thorough(files, cause)
        if idea is not None:
            yield idea, list(cause["case_ids"])
    failing = [c["id"] for c in data.get("cases") or [] if float(c.get("score") or 0) < 100]
    if failing:
        idea = _evidence(files, failing)
        if idea is not None:
            yield idea, failing


def optimizer_offline(system: str, messages: list[dict[str, Any]]) -> str:
    """The first untried idea as a candidate reply (an invalid reply when none is left)."""
    data = request_data(messages)
    tried = set(data.get("tried") or [])
    files: Mapping[str, str | None] = data["files"]
    for (target, text, rule, summary, hypothesis), cases in _ideas(data):
        diff = file_diff(files[target] or "", text, target)
        if diff_sha(diff) in tried:
            continue
        return dump_reply(
            {
                "protocol": CANDIDATE_PROTOCOL,
                "target": target,
                "rule": rule,
                "summary": summary,
                "hypothesis": hypothesis,
                "targeted_cases": cases,
                "diff": diff,
            }
        )
    reason = "every idea for these root causes was tried"
    return dump_reply({"protocol": CANDIDATE_PROTOCOL, "none_left": reason})
