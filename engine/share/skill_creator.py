"""A run in skill-creator's layout, so its scripts (aggregate_benchmark.py, generate_review.py)
read a Skillsmith run as one of their own iterations.

::

    DIR/
      evals/evals.json                 the cases as skill-creator evals (``import evals`` reads it)
      evals/<file>                     each case's input files, at the path its prompt names
      eval-N/eval_metadata.json        eval_id, eval_name (the case id), prompt, assertions
      eval-N/with_skill/run-K/         the skill variant's run K (K = run index + 1)
      eval-N/without_skill/run-K/      the baseline variant's, when the run has one
          grading.json                 expectations (text, passed, evidence), summary,
                                       execution_metrics, timing, user_notes_summary
          timing.json                  total_tokens, duration_ms, total_duration_seconds, …
          eval_metadata.json           again: generate_review.py looks beside the run
          transcript.md                the prompt ("## Eval Prompt"), tool calls, final answer
          outputs/answer.md            the agent's final answer
          outputs/metrics.json         the executor's metrics (tool calls, errors, sizes)
          outputs/<file>               what the agent left in its folder (kept outputs)

The shapes are skill-creator's published ``references/schemas.md``, restated in docs/formats.md,
which the tests check the export against. Everything is written to a staging folder and renamed
into place, and every text passes the vault redactor on the way.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.benchmark import PROMPT_FILE, Benchmark, load_benchmark
from engine.core.errors import SkillsmithError
from engine.core.fsutil import atomic_write_bytes, atomic_write_text, fsync_dir, json_bytes
from engine.core.results import read_results
from engine.core.runs import MANIFEST, RESULTS, latest_of
from engine.core.transcripts.trace import Trace
from engine.core.workspace import Workspace
from engine.evaluation.runner import BASELINE, SKILL
from engine.share.report import Redactor, kept_outputs, unit_trace

CONFIGURATION = {SKILL: "with_skill", BASELINE: "without_skill"}


@dataclass(frozen=True)
class ExportResult:
    path: Path
    evals: int
    runs: int
    warnings: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "evals": self.evals,
            "runs": self.runs,
            "warnings": self.warnings,
        }


def _write_json(path: Path, data: Any) -> None:
    atomic_write_bytes(path, json_bytes(data), sync_dir=False)


def _execution_metrics(trace: Trace | None, outputs: list[Path]) -> dict[str, Any]:
    calls = trace.calls if trace is not None else []
    steps = 1 + sum(1 for _ in trace.texts) if trace is not None else 0
    return {
        "tool_calls": dict(Counter(c.name for c in calls)),
        "total_tool_calls": len(calls),
        "total_steps": steps,
        "files_created": [p.name for p in outputs],
        "errors_encountered": sum(1 for c in calls if c.is_error),
        "output_chars": sum(p.stat().st_size for p in outputs),
        "transcript_chars": trace.size_bytes if trace is not None else 0,
    }


def _grading(row: dict[str, Any], metrics: dict[str, Any], seconds: float) -> dict[str, Any]:
    expectations = [
        {
            "text": str(c.get("text") or ""),
            "passed": bool(c.get("passed")),
            "evidence": str(c.get("evidence") or ""),
        }
        for c in row.get("checks") or []
        if isinstance(c, dict)
    ]
    passed = sum(1 for e in expectations if e["passed"])
    total = len(expectations)
    review = []
    if row.get("pass_fail") == "invalid":
        review.append(f"invalid unit (not graded): {row.get('invalid_reason') or 'unknown'}")
    return {
        "expectations": expectations,
        "summary": {
            "passed": passed,
            "failed": total - passed,
            "total": total,
            "pass_rate": round(passed / total, 4) if total else 0.0,
        },
        "execution_metrics": {k: v for k, v in metrics.items() if k != "files_created"},
        "timing": {
            "executor_duration_seconds": seconds,
            "grader_duration_seconds": 0.0,
            "total_duration_seconds": seconds,
        },
        "user_notes_summary": {"uncertainties": [], "needs_review": review, "workarounds": []},
    }


def _timing(row: dict[str, Any]) -> dict[str, Any]:
    duration_ms = int(row.get("duration_ms") or 0)
    tokens = row.get("tokens") or {}
    timing: dict[str, Any] = {
        "total_tokens": sum(int(v or 0) for v in tokens.values() if isinstance(v, int | float)),
        "duration_ms": duration_ms,
        "total_duration_seconds": round(duration_ms / 1000, 3),
        "executor_duration_seconds": round(duration_ms / 1000, 3),
    }
    if row.get("finished_at"):
        timing["executor_end"] = row["finished_at"]
    return timing


def _transcript_md(prompt: str, trace: Trace | None) -> str:
    lines = ["# Transcript", "", "## Eval Prompt", "", prompt.strip(), ""]
    if trace is not None:
        lines += ["## Tool calls", ""]
        lines += [f"- {c.name}{' (failed)' if c.is_error else ''}: {c.args}" for c in trace.calls]
        lines += ["", "## Final answer", "", trace.final_text.strip(), ""]
    return "\n".join(lines)


def _copy_output(src: Path, folder: Path, dest: Path, redact: Redactor) -> None:
    data = src.read_bytes()
    with contextlib.suppress(UnicodeDecodeError):  # a binary output is copied as it is
        data = redact(data.decode("utf-8")).encode("utf-8")
    target = dest / src.relative_to(folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, data, sync_dir=False)


def _benchmark(ws: Workspace | None, bench_id: str | None) -> Benchmark | None:
    if ws is None or not bench_id or not (ws.benchmarks_dir / bench_id).is_dir():
        return None
    return load_benchmark(ws.benchmarks_dir / bench_id, check=False)


def _statement_files(bench: Benchmark | None, case_id: str) -> dict[str, bytes]:
    if bench is None:
        return {}
    try:
        statement = bench.case(case_id).statement_dir
    except KeyError:
        return {}
    return {
        p.relative_to(statement).as_posix(): p.read_bytes()
        for p in sorted(statement.rglob("*"))
        if p.is_file() and not p.is_symlink() and p.relative_to(statement) != Path(PROMPT_FILE)
    }


def _eval_entry(
    bench: Benchmark | None,
    case_id: str,
    rows: list[dict[str, Any]],
    prompt: str,
) -> tuple[str, list[str]]:
    """The case's expected output and its expectations (the rubric's checks, else the graded
    check texts of its rows)."""
    if bench is not None:
        with contextlib.suppress(KeyError):
            rubric = bench.case(case_id).rubric
            expected = str(rubric.expected or "")
            if expected and bench.labels:
                # skill-creator has no label set; a bare label, which every prompt names, would
                # read as the answer given away, so the expected output says what is checked
                expected = f"verdict is {rubric.expected!r}"
            return expected, [c.describe(rubric.expected) for c in rubric.checks]
    texts = [str(c.get("text")) for r in rows for c in r.get("checks") or [] if c.get("text")]
    return str(rows[0].get("ground_truth") or ""), list(dict.fromkeys(texts))


def export_skill_creator(
    ws: Workspace | None, run_dir: Path, dest: Path, redact: Redactor
) -> ExportResult:
    """Write run ``run_dir`` to ``dest`` (which must not exist or be empty) in skill-creator's
    layout; nothing is left at ``dest`` when anything fails."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise SkillsmithError(f"{dest}: exists and is not an empty folder; choose a new one")
    manifest = json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))
    bench = _benchmark(ws, manifest.get("benchmark"))
    rows = sorted(
        latest_of(read_results(run_dir / RESULTS)).values(),
        key=lambda r: (str(r["case_id"]), r["variant"], int(r["run_index"])),
    )
    order = [str(c) for c in manifest.get("case_ids") or []]
    cases = [c for c in order if any(r["case_id"] == c for r in rows)]
    cases += sorted({str(r["case_id"]) for r in rows} - set(cases))
    skill_names = [str(s.get("name")) for s in manifest.get("skills") or [] if s.get("under_test")]
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    warnings: list[str] = []
    try:
        evals, written = _write_all(run_dir, staging, bench, rows, cases, redact, warnings)
        _write_json(
            staging / "evals" / "evals.json",
            {"skill_name": ", ".join(skill_names), "evals": evals},
        )
        fsync_dir(staging)
        if dest.exists():
            dest.rmdir()
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ExportResult(dest, len(evals), written, warnings)


