"""Gates: deterministic checks that decide whether a candidate SKILL.md may be accepted.

Outcome gates (Target, Guardrail, Holdout, Verify) live in ``engine.evaluation.gates.outcome``;
candidate
gates (Spec, Safety, Effectiveness, Human) in ``engine.evaluation.gates.candidate``. All return a
``GateResult``. Every candidate enters the queue through ``engine.evaluation.gates.submission``;
the approval
timeout lives in ``engine.evaluation.gates.expiry``.
"""

from engine.evaluation.gates.result import (
    GateResult,
    Verdict,
    all_passed,
    first_failure,
    gates_json,
)

__all__ = ["GateResult", "Verdict", "all_passed", "first_failure", "gates_json"]
