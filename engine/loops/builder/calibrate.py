"""Calibration between pilots: the changes the Builder makes to the cases for the next pilot.

A pilot that scores above the target is too easy; the model proposes changes, several cases or a
difficulty dimension at a time (PenguinHarness): grade a rule of the fixed private standard on a
case (the dimension on which a shortcut and the desired behaviour part ways), or replace a case
that tells nothing apart with another one. The standard itself is never edited here — it is fixed
— and every changed case goes through the pre-dispatch checks before the next pilot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine.core.benchmark import Benchmark
from engine.core.standard import Standard
from engine.evaluation.protocol import (
    ProtocolError,
    check_keys,
    data_message,
    load_reply,
    text_field,
)
from engine.loops.builder.cases import (
    CaseSpec,
    Pool,
    add_rule_check,
    parse_case,
    remove_case,
    write_case,
)
from engine.loops.builder.pilot import Observed, Prediction

CALIBRATE_PROTOCOL = "skillsmith-calibrate/1"
CALIBRATE_SYSTEM = f"""You calibrate a benchmark after a pilot that scored above its target: \
make it separate the desired behaviour from reasonable shortcuts. Flagged cases score the same \
for both. Change cases where the two would score differently: grade a rule of the fixed private \
standard on a case, or replace a case with a pool case (or a new case). Never edit the standard.

Reply with exactly one YAML mapping and nothing else:
protocol: {CALIBRATE_PROTOCOL}
changes:           # at most max_changes; an empty list when nothing would help
  - {{case: <case id>, action: add_check, rule: <standard rule id>, weight: <number > 0>, \
why: <one line>}}
  - {{case: <case id>, action: replace, with: {{id: <case-id>, from: <pool case id>}}, \
why: <one line>}}
"""


@dataclass(frozen=True)
class CaseRevision:
    case_id: str
    action: Literal["add_check", "replace"]
    why: str
    rule: str | None = None
    weight: float | None = None
    replacement: CaseSpec | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"case": self.case_id, "action": self.action, "why": self.why}
        if self.rule is not None:
            out.update(rule=self.rule, weight=self.weight)
        if self.replacement is not None:
            out["with"] = self.replacement.summary()
        return out


def calibration_messages(
    bench: Benchmark,
    standard: Standard | None,
    observed: Mapping[str, Observed],
    predictions: Sequence[Prediction],
    pool: Pool | None,
    max_changes: int,
) -> list[dict[str, Any]]:
    flagged = {p.case_id for p in predictions if p.flagged}
    cases = []
    for case in bench.cases:
        rules = []
        for check in case.rubric.checks:
            rule = standard.rule_of_criteria(str(check.criteria)) if standard else None
            if check.kind == "llm_judge" and rule is not None:
                rules.append(rule.id)
        seen = observed.get(case.id)
        cases.append(
            {
                "id": case.id,
                "type": case.rubric.type,
                "expected": case.rubric.expected,
                "score": None if seen is None else seen.score,
                "flagged": case.id in flagged,
                "graded_rules": rules,
            }
        )
    used = [c.id for c in bench.cases]
    data = {
        "positive": bench.positive_label,
        "standard": [{"id": r.id, "text": r.text} for r in standard.rules] if standard else [],
        "max_changes": max_changes,
        "cases": cases,
        "pool": pool.describe(used) if pool is not None else [],
    }
    return [data_message("Propose the calibration for the next pilot.", data)]


def parse_calibration(
    text: str,
    *,
    bench: Benchmark,
    standard: Standard | None,
    pool: Pool | None,
    max_changes: int,
) -> list[CaseRevision]:
    data = load_reply(text, CALIBRATE_PROTOCOL)
    check_keys(data, "reply", ("protocol", "changes"))
    items = data["changes"]
    if not isinstance(items, list) or len(items) > max_changes:
        raise ProtocolError(f"reply.changes: expected a list of at most {max_changes} changes")
    known = {c.id for c in bench.cases}
    changes: list[CaseRevision] = []
    touched: set[str] = set()
    new_ids: set[str] = set()
    for i, item in enumerate(items):
        where = f"reply.changes[{i}]"
        if not isinstance(item, dict):
            raise ProtocolError(f"{where}: expected a mapping")
        case_id = str(item.get("case"))
        if case_id not in known or case_id in touched:
            raise ProtocolError(f"{where}.case: {case_id!r} is unknown or changed twice")
        touched.add(case_id)
        action = item.get("action")
        why = text_field(item, "why", where, one_line=True)
        if action == "add_check":
            check_keys(item, where, ("case", "action", "rule", "weight", "why"))
            rule_id = str(item["rule"])
            if standard is None or standard.rule(rule_id) is None:
                raise ProtocolError(f"{where}.rule: {rule_id!r} is not a rule of the standard")
            weight = item["weight"]
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
                raise ProtocolError(f"{where}.weight: expected a number > 0")
            changes.append(
                CaseRevision(case_id, "add_check", why, rule=rule_id, weight=float(weight))
            )
        elif action == "replace":
            check_keys(item, where, ("case", "action", "with", "why"))
            spec = parse_case(item["with"], f"{where}.with", pool=pool, labels=bench.labels)
            if (spec.id in known and spec.id != case_id) or spec.id in new_ids:
                raise ProtocolError(f"{where}.with.id: {spec.id!r} is already a case")
            new_ids.add(spec.id)
            changes.append(CaseRevision(case_id, "replace", why, replacement=spec))
        else:
            raise ProtocolError(f"{where}.action: expected add_check or replace, got {action!r}")
    return changes


def apply_changes(
    bench_root: Path,
    bench: Benchmark,
    standard: Standard | None,
    changes: Sequence[CaseRevision],
    pool: Pool | None,
) -> list[str]:
    """Carry the changes out; returns the ids of the cases that are new or changed."""
    changed: list[str] = []
    for change in changes:
        if change.action == "add_check":
            assert standard is not None and change.rule is not None  # parse_calibration checked
            rule = standard.rule(change.rule)
            assert rule is not None
            add_rule_check(bench.case(change.case_id), rule, change.weight or 1.0)
            changed.append(change.case_id)
        else:
            assert change.replacement is not None
            if change.replacement.id != change.case_id:
                remove_case(bench_root, change.case_id)
            write_case(bench_root, change.replacement, pool)
            changed.append(change.replacement.id)
    return changed


__all__ = [
    "CALIBRATE_PROTOCOL",
    "CALIBRATE_SYSTEM",
    "CaseRevision",
    "apply_changes",
    "calibration_messages",
    "parse_calibration",
]
