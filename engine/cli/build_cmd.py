"""``skillsmith build BENCH``: design a benchmark — pilot → freeze → Formal Baseline.

The session's decisions (draft, predictions, pilots, calibration, freeze) are printed as they
happen on stderr, with a bar for each pilot's evaluation; the summary or ``--json`` goes to
stdout. :class:`SessionProgress` is shared with ``optimize-agent``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from engine.cli import print_json, wants_json, workspace_of
from engine.events import Cancelled, Event


class SessionProgress:
    """Renders a Builder / Optimizer session: its events as lines, evaluations as a bar."""

    def __init__(self, quiet: bool) -> None:
        self.console = Console(stderr=True)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=self.console,
            transient=True,
            disable=not self.console.is_terminal,
        )
        self.quiet = quiet
        self.task: TaskID | None = None

    def __enter__(self) -> SessionProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def line(self, text: str) -> None:
        if not self.quiet:
            self.progress.console.print(text, highlight=False)

    def __call__(self, event: Event) -> None:
        data = event.data
        if data.get("session_kind") == "eval":
            self._evaluation(event.kind, data)
            return
        text = describe(event.kind, data)
        if text:
            self.line(text)

    def _evaluation(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "started":
            if self.task is not None:
                self.progress.remove_task(self.task)
            done = data["total"] - data["todo"]
            self.task = self.progress.add_task(
                f"run {data['run_id']}", total=data["total"], completed=done
            )
        elif kind == "progress" and self.task is not None:
            self.progress.update(self.task, completed=data["done"])


def describe(kind: str, data: dict[str, Any]) -> str | None:
    """One line for the events a person wants to follow (None for the rest)."""
    stage = data.get("stage")
    if kind == "message" and stage == "draft":
        return f"draft: {len(data['drafted'])} cases drafted, {len(data['kept'])} kept"
    if kind == "message" and stage == "pilot":
        score = "invalid" if data["score"] is None else f"{data['score']:.2f}"
        return (
            f"pilot {data['iteration']}: score {score} (predicted {data['predicted']:.2f}, "
            f"mean error {data['mean_abs_error']}), flagged {len(data['flagged'])}, "
            f"run {data['run_id']}"
        )
    if kind == "message" and stage == "calibration":
        return f"calibration: {len(data['changes'])} changes"
    if kind == "message" and stage in ("repair", "judge_rerequest", "proposal_rerequest"):
        return f"{stage}: {data.get('problem') or data.get('units') or data.get('cases')}"
    if kind == "message" and stage == "formal_baseline":
        return f"Formal Baseline: {data['score']:.2f} (run {data['run_id']})"
    if kind == "candidate_queued":
        return f"round {data['round']}: {data['target']}: {data['summary']}"
    if kind in ("published", "rolled_back"):
        score = "—" if data["score"] is None else f"{data['score']:.2f}"
        return (
            f"  {data['decision']}: {score} vs {data['reference_score']:.2f}, hypothesis "
            f"held: {data['hypothesis_held']}, version v{data['version']}"
        )
    if kind == "message" and stage == "resumed":
        return f"resuming at attempt {data['attempt']} ({data['at']})"
    return None


def interrupted(what: str, how: str) -> int:
    sys.stderr.write(f"skillsmith: {what} interrupted; finished units are kept; {how}\n")
    return 130


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
    p.set_defaults(func=_build)


def _build(args: argparse.Namespace) -> int:
    from engine.builder import build_benchmark

    ws = workspace_of(args)
    pick = [c.strip() for group in args.pick for c in group.split(",") if c.strip()]
    try:
        with SessionProgress(quiet=wants_json(args)) as progress:
            result = build_benchmark(
                ws,
                args.bench,
                goal=args.goal,
                source=args.source,
                pick=pick,
                cases=args.cases,
                pilot_iterations=args.pilot_iterations,
                target_score=args.target_score,
                jobs=args.jobs,
                reporter=progress,
            )
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
