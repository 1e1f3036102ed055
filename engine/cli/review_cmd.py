"""``skillsmith review SESSION… [--watch DIR]``: online learning from finished sessions.

Each session file (or every ``*.jsonl`` in a folder) is reviewed from where its review cursor
stands; with ``--watch`` the command keeps running and reviews every transcript that appears or
grows in the folder until interrupted (or for ``--for`` seconds). Jobs run in the bounded workers
of ``online.workers`` / ``online.queue_size``. Exit status 1 when any review failed (its segment
stays unreviewed and is offered again next time).
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path
from typing import Any

from engine.cli import print_json, wants_json, workspace_of
from engine.core.errors import UsageError
from engine.core.events import SessionLog
from engine.evaluation.gates.candidate import TaskOutcome
from engine.loops.online import (
    BoundedWorkers,
    OnlineLearner,
    ReviewResult,
    session_files,
    watch_folder,
)

STATUSES = ("success", "partial", "fail", "agent_error")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "review", parents=[common], help="online learning: review new lines of finished sessions"
    )
    p.add_argument("sessions", nargs="*", metavar="SESSION", help="transcript file or folder")
    p.add_argument("--watch", metavar="DIR", help="keep reviewing transcripts in DIR as they grow")
    p.add_argument("--for", dest="for_s", type=float, metavar="SECONDS", help="stop watching after")
    p.add_argument("--poll", action="store_true", help="poll the watched folder (network mounts)")
    p.add_argument("--outcome", choices=STATUSES, help="the sessions' task outcome, if known")
    p.add_argument("--score", type=float, help="the sessions' task score in [0, 1], if known")
    p.set_defaults(func=_review)


def _render(result: ReviewResult) -> str:
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


def _review(args: argparse.Namespace) -> int:
    if not args.sessions and not args.watch:
        raise UsageError("review: name at least one SESSION file or folder, or --watch DIR")
    ws = workspace_of(args)
    cfg = ws.load_config()
    outcome = (
        TaskOutcome(status=args.outcome, score=args.score)
        if args.outcome is not None or args.score is not None
        else None
    )
    files = [path for source in args.sessions for path in session_files(Path(source))]
    watch_dir = Path(args.watch) if args.watch else None
    if watch_dir is not None and not watch_dir.is_dir():
        raise UsageError(f"--watch {watch_dir}: not a folder")
    log = SessionLog(ws.sessions_dir, "review")
    learner = OnlineLearner(ws, log=log)
    log.emit(
        "started",
        reviewer=learner.reviewer.name,
        sessions=[str(f) for f in files],
        watch=str(watch_dir) if watch_dir else None,
    )
    results: list[ReviewResult] = []
    lock = threading.Lock()
    quiet = wants_json(args)

    def done(job: Path, result: ReviewResult | None, error: BaseException | None) -> None:
        if result is None:
            result = ReviewResult(str(job), "error", f"{type(error).__name__}: {error}")
        with lock:
            results.append(result)
            if not quiet:
                print(_render(result), flush=True)

    workers: BoundedWorkers[Path, ReviewResult] = BoundedWorkers(
        lambda path: learner.review(path, outcome),
        workers=cfg.online.workers,
        queue_size=cfg.online.queue_size,
        on_done=done,
    )
    with workers:
        for path in files:
            workers.submit(path)
        if watch_dir is not None:
            stop = threading.Event()
            timer = threading.Timer(args.for_s, stop.set) if args.for_s else None
            if timer is not None:
                timer.start()
            try:
                watch_folder(watch_dir, workers.submit, stop=stop, poll=args.poll or None)
            finally:
                if timer is not None:
                    timer.cancel()
    stats = workers.stats.to_dict()
    failed = [r for r in results if r.status == "error"]
    log.emit("finished", stats=stats, errors=len(failed))
    if quiet:
        print_json(
            {
                "session_log": str(log.path),
                "reviewer": learner.reviewer.name,
                "results": [r.to_dict() for r in results],
                "workers": stats,
            }
        )
    else:
        print(
            review_line(
                len(results),
                [c for r in results for c in r.candidates],
                stats,
                len(failed),
                str(log.path),
            )
        )
    return 1 if failed else 0


def review_line(
    jobs: int, candidates: list[dict[str, Any]], stats: dict[str, Any], failed: int, log: str
) -> str:
    """The review's one-line account: candidates by what became of them (a rejected one is not
    "queued"), and inline runs only when there were any, with their cause."""

    def count(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    waiting = sum(1 for c in candidates if c.get("id") and c.get("status") != "rejected")
    rejected = sum(1 for c in candidates if c.get("status") == "rejected")
    parts = [f"{count(waiting, 'candidate')} queued for approval"]
    if rejected:
        parts.append(f"{rejected} rejected by the gates")
    if failed:
        parts.append(f"{failed} failed")
    inline = int(stats.get("inline") or 0)
    if inline:
        parts.append(f"{inline} ran in this process (the worker queue was full or stopping)")
    return f"{count(jobs, 'review job')}: {', '.join(parts)}; log {log}"
