"""The candidate gates (Spec, Safety, Effectiveness, Human) and the decision they reach.

Every candidate SKILL.md — from the evolution loop, the offline GEPA optimizer or the online
reviewer — passes the same four questions (tRPC-Agent-Go Evolution): is it a complete, executable
method (Spec), does it carry credentials, destructive commands or path traversal (Safety), did the
task that produced it succeed (Effectiveness), and does this kind of change still need a person
(Human)? A structural or safety failure rejects; a failed or low-scoring task parks the candidate in
``pending_eval`` (no proof yet, never published); a hold parks it in ``pending_approval``. Without
an outcome the Effectiveness gate passes but marks the candidate *unproven*: no evidence of failure
is not evidence of success.

Shadow mode runs and records the automatic gates without letting them block, so a team can watch
what the gates would do before enforcing them; the Human gate is a policy, not a check, and still
applies. Candidates evaluated offline (the GEPA optimizer) always wait for approval and are never
shadowed. An update whose parent is no longer the active version is refused outright: it was
reviewed against text that is gone.

The queue is entered through one door, ``engine.evaluation.gates.submission``, which runs these
gates and
records every status a candidate takes; the approval timeout is ``engine.evaluation.gates.expiry``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from engine.core.config import GatesConfig
from engine.core.errors import FormatError, SkillsmithError
from engine.core.findings import Finding
from engine.core.safety import scan
from engine.core.secret_scan import SECRET_RULES, VAULT_RULE
from engine.core.skill import SkillDoc
from engine.core.store import SkillStore, read_text
from engine.core.vault import secret_values
from engine.core.workspace import Workspace
from engine.evaluation.gates.result import GateResult
from engine.evaluation.patches.textrules import TextRules, default_rules, load_text_rules
from engine.evaluation.patches.trigger_text import new_slogans, says_when

if TYPE_CHECKING:  # scipy loads only where a verdict is computed, not for every queue listing
    from engine.evaluation.verdict import Verdict

Operation = Literal["create", "update", "delete"]
OutcomeStatus = Literal["success", "partial", "fail", "agent_error"]
GateStatus = Literal["rejected", "pending_eval", "pending_approval", "approved"]
HumanPolicy = Literal["none", "create-only", "always"]

MIN_STEPS = 2
MAX_NAME_CHARS = 120

_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_SPACES = re.compile(r"\s+")
_SEPARATORS = re.compile(r"[-_]")
_EXPLICIT_COUNT = re.compile(r"\b\d+\s+([a-z][a-z0-9]*)\b")
_MULTIPLICITY = re.compile(r"\b(?:multi\s+|multiple\s+|several\s+|many\s+)([a-z][a-z0-9]*)\b")


class StaleCandidate(SkillsmithError):
    """An update made against a version that is no longer the skill's active one."""


@dataclass(frozen=True)
class TaskOutcome:
    """What the task behind a candidate achieved, as the application reports it.

    ``score`` is in [0, 1]; ``None`` fields were not reported. No TaskOutcome at all means the
    candidate has only the proposer's word for it.
    """

    status: OutcomeStatus | None = None
    score: float | None = None
    notes: str = ""
    evaluator: str = ""

    def __post_init__(self) -> None:
        if self.score is not None and not (math.isfinite(self.score) and 0 <= self.score <= 1):
            raise SkillsmithError(f"outcome score: expected a number in [0, 1], got {self.score}")


# -- names -------------------------------------------------------------------------------------


def canonical_name(name: str) -> str:
    """A skill name as a comparison key: "Weather - Multi-City" and "weather-multi-city" agree."""
    return _NON_ALNUM.sub("-", name.strip().lower()).strip("-")


def _words(name: str) -> str:
    return _SPACES.sub(" ", _SEPARATORS.sub(" ", name.lower())).strip()


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 3:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and len(word) > 1 and not word.endswith("ss"):
        return word[:-1]
    return word


def _unit(match: re.Match[str]) -> str:
    return "<count:" + _singular(match.group(1)) + ">"


