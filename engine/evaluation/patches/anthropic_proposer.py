"""The model proposer: one unified diff from the Anthropic API, vetted before it leaves.

The taboo list is read before the model is called: a (rule, direction) pair that already has a
rejected patch is skipped, so no call is spent circling an idea the gates threw out. Every answer
is run through the filters; an unusable one (no diff, a diff that does not apply, a heading, a
slogan…) is sent back with the reason, a bounded number of times, after which the round records
"no valid patch" instead of guessing.
"""

from __future__ import annotations

from engine.core.config import LimitsConfig
from engine.core.patch_apply import PatchError
from engine.evaluation.llm import LLM, TokenUsage
from engine.evaluation.patches.filters import FilterReport
from engine.evaluation.patches.prompts import build_prompt, extract_diff, retry_message
from engine.evaluation.patches.proposer import (
    NO_VALID_PATCH,
    PatchTarget,
    Proposal,
    ProposalContext,
    summary_of,
)
from engine.evaluation.patches.signature import blocking_entry
from engine.evaluation.patches.textrules import TextRules, default_rules

DEFAULT_MAX_TOKENS = 4096


class AnthropicProposer:
    kind = "anthropic"

    def __init__(
        self,
        llm: LLM,
        max_attempts: int = 3,
        *,
        limits: LimitsConfig | None = None,
        rules: TextRules | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.llm = llm
        self.max_attempts = max_attempts
        self.limits = limits or LimitsConfig()
        self.rules = rules or default_rules()
        self.max_tokens = max_tokens

    def propose(self, ctx: ProposalContext) -> Proposal:
        targets = ctx.targets()
        if not targets:
            return Proposal(None, "", "", "no root cause worth a patch", attempts=0)
        for target in targets:
            if blocking_entry(ctx.taboo_entries, target.rule_id, target.direction) is None:
                return self._ask(ctx, target)
        first = targets[0]
        entry = blocking_entry(ctx.taboo_entries, first.rule_id, first.direction)
        assert entry is not None
        return Proposal(
            None,
            first.rule_id,
            first.direction,
            f"taboo: {first.id} already has a rejected patch ({entry.diff_hash}: {entry.reason});"
            " the model was not asked",
            attempts=0,
            case_ids=first.case_ids,
        )

    def _ask(self, ctx: ProposalContext, target: PatchTarget) -> Proposal:
        system, user = build_prompt(ctx, target, self.limits, self.rules)
        messages: list[dict[str, object]] = [{"role": "user", "content": user}]
        usage = TokenUsage()
        cost: float | None = 0.0
        model = self.llm.model
        problem = ""
        report: FilterReport | None = None
        for attempt in range(1, self.max_attempts + 1):
            completion = self.llm.complete(system, messages, max_tokens=self.max_tokens)
            usage = usage + completion.usage
            cost = (
                None if cost is None or completion.cost_usd is None else cost + completion.cost_usd
            )
            model = completion.model
            try:
                diff = extract_diff(completion.text)
            except PatchError as exc:
                problem = str(exc)
            else:
                report = ctx.check(diff, target, self.limits, self.rules)
                if report.passed:
                    return Proposal(
                        diff,
                        target.rule_id,
                        target.direction,
                        f"model diff accepted by the filters on attempt {attempt}",
                        attempts=attempt,
                        usage=usage,
                        model=model,
                        cost_usd=cost,
                        summary=summary_of(target, diff),
                        case_ids=target.case_ids,
                        report=report,
                        skill_text=report.patched,
                    )
                problem = report.reason()
            messages += [
                {"role": "assistant", "content": completion.text},
                {"role": "user", "content": retry_message(problem)},
            ]
        return Proposal(
            None,
            target.rule_id,
            target.direction,
            f"{NO_VALID_PATCH} after {self.max_attempts} attempts: {problem}",
            attempts=self.max_attempts,
            usage=usage,
            model=model,
            cost_usd=cost,
            case_ids=target.case_ids,
            report=report,
        )
