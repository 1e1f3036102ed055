"""The online review loop as one session: files given and/or a watched folder, reviewed in the
bounded workers, until the files are done, the watch time is up, or the run is cancelled.

This is the set-up the CLI used to do itself (session log, worker pool, folder watch, timer);
living here, the workbench runs the same loop. Each finished review job is logged as an
``item_finished`` event with its readable account, so every face shows it as it happens.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from engine.core.errors import UsageError
from engine.core.events import CancelToken, Reporter, null_reporter
from engine.core.sessions import loop_session
from engine.core.workspace import Workspace
from engine.evaluation.gates.candidate import OutcomeStatus, TaskOutcome
from engine.loops.online.pipeline import OnlineLearner, ReviewResult
from engine.loops.online.watch import session_files, watch_folder
from engine.loops.online.worker import BoundedWorkers

STATUSES: tuple[str, ...] = get_args(OutcomeStatus)


@dataclass(frozen=True)
class ReviewOptions:
    sessions: tuple[str, ...] = ()  # transcript files or folders, reviewed once
    watch: str | None = None  # a folder whose transcripts are reviewed as they appear or grow
    for_s: float | None = None  # stop watching after this many seconds (default: until cancel)
    poll: bool = False  # poll the watched folder (network mounts deliver no events)
    outcome: OutcomeStatus | None = None  # the sessions' task outcome, if known
    score: float | None = None  # the sessions' task score in [0, 1], if known


@dataclass
class ReviewRun:
    session_id: str
    session_log: str
    reviewer: str
    results: list[ReviewResult] = field(default_factory=list)
    workers: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> list[ReviewResult]:
        return [r for r in self.results if r.status == "error"]

    @property
    def headline(self) -> str:
        candidates = [c for r in self.results for c in r.candidates]
        return review_summary(len(self.results), candidates, self.workers, len(self.failed))

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_log": self.session_log,
            "reviewer": self.reviewer,
            "results": [r.to_dict() for r in self.results],
            "workers": self.workers,
        }


def render_result(result: ReviewResult) -> str:
    """One review job's account: the segment, what the reconciler did, what became of each
    candidate."""
    lines = f"lines {result.first_line}-{result.last_line} " if result.last_line else ""
    out = [f"{result.source}: {result.status} {lines}— {result.reason}"]
    for event in result.events:
        target = f" → {event['target']}" if event.get("target") else ""
        out.append(f"  reconciler {event['kind']}: {event.get('original', '')}{target}")
    for cand in result.candidates:
        out.append(
            f"  {cand.get('id') or '(not queued)'} {cand['operation']} {cand['skill']}: "
            f"{cand['status']} ({cand.get('reason') or 'no reason'})"
        )
    return "\n".join(out)


def review_summary(
    jobs: int, candidates: list[dict[str, Any]], stats: dict[str, Any], failed: int
) -> str:
    """The review's one-line account: candidates by what became of them (a rejected one is not
    "queued"), and inline runs only when there were any, with their cause."""

    def count(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    def status(c: dict[str, Any]) -> str | None:
        return c.get("status") if c.get("id") else None

    waiting = sum(1 for c in candidates if status(c) == "pending_approval")
    to_measure = sum(1 for c in candidates if status(c) == "pending_eval")
    rejected = sum(1 for c in candidates if c.get("status") == "rejected")
    parts = [f"{count(waiting, 'candidate')} queued for approval"]
    if to_measure:  # a failed task's change is measured first: `queue eval` (E), then approval
        parts.append(f"{to_measure} waiting for an evaluation (skillsmith queue eval ID)")
    if rejected:
        parts.append(f"{rejected} rejected by the gates")
    if failed:
        parts.append(f"{failed} failed")
    inline = int(stats.get("inline") or 0)
    if inline:
        parts.append(f"{inline} ran in this process (the worker queue was full or stopping)")
    return f"{count(jobs, 'review job')}: {', '.join(parts)}"


def run(
    ws: Workspace,
    options: ReviewOptions,
    *,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> ReviewRun:
    """Review the given sessions, then (with ``watch``) every transcript that appears or grows
    in the folder until ``for_s`` passes or ``cancel`` is set. A failed job is a result with
    status ``error``: its segment stays unreviewed and is offered again next time."""
    if not options.sessions and not options.watch:
        raise UsageError("review: name at least one SESSION file or folder, or --watch DIR")
    cfg = ws.load_config()
    outcome = (
        TaskOutcome(status=options.outcome, score=options.score)
        if options.outcome is not None or options.score is not None
        else None
    )
    files = [path for source in options.sessions for path in session_files(Path(source))]
    watch_dir = Path(options.watch) if options.watch else None
    if watch_dir is not None and not watch_dir.is_dir():
        raise UsageError(f"--watch {watch_dir}: not a folder")
    learner = OnlineLearner(ws)
    with loop_session(
        ws,
        "review",
        reporter=reporter,
        reviewer=learner.reviewer.name,
        sessions=[str(f) for f in files],
        watch=str(watch_dir) if watch_dir else None,
    ) as log:
        learner.log = log
        review = ReviewRun(log.session_id, str(log.path), learner.reviewer.name)
        lock = threading.Lock()

        def done(job: Path, result: ReviewResult | None, error: BaseException | None) -> None:
            if result is None:
                result = ReviewResult(str(job), "error", f"{type(error).__name__}: {error}")
            with lock:
                review.results.append(result)
                log.emit(
                    "item_finished",
                    item=result.source,
                    status=result.status,
                    text=render_result(result),
                )
                if watch_dir is None:  # the given transcripts are the plan; a watch has none
                    total = len(files)
                    log.emit("progress", done=len(review.results), total=total, label="reviewing")

        workers: BoundedWorkers[Path, ReviewResult] = BoundedWorkers(
            lambda path: learner.review(path, outcome),
            workers=cfg.online.workers,
            queue_size=cfg.online.queue_size,
            on_done=done,
        )
        with workers:
            for path in files:
                if cancel is not None:
                    cancel.check()
                workers.submit(path)
            if watch_dir is not None:
                _watch(watch_dir, workers.submit, options, cancel)
        if cancel is not None:
            cancel.check()
        review.workers = workers.stats.to_dict()
        log.emit(
            "finished", stats=review.workers, errors=len(review.failed), headline=review.headline
        )
    return review


def _watch(folder: Path, submit: Any, options: ReviewOptions, cancel: CancelToken | None) -> None:
    stop = threading.Event()
    if cancel is not None:
        cancel.on_cancel(stop.set)
    timer = threading.Timer(options.for_s, stop.set) if options.for_s else None
    if timer is not None:
        timer.start()
    try:
        watch_folder(folder, submit, stop=stop, poll=options.poll or None)
    finally:
        if timer is not None:
            timer.cancel()


__all__ = [
    "STATUSES",
    "ReviewOptions",
    "ReviewRun",
    "render_result",
    "review_summary",
    "run",
]