def _write_all(
    run_dir: Path,
    staging: Path,
    bench: Benchmark | None,
    rows: list[dict[str, Any]],
    cases: list[str],
    redact: Redactor,
    warnings: list[str],
) -> tuple[list[dict[str, Any]], int]:
    evals: list[dict[str, Any]] = []
    placed: dict[str, bytes] = {}  # evals/<path> already written
    written = 0
    for n, case_id in enumerate(cases, start=1):
        mine = [r for r in rows if r["case_id"] == case_id]
        traces = {id(r): unit_trace(run_dir, r)[0] for r in mine}
        prompt = _prompt(bench, case_id, traces.values())
        expected, expectations = _eval_entry(bench, case_id, mine, prompt)
        metadata = {
            "eval_id": n,
            "eval_name": case_id,
            "prompt": redact(prompt),
            "assertions": [redact(e) for e in expectations],
        }
        eval_dir = staging / f"eval-{n}"
        _write_json(eval_dir / "eval_metadata.json", metadata)
        files = []
        for rel, data in _statement_files(bench, case_id).items():
            where = rel if placed.get(rel, data) == data else f"files/eval-{n}/{rel}"
            if where != rel:
                warnings.append(
                    f"eval-{n} ({case_id}): another case has a different {rel}; written as "
                    f"evals/{where}, so an import gives it that path"
                )
            placed[where] = data
            atomic_write_bytes(staging / "evals" / where, data, sync_dir=False)
            files.append(where)
        evals.append(
            {
                "id": n,
                "prompt": redact(prompt),
                "expected_output": redact(expected),
                "files": files,
                "expectations": [redact(e) for e in expectations],
            }
        )
        for row in mine:
            run_path = eval_dir / CONFIGURATION[row["variant"]] / f"run-{int(row['run_index']) + 1}"
            _write_run(run_dir, run_path, row, traces[id(row)], metadata, prompt, redact)
            written += 1
    return evals, written


