"""The CLI's one renderer of loop events, on stderr, for every long-running command.

Every loop reports the same typed events (:func:`engine.core.events.read_event`), so one class
draws them all: a bar for the loop's own progress, a bar for an evaluation running inside it, and
a line for each stage, verdict and queued candidate. Bars are drawn only on a terminal; stdout
stays free for the results table or ``--json``. No ``register`` here: the CLI discovery skips
this module.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from engine.core.events import (
    AnyLoopEvent,
    CandidateQueued,
    Event,
    Failed,
    ItemFinished,
    Stage,
    Started,
    VerdictReached,
    read_event,
)
from engine.core.events import Progress as Step

if TYPE_CHECKING:
    from engine.evaluation.costplan import JobPlan

_MARK = {"pass": "[green]pass[/]", "fail": "[red]fail[/]"}
_VERDICT = {"pass": "green", "fail": "red", "published": "green", "rolled_back": "yellow"}


class LoopProgress:
    """Renders one loop's session (``title`` names its bar); a Reporter.

    The first session that starts is the loop's own; events of any other session are an
    evaluation it runs, shown on a second bar that each new evaluation restarts. ``quiet``
    (``--json``) keeps the bars but prints no lines. ``items`` receives the account of each
    finished item that has one (a review job) — stdout where that account is the command's
    output.
    """

    def __init__(
        self,
        title: str,
        *,
        quiet: bool = False,
        items: TextIO | None = None,
        verbose: bool = False,
    ) -> None:
        self.console = Console(stderr=True)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            disable=not self.console.is_terminal,
        )
        self.title = title
        self.quiet = quiet
        self.verbose = verbose  # -v: a library's raw log lines too (always in the session log)
        self.items = items
        self.session_id: str | None = None
        self.started: dict[str, Any] = {}  # the loop's own ``started`` fields
        self._own: TaskID | None = None
        self._inner: TaskID | None = None
        # the job's plan, shown once the job has started: a refusal before that stays one line
        self.plan_line: str | None = None

    def __enter__(self) -> LoopProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def line(self, text: str) -> None:
        if not self.quiet:
            self.progress.console.print(text, highlight=False)

    def __call__(self, event: Event) -> None:
        typed = read_event(event)
        if self.session_id is None and isinstance(typed, Started):
            if self.plan_line is not None and not self.quiet:  # one line, however wide
                self.console.print(self.plan_line, highlight=False, markup=False, soft_wrap=True)
            self.plan_line = None
            self.session_id = typed.session_id
            self.started = typed.fields
            self._own = self.progress.add_task(
                self.title, total=typed.total, completed=typed.done or 0, status=""
            )
            where = resume_line(typed)
            if where and (typed.total is not None or not self.quiet):  # never a silent resume
                self.progress.console.print(where, markup=False, highlight=False)
            return
        if typed.session_id != self.session_id:
            self._evaluation(typed)
            return
        if isinstance(typed, Step) and self._own is not None:
            self.progress.update(
                self._own, total=typed.total, completed=typed.done, status=escape(typed.label)
            )
        elif isinstance(typed, ItemFinished) and typed.text:
            if self.items is not None:
                print(typed.text, file=self.items, flush=True)
        elif isinstance(typed, ItemFinished) and self._own is not None:
            mark = _MARK.get(typed.status, "[yellow]invalid[/]")
            self.progress.update(self._own, status=f"{escape(typed.item)} {mark}")
        elif isinstance(typed, Stage) and self._shown(typed):
            self.line(escape(typed.text))
        elif isinstance(typed, VerdictReached):
            colour = _VERDICT.get(typed.verdict, "yellow")
            self.line(f"  [{colour}]{escape(typed.text)}[/]")
        elif isinstance(typed, CandidateQueued):
            self.line(escape(typed.text))
        elif isinstance(typed, Failed):
            self.line(f"[red]{escape(typed.message)}[/]")

    def _shown(self, stage: Stage) -> bool:
        """A stage's line is printed when it says something: not a bare step name, not the
        evaluation the second bar already shows, and a library's log only with ``-v``."""
        if not stage.text or stage.text == stage.name or stage.text.startswith("evaluating"):
            return False
        return self.verbose or not stage.source

    def _evaluation(self, typed: Any) -> None:
        if isinstance(typed, Started):
            where = resume_line(typed)
            if where:
                self.line(f"  {escape(where)}")
            if self._inner is not None:
                self.progress.remove_task(self._inner)
            self._inner = self.progress.add_task(
                f"run {typed.session_id}", total=typed.total, completed=typed.done or 0, status=""
            )
        elif isinstance(typed, Step) and self._inner is not None:
            self.progress.update(self._inner, total=typed.total, completed=typed.done)
        elif isinstance(typed, Stage) and typed.name == "pre-flight":
            self.line(f"  {escape(typed.text)}")  # an inner evaluation's agent and room


def resume_line(typed: AnyLoopEvent) -> str | None:
    """A resumed session, and every evaluation that picks up a run, says where it starts."""
    if not isinstance(typed, Started) or not typed.fields.get("resumed"):
        return None
    if typed.total is not None:
        return f"resuming run {typed.session_id} at {typed.done}/{typed.total}"
    if "round" in typed.fields:
        where = f"round {typed.fields['round']}, stage {typed.fields.get('stage')}"
        return f"resuming {typed.session_id} at {where}"
    return None


def show_plan(
    args: argparse.Namespace, plan: JobPlan, progress: LoopProgress | None = None
) -> bool:
    """Print the job's plan (to stdout for ``--dry-run``, else to stderr: through ``progress``
    once the job has started, or now); True when it was a dry run and nothing is to run."""
    dry = bool(getattr(args, "dry_run", False))
    if dry and getattr(args, "json", False):
        print(json.dumps({"dry_run": True, **plan.to_dict()}, indent=2))
    elif dry:
        print(plan.line())
        print("dry run: no agent was started")
    elif progress is not None:
        progress.plan_line = None if getattr(args, "json", False) else plan.line()
    elif not getattr(args, "json", False):
        sys.stderr.write(plan.line() + "\n")
    return dry


RESUME_WITH_MORE_BUDGET = (
    "next: the session is kept where it stopped; run this command again with a larger "
    "--budget-runs / --budget-usd / --budget-tokens to resume it"
)


def spent_line(spent: dict[str, Any], budget: dict[str, Any] | None) -> str:
    """``402/400 agent runs, 612,344 tokens, $0.00``: what a loop's JSON result says it spent."""
    limits = budget or {}
    runs = f"{spent['runs']}" + (f"/{limits['runs']}" if limits.get("runs") is not None else "")
    return f"{runs} agent runs, {spent['tokens']:,} tokens, ${spent['usd']:.2f}"


def interrupted(what: str, how: str) -> int:
    sys.stderr.write(f"skillsmith: {what} interrupted; finished units are kept; {how}\n")
    return 130
