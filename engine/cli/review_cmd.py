"""``skillsmith review SESSION… [--watch DIR]``: online learning from finished sessions.

Each session file (or every ``*.jsonl`` in a folder) is reviewed from where its review cursor
stands; with ``--watch`` the command keeps running and reviews every transcript that appears or
grows in the folder until interrupted (or for ``--for`` seconds). Jobs run in the bounded workers
of ``online.workers`` / ``online.queue_size``. Exit status 1 when any review failed (its segment
stays unreviewed and is offered again next time).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from engine.cli import print_json, wants_json, workspace_of
from engine.cli.progress import LoopProgress
from engine.loops.online.session import STATUSES, ReviewOptions, review_summary, run


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


def _review(args: argparse.Namespace) -> int:
    ws = workspace_of(args)
    options = ReviewOptions(
        sessions=tuple(args.sessions),
        watch=args.watch,
        for_s=args.for_s,
        poll=args.poll,
        outcome=args.outcome,
        score=args.score,
    )
    quiet = wants_json(args)
    # each job's account goes to stdout as it finishes (the renderer's item lines)
    with LoopProgress("review", quiet=quiet, items=None if quiet else sys.stdout) as progress:
        review = run(ws, options, reporter=progress)
    if quiet:
        print_json(review.to_dict())
    else:
        print(f"{review.headline}; log {review.session_log}")
    return 1 if review.failed else 0


def review_line(
    jobs: int, candidates: list[dict[str, Any]], stats: dict[str, Any], failed: int, log: str
) -> str:
    """The review's one-line account, with where its log is."""
    return f"{review_summary(jobs, candidates, stats, failed)}; log {log}"
