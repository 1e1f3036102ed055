"""The proposer interface: turn a diagnosis into one candidate diff against SKILL.md.

A proposer is the only place a model touches a skill, and all it may produce is a unified diff;
what it is told and what it returns are plain data so a round can be checkpointed, resumed and
traced (which root cause, how many attempts, what it cost). Whether the diff is any good is for
the filters and the gates to say, never for the proposer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from engine.core.benchmark import Benchmark
from engine.core.config import Config, LimitsConfig
from engine.core.errors import UsageError
from engine.core.patch_apply import parse_diff
from engine.core.taboo import TabooEntry
from engine.core.workspace import Workspace
from engine.evaluation.diagnosis import Diagnosis
from engine.evaluation.llm import TokenUsage, make_llm
from engine.evaluation.patches.filters import FilterReport, run_filters
from engine.evaluation.patches.signature import signature, taboo_rule
from engine.evaluation.patches.textrules import TextRules, load_text_rules

NO_VALID_PATCH = "no valid patch"


@dataclass(frozen=True)
class PatchTarget:
    """The root cause a patch is written for (one entry of the diagnosis' root causes)."""

    rule_id: str
    direction: str
    case_ids: tuple[str, ...]
    share: float
    explanation: str
    evidence: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.direction} + {self.rule_id}"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PatchTarget:
        return cls(
            rule_id=str(data.get("rule_id", "")),
            direction=str(data.get("direction", "")),
            case_ids=tuple(str(c) for c in data.get("case_ids") or ()),
            share=float(data.get("share") or 0.0),
            explanation=str(data.get("explanation") or ""),
            evidence=tuple(str(e) for e in data.get("evidence") or ()),
        )


@dataclass(frozen=True)
class ProposalContext:
    """Everything a proposer may see; nothing from holdout or golden cases, no rubric.

    ``diagnosis`` is an :class:`engine.evaluation.diagnosis.Diagnosis` or its JSON (``to_dict()``);
    ``gt_flags`` the suspected-label cases (ids, or ``Suspicion.to_dict()`` mappings);
    ``feedback_rows`` the results rows of the split the proposer may learn from; ``target`` a
    root-cause id (``"FN + progress_mismatch"``) to patch instead of the first actionable one.
    """

    skill_name: str
    skill_text: str
    diagnosis: Diagnosis | Mapping[str, Any]
    gt_flags: Sequence[str | Mapping[str, Any]] = ()
    taboo_entries: Sequence[TabooEntry] = ()
    feedback_rows: Sequence[Mapping[str, Any]] = ()
    bench: Benchmark | None = None
    slim: bool = False
    target: str | None = None
    # The size past which only merges and deletions pass (see engine.loops.evolve.convergence); None
    # leaves it at ``limits.max_skill_bytes``.
    slim_limit: int | None = None

    def slim_bytes(self, limits: LimitsConfig) -> int:
        return self.slim_limit or limits.max_skill_bytes

    @property
    def diagnosis_dict(self) -> Mapping[str, Any]:
        return self.diagnosis.to_dict() if isinstance(self.diagnosis, Diagnosis) else self.diagnosis

    @property
    def root_causes(self) -> list[PatchTarget]:
        return [PatchTarget.from_dict(rc) for rc in self.diagnosis_dict.get("root_causes") or ()]

    def targets(self) -> list[PatchTarget]:
        """The root causes to patch, in order: the named one, else every actionable one."""
        causes = self.diagnosis_dict.get("root_causes") or ()
        if self.target is not None:
            return [PatchTarget.from_dict(rc) for rc in causes if _cause_id(rc) == self.target]
        return [PatchTarget.from_dict(rc) for rc in causes if rc.get("worth_patch")]

    @property
    def flagged_case_ids(self) -> list[str]:
        """Cases whose label the ground-truth audit doubts: never bend the skill to them."""
        ids: list[str] = []
        for flag in self.gt_flags:
            if isinstance(flag, str):
                ids.append(flag)
            elif flag.get("flagged", True) and flag.get("case_id"):
                ids.append(str(flag["case_id"]))
        return ids

    def check(
        self, diff: str, target: PatchTarget, limits: LimitsConfig, rules: TextRules | None
    ) -> FilterReport:
        return run_filters(
            diff,
            self.skill_text,
            taboo=self.taboo_entries,
            rule_id=target.rule_id,
            direction=target.direction,
            limits=limits,
            slim=self.slim,
            slim_limit=self.slim_limit,
            rules=rules,
        )


