"""The Optimizer's offline model: a deterministic candidate writer for the demo and for CI.

It answers the candidate protocol from the request's diagnosis the way a careful engineer would
pick the cheapest fix for the biggest root cause, one file at a time, across all three kinds of
editable state:

- the agent ran out of time (``budget_exhaustion`` with a timeout): raise ``agent.timeout_s`` in
  skillsmith.yaml by half; out of turns or looping (``budget_exhaustion``, ``tool_loop``): raise
  ``agent.max_turns`` by half — both capped at the request's limits;
- it concluded before doing the skill's remaining steps (``premature_conclusion``): a line telling
  it to run every step before concluding, in AGENTS.md first (a habit of the agent's, so it holds
  for every skill; the demo agent reads AGENTS.md as Claude Code does), then, if that was tried
  and rolled back, in the skill's Pitfalls;
- it missed or wrongly flagged something the skill's steps and Pitfalls decide (any other root
  cause, FN or FP): the skill edit evolution's offline proposer writes for that root cause from
  the reference run's traces and the cases' files (engine.evaluation.patches.offline_proposer) —
  the same writer, so the Optimizer and evolve never disagree on what a trace calls for;
- then, for the cases still failing: a line in AGENTS.md asking for every kept finding as
  ``file:line``.

The paired verdict, not this writer, decides whether an idea helped: one that changes nothing is
rolled back.

Ideas whose diff was tried before are skipped, so a rejected candidate is never proposed again; when
nothing new is left it answers ``none_left`` and the session stops proposing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from engine.core.benchmark import load_benchmark
from engine.core.config import Config
from engine.core.runs import RunFolder
from engine.core.schema import from_mapping
from engine.core.skill import SkillDoc
from engine.core.store import SkillStore
from engine.core.workspace import CONFIG_NAME, Workspace
from engine.evaluation.patches.proposer import ProposalContext, make_proposer
from engine.evaluation.protocol import dump_reply, request_data
from engine.evaluation.runner import SKILL
from engine.loops.agent_optimizer.candidate import (
    AGENTS,
    CANDIDATE_PROTOCOL,
    SKILL_FILE,
    diff_sha,
    file_diff,
)

BUDGET_RULES = ("budget_exhaustion", "tool_loop")
HASTE_RULES = ("premature_conclusion",)
THOROUGH_LINE = (
    "- Run every step, through the final `read -n <file>` check, before you conclude, even "
    "after the first finding."
)
EVIDENCE_LINE = "- Before the verdict, list every finding you keep as `file:line` with its step."
_TIMEOUT = re.compile(r"\btime(d)?\s?out\b", re.IGNORECASE)
_AGENT_BLOCK = re.compile(r"^agent:[ \t]*\n", re.MULTILINE)

Idea = tuple[str, str, str, str, str]  # target, new text, rule, summary, hypothesis


def _set_agent_key(config: str, key: str, value: str) -> str | None:
    """``config`` with ``agent.<key>`` set to ``value`` (the line replaced, or added at the top of
    the agent block), comments and layout kept; None without a block-style agent section."""
    block = _AGENT_BLOCK.search(config)
    if block is None:
        return None
    section_end = re.compile(r"^[^\s#]", re.MULTILINE).search(config, block.end())
    end = section_end.start() if section_end else len(config)
    line = re.compile(rf"^[ \t]+{re.escape(key)}:[ \t]*([^\n#]*?)[ \t]*(#[^\n]*)?$", re.MULTILINE)
    found = line.search(config, block.end(), end)
    if found is not None:
        return config[: found.start(1)] + value + config[found.end(1) :]
    indent = re.match(r"[ \t]+", config[block.end() :])
    pad = indent.group(0) if indent else "  "
    return config[: block.end()] + f"{pad}{key}: {value}\n" + config[block.end() :]


def _raise_budget(config: str, cause: Mapping[str, Any], limits: Mapping[str, Any]) -> Idea | None:
    """More turns (or more time, when the runs timed out), by half, within the limits."""
    agent = from_mapping(Config, yaml.safe_load(config), CONFIG_NAME).agent
    timed_out = bool(_TIMEOUT.search(json.dumps(cause.get("evidence") or [])))
    cases = ", ".join(cause["case_ids"])
    if timed_out:
        cap = float(limits.get("agent_max_timeout_s") or agent.timeout_s * 1.5)
        old_s, new_s = agent.timeout_s, min(cap, agent.timeout_s * 1.5)
        text = _set_agent_key(config, "timeout_s", f"{new_s:g}") if new_s > old_s else None
        summary, what = f"agent.timeout_s {old_s:g} → {new_s:g}", f"with {new_s:g}s"
    else:
        cap_turns = int(limits.get("agent_max_turns") or agent.max_turns * 2)
        old, new = agent.max_turns, min(cap_turns, agent.max_turns + max(1, agent.max_turns // 2))
        text = _set_agent_key(config, "max_turns", str(new)) if new > old else None
        summary, what = f"agent.max_turns {old} → {new}", f"with {new} turns"
    if text is None:
        return None
    return (
        CONFIG_NAME,
        text,
        str(cause["rule_id"]),
        summary,
        f"{what} the runs that hit the budget ({cases}) finish their steps",
    )


def _thorough(files: Mapping[str, str | None], cause: Mapping[str, Any]) -> Iterator[Idea]:
    rule, cases = str(cause["rule_id"]), ", ".join(cause["case_ids"])
    hypothesis = f"without the early stop, {cases} reach the Pitfalls review"
    agents = files.get(AGENTS) or ""
    if THOROUGH_LINE in agents:
        return
    yield (
        AGENTS,
        _appended(agents, THOROUGH_LINE),
        rule,
        "run every step before concluding",
        f"{hypothesis}, whichever skill they follow",
    )
    for target, text in sorted(files.items()):
        if not target.startswith("skills/") or text is None or THOROUGH_LINE in text:
            continue
        doc = SkillDoc.parse(text)
        if doc.section("pitfalls") is None:
            continue
        pitfalls = doc.section("pitfalls") or ""
        new = text.replace(pitfalls, pitfalls.rstrip("\n") + "\n" + THOROUGH_LINE + "\n", 1)
        yield target, new, rule, "run every step before concluding", hypothesis
        return


def _appended(text: str, line: str) -> str:
    return (text.rstrip("\n") + "\n" if text else "") + line + "\n"


def _skill_patch(
    ws: Workspace, data: Mapping[str, Any], cause: Mapping[str, Any]
) -> tuple[Idea, list[str]] | None:
    """Evolution's offline patch for this root cause, on the first skill it finds one for, with
    the cases it is written to fix (often fewer than the root cause's).

    It learns from every row of the reference run (the Optimizer's benchmark has no feedback
    split of its own) and respects the skill's taboo list, so a patch the verdict rolled back is
    not written again."""
    files: Mapping[str, str | None] = data["files"]
    reference = data.get("reference") or {}
    if not reference.get("run_id") or not data.get("benchmark"):
        return None
    bench = load_benchmark(ws.benchmarks_dir / str(data["benchmark"]))
    folder = RunFolder(ws.runs_dir / str(reference["run_id"]))
    rows = [r for r in folder.latest_rows().values() if r.get("variant", SKILL) == SKILL]
    proposer = make_proposer("offline", ws)
    for target, text in sorted(files.items()):
        if not target.startswith("skills/") or text is None:
            continue
        name = target.removeprefix("skills/").removesuffix(f"/{SKILL_FILE}")
        store = SkillStore(ws, name)
        ctx = ProposalContext(
            skill_name=name,
            skill_text=text,
            diagnosis={"root_causes": [cause]},
            taboo_entries=store.taboo().entries() if (ws.history_dir / name).is_dir() else (),
            feedback_rows=rows,
            bench=bench,
            target=f"{cause.get('direction')} + {cause['rule_id']}",
        )
        proposal = proposer.propose(ctx)
        if proposal.diff is None or proposal.skill_text is None:
            continue
        cases = list(proposal.case_ids) or list(cause["case_ids"])
        idea = (
            target,
            proposal.skill_text,
            str(cause["rule_id"]),
            proposal.summary or proposal.reason,
            f"{', '.join(cases)} fail for what this edit of the skill covers; with it they pass",
        )
        return idea, cases
    return None


def _evidence(files: Mapping[str, str | None], cases: list[str]) -> Idea | None:
    text = files.get(AGENTS) or ""
    if EVIDENCE_LINE in text:
        return None
    return (
        AGENTS,
        _appended(text, EVIDENCE_LINE),
        "none",
        "ask for every kept finding as file:line",
        f"stating findings as file:line makes the verdicts of {', '.join(cases)} traceable",
    )


def _ideas(data: Mapping[str, Any], ws: Workspace | None) -> Iterator[tuple[Idea, list[str]]]:
    files: Mapping[str, str | None] = data["files"]
    causes = sorted(data.get("root_causes") or [], key=lambda rc: -float(rc.get("share") or 0))
    for cause in causes:
        cases = list(cause["case_ids"])
        if cause.get("rule_id") in BUDGET_RULES:
            idea = _raise_budget(str(files[CONFIG_NAME]), cause, data.get("limits") or {})
            if idea is not None:
                yield idea, cases
        elif cause.get("rule_id") in HASTE_RULES:
            for idea in _thorough(files, cause):
                yield idea, cases
        elif ws is not None and cause.get("worth_patch", True):
            patch = _skill_patch(ws, data, cause)
            if patch is not None:
                yield patch
    failing = [c["id"] for c in data.get("cases") or [] if float(c.get("score") or 0) < 100]
    if failing:
        idea = _evidence(files, failing)
        if idea is not None:
            yield idea, failing


def optimizer_offline(
    system: str, messages: list[dict[str, Any]], ws: Workspace | None = None
) -> str:
    """The first untried idea as a candidate reply (an invalid reply when none is left).

    With ``ws`` (the workspace the session optimizes) it also writes skill edits from the traces
    of the request's reference run; without one, only the ideas the request alone supports."""
    data = request_data(messages)
    tried = set(data.get("tried") or [])
    files: Mapping[str, str | None] = data["files"]
    for (target, text, rule, summary, hypothesis), cases in _ideas(data, ws):
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