def family_key(name: str) -> str:
    """The name with every count ("3 cities") and multiplicity ("multi-city") made one token.

    Two names with the same key differ only in how many of something they handle. Dashes and
    underscores count as spaces, so a folder name ("weather-3-cities") has a key too.
    """
    norm = _words(name)
    return canonical_name(_MULTIPLICITY.sub(_unit, _EXPLICIT_COUNT.sub(_unit, norm)))


def count_sibling_of(name: str, existing: Iterable[str]) -> str | None:
    """The generic existing skill a count-specific name ("Weather - 3 Cities") is a variant of.

    Only a name with an explicit count qualifies, and only a generic sibling (a multiplicity
    marker, or no count at all) is its parent: two count-specific siblings are left alone.
    """
    if not _EXPLICIT_COUNT.search(_words(name)):
        return None
    key, own = family_key(name), canonical_name(name)
    for other in sorted(existing, key=len, reverse=True):
        lowered = _words(other)
        generic = bool(_MULTIPLICITY.search(lowered)) or not _EXPLICIT_COUNT.search(lowered)
        if canonical_name(other) != own and family_key(other) == key and generic:
            return other
    return None


def existing_skill_names(ws: Workspace) -> list[str]:
    """Every name an existing skill goes by: its folder and its frontmatter ``name``."""
    names: list[str] = []
    for folder in ws.skill_names():
        names.append(folder)
        doc, _error = SkillDoc.parse_lenient(read_text(ws.skill_path(folder)))
        if doc.name and doc.name != folder:
            names.append(doc.name)
    return names


