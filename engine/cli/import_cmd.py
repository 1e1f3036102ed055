"""``skillsmith import KIND PATH --bench ID``: runs and test sets from elsewhere."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engine.cli import print_json, wants_json, workspace_of
from engine.core.errors import SkillsmithError, UsageError, check_counts
from engine.core.importers import import_cases, import_evals, import_run


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "import",
        parents=[common],
        help="import a run export, skill-creator evals.json, or a JSONL/CSV of cases",
        description=(
            "KIND run: a results.jsonl + sessions/ (+ manifest.json) export, folder or .zip, "
            "into runs/. KIND evals: skill-creator's evals/evals.json into benchmarks/ID. "
            "KIND cases: a .jsonl or .csv of (input, expected) into benchmarks/ID; optional "
            "columns id, type, critical, split, files (input files, ';'-separated, kept at "
            "their relative paths) and folder (a folder whose contents become the case's "
            "files), both relative to the case file. Unknown keys are kept aside in "
            "benchmarks/ID/import-extras.yaml with a warning."
        ),
    )
    p.add_argument(
        "kind", choices=("run", "evals", "cases"), metavar="KIND", help="run|evals|cases"
    )
    p.add_argument(
        "path", type=Path, metavar="PATH", help="the file or run folder to import (see KIND)"
    )
    p.add_argument("--bench", metavar="ID", help="benchmark id (required for evals and cases)")
    p.add_argument("--run-id", help="run id for an imported run (default: a new one)")
    p.add_argument(
        "--labels", help="cases: comma-separated label set, positive first (e.g. vulnerable,safe)"
    )
    p.add_argument("--runs", type=int, default=1, help="runs per case of a new benchmark")
    p.add_argument("--seed", type=int, default=7, help="split seed of a new benchmark")
    p.set_defaults(func=_import)


def _readable(path: Path) -> Path:
    """The source, or a one-line refusal that quotes at most a readable part of its name."""
    name = str(path)
    shown = name if len(name) <= 160 else f"{name[:100]}…{name[-40:]} ({len(name)} characters)"
    try:
        path.stat()
    except FileNotFoundError:
        raise SkillsmithError(f"{shown}: file not found") from None
    except OSError as exc:
        raise SkillsmithError(f"{shown}: {exc.strerror or exc}") from None
    return path


def _import(args: argparse.Namespace) -> int:
    if args.kind != "run" and not args.bench:
        raise UsageError(f"import {args.kind}: --bench ID is required")
    check_counts(("--runs", args.runs))
    ws = workspace_of(args)
    args.path = _readable(args.path)
    if args.kind == "run":
        result = import_run(ws, args.path, bench=args.bench, run_id=args.run_id)
        what = "rows"
    elif args.kind == "evals":
        result = import_evals(ws, args.path, bench=args.bench, runs=args.runs)
        what = "cases"
    else:
        labels = [x.strip() for x in args.labels.split(",") if x.strip()] if args.labels else None
        result = import_cases(
            ws, args.path, bench=args.bench, labels=labels, runs=args.runs, seed=args.seed
        )
        what = "cases"
    for warning in result.warnings:
        print(f"skillsmith: warning: {warning}", file=sys.stderr)
    if result.judged_checks and ws.load_config().models.judge.provider == "offline":
        # the offline judge grades only the decision standard's [evidence] rule: every case
        # would be invalid, so say which judge the expectations need before anyone runs them
        print(
            f"skillsmith: note: the {result.judged_checks} expectations are graded by an LLM "
            f"judge; the offline judge cannot grade them: run skillsmith eval {args.bench} "
            "--judge anthropic (or set models.judge.provider: anthropic in skillsmith.yaml)",
            file=sys.stderr,
        )
    if wants_json(args):
        print_json(result.to_dict())
    else:
        print(f"imported {result.count} {what} into {result.path}")
    return 0
