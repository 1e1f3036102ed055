"""``skillsmith evolve SKILL --bench B``: outcome-driven evolution rounds, resumable.

Progress (round, stage, the running evaluation) goes to stderr as rich bars; the final tables or
``--json`` to stdout. Running the same command after an interruption resumes the pending round.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from engine.cli import executor_options, print_json, wants_json, workspace_of
from engine.cli.progress import resume_line
from engine.core.errors import UsageError
from engine.core.events import Cancelled, Event
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
    executor_options(p)
    p.set_defaults(func=_evolve)


def _evolve(args: argparse.Namespace) -> int:
    for flag, value in (("--rounds", args.rounds), ("-j", args.jobs)):
        if value is not None and value < 1:
            raise UsageError(f"{flag}: expected a number ≥ 1, got {value}")
    # imported here: the model SDK behind the proposers is slow to import, and every other
    # command would pay for it at start-up
    from engine.loops.evolve import EvolveOptions, checkpoint, evolve

    ws = workspace_of(args)
    notice = demo_agent_notice(ws, args.bench)
    if notice:
        sys.stderr.write(notice + "\n")
    console = Console(stderr=True)
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    rounds = progress.add_task("evolve", total=None, status="")
    units = progress.add_task("eval", total=None, status="", visible=False)

    def report(event: Event) -> None:
        data = event.data
        line = resume_of(event)
        if line and not wants_json(args):
            progress.console.print(line, markup=False, highlight=False)
        if data.get("session_kind") == "eval":
            if event.kind == "started":
                done = data["total"] - data["todo"]
                progress.update(units, total=data["total"], completed=done, visible=True)
            elif event.kind == "progress":
                progress.update(units, completed=data["done"])
            elif event.kind == "finished":
                progress.update(units, visible=False)
            return
        if event.kind == "started":
            progress.update(rounds, total=data["max_rounds"], completed=max(0, data["round"] - 1))
        elif event.kind == "progress":
            progress.update(
                rounds,
                completed=max(0, data["round"] - 1),
                status=f"round {data['round']} · {data['stage']}",
            )
        elif event.kind in ("message", "gate_verdict", "published", "rolled_back"):
            line = _event_line(event)
            if line and not wants_json(args):
                progress.console.print(line)

    options = EvolveOptions(
        skill=args.skill,
        bench=args.bench,
        rounds=args.rounds,
        proposer=args.proposer,
        auto_approve=args.auto_approve,
        seed=args.seed,
        jobs=args.jobs,
    )
    try:
        with progress:
            result = evolve(ws, options, reporter=report)
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


def resume_of(event: Event) -> str | None:
    """A resumed session, and every evaluation in it that picks up a run, says where it starts."""
    data = event.data
    if event.kind != "started" or not data.get("resumed"):
        return None
    if data.get("session_kind") == "eval":
        return "  " + resume_line(data)
    if "round" not in data:
        return None
    return f"resuming {event.session_id} at round {data['round']}, stage {data['stage']}"


def _event_line(event: Event) -> str | None:
    data = event.data
    if event.kind == "gate_verdict":
        colour = {"pass": "green", "fail": "red"}.get(data["verdict"], "yellow")
        reasons = "; ".join(data.get("reasons", []))
        return f"  [{colour}]{data['gate']} {data['verdict']}[/]: {reasons}"
    if event.kind == "published":
        return f"[green]published {data['skill']} {data['version']}[/] ({data['candidate']})"
    if event.kind == "rolled_back":
        return f"[yellow]rolled back {data['skill']} {data['frm']} → {data['to']}[/]: {data['why']}"
    text = data.get("text")
    return None if text is None or text.startswith("evaluating") else str(text)


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _print_result(result: EvolveResult) -> None:
    console = Console()
    rounds = Table(title=f"evolution {result.session_id}", title_justify="left")
    for column in ("round", "parent", "outcome", "gates", "stagnation", "reason"):
        rounds.add_column(column)
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
    console.print(f"summary: {result.summary_path}")
    hint = next_step(result)
    if hint:
        console.print(hint, markup=False, highlight=False)


def next_step(result: EvolveResult) -> str | None:
    """Every stop names the command that moves the work on."""
    if result.stop_reason == "awaiting_approval":
        queued = next((r.candidate for r in reversed(result.rounds) if r.candidate), None)
        if queued is not None:
            return (
                f"next: {queued} awaits approval — skillsmith queue approve {queued} --why "
                f'"<your reason>" (or a in the workbench), then run this command again to go '
                "on from the new version"
            )
    return None
