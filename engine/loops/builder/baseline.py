"""The Formal Baseline: the frozen benchmark's first complete record, and the check of it.

Agent optimization needs a baseline — "没有基线，就没有可比较的提升" — so the Optimizer starts
by proving one: the scoreboard holds a ``formal_baseline`` record covering every case, its run
folder holds exactly the rows it reports, and the benchmark has not changed since that run (the
run's fingerprint of statements, rubrics and the private standard still matches). A benchmark
edited after its freeze is refused rather than compared against a baseline it no longer matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.core.benchmark import Benchmark, load_benchmark
from engine.core.errors import SkillsmithError
from engine.core.runs import RunFolder
from engine.core.scoreboard import (
    SCOREBOARD_NAME,
    Runtime,
    ScoreRecord,
    read_heads,
    read_record,
    record_from_rows,
)
from engine.core.sessions import verify_record
from engine.core.workspace import Workspace
from engine.evaluation.runner import bench_fingerprint

FORMAL_BASELINE = "formal_baseline"
ACCEPTED = "accepted"


@dataclass(frozen=True)
class FormalBaseline:
    bench: Benchmark
    index: int  # its position in scoreboard.yaml
    record: ScoreRecord

    @property
    def run_id(self) -> str:
        return str(self.record.run_id)

    @property
    def score(self) -> float:
        return self.record.score


def figures(rows: Sequence[dict[str, Any]]) -> ScoreRecord:
    """What some result rows score by the scoreboard's rules (per case and overall), computed
    without writing a record: how a pilot or a candidate is compared before anything is kept."""
    return record_from_rows(list(rows), runtime=Runtime("", ""), summary_title="", summary="")


def skills_of_run(manifest: dict[str, Any]) -> dict[str, str]:
    """``name → version`` of the skills a run evaluated (a content hash for unpublished text)."""
    return {
        str(s["name"]): str(s.get("version") or f"sha256:{str(s.get('sha256'))[:12]}")
        for s in manifest.get("skills") or []
        if isinstance(s, dict) and s.get("name")
    }


def has_formal_baseline(ws: Workspace, bench_id: str) -> bool:
    return any(r.kind == FORMAL_BASELINE for r in read_heads(ws.benchmarks_dir / bench_id))


def formal_baseline(ws: Workspace, bench_id: str) -> FormalBaseline:
    """The benchmark's first complete Formal Baseline, checked against its run; else refuse."""
    bench = load_benchmark(ws.benchmarks_dir / bench_id)
    where = bench.root / SCOREBOARD_NAME
    found = [i for i, r in enumerate(read_heads(bench.root)) if r.kind == FORMAL_BASELINE]
    if not found:
        raise SkillsmithError(
            f"{where}: no Formal Baseline record; build the benchmark first "
            f"(skillsmith build {bench_id})"
        )
    index = found[0]
    record = read_record(bench.root, index)
    missing = sorted({c.id for c in bench.cases} - {c.case_id for c in record.cases})
    if missing:
        raise SkillsmithError(
            f"{where}: the Formal Baseline [{index}] has no run of case {missing[0]!r}; "
            "it is not complete"
        )
    folder = RunFolder(ws.runs_dir / str(record.run_id))
    if not folder.exists():
        raise SkillsmithError(
            f"{where}: the Formal Baseline [{index}] links to run {record.run_id}, "
            f"which is not in {ws.runs_dir}"
        )
    inputs = folder.read_manifest().get("inputs") or {}
    if inputs.get("benchmark_sha256") != bench_fingerprint(bench):
        raise SkillsmithError(
            f"{bench.root}: the benchmark changed after its Formal Baseline (run "
            f"{record.run_id}); later scores would not be comparable — build it again"
        )
    problems = verify_record(ws, record)
    if problems:
        raise SkillsmithError(
            f"{where}: the Formal Baseline [{index}] does not match run {record.run_id}: "
            f"{problems[0]}"
        )
    return FormalBaseline(bench, index, record)


__all__ = [
    "ACCEPTED",
    "FORMAL_BASELINE",
    "FormalBaseline",
    "figures",
    "formal_baseline",
    "has_formal_baseline",
    "skills_of_run",
]
