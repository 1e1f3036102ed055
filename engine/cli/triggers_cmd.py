"""``skillsmith tune-description SKILL --queries FILE``: trigger tuning (skill-creator's loop).

FILE is a JSON list of ``{"query": …, "should_trigger": true|false}``. The workspace's agent
(``agent:``) is run on every query with each candidate description; a description is queued for
approval when the paired verdict says it is better than the current one on the held-out 40 %
(the best such on held-out accuracy), rerunning the held-out queries that can decide it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.cli import (
    budget_of,
    budget_options,
    dry_run_option,
    print_json,
    wants_json,
    workspace_of,
)
from engine.cli.progress import LoopProgress, show_plan, spent_line
from engine.loops.triggers import TuneOptions, plan, run


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "tune-description",
        parents=[common],
        help="tune a skill's description on should / should-not trigger queries",
    )
    p.add_argument("skill", metavar="SKILL", help="the skill whose description is tuned")
    p.add_argument(
        "--queries",
        required=True,
        type=Path,
        metavar="FILE",
        help='a JSON list of {"query": …, "should_trigger": true|false} (docs/formats.md)',
    )
    p.add_argument(
        "--candidate",
        action="append",
        default=[],
        metavar="TEXT",
        help="a description to try as well (repeatable)",
    )
    p.add_argument("--iterations", type=int, default=3, help="proposals to try (default 3)")
    p.add_argument(
        "--runs-per-query",
        type=int,
        default=1,
        metavar="N",
        help="runs of each query per description (default 1); a new description is kept only "
        "when the paired verdict on the held-out queries says better, which takes several "
        "queries or runs",
    )
    p.add_argument(
        "--max-extra-runs",
        type=int,
        default=None,
        metavar="N",
        help="held-out query runs a tried description may add when its verdict is undecided "
        "(default: twice gates.max_extra_runs, 96); the current description reruns the same "
        "queries, its runs shared by the tries, so a try costs up to 2N agent runs more. At "
        "the default a fix of 2 of 8 held-out queries is found about 9 times in 10",
    )
    p.add_argument("--threshold", type=float, default=0.5, help="load rate that counts (0.5)")
    p.add_argument("--holdout", type=float, default=0.4, help="held-out share (0.4)")
    p.add_argument(
        "--seed",
        type=int,
        default=42,
        help="seed of the held-out split and of every query run (default 42)",
    )
    p.add_argument("-j", "--jobs", type=int, default=2, help="agent runs at once (2)")
    p.add_argument("--no-submit", action="store_true", help="measure only; queue nothing")
    p.add_argument(
        "--fresh",
        action="store_true",
        help="start a new tuning even when one with the same settings stopped unfinished "
        "(default: resume it, making no run it has on record again)",
    )
    budget_options(p)
    dry_run_option(p)
    p.set_defaults(func=_tune)


def _tune(args: argparse.Namespace) -> int:
    ws = workspace_of(args)
    options = TuneOptions(
        skill=args.skill,
        queries=args.queries,
        candidates=tuple(args.candidate),
        iterations=args.iterations,
        runs_per_query=args.runs_per_query,
        threshold=args.threshold,
        holdout=args.holdout,
        seed=args.seed,
        jobs=args.jobs,
        submit=not args.no_submit,
        max_extra_runs=args.max_extra_runs,
        budget=budget_of(args),
        fresh=args.fresh,
    )
    progress = LoopProgress(f"tune-description {args.skill}", quiet=wants_json(args))
    if show_plan(args, plan(ws, options), progress):
        return 0
    with progress:
        result = run(ws, options, reporter=progress)
    stopped = 1 if result.stop_reason == "budget" else 0  # like optimize: the run did not finish
    if wants_json(args):
        print_json(result.to_dict())
        return stopped
    print(f"{result.train_size} training / {result.test_size} held-out queries")
    print(f"best: description {result.chosen}: {result.best}")
    print(result.reason)
    for note in result.notes:
        print(f"note: {note}")
    if result.candidate:
        print(f"queued {result.candidate['id']}: {result.candidate['status']}")
    if result.spent is not None:
        print("spent: " + spent_line(result.spent, result.budget))
    if result.stop_reason == "budget":
        print("stopped: budget")
    print(f"evidence: {result.experiment_dir}")
    return stopped
