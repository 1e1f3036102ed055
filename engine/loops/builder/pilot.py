"""Pilot predictions: what the Builder expects before each pilot, and how wrong it was after.

Before every pilot iteration the Builder writes down, per case, what the strategy seen in the
current traces will score, what the desired behaviour would score, and what a reasonable shortcut
would score (PenguinHarness: "每轮校准都要在派发前预测"). After the pilot the prediction error is
recorded per case. A case on which the shortcut and the desired behaviour score the same cannot
tell them apart — adding public rules or checks the model can simply follow does not make it
harder — so it is flagged for the calibration to change.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.benchmark import Benchmark
from engine.core.standard import Standard
from engine.evaluation.grading import answer_of
from engine.evaluation.protocol import (
    ProtocolError,
    check_keys,
    data_message,
    load_reply,
    score_field,
    text_field,
)

PREDICT_PROTOCOL = "skillsmith-predict/1"
PREDICT_SYSTEM = f"""You calibrate a benchmark before a pilot run. For every case predict, on a \
0–100 scale: `current`, the score the strategy visible in the agent's latest traces will get; \
`desired`, the score of the behaviour the benchmark wants; `shortcut`, the score of the most \
reasonable shortcut (for a labelling task: answer the positive label without any evidence).

Reply with exactly one YAML mapping and nothing else:
protocol: {PREDICT_PROTOCOL}
predictions:       # every case of the request, once
  - {{case: <case id>, current: <0-100>, desired: <0-100>, shortcut: <0-100>, why: <one line>}}
"""
ANSWER_EXCERPT = 400


@dataclass(frozen=True)
class Prediction:
    case_id: str
    current: float
    desired: float
    shortcut: float
    why: str

    @property
    def flagged(self) -> bool:
        """The shortcut scores what the desired behaviour scores: the case cannot separate them."""
        return abs(self.shortcut - self.desired) < 0.005

    @property
    def impact(self) -> float:
        return self.desired - self.current

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "current": self.current,
            "desired": self.desired,
            "shortcut": self.shortcut,
            "impact": round(self.impact, 2),
            "flagged": self.flagged,
            "why": self.why,
        }


@dataclass(frozen=True)
class Observed:
    """What the latest pilot showed about one case."""

    score: float  # 0–100
    verdict: str | None
    answer: str


def observe(run_dir: Path, rows: Sequence[Mapping[str, Any]]) -> dict[str, Observed]:
    """Per case, the latest pilot's score, verdict and the end of the agent's answer."""
    seen: dict[str, Observed] = {}
    for row in rows:
        if row.get("pass_fail") == "invalid":
            continue
        lines: list[dict[str, Any]] = []
        session = run_dir / str(row.get("session_file") or "")
        if session.is_file():
            for raw in session.read_text(encoding="utf-8").splitlines():
                try:
                    line = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                if isinstance(line, dict):
                    lines.append(line)
        answer = answer_of(None, lines)
        seen[str(row["case_id"])] = Observed(
            score=round(float(row.get("score") or 0.0) * 100, 2),
            verdict=row.get("judge_verdict"),
            answer=answer[-ANSWER_EXCERPT:],
        )
    return seen


def _check_summary(bench: Benchmark, standard: Standard | None, case_id: str) -> list[Any]:
    out = []
    for check in bench.case(case_id).rubric.checks:
        item: dict[str, Any] = {"kind": check.kind, "weight": check.weight}
        rule = (
            standard.rule_of_criteria(str(check.criteria)) if standard and check.criteria else None
        )
        if rule is not None:
            item["rule"] = rule.id
        out.append(item)
    return out


def type_means(bench: Benchmark, observed: Mapping[str, Observed]) -> dict[str, float]:
    """Mean observed score per case type (what a new case of that type is likely to score)."""
    groups: dict[str, list[float]] = {}
    for case in bench.cases:
        if case.id in observed and case.rubric.type:
            groups.setdefault(case.rubric.type, []).append(observed[case.id].score)
    return {t: round(sum(v) / len(v), 2) for t, v in sorted(groups.items())}


def prediction_messages(
    bench: Benchmark,
    standard: Standard | None,
    observed: Mapping[str, Observed],
    by_type: Mapping[str, float],
) -> list[dict[str, Any]]:
    cases = []
    for case in bench.cases:
        seen = observed.get(case.id)
        cases.append(
            {
                "id": case.id,
                "type": case.rubric.type,
                "expected": case.rubric.expected,
                "checks": _check_summary(bench, standard, case.id),
                "last": None
                if seen is None
                else {"score": seen.score, "verdict": seen.verdict, "answer": seen.answer},
            }
        )
    data = {
        "labels": bench.labels,
        "positive": bench.positive_label,
        "standard": [{"id": r.id, "text": r.text} for r in standard.rules] if standard else [],
        "observed_by_type": dict(by_type),
        "cases": cases,
    }
    return [data_message("Predict the scores of the next pilot for these cases.", data)]


def parse_predictions(text: str, case_ids: Sequence[str]) -> list[Prediction]:
    data = load_reply(text, PREDICT_PROTOCOL)
    check_keys(data, "reply", ("protocol", "predictions"))
    items = data["predictions"]
    if not isinstance(items, list):
        raise ProtocolError("reply.predictions: expected a list")
    found: dict[str, Prediction] = {}
    for i, item in enumerate(items):
        where = f"reply.predictions[{i}]"
        if not isinstance(item, dict):
            raise ProtocolError(f"{where}: expected a mapping")
        check_keys(item, where, ("case", "current", "desired", "shortcut", "why"))
        case_id = str(item["case"])
        if case_id not in case_ids or case_id in found:
            raise ProtocolError(f"{where}.case: {case_id!r} is unknown or predicted twice")
        found[case_id] = Prediction(
            case_id,
            current=score_field(item, "current", where),
            desired=score_field(item, "desired", where),
            shortcut=score_field(item, "shortcut", where),
            why=text_field(item, "why", where, one_line=True),
        )
    missing = [c for c in case_ids if c not in found]
    if missing:
        raise ProtocolError(f"reply.predictions: no prediction for case {missing[0]!r}")
    return [found[c] for c in case_ids]


def prediction_errors(
    predictions: Sequence[Prediction], observed: Mapping[str, Observed]
) -> dict[str, float]:
    """Actual minus predicted score of the current strategy, per case that produced a score."""
    return {
        p.case_id: round(observed[p.case_id].score - p.current, 2)
        for p in predictions
        if p.case_id in observed
    }


__all__ = [
    "PREDICT_PROTOCOL",
    "PREDICT_SYSTEM",
    "Observed",
    "Prediction",
    "observe",
    "parse_predictions",
    "prediction_errors",
    "prediction_messages",
    "type_means",
]
