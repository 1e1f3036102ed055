"""Rule-based diagnosis of why cases fail (the outcome-driven article's flow_diagnosis).

Diagnosis is deterministic on purpose: an LLM asked "is this a skill problem?" drifts with the
prompt and the temperature, rules do not. Rules read the compressed trace
(engine.evaluation.traces), and
joint attribution crosses their hits with the outcome to name root causes worth a patch.
"""

from engine.evaluation.diagnosis.attribution import (
    CaseDiagnosis,
    CaseInput,
    Diagnosis,
    RootCause,
    attribute,
    diagnose,
    outcome_of,
    row_key,
)
from engine.evaluation.diagnosis.registry import (
    CaseContext,
    Checker,
    CheckResult,
    Registry,
    RuleHit,
    checker,
)
from engine.evaluation.diagnosis.rules import BUILTIN_CHECKERS

BUILTIN_RULE_IDS = tuple(c.rule_id for c in BUILTIN_CHECKERS)

__all__ = [
    "BUILTIN_RULE_IDS",
    "CaseContext",
    "CaseDiagnosis",
    "CaseInput",
    "CheckResult",
    "Checker",
    "Diagnosis",
    "Registry",
    "RootCause",
    "RuleHit",
    "attribute",
    "checker",
    "diagnose",
    "outcome_of",
    "row_key",
]
