"""Joint attribution: outcome × rule hits → root causes worth a patch.

A rule hit alone says the agent worked badly; an outcome alone says it was wrong. Only their
intersection says *why* it was wrong in a way a skill edit can address ("FN + progress_mismatch":
claimed to trace the call chain, did not, missed the bug). Passing cases with flawed traces are
reported but never trigger evolution ("it was not wrong, why change it"), and a cause must cover
a minimum share of the failing cases (30 % by default) — scattered failures are noise, and
patching noise makes a skill worse.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.core.config import DiagnosisConfig
from engine.evaluation.diagnosis.registry import CaseContext, Registry, RuleHit
from engine.evaluation.traces import StepLike, Trace, TraceSummary

FAILURE_OUTCOMES = ("FN", "FP", "fail")
OUTCOME_MEANING = {
    "FN": "missed a positive (false negative)",
    "FP": "raised a false alarm (false positive)",
    "fail": "gave a wrong answer",
}
_EPSILON = 1e-9


def outcome_of(row: Mapping[str, Any]) -> str:
    """pass, FN, FP, fail (wrong but not a binary miss) or invalid (could not be graded)."""
    status = row.get("pass_fail")
    if status == "pass":
        return "pass"
    if status == "fail":
        kind = row.get("failure_kind")
        return kind if kind in ("FN", "FP") else "fail"
    return "invalid"


def row_key(row: Mapping[str, Any]) -> str:
    return f"{row.get('case_id')}#{row.get('run_index', 0)}/{row.get('variant') or 'skill'}"


@dataclass(frozen=True)
class CaseInput:
    """One results row with its parsed trace (None when the session file is missing)."""

    row: Mapping[str, Any]
    trace: Trace | None
    summary: TraceSummary | None
    steps: Sequence[StepLike] = ()
    skill_name: str | None = None
    note: str | None = None
    expects_skill: bool | None = None  # None: every variant but "baseline" runs with a skill


@dataclass(frozen=True)
class CaseDiagnosis:
    """The diagnosis of one results row (case × run × variant)."""

    key: str
    case_id: str
    run_index: int
    variant: str
    outcome: str
    verdict: str | None
    ground_truth: str | None
    split: str | None
    case_type: str | None
    session_file: str | None
    summary: TraceSummary | None
    hits: list[RuleHit]
    note: str | None
    attributed: bool

    @property
    def rule_ids(self) -> list[str]:
        return [h.rule_id for h in self.hits]

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "case_id": self.case_id,
            "run_index": self.run_index,
            "variant": self.variant,
            "outcome": self.outcome,
            "verdict": self.verdict,
            "ground_truth": self.ground_truth,
            "split": self.split,
            "case_type": self.case_type,
            "session_file": self.session_file,
            "attributed": self.attributed,
            "note": self.note,
            "hits": [h.to_dict() for h in self.hits],
            "summary": None if self.summary is None else self.summary.to_dict(),
        }


@dataclass(frozen=True)
class RootCause:
    rule_id: str
    direction: str  # FN | FP | fail
    case_ids: list[str]
    share: float
    worth_patch: bool
    explanation: str
    evidence: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.direction} + {self.rule_id}"

    @property
    def count(self) -> int:
        return len(self.case_ids)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "rule_id": self.rule_id,
            "direction": self.direction,
            "count": self.count,
            "share": round(self.share, 4),
            "worth_patch": self.worth_patch,
            "case_ids": self.case_ids,
            "explanation": self.explanation,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class Diagnosis:
    """What the evolve loop consumes: per-row diagnoses and the root causes behind failures."""

    run_id: str | None
    min_share: float
    cases: list[CaseDiagnosis]
    failing_case_ids: list[str]
    undiagnosed_case_ids: list[str]
    root_causes: list[RootCause]
    low_priority: dict[str, list[str]]  # passing case id → rule ids (flawed but right)

    @property
    def actionable(self) -> list[RootCause]:
        """Root causes covering enough failures to be worth a patch, biggest first."""
        return [rc for rc in self.root_causes if rc.worth_patch]

    @property
    def triggers_evolution(self) -> bool:
        return bool(self.actionable)

    @property
    def direction(self) -> str | None:
        """The failure direction (FN / FP / fail) of the leading actionable root cause."""
        top = self.actionable
        return top[0].direction if top else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "min_share": self.min_share,
            "failing_cases": len(self.failing_case_ids),
            "failing_case_ids": self.failing_case_ids,
            "undiagnosed_case_ids": self.undiagnosed_case_ids,
            "triggers_evolution": self.triggers_evolution,
            "direction": self.direction,
            "root_causes": [rc.to_dict() for rc in self.root_causes],
            "low_priority": self.low_priority,
            "cases": [c.to_dict() for c in self.cases],
        }

    def attribution_summary(self, max_chars: int = 2000) -> str:
        """The short text the proposer reads (the article's ~2 KB attribution summary)."""
        n = len(self.failing_case_ids)
        lines = [f"{n} failing cases; root causes (min share {self.min_share:.0%}):"]
        for rc in self.root_causes:
            mark = "PATCH" if rc.worth_patch else "below threshold"
            lines.append(
                f"- {rc.id}: {rc.count}/{n} = {rc.share:.1%} [{mark}] {rc.explanation}; "
                f"cases {', '.join(rc.case_ids)}"
            )
            lines.extend(f"    {e}" for e in rc.evidence[:3])
        if self.undiagnosed_case_ids:
            lines.append(f"undiagnosed (no flow anomaly): {', '.join(self.undiagnosed_case_ids)}")
        text = "\n".join(lines)
        return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _case_diagnosis(
    item: CaseInput,
    registry: Registry,
    config: DiagnosisConfig,
    splits: Collection[str] | None,
) -> CaseDiagnosis:
    row = item.row
    case_id = str(row.get("case_id"))
    hits: list[RuleHit] = []
    if item.trace is not None and item.summary is not None:
        ctx = CaseContext(
            case_id=case_id,
            row=row,
            trace=item.trace,
            summary=item.summary,
            config=config,
            steps=item.steps,
            skill_name=item.skill_name,
            expects_skill=row.get("variant") != "baseline"
            if item.expects_skill is None
            else item.expects_skill,
        )
        hits = registry.run(ctx)
    run_index = row.get("run_index")
    return CaseDiagnosis(
        key=row_key(row),
        case_id=case_id,
        run_index=run_index if isinstance(run_index, int) else 0,
        variant=str(row.get("variant") or "skill"),
        outcome=outcome_of(row),
        verdict=_opt_str(row.get("judge_verdict")),
        ground_truth=_opt_str(row.get("ground_truth")),
        split=_opt_str(row.get("split")),
        case_type=_opt_str(row.get("case_type")),
        session_file=_opt_str(row.get("session_file")),
        summary=item.summary,
        hits=hits,
        note=item.note,
        attributed=row.get("variant") != "baseline"
        and (splits is None or row.get("split") in splits),
    )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _explain(rule_id: str, direction: str, registry: Registry) -> str:
    try:
        what = registry.get(rule_id).description or rule_id
    except KeyError:
        what = rule_id
    return f"{what} → {OUTCOME_MEANING.get(direction, direction)}"


def attribute(
    cases: Sequence[CaseDiagnosis],
    *,
    registry: Registry,
    min_share: float,
    run_id: str | None = None,
) -> Diagnosis:
    """Cross outcomes with rule hits; shares are over failing *cases* (any failing run counts)."""
    failing: dict[str, list[CaseDiagnosis]] = defaultdict(list)
    low_priority: dict[str, set[str]] = defaultdict(set)
    for case in cases:
        if not case.attributed:
            continue
        if case.outcome in FAILURE_OUTCOMES:
            failing[case.case_id].append(case)
        elif case.outcome == "pass" and case.hits:
            low_priority[case.case_id].update(case.rule_ids)
    failing_ids = sorted(failing)
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    evidence: dict[tuple[str, str], list[str]] = defaultdict(list)
    for case_id in failing_ids:
        for case in failing[case_id]:
            for hit in case.hits:
                key = (case.outcome, hit.rule_id)
                if case_id not in groups[key]:
                    groups[key].append(case_id)
                    evidence[key].extend(f"{case.key}: {line}" for line in hit.evidence[:2])
    order = {rule_id: i for i, rule_id in enumerate(registry.ids())}
    total = len(failing_ids)
    causes = [
        RootCause(
            rule_id=rule_id,
            direction=direction,
            case_ids=ids,
            share=len(ids) / total,
            worth_patch=len(ids) / total + _EPSILON >= min_share,
            explanation=_explain(rule_id, direction, registry),
            evidence=evidence[(direction, rule_id)][:6],
        )
        for (direction, rule_id), ids in groups.items()
    ]
    causes.sort(key=lambda rc: (-rc.count, order.get(rc.rule_id, len(order)), rc.direction))
    diagnosed = {cid for ids in groups.values() for cid in ids}
    return Diagnosis(
        run_id=run_id,
        min_share=min_share,
        cases=list(cases),
        failing_case_ids=failing_ids,
        undiagnosed_case_ids=[cid for cid in failing_ids if cid not in diagnosed],
        root_causes=causes,
        low_priority={cid: sorted(ids) for cid, ids in sorted(low_priority.items())},
    )


def diagnose(
    inputs: Sequence[CaseInput],
    *,
    registry: Registry | None = None,
    config: DiagnosisConfig | None = None,
    min_share: float = 0.30,
    run_id: str | None = None,
    splits: Collection[str] | None = None,
) -> Diagnosis:
    """Run every checker on every row, then attribute the failures.

    With ``splits`` only rows of those splits are attributed (evolution must never learn from
    holdout or golden cases); the other rows are still diagnosed and shown.
    """
    registry = registry or Registry.builtin()
    config = config or DiagnosisConfig()
    cases = [_case_diagnosis(item, registry, config, splits) for item in inputs]
    return attribute(cases, registry=registry, min_share=min_share, run_id=run_id)
