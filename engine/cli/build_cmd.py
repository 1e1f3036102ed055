"""``skillsmith build BENCH``: design a benchmark — pilot → freeze → Formal Baseline.

The session's decisions (draft, predictions, pilots, calibration, freeze) are printed as they
happen on stderr, with a bar for each pilot's evaluation; the summary or ``--json`` goes to
stdout (:class:`engine.cli.progress.LoopProgress`, the renderer of every loop).
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from engine.cli import executor_options, print_json, verbose_option, wants_json, workspace_of
from engine.cli.progress import LoopProgress, interrupted
from engine.core.events import Cancelled


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "build",
        parents=[common],
        help="design a benchmark: draft, pilot, freeze, Formal Baseline",
    )
    p.add_argument("bench", metavar="BENCH", help="id of the benchmark to build")
    p.add_argument("--goal", help="the capability the benchmark measures")
    p.add_argument(
        "--from",
        dest="source",
        metavar="SRC",
        help="import cases from this benchmark (an id under benchmarks/, or a folder)",
    )
    p.add_argument("--pick", action="append", default=[], metavar="IDS", help="only these pool ids")
    p.add_argument("--cases", type=int, default=8, help="number of cases to draft (default 8)")
    p.add_argument(
        "--pilot-iterations", type=int, default=3, help="valid pilot iterations (default 3)"
    )
    p.add_argument("--target-score", type=float, help="freeze early at or below this pilot score")
    p.add_argument("-j", "--jobs", type=int, help="parallel agent runs (default: CPU count)")
    verbose_option(p)
    executor_options(p)
    p.set_defaults(func=_build)


def _build(args: argparse.Namespace) -> int:
    from engine.loops.builder.session import BuildOptions, run

    ws = workspace_of(args)
    pick = [c.strip() for group in args.pick for c in group.split(",") if c.strip()]
    try:
        with LoopProgress(
            f"build {args.bench}", quiet=wants_json(args), verbose=args.verbose
        ) as progress:
            options = BuildOptions(
                bench=args.bench,
                goal=args.goal,
                source=args.source,
                pick=tuple(pick),
                cases=args.cases,
                pilot_iterations=args.pilot_iterations,
                target_score=args.target_score,
                jobs=args.jobs,
            )
            result = run(ws, options, reporter=progress)
    except (KeyboardInterrupt, Cancelled):
        return interrupted("build", "run the command again to rebuild from the current cases")
    if wants_json(args):
        print_json(result.to_dict())
        return 0
    console = Console()
    table = Table(title=f"pilots of {result.bench_id}", title_justify="left")
    for column in ("pilot", "score", "predicted", "mean error", "flagged", "changes", "run"):
        table.add_column(column)
    for pilot in result.pilots:
        table.add_row(
            str(pilot.iteration) + (" *" if pilot.iteration == result.frozen_iteration else ""),
            "invalid" if pilot.score is None else f"{pilot.score:.2f}",
            f"{pilot.predicted:.2f}",
            "—" if pilot.mean_abs_error is None else f"{pilot.mean_abs_error:.2f}",
            str(len(pilot.flagged)),
            str(len(pilot.changes)),
            pilot.run_id,
        )
    console.print(table)
    console.print(
        f"frozen: pilot {result.frozen_iteration} ({result.reason}); Formal Baseline "
        f"{result.baseline_score:.2f} = scoreboard record [{result.record_index}] "
        f"(run {result.baseline_run_id}, session {result.session_id})"
    )
    return 0
