"""Build real benchmark folders on disk for tests (the format of the brief, written as files),
and the results.jsonl rows an evaluation of their cases writes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_BENCHMARK, copy_demo


def write_case(
    root: Path,
    case_id: str,
    rubric: dict[str, Any] | str,
    *,
    prompt: str = "Audit the code. Answer with VERDICT: <label>.\n",
    files: dict[str, str] | None = None,
    rubric_files: dict[str, str] | None = None,
) -> Path:
    """One case folder; a ``str`` rubric is written verbatim (for malformed-file tests)."""
    case = root / case_id
    (case / "statement").mkdir(parents=True, exist_ok=True)
    (case / "rubric").mkdir(parents=True, exist_ok=True)
    (case / "statement" / "prompt.md").write_text(prompt, encoding="utf-8")
    for name, text in (files or {}).items():
        target = case / "statement" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for name, text in (rubric_files or {}).items():
        (case / "rubric" / name).write_text(text, encoding="utf-8")
    body = rubric if isinstance(rubric, str) else yaml.safe_dump(rubric, sort_keys=False)
    (case / "rubric" / "rubric.yaml").write_text(body, encoding="utf-8")
    return case


def write_benchmark(
    root: Path,
    cases: dict[str, dict[str, Any] | str],
    *,
    config: dict[str, Any] | str | None = None,
) -> Path:
    """A benchmark folder ``root`` with ``cases`` (case id → rubric) and a benchmark.yaml."""
    root.mkdir(parents=True, exist_ok=True)
    if config is None:
        config = {"labels": ["vulnerable", "safe"], "runs_per_case": 2, "seed": 7}
    body = config if isinstance(config, str) else yaml.safe_dump(config, sort_keys=False)
    (root / "benchmark.yaml").write_text(body, encoding="utf-8")
    for case_id, rubric in cases.items():
        write_case(root, case_id, rubric)
    return root


def labelled_cases(n_positive: int, n_negative: int) -> dict[str, dict[str, Any] | str]:
    """``n_positive`` vulnerable and ``n_negative`` safe cases with the default label check."""
    cases: dict[str, dict[str, Any] | str] = {}
    for i in range(n_positive):
        cases[f"vuln-{i:03d}"] = {"expected": "vulnerable"}
    for i in range(n_negative):
        cases[f"safe-{i:03d}"] = {"expected": "safe"}
    return cases


def tree_state(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file below ``root`` with its mtime and bytes, to prove nothing was written.

    The workspace lock file is not data (taking the lock creates it), so it is left out.
    """
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".skillsmith.lock"
    }


def result_row(case_id: str, run: int, truth: str, verdict: str, **extra: Any) -> dict[str, Any]:
    """A graded results.jsonl row of a binary benchmark whose positive label is ``vulnerable``:
    passed when the verdict is the truth, else an FN (a missed positive) or an FP."""
    ok = truth == verdict
    kind = None if ok else ("FN" if truth == "vulnerable" else "FP")
    return {
        "case_id": case_id,
        "run_index": run,
        "variant": "skill",
        "ground_truth": truth,
        "judge_verdict": verdict,
        "pass_fail": "pass" if ok else "fail",
        "failure_kind": kind,
        "score": 1.0 if ok else 0.0,
        **extra,
    }


def mini_demo(dest: Path, name: str, every: int) -> Workspace:
    """A copy of the demo workspace with benchmark ``name``: every ``every``-th demo case, to
    keep a real paired evaluation quick."""
    ws = Workspace(copy_demo(dest))
    src, dst = ws.benchmarks_dir / DEMO_BENCHMARK, ws.benchmarks_dir / name
    dst.mkdir()
    config = (src / "benchmark.yaml").read_text(encoding="utf-8")
    (dst / "benchmark.yaml").write_text(config.replace(f"id: {DEMO_BENCHMARK}", f"id: {name}"))
    for case in sorted(p.name for p in src.iterdir() if p.is_dir())[::every]:
        shutil.copytree(src / case, dst / case)
    return ws