def _cause_id(rc: Mapping[str, Any]) -> str:
    return str(rc.get("id") or f"{rc.get('direction')} + {rc.get('rule_id')}")


@dataclass(frozen=True)
class Proposal:
    """One proposer answer: a diff that passed the filters, or None and why not."""

    diff: str | None
    rule_id: str
    direction: str
    reason: str
    attempts: int
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str = ""
    cost_usd: float | None = 0.0
    summary: str = ""  # one line for candidate.yaml
    case_ids: tuple[str, ...] = ()  # the failing cases it means to fix
    report: FilterReport | None = None  # the filters' verdict on the last diff tried
    skill_text: str | None = None  # SKILL.md with the diff applied

    @property
    def ok(self) -> bool:
        return self.diff is not None

    @property
    def taboo_rule(self) -> str:
        """The ``rule_id`` to record in taboo.json when this patch is rejected."""
        return taboo_rule(self.rule_id, self.direction)

    @property
    def signature(self) -> str | None:
        return None if self.diff is None else signature(self.rule_id, self.direction, self.diff)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "rule_id": self.rule_id,
            "direction": self.direction,
            "reason": self.reason,
            "summary": self.summary,
            "attempts": self.attempts,
            "model": self.model,
            "usage": {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
                "cache_read_tokens": self.usage.cache_read_tokens,
                "cache_write_tokens": self.usage.cache_write_tokens,
            },
            "cost_usd": self.cost_usd,
            "case_ids": list(self.case_ids),
            "signature": self.signature,
            "filters": None if self.report is None else self.report.to_dict(),
        }


def summary_of(target: PatchTarget, diff: str) -> str:
    """What a candidate says it does: its target and its first added line, whole — a list that
    is short of room cuts it when it shows it, so ``queue show`` can still give it in full."""
    parsed = parse_diff(diff)
    added = [text.strip() for text in parsed.added if text.strip()]
    first = added[0] if added else f"removes {len(parsed.removed)} lines"
    return f"{target.id}: {first}"


class Proposer(Protocol):
    kind: str

    def propose(self, ctx: ProposalContext) -> Proposal:
        """One candidate patch for the context's root causes (never raises for a bad answer)."""
        ...


PROPOSER_KINDS = ("offline", "anthropic")
DEFAULT_MAX_ATTEMPTS = 3


def make_proposer(
    kind: str | None, ws: Workspace, cfg: Config | None = None, *, seed: int | None = None
) -> Proposer:
    """The proposer ``kind`` (default: the provider of ``models.proposer``) for a workspace.

    Both read the workspace's limits and text rules; the offline one is seeded with ``seed``
    (default ``splits.seed``), the Anthropic one takes its key from the environment or the vault.
    """
    from engine.evaluation.patches.anthropic_proposer import AnthropicProposer
    from engine.evaluation.patches.offline_proposer import OfflineProposer

    cfg = cfg or ws.load_config()
    kind = kind or cfg.models.proposer.provider
    rules = load_text_rules(ws)
    if kind == "offline":
        return OfflineProposer(
            ws, cfg.splits.seed if seed is None else seed, limits=cfg.limits, rules=rules
        )
    if kind == "anthropic":
        model = replace(cfg.models.proposer, provider="anthropic")
        return AnthropicProposer(
            make_llm(model, ws),
            DEFAULT_MAX_ATTEMPTS,
            limits=cfg.limits,
            rules=rules,
            max_tokens=model.max_tokens,
        )
    raise UsageError(f"proposer {kind!r}: expected one of {', '.join(PROPOSER_KINDS)}")
