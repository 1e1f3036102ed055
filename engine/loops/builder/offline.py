"""The Builder's offline model: deterministic answers to the draft, predict and calibrate protocols.

It stands in for a model so ``skillsmith build`` runs on the bundled demo with no network. It
cannot invent cases, so it drafts from an import pool only: label-balanced, one case type after
another. It predicts like a cautious designer — a case scores what it scored last time (or what
its type scored), the desired behaviour scores full marks, and the shortcut is "answer the
positive label without evidence". It calibrates by grading the standard's evidence rule on cases
the shortcut cannot be told apart on, and by swapping cases whose whole type is solved for
unused pool cases of the hardest-looking types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import zip_longest
from typing import Any

from engine.core.benchmark import normalise_label
from engine.core.errors import SkillsmithError
from engine.core.standard import EVIDENCE, evidence_rule
from engine.evaluation.protocol import dump_reply, protocol_of, request_data
from engine.loops.builder.calibrate import CALIBRATE_PROTOCOL
from engine.loops.builder.cases import DRAFT_PROTOCOL
from engine.loops.builder.pilot import PREDICT_PROTOCOL

PRIOR_SCORE = 50.0  # what an unseen case of an unseen type is expected to score


def _interleave(groups: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [item for row in zip_longest(*groups) for item in row if item is not None]


def _draft(data: Mapping[str, Any]) -> dict[str, Any]:
    pool: list[dict[str, Any]] = list(data.get("pool") or [])
    want = int(data["want"])
    if len(pool) < want:
        raise SkillsmithError(
            f"offline model: drafting needs {want} cases of imported material (--from), "
            f"the pool has {len(pool)}; or set models.proposer.provider to anthropic"
        )
    by_label: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for item in sorted(pool, key=lambda p: (str(p.get("type")), p["id"])):
        label = normalise_label(str(item.get("expected")))
        by_label.setdefault(label, {}).setdefault(str(item.get("type")), []).append(item)
    per_label = [_interleave(list(types.values())) for _, types in sorted(by_label.items())]
    chosen = _interleave(per_label)[:want]
    reply: dict[str, Any] = {
        "protocol": DRAFT_PROTOCOL,
        "cases": [{"id": item["id"], "from": item["id"]} for item in chosen],
    }
    if not data.get("has_standard"):
        labels = list(data.get("labels") or [])
        rules = [
            {
                "id": "label",
                "text": "The verdict is the one declared label the case's rubric expects"
                + (f" ({', '.join(labels)})." if labels else "."),
            }
        ]
        if data.get("positive"):
            rule = evidence_rule(str(data["positive"]))
            rules.append({"id": rule.id, "text": rule.text})
        reply["standard"] = rules
    return reply


def _shortcut(case: Mapping[str, Any], positive: str | None) -> float:
    """The score of answering the positive label with no evidence at all."""
    total = passed = 0.0
    for check in case.get("checks") or []:
        weight = float(check.get("weight") or 0)
        total += weight
        if check.get("kind") == "label" and positive is not None:
            right = normalise_label(str(case.get("expected"))) == normalise_label(positive)
            passed += weight if right else 0.0
    return round(100 * passed / total, 2) if total else 0.0


def _predict(data: Mapping[str, Any]) -> dict[str, Any]:
    positive = data.get("positive")
    by_type: Mapping[str, float] = data.get("observed_by_type") or {}
    predictions = []
    for case in data["cases"]:
        last = case.get("last")
        if last is not None:
            current, why = float(last["score"]), "the latest trace's strategy, unchanged"
        elif case.get("type") in by_type:
            current, why = float(by_type[case["type"]]), f"what {case['type']} cases scored"
        else:
            current, why = PRIOR_SCORE, "no trace of this kind of case yet"
        predictions.append(
            {
                "case": case["id"],
                "current": current,
                "desired": 100.0,
                "shortcut": _shortcut(case, positive),
                "why": why,
            }
        )
    return {"protocol": PREDICT_PROTOCOL, "predictions": predictions}


def _calibrate(data: Mapping[str, Any]) -> dict[str, Any]:
    max_changes = int(data["max_changes"])
    has_evidence = any(r.get("id") == EVIDENCE for r in data.get("standard") or [])
    cases: list[dict[str, Any]] = list(data["cases"])
    changes: list[dict[str, Any]] = []
    positive = normalise_label(str(data.get("positive")))
    for case in cases:
        on_positive = normalise_label(str(case.get("expected"))) == positive
        graded = EVIDENCE in case["graded_rules"]
        if case.get("flagged") and has_evidence and on_positive and not graded:
            changes.append(
                {
                    "case": case["id"],
                    "action": "add_check",
                    "rule": EVIDENCE,
                    "weight": 1.0,
                    "why": "a bare positive label scores like the desired reasoning here",
                }
            )
    scores: dict[str, list[float]] = {}
    for case in cases:
        if case.get("score") is not None:
            scores.setdefault(str(case.get("type")), []).append(float(case["score"]))
    means = {t: sum(v) / len(v) for t, v in scores.items()}
    solved = [
        c
        for c in cases
        if not c.get("flagged") and c.get("score") == 100 and means.get(str(c.get("type"))) == 100
    ]
    pool = sorted(
        data.get("pool") or [],
        key=lambda p: (means.get(str(p.get("type")), PRIOR_SCORE), p["id"]),
    )
    budget = max(1, len(cases) // 4)
    for case in sorted(solved, key=lambda c: c["id"])[:budget]:
        same = [
            p
            for p in pool
            if normalise_label(str(p["expected"])) == normalise_label(str(case["expected"]))
        ]
        if not same:
            continue
        pick = same[0]
        pool.remove(pick)
        changes.append(
            {
                "case": case["id"],
                "action": "replace",
                "with": {"id": pick["id"], "from": pick["id"]},
                "why": f"every {case.get('type')} case was solved; {pick.get('type')} looks harder",
            }
        )
    return {"protocol": CALIBRATE_PROTOCOL, "changes": changes[:max_changes]}


def builder_offline(system: str, messages: list[dict[str, Any]]) -> str:
    """The offline model of a Builder session (dispatch on the protocol the system names)."""
    protocol = protocol_of(system)
    data = request_data(messages)
    if protocol == DRAFT_PROTOCOL:
        return dump_reply(_draft(data))
    if protocol == PREDICT_PROTOCOL:
        return dump_reply(_predict(data))
    if protocol == CALIBRATE_PROTOCOL:
        return dump_reply(_calibrate(data))
    raise SkillsmithError(f"offline builder model: no answer for protocol {protocol!r}")
