"""``skillsmith optimize-agent --bench B``: rounds over the agent state, kept by a paired verdict.

Refused without a Formal Baseline (``skillsmith build`` first). An interrupted or killed session
of the same benchmark is resumed by running the same command again: the round continues with
the same candidate and only the missing units run. A session stopped by its budget
(``--budget-*`` or skillsmith.yaml's ``budget:``) resumes the same way, given a larger one.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from engine.cli import (
    budget_of,
    budget_options,
    dry_run_option,
    executor_options,
    print_json,
    wants_json,
    workspace_of,
)
from engine.cli.progress import (
    RESUME_WITH_MORE_BUDGET,
    LoopProgress,
    interrupted,
    show_plan,
    spent_line,
)
from engine.core.events import Cancelled


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "optimize-agent",
        parents=[common],
        help="improve AGENTS.md, skills and agent settings round by round against a benchmark",
    )
    p.add_argument("--bench", required=True, metavar="B", help="a built benchmark (its id)")
    p.add_argument("--rounds", type=int, default=3, help="valid rounds to run (default 3)")
    p.add_argument("--runs", type=int, help="runs per case of each candidate (default: bench's)")
    p.add_argument("--target-score", type=float, help="stop once the score reaches this")
    p.add_argument("-j", "--jobs", type=int, help="parallel agent runs (default: CPU count)")
    p.add_argument(
        "--seed",
        type=int,
        help="fix every evaluation's seed, so the session can be repeated (default: fresh seeds)",
    )
    p.add_argument(
        "--auto-approve",
        action="store_true",
        help="apply a kept round at once (default: it waits in the queue for a person)",
    )
    budget_options(p)
    dry_run_option(p)
    executor_options(p)
    p.set_defaults(func=_optimize)


def _optimize(args: argparse.Namespace) -> int:
    from engine.loops.agent_optimizer.session import AgentOptimizerOptions, plan, run

    ws = workspace_of(args)
    options = AgentOptimizerOptions(
        bench=args.bench,
        rounds=args.rounds,
        runs=args.runs,
        target_score=args.target_score,
        jobs=args.jobs,
        auto_approve=args.auto_approve,
        seed=args.seed,
        budget=budget_of(args),
    )
    progress = LoopProgress(f"optimize-agent {args.bench}", quiet=wants_json(args))
    if show_plan(args, plan(ws, options), progress):
        return 0
    try:
        with progress:
            result = run(ws, options, reporter=progress)
    except (KeyboardInterrupt, Cancelled):
        return interrupted("optimize-agent", "run the same command again to resume the round")
    if wants_json(args):
        print_json(result.to_dict())
        return 0
    console = Console()
    table = Table(title=f"optimizer {result.session_id}", title_justify="left")
    for column in ("round", "target", "candidate", "verdict vs parent", "decision", "hypothesis"):
        table.add_column(column)
    for attempt in result.attempts:
        candidate = attempt["candidate"]
        hypothesis = attempt["hypothesis"] or {}
        table.add_row(
            "—" if attempt["decision"] == "invalid" else str(attempt["round"]),
            Text(candidate["target"]),  # a model wrote these: "[evidence]" is text
            Text(candidate["summary"]),
            (attempt["verdict"] or {}).get("line", "—"),
            str(attempt["decision"]),
            {True: "held", False: "did not hold", None: "—"}[hypothesis.get("held")],
        )
    console.print(table)
    console.print(
        f"{result.valid_rounds} valid rounds, stopped: {result.stop_reason}; score "
        f"{result.baseline_score:.2f} (Formal Baseline) → {result.final_score:.2f}, "
        f"agent state v{result.version}" + (" (resumed)" if result.resumed else "")
    )
    if result.spent is not None:
        console.print("spent: " + spent_line(result.spent, result.budget), markup=False)
    if result.stop_reason == "budget":
        console.print(RESUME_WITH_MORE_BUDGET, markup=False)
    for attempt in result.attempts:
        if attempt["decision"] in ("queued", "held"):
            console.print(Text(str(attempt["reason"])))
        if attempt["candidate_id"] and attempt["decision"] == "queued":
            console.print(f"approve it with: skillsmith queue approve {attempt['candidate_id']}")
    return 0
