"""The ``results.jsonl`` row: the one format every figure of the workbench is computed from.

The row is a file format, read by importers at the bottom floor as much as by the metrics above
it, so its schema and its validating reader live here; the arithmetic over rows stays in
engine.evaluation.metrics. Rows are validated on read (one line naming file and line) and keys
of other platforms are kept, so an imported run loses nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.core.benchmark import label_text
from engine.core.errors import FormatError
from engine.core.fsutil import read_jsonl
from engine.core.schema import from_mapping, to_mapping

PassFail = Literal["pass", "fail", "invalid"]


@dataclass
class ResultRow:
    """One results.jsonl row (brief "results.jsonl row"); extra keys of other platforms are kept."""

    case_id: str
    pass_fail: PassFail
    ground_truth: str | None = None
    judge_verdict: str | None = None
    failure_kind: Literal["FN", "FP"] | None = None
    run_index: int = 0
    variant: Literal["skill", "baseline"] = "skill"
    score: float | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, int | None] = field(default_factory=dict)
    cost_usd: float | None = None
    duration_ms: int = 0
    session_id: str | None = None
    session_file: str | None = None
    invalid_reason: str | None = None
    split: str | None = None
    case_type: str | None = None
    critical: bool = False


_ROW_FIELDS = {f.name for f in dataclasses.fields(ResultRow)}


def validate_row(data: dict[str, Any], where: str) -> dict[str, Any]:
    """A complete, typed row from a parsed line; ``where`` is "file:line" for the error."""
    known = {k: v for k, v in data.items() if k in _ROW_FIELDS}
    for key in ("ground_truth", "judge_verdict"):
        if key in known:
            known[key] = label_text(known[key])
    if "score" not in known or known["score"] is None:
        known["score"] = 1.0 if known.get("pass_fail") == "pass" else 0.0
    row = from_mapping(ResultRow, known, where)
    if not 0.0 <= float(row.score or 0.0) <= 1.0:
        raise FormatError(where, "score", f"expected a number in [0, 1], got {row.score}")
    if row.duration_ms < 0:
        raise FormatError(where, "duration_ms", f"expected ≥ 0, got {row.duration_ms}")
    if row.cost_usd is not None and row.cost_usd < 0:
        raise FormatError(where, "cost_usd", f"expected ≥ 0 or null, got {row.cost_usd}")
    for i, check in enumerate(row.checks):
        if not {"text", "passed"} <= set(check):
            raise FormatError(where, f"checks[{i}]", "expected an object with text and passed")
    extra = {k: v for k, v in data.items() if k not in _ROW_FIELDS}
    out: dict[str, Any] = {**extra, **to_mapping(row)}
    return out


def read_results(path: Path) -> list[dict[str, Any]]:
    """Every row of a results.jsonl, validated; the first bad line raises naming file and line."""
    path = Path(path)
    if not path.is_file():
        raise FormatError(path, None, "file not found")
    rows = read_jsonl(path, strict=True)
    numbers = [
        n for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if raw.strip()
    ]
    return [validate_row(row, f"{path}:{n}") for row, n in zip(rows, numbers, strict=True)]
