"""Helpers of the candidate-gate and GEPA optimizer tests: SKILL.md texts and skills on disk."""

from __future__ import annotations

from collections.abc import Sequence

from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation.gates.candidate import GateDecision, TaskOutcome, run_candidate_gates
from engine.evaluation.gates.result import GateResult

DEFAULT_STEPS = ("Read the input: `read <file>`.", "Write the verdict line.")


def skill_text(
    name: str,
    *,
    description: str | None = "Audit one file for problems. Use when asked to audit a file.",
    when_to_use: str | None = "- A task asks to audit a file.",
    steps: Sequence[str] = DEFAULT_STEPS,
    pitfalls: Sequence[str] = (),
) -> str:
    """A SKILL.md in the canonical layout; a None field is left out entirely."""
    front = [f"name: {name}"] + ([f"description: {description}"] if description else [])
    parts = ["---", *front, "---", "", f"# {name}", ""]
    if when_to_use is not None:
        parts += ["## When to use", "", when_to_use, ""]
    parts += ["## Steps", ""] + [f"{i}. {s}" for i, s in enumerate(steps, 1)] + [""]
    if pitfalls:
        parts += ["## Pitfalls", ""] + [f"- {p}" for p in pitfalls] + [""]
    return "\n".join(parts)


def add_skill(ws: Workspace, folder: str, text: str) -> None:
    """A skill as a user would have it before Skillsmith touches it."""
    path = ws.skill_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def safety_of(ws: Workspace, skill: str, text: str) -> tuple[GateDecision, GateResult]:
    """The gates' decision on ``text`` as an update of ``skill`` (adopted first) that worked,
    and the Safety gate's verdict in it."""
    parent = SkillStore(ws, skill).ensure_adopted()
    decision = run_candidate_gates(
        ws,
        skill,
        text,
        operation="update",
        parent_version=parent,
        outcome=TaskOutcome(status="success", score=1.0),
    )
    return decision, next(r for r in decision.results if r.gate == "safety")