def _prompt(bench: Benchmark | None, case_id: str, traces: Any) -> str:
    """The case's task as the benchmark states it, else as the first transcript shows it."""
    if bench is not None:
        with contextlib.suppress(KeyError, OSError):
            return bench.case(case_id).prompt()
    return next((t.prompt for t in traces if t is not None and t.prompt), "")


def _write_run(
    run_dir: Path,
    path: Path,
    row: dict[str, Any],
    trace: Trace | None,
    metadata: dict[str, Any],
    prompt: str,
    redact: Redactor,
) -> None:
    folder, outputs, links = kept_outputs(run_dir, row)
    metrics = _execution_metrics(trace, outputs)
    seconds = round(int(row.get("duration_ms") or 0) / 1000, 3)
    grading = _grading(row, metrics, seconds)
    if links:
        grading["user_notes_summary"]["needs_review"].append(
            "links in the outputs, not followed: "
            + ", ".join(p.relative_to(folder).as_posix() for p in links)
        )
    _write_json(path / "grading.json", json.loads(redact(json.dumps(grading))))
    _write_json(path / "timing.json", _timing(row))
    _write_json(path / "eval_metadata.json", metadata)
    atomic_write_text(path / "transcript.md", redact(_transcript_md(prompt, trace)), sync_dir=False)
    answer = trace.final_text if trace is not None else str(row.get("invalid_reason") or "")
    atomic_write_text(path / "outputs" / "answer.md", redact(answer) + "\n", sync_dir=False)
    _write_json(path / "outputs" / "metrics.json", metrics)
    for src in outputs:
        _copy_output(src, folder, path / "outputs", redact)
