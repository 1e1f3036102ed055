"""``skillsmith evolve SKILL --bench B``: outcome-driven evolution rounds, resumable.

Progress (round, stage, the running evaluation) goes to stderr as rich bars; the final tables or
``--json`` to stdout. Running the same command after an interruption resumes the pending round.
"""

from __future__ import annotations

import argparse
import sys
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
    wants_json,
    workspace_of,
)
from engine.cli.progress import RESUME_WITH_MORE_BUDGET, LoopProgress, show_plan, spent_line
from engine.core.errors import check_counts
from engine.core.events import Cancelled
from engine.evaluation.demo import demo_agent_notice

if TYPE_CHECKING:
    from engine.loops.evolve import EvolveResult


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "evolve", parents=[common], help="outcome-driven evolution rounds for one skill"
    )
    p.add_argument("skill", metavar="SKILL", help="skill name (a folder under skills/)")
    p.add_argument("--bench", required=True, metavar="B", help="benchmark id under benchmarks/")
    p.add_argument("--rounds", type=int, help="at most this many rounds (default: limits)")
    p.add_argument(
        "--proposer", metavar="offline|anthropic", help="who writes the patches (default: config)"
    )
    p.add_argument(
        "--auto-approve",
        action="store_true",
        help="publish every candidate that passes all gates (default: queue it for approval)",
    )
    p.add_argument("--seed", type=int, help="proposer seed (default: the benchmark's)")
    p.add_argument("-j", "--jobs", type=int, help="parallel agent runs (default: CPU count)")
    budget_options(p)
    dry_run_option(p)
    p.add_argument(
        "--fresh",
        action="store_true",
        help="run every evaluation again, even one an earlier session has on record",
    )
    executor_options(p)
    p.set_defaults(func=_evolve)


def _evolve(args: argparse.Namespace) -> int:
    check_counts(("--rounds", args.rounds), ("-j", args.jobs))
    # imported here: the model SDK behind the proposers is slow to import, and every other
    # command would pay for it at start-up
    from engine.loops.evolve import EvolveOptions, checkpoint, run
    from engine.loops.evolve.loop import plan

    ws = workspace_of(args)
    notice = demo_agent_notice(ws, args.bench)
    if notice:
        sys.stderr.write(notice + "\n")
    progress = LoopProgress(f"evolve {args.skill}", quiet=wants_json(args))
    options = EvolveOptions(
        skill=args.skill,
        bench=args.bench,
        rounds=args.rounds,
        proposer=args.proposer,
        auto_approve=args.auto_approve,
        seed=args.seed,
        jobs=args.jobs,
        budget=budget_of(args),
        fresh=args.fresh,
    )
    if show_plan(args, plan(ws, options), progress):
        return 0
    try:
        with progress:
            result = run(ws, options, reporter=progress)
    except (KeyboardInterrupt, Cancelled):
        pending = checkpoint.load(ws)
        where = f" at round {pending.round}, stage {pending.stage}" if pending else ""
        sys.stderr.write(
            f"skillsmith: interrupted{where}; finished stages are kept in "
            f"{ws.pending_round_path.name}; run the same command again to resume\n"
        )
        return 130
    if wants_json(args):
        print_json(result.to_dict())
    else:
        _print_result(result)
    return 0


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _print_result(result: EvolveResult) -> None:
    console = Console()
    rounds = Table(title=f"evolution {result.session_id}", title_justify="left")
    for column in ("round", "parent", "outcome", "gates", "stagnation", "reason"):
        rounds.add_column(column, overflow="fold")
    for r in result.rounds:
        colour = {"accepted": "green", "queued": "green", "rejected": "red"}.get(r.outcome, "")
        gates = " ".join(f"{g}:{v}" for g, v in r.gates.items()) or "—"
        outcome = f"[{colour}]{r.outcome}[/]" if colour else r.outcome
        if r.version:
            outcome += f" → {r.version}"
        reason = Text(r.reason)  # reasons quote cases and models: "[evidence]" is text
        rounds.add_row(str(r.round), r.parent, outcome, gates, f"{r.stagnation:.1f}", reason)
    console.print(rounds)
    versions = Table(title="versions", title_justify="left")
    for column in ("version", "round", "selection F1", "holdout F1", "golden F1", "verify"):
        versions.add_column(column, justify="right" if column != "version" else "left")
    for v in result.versions:
        versions.add_row(
            v.version,
            str(v.round),
            _num(v.selection_f1),
            _num(v.holdout_f1),
            _num(v.golden_f1),
            f"{v.verify:.0f}",
        )
    console.print(versions)
    console.print(
        f"holdout F1 {result.start_version} {_num(result.holdout_start)} → "
        f"{result.final_version} {_num(result.holdout_final)}; stopped: {result.stop_reason}"
    )
    if result.spent is not None:
        console.print(
            "spent: " + spent_line(result.spent, result.budget), markup=False, highlight=False
        )
    if result.agent_runs:  # the same runs by the evaluation that made them (docs/evolve.md)
        kinds = ", ".join(f"{kind} {n}" for kind, n in result.agent_runs.items())
        console.print(f"agent runs by kind: {kinds}", markup=False, highlight=False)
    for line in result.not_run:
        console.print(Text(f"not run: {line}"))
    if result.stop_reason != "budget":  # a session stopped by its budget has no summary yet
        console.print(f"summary: {result.summary_path}")
    hint = next_step(result)
    if hint:
        console.print(hint, markup=False, highlight=False)


def next_step(result: EvolveResult) -> str | None:
    """Every stop names the command that moves the work on."""
    if result.stop_reason == "budget":
        return RESUME_WITH_MORE_BUDGET
    if result.stop_reason == "awaiting_approval":
        queued = next((r.candidate for r in reversed(result.rounds) if r.candidate), None)
        if queued is not None:
            return (
                f"next: {queued} awaits approval — skillsmith queue approve {queued} --why "
                f'"<your reason>" (or a in the workbench), then run this command again to go '
                "on from the new version"
            )
    return None
