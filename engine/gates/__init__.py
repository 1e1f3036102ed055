"""Gates: deterministic checks that decide whether a candidate SKILL.md may be accepted.

Outcome gates (Target, Guardrail, Holdout, Verify) live in ``engine.gates.outcome``; candidate
gates (Spec, Safety, Effectiveness, Human) in ``engine.gates.candidate``. All return a
``GateResult``. Every candidate enters the queue through ``engine.gates.submission``; the approval
timeout lives in ``engine.gates.expiry``.
"""

from engine.gates.result import GateResult, Verdict, all_passed, first_failure, gates_json

__all__ = ["GateResult", "Verdict", "all_passed", "first_failure", "gates_json"]
