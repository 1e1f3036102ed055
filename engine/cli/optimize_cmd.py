"""``skillsmith optimize SKILL --bench B``: GEPA over the skill's sections, offline.

Progress (metric calls against the budget) goes to stderr; the outcome — submitted to the queue,
not submitted and why, or failed — to stdout, or the whole result with ``--json``. A failed run
(time limit, budget, model failure) exits 1 and still prints its result with ``--json``, so a
script can read why from the same place.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from engine.cli import (
    budget_of,
    budget_options,
    dry_run_option,
    executor_options,
    print_json,
    verbose_option,
    wants_json,
    workspace_of,
)
from engine.cli.progress import LoopProgress, show_plan, spent_line

if TYPE_CHECKING:
    from engine.loops.gepa import GepaResult


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "optimize",
        parents=[common],
        help="GEPA over description / when_to_use / steps / pitfalls",
    )
    p.add_argument("skill", metavar="SKILL", help="skill name (a folder under skills/)")
    p.add_argument("--bench", required=True, metavar="B", help="benchmark id under benchmarks/")
    p.add_argument("--iterations", type=int, default=10, help="search rounds (default 10)")
    p.add_argument(
        "--reflection-batch",
        type=int,
        default=8,
        help="Feedback cases per round (default %(default)s; each round runs them twice)",
    )
    p.add_argument(
        "--max-metric-calls",
        type=int,
        default=1000,
        help="agent runs in all, holdout included; never exceeded (default 1000)",
    )
    p.add_argument("--seed", type=int, help="seed of every random draw (default: the benchmark's)")
    p.add_argument(
        "--time-limit", type=float, metavar="S", help="fail the run after S seconds (no submit)"
    )
    p.add_argument(
        "--min-gain",
        type=float,
        default=0.0,
        help="holdout mean must beat the seed's by at least this (default 0: any gain)",
    )
    p.add_argument(
        "--splits",
        metavar="F,V,H",
        help="feedback,validation,holdout ratios (default: the benchmark's, else 0.4,0.3,0.3)",
    )
    p.add_argument("-j", "--jobs", type=int, help="parallel agent runs (default: CPU count)")
    budget_options(p)
    dry_run_option(p)
    verbose_option(p)
    p.add_argument(
        "--no-submit",
        action="store_true",
        help="only experiment: never queue a candidate (allows splits under 10 cases)",
    )
    executor_options(p)
    p.set_defaults(func=_optimize)


def _optimize(args: argparse.Namespace) -> int:
    # Imported here: the model client and gepa would slow down every other command's start.
    from engine.loops.gepa import GepaOptions, OptimizeFailed, OptimizeOptions, run
    from engine.loops.gepa.run import plan
    from engine.loops.gepa.splits import parse_ratios

    ws = workspace_of(args)
    options = OptimizeOptions(
        iterations=args.iterations,
        reflection_batch=args.reflection_batch,
        max_metric_calls=args.max_metric_calls,
        seed=args.seed,
        time_limit_s=args.time_limit,
        min_gain=args.min_gain,
        splits=parse_ratios(args.splits) if args.splits else None,
        jobs=args.jobs,
        submit=not args.no_submit,
        budget=budget_of(args),
    )
    progress = LoopProgress(f"optimize {args.skill}", quiet=wants_json(args), verbose=args.verbose)
    gepa = GepaOptions(args.skill, args.bench, options)
    if show_plan(args, plan(ws, gepa), progress):
        return 0
    try:
        with progress:
            result = run(ws, gepa, reporter=progress)
    except OptimizeFailed as failed:
        if wants_json(args):
            print_json(failed.result.to_json())
            return 1
        raise
    if wants_json(args):
        print_json(result.to_json())
    else:
        Console().print(_summary(result))
    return 0


NO_IMPROVEMENT_ADVICE = (
    "nothing to approve: give the search more budget (--max-metric-calls), add failing cases "
    "to the benchmark's feedback split, or try outcome-driven rounds: skillsmith evolve"
)


def _summary(result: GepaResult) -> Table:
    table = Table(title=f"experiment {result.experiment_id}", title_justify="left")
    table.add_column("")
    table.add_column("")
    holdout = result.holdout or {}
    rows = [
        ("status", result.status),
        ("why", result.reason),
        ("search stopped", result.stop_reason or "-"),
        ("rounds", str(result.iterations)),
        ("metric calls", str(result.metric_calls)),
        *([("spent", spent_line(result.spent, result.budget))] if result.spent else []),
        ("pool", ", ".join(f"{p['id']} {p['validation_mean']:.3f}" for p in result.pool)),
        ("selected", result.selected_id or "-"),
    ]
    if result.validation:
        rows.append(
            (
                "validation",
                f"vs seed (recorded; Holdout decides): {result.validation['line']}",
            )
        )
    if holdout:
        verdict = holdout.get("verdict") or {}
        rows.append(
            (
                "holdout",
                f"seed {holdout['seed_mean']:.3f} → {holdout['candidate_mean']:.3f} "
                f"({holdout['cases']} cases)"
                + (f": {verdict['line']}" if verdict.get("line") else ""),
            )
        )
    if result.candidate:
        rows.append(("candidate", f"{result.candidate} ({result.candidate_status})"))
    rows.append(("record", result.experiment_dir))
    if not result.candidate:
        rows.append(("next", NO_IMPROVEMENT_ADVICE))
    for key, value in rows:
        table.add_row(key, Text(value))  # reasons quote skills and models: "[evidence]" is text
    return table
