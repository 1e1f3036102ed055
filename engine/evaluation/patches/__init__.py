"""The patch engine: proposers write one unified diff against SKILL.md; filters vet it.

Rules decide, the model only writes candidates: a proposer (Anthropic or the offline one) turns
a diagnosis into a diff, and the deterministic filters (taboo, structure, text quality, semantic
traps, slim mode) refuse anything unsafe to evaluate before a single case is run.
"""

from engine.core.patch_apply import PatchError, apply_patch, parse_diff
from engine.evaluation.patches.anthropic_proposer import AnthropicProposer
from engine.evaluation.patches.filters import (
    FilterFinding,
    FilterReport,
    concrete_token,
    run_filters,
)
from engine.evaluation.patches.offline_proposer import OfflineProposer
from engine.evaluation.patches.proposer import (
    NO_VALID_PATCH,
    PatchTarget,
    Proposal,
    ProposalContext,
    Proposer,
    make_proposer,
)
from engine.evaluation.patches.signature import signature, split_taboo_rule, taboo_rule
from engine.evaluation.patches.textrules import TextRules, load_text_rules

__all__ = [
    "NO_VALID_PATCH",
    "AnthropicProposer",
    "FilterFinding",
    "FilterReport",
    "OfflineProposer",
    "PatchError",
    "PatchTarget",
    "Proposal",
    "ProposalContext",
    "Proposer",
    "TextRules",
    "apply_patch",
    "concrete_token",
    "load_text_rules",
    "make_proposer",
    "parse_diff",
    "run_filters",
    "signature",
    "split_taboo_rule",
    "taboo_rule",
]
