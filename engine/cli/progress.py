"""Progress on stderr for the long-running commands (eval, optimize, build, optimize-agent).

One place decides how a command's bars look and how an evaluation's events move them, so every
command shows a run the same way. Bars are drawn only on a terminal; stdout stays free for the
results table or ``--json``. No ``register`` here: the CLI discovery skips this module.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from engine.core.events import Event


def progress_bar(console: Console, *, transient: bool = True, status: bool = True) -> Progress:
    """Bars of ``description  ━━━  done/total``; with ``status`` also the task's ``status`` field
    (every task must then be added with ``status=…``) and the elapsed time."""
    columns: list[ProgressColumn] = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
    ]
    if status:
        columns += [TextColumn("{task.fields[status]}"), TimeElapsedColumn()]
    return Progress(*columns, console=console, transient=transient, disable=not console.is_terminal)


def unit_counts(event: Event) -> dict[str, Any]:
    """An evaluation event's unit counts as bar fields: ``started`` gives the total and counts the
    units a resumed run already has as completed, ``progress`` the units done since; any other
    event nothing."""
    data = event.data
    if event.kind == "started":
        return {"total": data["total"], "completed": data["total"] - data["todo"]}
    if event.kind == "progress":
        return {"completed": data["done"]}
    return {}


class SessionProgress:
    """Renders a Builder / Optimizer session: its events as lines, evaluations as a bar."""

    def __init__(self, quiet: bool) -> None:
        self.console = Console(stderr=True)
        self.progress = progress_bar(self.console, status=False)
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
            self._evaluation(event)
            return
        text = describe(event.kind, data)
        if text:
            self.line(text)

    def _evaluation(self, event: Event) -> None:
        counts = unit_counts(event)
        if event.kind == "started":
            if self.task is not None:
                self.progress.remove_task(self.task)
            self.task = self.progress.add_task(f"run {event.data['run_id']}", **counts)
        elif self.task is not None:
            self.progress.update(self.task, **counts)


def describe(kind: str, data: dict[str, Any]) -> str | None:
    """One line for the events a person wants to follow (None for the rest)."""
    stage = data.get("stage")
    if kind == "message" and stage == "draft":
        return draft_line(len(data["drafted"]), len(data["kept"]))
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


def draft_line(drafted: int, earlier: int) -> str:
    """``kept`` counts the cases an earlier draft left, not how many new ones survived."""
    new = f"{drafted} new case{'' if drafted == 1 else 's'} written"
    if not earlier:
        return f"draft: {new}"
    kept = f"{earlier} case{'' if earlier == 1 else 's'} from an earlier draft kept"
    return f"draft: {kept}" + (f", {new}" if drafted else ", nothing new drafted")


def interrupted(what: str, how: str) -> int:
    sys.stderr.write(f"skillsmith: {what} interrupted; finished units are kept; {how}\n")
    return 130


def resume_line(started: dict[str, Any]) -> str:
    """An evaluation that picks up an interrupted run says so, and how far it already got."""
    done = int(started["total"]) - int(started["todo"])
    return f"resuming run {started['run_id']} at {done}/{started['total']}"
