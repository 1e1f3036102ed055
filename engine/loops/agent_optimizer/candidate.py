"""One bounded candidate edit of the agent's editable state, and the protocol that proposes it.

The Optimizer may change what PenguinHarness calls the Target Agent's editable state —
``AGENTS.md``, a skill's ``SKILL.md``, or the agent's working settings in ``skillsmith.yaml``
(its turn budget, time limit and allowed tools, within ``limits.agent_max_turns`` and
``limits.agent_max_timeout_s``) — and nothing else: not the benchmark, not the judge or proposer
models, not the agent's kind, model, noise or sandbox, not the workspace version, never the
vault. A candidate is one unified diff of one of those files, small (the patch-line limit of
the outcome-driven design), secret-free and different from every candidate tried before. A skill
diff also passes the patch filters and the skill's taboo list (engine.evaluation.patches), exactly
like an
evolution patch. Whatever fails these checks goes back to the model as a protocol error, so the
model can propose a different, safe fix instead.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.core.config import Config, LimitsConfig
from engine.core.errors import FormatError, SkillsmithError
from engine.core.safety import scan
from engine.core.schema import from_mapping, to_mapping
from engine.core.skill import SkillDoc
from engine.core.store import SkillStore, read_text, unified_diff
from engine.core.vault import secret_values
from engine.core.workspace import CONFIG_NAME, Workspace
from engine.evaluation.patches import PatchError, apply_patch, parse_diff, run_filters
from engine.evaluation.protocol import ProtocolError, check_keys, load_reply, text_field

CANDIDATE_PROTOCOL = "skillsmith-candidate/1"
AGENTS = "AGENTS.md"
SKILL_FILE = "SKILL.md"
_SKILL_TARGET = re.compile(r"^skills/([A-Za-z0-9][A-Za-z0-9._-]*)/SKILL\.md$")
# The agent settings a candidate may tune. Every other one would swap the agent (kind, command,
# model, noise) or widen what it may reach (environment, sandbox, network, paths) instead of
# improving how it works: never the model's to change.
TUNABLE_AGENT_KEYS = ("max_turns", "timeout_s", "allowed_tools")
# Claude Code's tools that act only inside the sealed run folder: the ones allowed_tools may name.
LOCAL_TOOLS = frozenset(
    ("Skill", "Bash", "Read", "Grep", "Glob", "LS", "Edit", "MultiEdit", "Write", "TodoWrite")
)
CANDIDATE_SYSTEM = f"""You improve a target agent against a frozen benchmark \
(PenguinHarness agent-optimization). From the scores, the diagnosed root causes and the linked \
traces, propose ONE bounded candidate: a unified diff of exactly one editable file — AGENTS.md, \
skills/<name>/SKILL.md, or skillsmith.yaml, where only agent.max_turns, agent.timeout_s and \
agent.allowed_tools may change (within the request's limits). Diff headers: \
`--- a/SKILL.md` / `+++ b/SKILL.md` for a skill, `--- a/AGENTS.md` / `+++ b/AGENTS.md`, or \
`--- a/skillsmith.yaml` / `+++ b/skillsmith.yaml`. Never repeat a tried candidate.

Reply with exactly one YAML mapping and nothing else:
protocol: {CANDIDATE_PROTOCOL}
target: <the file's path in the request's files>
rule: <the diagnosis rule id it addresses, or none>
summary: <one line>
hypothesis: <one line: which cases should change, and why>
targeted_cases: [<case ids the hypothesis is about>]
diff: |
  <the unified diff>

or, when no different safe candidate is left:
protocol: {CANDIDATE_PROTOCOL}
none_left: <one line: why>
"""


def diff_sha(diff: str) -> str:
    """How tried candidates are remembered (and recognised when proposed again)."""
    return hashlib.sha256(diff.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class NoneLeft:
    """The model's answer that no different safe candidate is left."""

    reason: str


@dataclass(frozen=True)
class AgentCandidate:
    target: str  # AGENTS.md | skillsmith.yaml | skills/<name>/SKILL.md
    rule: str
    summary: str
    hypothesis: str
    targeted_cases: tuple[str, ...]
    diff: str
    before: str  # the target's text the diff was made against ("" for a new AGENTS.md)
    after: str  # the target's text with the diff applied

    @property
    def diff_sha(self) -> str:
        return diff_sha(self.diff)

    @property
    def skill(self) -> str | None:
        found = _SKILL_TARGET.match(self.target)
        return found.group(1) if found else None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["targeted_cases"] = list(self.targeted_cases)
        out["diff_sha"] = self.diff_sha
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentCandidate:
        return cls(
            target=str(data["target"]),
            rule=str(data["rule"]),
            summary=str(data["summary"]),
            hypothesis=str(data["hypothesis"]),
            targeted_cases=tuple(str(c) for c in data["targeted_cases"]),
            diff=str(data["diff"]),
            before=str(data["before"]),
            after=str(data["after"]),
        )


def editable_files(ws: Workspace) -> dict[str, str | None]:
    """The editable state a candidate may change, as text (None: AGENTS.md does not exist)."""
    files: dict[str, str | None] = {
        AGENTS: read_text(ws.agents_md) if ws.agents_md.is_file() else None,
        CONFIG_NAME: read_text(ws.config_path),
    }
    for name in ws.skill_names():
        files[f"skills/{name}/{SKILL_FILE}"] = read_text(ws.skill_path(name))
    return files


def file_diff(old: str, new: str, target: str) -> str:
    """The diff of one editable file, with the headers the candidate protocol names."""
    diff = unified_diff(old, new)
    name = SKILL_FILE if _SKILL_TARGET.match(target) else target
    if name == SKILL_FILE:
        return diff
    return diff.replace(f"--- a/{SKILL_FILE}", f"--- a/{name}", 1).replace(
        f"+++ b/{SKILL_FILE}", f"+++ b/{name}", 1
    )


def _check_diff(diff: str, name: str, text: str, limits: LimitsConfig) -> str:
    """Apply a non-skill diff after checking its shape and size; returns the new text."""
    try:
        parsed = parse_diff(diff)
        if parsed.files != 1 or (parsed.source_file, parsed.target_file) != (
            f"a/{name}",
            f"b/{name}",
        ):
            raise ProtocolError(f"reply.diff: expected one file with headers a/{name}, b/{name}")
        changed = len(parsed.added) + len(parsed.removed)
        if changed == 0:
            raise ProtocolError("reply.diff: the diff changes nothing")
        if changed > limits.max_patch_lines:
            raise ProtocolError(
                f"reply.diff: {changed} changed lines; a candidate is bounded to "
                f"{limits.max_patch_lines}"
            )
        return apply_patch(text, diff)
    except PatchError as exc:
        raise ProtocolError(f"reply.diff: {exc}") from None


def _check_config(before: str, after: str, limits: LimitsConfig) -> None:
    """Only the agent's tunable settings may change, and only within the limits."""
    try:
        old = to_mapping(from_mapping(Config, yaml.safe_load(before), CONFIG_NAME))
        new = to_mapping(from_mapping(Config, yaml.safe_load(after), CONFIG_NAME))
    except (yaml.YAMLError, FormatError) as exc:
        raise ProtocolError(f"reply.diff: the edited {CONFIG_NAME} is invalid: {exc}") from None
    for key in old:
        if key != "agent" and old[key] != new[key]:
            raise ProtocolError(f"reply.diff: may change only the agent section, not {key!r}")
    tunable = ", ".join(f"agent.{k}" for k in TUNABLE_AGENT_KEYS)
    for key in old["agent"]:
        if key not in TUNABLE_AGENT_KEYS and old["agent"][key] != new["agent"][key]:
            raise ProtocolError(
                f"reply.diff: may not change agent.{key} (it swaps or unseals the agent; only "
                f"{tunable} are tuned)"
            )
    agent = new["agent"]
    if not 1 <= agent["max_turns"] <= limits.agent_max_turns:
        raise ProtocolError(
            f"reply.diff: agent.max_turns must stay within 1..{limits.agent_max_turns} "
            "(limits.agent_max_turns)"
        )
    if not 0 < agent["timeout_s"] <= limits.agent_max_timeout_s:
        raise ProtocolError(
            f"reply.diff: agent.timeout_s must stay within (0, {limits.agent_max_timeout_s:g}] "
            "(limits.agent_max_timeout_s)"
        )
    unknown = sorted(set(agent["allowed_tools"]) - LOCAL_TOOLS)
    if unknown or not agent["allowed_tools"]:
        raise ProtocolError(
            "reply.diff: agent.allowed_tools must be a non-empty list of "
            f"{', '.join(sorted(LOCAL_TOOLS))}" + (f", not {unknown[0]!r}" if unknown else "")
        )


def _check_skill(ws: Workspace, name: str, diff: str, text: str, rule: str) -> str:
    cfg = ws.load_config()
    taboo = SkillStore(ws, name).taboo() if (ws.history_dir / name).is_dir() else None
    report = run_filters(
        diff, text, taboo=taboo, rule_id=rule, direction="optimize", limits=cfg.limits
    )
    if not report.passed or report.patched is None:
        raise ProtocolError(f"reply.diff: refused by the patch filters ({report.reason()})")
    try:
        SkillDoc.parse(report.patched)
    except SkillsmithError as exc:
        raise ProtocolError(f"reply.diff: the edited skill does not parse: {exc}") from None
    return report.patched


def _check_safety(ws: Workspace, diff: str) -> None:
    """AGENTS.md and the agent settings meet the Safety rules a skill meets in the patch filters
    (credentials and vault values, destructive commands, path traversal), on the added lines."""
    added = [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    refused = [f for f in scan("\n".join(added), secret_values(ws)) if f.severity == "error"]
    if refused:
        first = refused[0]
        raise ProtocolError(f"reply.diff: refused by Safety ({first.rule_id}: {first.message})")


def parse_candidate(
    text: str,
    *,
    ws: Workspace,
    files: Mapping[str, str | None],
    case_ids: Collection[str],
    tried: Collection[str],
) -> AgentCandidate | NoneLeft:
    """Validate a candidate reply against the workspace's editable state; the candidate (or the
    model's "none left") or a ProtocolError saying what to change."""
    data = load_reply(text, CANDIDATE_PROTOCOL)
    if "none_left" in data:
        check_keys(data, "reply", ("protocol", "none_left"))
        return NoneLeft(text_field(data, "none_left", "reply", one_line=True))
    check_keys(
        data,
        "reply",
        ("protocol", "target", "rule", "summary", "hypothesis", "targeted_cases", "diff"),
    )
    target = str(data["target"])
    if target not in files:
        raise ProtocolError(
            f"reply.target: {target!r} is not an editable file ({', '.join(files)})"
        )
    targeted = data["targeted_cases"]
    if not isinstance(targeted, list) or not targeted:
        raise ProtocolError("reply.targeted_cases: expected a non-empty list of case ids")
    unknown = [c for c in targeted if str(c) not in case_ids]
    if unknown:
        raise ProtocolError(f"reply.targeted_cases: {unknown[0]!r} is not a benchmark case")
    diff = data["diff"]
    if not isinstance(diff, str) or not diff.strip():
        raise ProtocolError("reply.diff: expected the unified diff as a block string")
    rule = text_field(data, "rule", "reply", one_line=True)
    before = files[target] or ""
    limits = ws.load_config().limits
    skill = _SKILL_TARGET.match(target)
    if skill:
        after = _check_skill(ws, skill.group(1), diff, before, rule)
    else:
        _check_safety(ws, diff)
        after = _check_diff(diff, target, before, limits)
        if target == CONFIG_NAME:
            _check_config(before, after, limits)
        elif len(after.encode("utf-8")) > limits.max_skill_bytes:
            raise ProtocolError(f"reply.diff: {AGENTS} would exceed {limits.max_skill_bytes} bytes")
    candidate = AgentCandidate(
        target=target,
        rule=rule,
        summary=text_field(data, "summary", "reply", one_line=True),
        hypothesis=text_field(data, "hypothesis", "reply", one_line=True),
        targeted_cases=tuple(str(c) for c in targeted),
        diff=diff,
        before=before,
        after=after,
    )
    if candidate.diff_sha in tried:
        raise ProtocolError("reply.diff: this exact candidate was tried before; propose another")
    return candidate


def target_path(ws: Workspace, target: str) -> Path:
    return ws.root / target


__all__ = [
    "AGENTS",
    "CANDIDATE_PROTOCOL",
    "CANDIDATE_SYSTEM",
    "LOCAL_TOOLS",
    "TUNABLE_AGENT_KEYS",
    "AgentCandidate",
    "NoneLeft",
    "diff_sha",
    "editable_files",
    "file_diff",
    "parse_candidate",
    "target_path",
]
