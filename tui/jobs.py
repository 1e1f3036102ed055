"""Long engine jobs (evaluate, evolve, optimize) run off the UI thread with a progress bar.

A job is an engine function called with a Reporter and a CancelToken. It runs in a thread
worker; its events come back as messages (``post_message`` is thread-safe), so the UI never
waits on it. Cancelling (``c``, or quitting) sets the token: the engine checks it between units
of work and raises ``Cancelled``, which is how a quit stops a job promptly and leaves every
finished unit on disk. Any other exception is caught here and shown in an error dialog, so a
crashing job never takes the workbench down with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Label, ProgressBar

from tui.activity import Kind, Link

# The event types are imported when a job's first event is shown: the workbench's first frame
# has no job, and the event machinery (with its id generator) is not worth loading before it.
if TYPE_CHECKING:
    from engine.core.events import AnyLoopEvent, Event

JobFunction = Callable[..., "str | JobOutcome"]
"""``fn(reporter, cancel) -> summary`` (see :class:`Job`)."""


@dataclass(frozen=True)
class JobOutcome:
    """How a job ended, beyond its one line: what it links to, and the gates of a round that
    was rejected (shown in the Gates pane, since no candidate carries them)."""

    summary: str
    kind: Kind = "result"
    link: Link | None = None
    gates: list[dict[str, Any]] | None = None
    gates_title: str = ""


@dataclass(frozen=True)
class Job:
    """What to run: ``run(reporter=…, cancel=…)`` returns the line (or the outcome) shown when
    it finishes."""

    title: str
    run: JobFunction


def status_of(event: AnyLoopEvent) -> str:
    """A short status for the bar: the step, unit or decision the event names."""
    from engine.core.events import (
        CandidateQueued,
        Failed,
        Finished,
        ItemFinished,
        Progress,
        Stage,
        VerdictReached,
    )

    if isinstance(event, Progress):
        return event.label or f"{event.done}/{event.total}"
    if isinstance(event, ItemFinished):
        return f"{event.item} {event.status}"
    if isinstance(event, Stage | VerdictReached | CandidateQueued):
        return event.text.splitlines()[0] if event.text else event.__class__.__name__.lower()
    if isinstance(event, Finished):
        return event.headline
    if isinstance(event, Failed):
        return event.message
    return "started"


class JobEvent(Message):
    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class JobEnded(Message):
    """The job finished, was cancelled, or failed (``error`` set; ``crashed`` if unexpected)."""

    def __init__(
        self,
        title: str,
        summary: str,
        *,
        cancelled: bool = False,
        error: str | None = None,
        crashed: bool = False,
        outcome: JobOutcome | None = None,
    ) -> None:
        super().__init__()
        self.title = title
        self.summary = summary
        self.outcome = outcome or JobOutcome(summary, "warning" if cancelled else "result")
        self.cancelled = cancelled
        self.error = error
        self.crashed = crashed


def clock(seconds: float) -> str:
    """``m:ss`` (``h:mm:ss`` past an hour), as the job bar shows elapsed time and ETA."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass
class Counter:
    """The units the bar counts: the loop's own when it reports them, else the evaluation it
    is running (a loop such as evolve reports its own steps only between evaluations, so its bar
    would sit still for minutes). ``eta`` once a tenth of the units are done, from their rate."""

    total: int
    done: int
    started: float
    first: int  # units already done when counting began (a resumed run)

    def eta(self, now: float) -> float | None:
        counted = self.done - self.first
        if self.total <= 0 or counted <= 0 or counted * 10 < self.total - self.first:
            return None
        return (now - self.started) * (self.total - self.done) / counted


class JobBar(Horizontal):
    """One line above the footer while a job runs: title, bar, then the phase, the units done of
    planned, the elapsed time and the ETA, and how to cancel."""

    DEFAULT_CSS = """
    JobBar { height: 1; display: none; background: $panel; padding: 0 1; }
    JobBar.-running { display: block; }
    JobBar > #job-title { width: auto; max-width: 40; text-style: bold; margin-right: 1; }
    JobBar > ProgressBar { width: auto; margin-right: 1; }
    JobBar > #job-status { width: 1fr; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield Label("", id="job-title", markup=False)
        yield ProgressBar(total=None, show_eta=False, id="job-progress")
        yield Label("", id="job-status", markup=False)

    @property
    def running(self) -> bool:
        return self.has_class("-running")

    def start(self, title: str) -> None:
        self._session: str | None = None  # the job's own session: the first that starts
        self._own_counter: Counter | None = None  # the loop's own units, when it reports them
        self._inner: Counter | None = None  # the evaluation it is running
        self._phase = "starting…"
        self._began = time.monotonic()
        self.query_one("#job-title", Label).update(title)
        self.query_one(ProgressBar).update(total=None, progress=0)
        self.query_one("#job-status", Label).update("starting… (c cancels)")
        self.add_class("-running")

    def show_event(self, event: Event) -> None:
        """The bar counts the units of the evaluation the job is running, else the loop's own
        units; the status names the phase, the units, the elapsed time and the ETA."""
        from engine.core.events import Finished, ItemFinished, Progress, Started, read_event

        typed = read_event(event)
        now = time.monotonic()
        if self._session is None and isinstance(typed, Started):
            self._session = typed.session_id
        own = typed.session_id == self._session
        if isinstance(typed, Started) and typed.total:
            done = typed.done or 0
            if own:
                self._own_counter = Counter(typed.total, done, now, done)
            else:
                self._inner = Counter(typed.total, done, now, done)
        elif isinstance(typed, Progress) and typed.total > 0:
            known = self._own_counter if own else self._inner
            if known is None or known.total != typed.total:
                # counted from the job's start: these units were done since then
                known = Counter(typed.total, typed.done, self._began, 0)
                if own:
                    self._own_counter = known
                else:
                    self._inner = known
            known.done = typed.done
            if own and typed.label:
                self._phase = typed.label
        elif not own and isinstance(typed, Finished):
            self._inner = None  # the evaluation is over: the loop's own count shows again
        elif own and not isinstance(typed, ItemFinished) and not getattr(typed, "source", ""):
            self._phase = status_of(typed)  # a library's raw log line is no phase
        shown = self.counter
        if shown is not None:
            self.query_one(ProgressBar).update(total=shown.total, progress=shown.done)
        self.query_one("#job-status", Label).update(self.status(now))

    @property
    def counter(self) -> Counter | None:
        return self._inner or self._own_counter

    def status(self, now: float) -> str:
        """``phase · done/total units · elapsed · ETA`` and how to cancel."""
        parts = [self._phase]
        counter = self.counter
        if counter is not None:
            parts.append(f"{counter.done}/{counter.total}")
        parts.append(clock(now - self._began))
        eta = None if counter is None else counter.eta(now)
        if eta is not None:
            parts.append(f"ETA {clock(eta)}")
        return " · ".join(parts) + " (c cancels)"

    def cancelling(self) -> None:
        self.query_one("#job-status", Label).update("cancelling… finished units are kept")

    def stop(self) -> None:
        self.remove_class("-running")