# -- the gates ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """Name, description and when_to_use present, enough steps, no new slogan where the loader
    decides whether the skill applies, and a create that is new.

    A change is judged against its parent: an update is refused only for a rule the parent met
    and the candidate breaks (or a slogan it adds), never for what the parent already lacked —
    a prose skill with no numbered steps may still be improved. What the parent lacked too is
    shown as advice. A create has no parent, so every rule is its own.
    """

    min_steps: int = MIN_STEPS
    max_name_chars: int = MAX_NAME_CHARS
    name: str = "spec"

    def judge(
        self,
        skill: str,
        text: str,
        *,
        operation: Operation,
        existing: Sequence[str],
        parent_text: str | None = None,
        rules: TextRules | None = None,
    ) -> GateResult:
        try:
            doc = SkillDoc.parse(text)
        except FormatError as exc:
            return self._result([f"SKILL.md does not parse: {exc}"], [], {})
        parent = None if parent_text is None else SkillDoc.parse_lenient(parent_text)[0]
        name = (doc.name or "").strip()
        reasons: list[str] = []
        advice: list[str] = []
        for broken in self._rules(doc):
            kept = parent is not None and not any(
                p.split(",")[0] == broken.split(",")[0] for p in self._rules(parent)
            )
            if parent is None or kept:
                reasons.append(broken)
            else:
                advice.append(f"{broken} (the parent too)")
        reasons += [
            f"new slogan in {s}" for s in new_slogans(parent, doc, rules or default_rules())
        ]
        if operation == "create":
            reasons += self._novelty(skill, name, existing)
        figures: dict[str, object] = {
            "name": name,
            "steps": len(doc.steps),
            "min_steps": self.min_steps,
            "advice": advice,
        }
        return self._result(reasons, advice, figures)

    def _rules(self, doc: SkillDoc) -> list[str]:
        """The house rules ``doc`` breaks, one reason each (its text before a comma is its key)."""
        name = (doc.name or "").strip()
        broken: list[str] = []
        if not name:
            broken.append("empty skill name")
        elif len(name) > self.max_name_chars:
            broken.append(f"name longer than {self.max_name_chars} characters")
        if not (doc.description or "").strip():
            broken.append("missing description")
        if not says_when(doc):
            broken.append("missing when_to_use")
        steps = len(doc.steps)
        if steps < self.min_steps:
            broken.append(f"needs at least {self.min_steps} steps, got {steps}")
        return broken

    @staticmethod
    def _novelty(skill: str, name: str, existing: Sequence[str]) -> list[str]:
        """A create must name a new method, not an existing one again or a count variant of it."""
        proposed = [n for n in dict.fromkeys((skill, name)) if n]
        for candidate in proposed:
            key = canonical_name(candidate)
            same = next((e for e in existing if canonical_name(e) == key), None)
            if same is not None:
                return [f"duplicate of existing skill {same!r}; should be an update, not a create"]
        for candidate in proposed:
            parent = count_sibling_of(candidate, existing)
            if parent is not None:
                return [f"count-specific sibling of generic skill {parent!r}; should be an update"]
        return []

    def _result(
        self, reasons: list[str], advice: list[str], figures: dict[str, object]
    ) -> GateResult:
        passed = "name, description, when_to_use and steps are complete"
        if advice:
            passed = "nothing the parent met is broken; advice: " + "; ".join(advice)
        return GateResult(
            gate=self.name,
            verdict="fail" if reasons else "pass",
            figures=figures,
            reasons=reasons or [passed],
        )


# a credential blocks whoever wrote it: these findings are never inherited from the parent
_SECRET_RULES = frozenset({*(rule.id for rule in SECRET_RULES), VAULT_RULE})


@dataclass(frozen=True)
class Safety:
    """No credential, destructive command or path traversal in the text (``engine.core.safety``).

    Warnings are reported but do not block; one error-level finding fails the gate. The gate
    judges what the candidate changes: a command or path finding its parent already had (the
    same rule on the same matched text — a real skill's reference may show ``rm -rf /``) is
    inherited, reported and not blocking, since refusing it would refuse every improvement of
    that skill. A credential never is: a text holding one cannot be snapshotted, whoever wrote it.
    """

    name: str = "safety"

    def judge(
        self, text: str, known: Sequence[str] = (), parent_text: str | None = None
    ) -> GateResult:
        """``known``: the workspace's vault values, refused like keys (what a snapshot refuses);
        ``parent_text``: the version the candidate changes, whose command findings it inherits."""
        findings = scan(text, known)
        had = Counter(
            (f.rule_id, f.message)
            for f in (scan(parent_text, known) if parent_text is not None else [])
            if f.severity == "error"
        )
        errors: list[Finding] = []
        inherited: list[Finding] = []
        for f in findings:
            if f.severity != "error":
                continue
            key = (f.rule_id, f.message)
            if had[key] > 0 and f.rule_id not in _SECRET_RULES:
                had[key] -= 1
                inherited.append(f)
            else:
                errors.append(f)
        warnings = [f for f in findings if f.severity == "warning"]
        reasons = [f"line {f.line}: {f.rule_id}: {f.message}" for f in errors + warnings]
        reasons += [
            f"line {f.line}: {f.rule_id}: {f.message} (already in the parent; not blocking)"
            for f in inherited
        ]
        return GateResult(
            gate=self.name,
            verdict="fail" if errors else "pass",
            figures={
                "errors": len(errors),
                "inherited": len(inherited),
                "warnings": len(warnings),
                "rules": sorted({f.rule_id for f in findings}),
            },
            reasons=reasons or ["no credential, destructive command or path traversal found"],
        )


@dataclass(frozen=True)
class Effectiveness:
    """The task behind the candidate did not fail and scored at least ``min_score``.

    No outcome passes (there is nothing to judge) and the candidate is marked unproven; a
    delete is not judged (nothing new is claimed to work). A paired evaluation against the
    parent (``verdict``, see engine.evaluation.gates.queued) outranks the task's single outcome: the
    candidate passes only when it is better with confidence.
    """

    min_score: float = 0.8
    name: str = "effectiveness"

    def judge(
        self, outcome: TaskOutcome | None, *, operation: Operation, verdict: Verdict | None = None
    ) -> GateResult:
        if verdict is not None:
            line = verdict.line()
            return GateResult(
                gate=self.name,
                verdict="pass" if verdict.better else "fail",
                figures={"unproven": False, **verdict.to_dict()},
                reasons=[
                    f"paired evaluation against the parent: {line}"
                    + (
                        ""
                        if verdict.better
                        else f"; better at one-sided p<{verdict.alpha:g} wanted"
                    )
                ],
            )
        figures: dict[str, object] = {
            "outcome": None if outcome is None else outcome.status,
            "score": None if outcome is None else outcome.score,
            "min_score": self.min_score,
            "unproven": outcome is None,
        }
        if outcome is not None and outcome.evaluator:
            figures["evaluator"] = outcome.evaluator
        if operation == "delete":
            return self._result([], ["a delete is not judged by outcome"], figures)
        if outcome is None:
            reason = "no outcome supplied: passes unproven (no evidence either way)"
            return self._result([], [reason], figures)
        failures: list[str] = []
        if outcome.status in ("fail", "agent_error"):
            failures.append(f"task outcome is {outcome.status!r}; held for evaluation")
        if outcome.score is not None and outcome.score < self.min_score:
            failures.append(f"score {outcome.score:.3f} is below {self.min_score:.3f}")
        passed = [
            f"task outcome {outcome.status or 'not reported'}"
            + ("" if outcome.score is None else f", score {outcome.score:.3f}")
            + (f" ({outcome.notes})" if outcome.notes else "")
        ]
        return self._result(failures, passed, figures)

    def _result(
        self, failures: list[str], passed: list[str], figures: dict[str, object]
    ) -> GateResult:
        return GateResult(
            gate=self.name,
            verdict="fail" if failures else "pass",
            figures=figures,
            reasons=failures or passed,
        )


@dataclass(frozen=True)
class Human:
    """Which operations wait for a person: none, creates only, or all of them.

    A delete always waits: the queue publishes versions, it never removes a skill by itself.
    """

    policy: HumanPolicy = "always"
    name: str = "human"

    def judge(self, operation: Operation, *, required: str | None = None) -> GateResult:
        """``required`` names why this candidate must be approved whatever the policy says."""
        held = required is not None or self.policy == "always" or operation == "delete"
        held = held or (self.policy == "create-only" and operation == "create")
        if required is not None:
            reason = required
        elif operation == "delete" and self.policy != "always":
            reason = "held for approval: a delete is always decided by a person"
        elif held:
            reason = f"held for approval (human gate: {self.policy}, operation {operation})"
        else:
            reason = f"no approval needed (human gate: {self.policy}, operation {operation})"
        return GateResult(
            gate=self.name,
            verdict="held" if held else "pass",
            figures={"policy": self.policy, "operation": operation},
            reasons=[reason],
        )


@dataclass(frozen=True)
class CandidateGates:
    """The four gates with the workspace's settings (``skillsmith.yaml`` ``gates:``)."""

    spec: Spec
    safety: Safety
    effectiveness: Effectiveness
    human: Human
    shadow: bool = False

    @classmethod
    def from_config(cls, cfg: GatesConfig) -> CandidateGates:
        return cls(
            spec=Spec(),
            safety=Safety(),
            effectiveness=Effectiveness(min_score=cfg.effectiveness_min_score),
            human=Human(policy=cfg.human),
            shadow=cfg.shadow,
        )


@dataclass(frozen=True)
class GateDecision:
    """Where the gates put a candidate, and every verdict behind it.

    ``status`` is ``approved`` when nothing rejects or holds it (it may be published at once).
    In shadow mode ``enforced`` is the status the gates would have given.
    """

    status: GateStatus
    results: list[GateResult]
    unproven: bool
    reason: str | None
    shadow: bool = False
    enforced: GateStatus | None = None

    def history(self, summary: str) -> list[tuple[str, str]]:
        """The (status, why) steps from ``proposed`` to the queued status."""
        queued = "pending_approval" if self.status == "approved" else self.status
        why = self.reason or "all gates passed"
        if self.status == "approved":
            why = "all gates passed; " + (self.reason or "no approval needed")
        if self.shadow and self.enforced != self.status:
            why = f"shadow mode, gates not enforced (would be {self.enforced}: {self.reason}); "
            why += "queued as the human gate decides"
        return [("proposed", summary), (queued, why)]


def _reason(result: GateResult) -> str:
    return f"{result.gate}: " + "; ".join(result.reasons)


def _shadowed(result: GateResult) -> GateResult:
    if not result.failed:
        return result
    figures = {**result.figures, "shadow": True}
    return dataclasses.replace(
        result, figures=figures, reasons=[*result.reasons, "shadow mode: not enforced"]
    )


def _active_version(ws: Workspace, skill: str, operation: Operation, parent: str | None) -> None:
    """Refuse an update or delete of a missing skill, and one made against an older version."""
    store = SkillStore(ws, skill)
    current = store.ensure_adopted()
    if operation == "create":
        return
    if current is None:
        raise SkillsmithError(f"{ws.skills_dir / skill}: no such skill to {operation}")
    if parent != current:
        raise StaleCandidate(
            f"{store.root}: stale {operation}: made against {parent} but skill '{skill}' is "
            f"now at {current}; propose it again"
        )


def run_candidate_gates(
    ws: Workspace,
    skill: str,
    text: str | None,
    *,
    operation: Operation,
    parent_version: str | None,
    outcome: TaskOutcome | None = None,
    gates: CandidateGates | None = None,
    evidence: Sequence[GateResult] = (),
    approval_required: str | None = None,
    shadow: bool | None = None,
) -> GateDecision:
    """Judge a candidate; raises StaleCandidate for an update whose parent is not active.

    ``evidence`` are verdicts the caller already reached (outcome gates, holdout promotion); a
    failed one rejects, always. ``approval_required`` (a reason) holds the candidate for a person
    whatever the human policy. Spec and Safety both run (every problem is reported at once);
    Effectiveness only when they passed, Human only when every automatic gate passed — except in
    shadow mode, where all gates run and only the Human gate decides.
    """
    cfg = gates or CandidateGates.from_config(ws.load_config().gates)
    shadow = cfg.shadow if shadow is None else shadow
    _active_version(ws, skill, operation, parent_version)
    results = list(evidence)
    if operation != "delete":
        if text is None:
            raise SkillsmithError(f"{ws.skills_dir / skill}: a {operation} needs a SKILL.md text")
        existing = existing_skill_names(ws)
        parent_text = None
        if operation == "update" and parent_version is not None:
            parent_text = SkillStore(ws, skill).read(parent_version)
        results.append(
            cfg.spec.judge(
                skill,
                text,
                operation=operation,
                existing=existing,
                parent_text=parent_text,
                rules=load_text_rules(ws),
            )
        )
        results.append(cfg.safety.judge(text, secret_values(ws), parent_text))
    structural = next((r for r in results if r.failed), None)
    effectiveness: GateResult | None = None
    if structural is None or shadow:
        effectiveness = cfg.effectiveness.judge(outcome, operation=operation)
        results.append(effectiveness)
    human: GateResult | None = None
    if (structural is None and not (effectiveness and effectiveness.failed)) or shadow:
        human = cfg.human.judge(operation, required=approval_required)
        results.append(human)
    enforced: GateStatus
    reason: str | None
    if structural is not None:
        enforced, reason = "rejected", _reason(structural)
    elif effectiveness is not None and effectiveness.failed:
        enforced, reason = "pending_eval", _reason(effectiveness)
    elif human is not None and human.verdict == "held":
        enforced, reason = "pending_approval", _reason(human)
    else:
        enforced, reason = "approved", _reason(human) if human else None
    status = enforced
    evidence_failed = any(r.failed for r in evidence)
    if shadow and not evidence_failed and human is not None:
        status = "pending_approval" if human.verdict == "held" else "approved"
        automatic = len(evidence)
        results = results[:automatic] + [_shadowed(r) for r in results[automatic:]]
    return GateDecision(
        status=status,
        results=results,
        unproven=outcome is None,
        reason=reason,
        shadow=shadow,
        enforced=enforced,
    )


__all__ = [
    "CandidateGates",
    "Effectiveness",
    "GateDecision",
    "Human",
    "Safety",
    "Spec",
    "StaleCandidate",
    "TaskOutcome",
    "canonical_name",
    "count_sibling_of",
    "existing_skill_names",
    "family_key",
    "run_candidate_gates",
]
