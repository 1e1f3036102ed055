"""``skillsmith curate``: skill usage, overlap and staleness, with merge / archive proposals.

Usage is read from the evaluation runs' sessions and from any ``--transcripts`` given (files or
folders, e.g. ``~/.claude/projects/<project>``). Proposals go to the queue as candidates with
source ``curate`` that wait for a person; ``--no-propose`` only reports.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli import print_json, wants_json, workspace_of
from engine.loops.curation import CurateOptions, run


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "curate", parents=[common], help="skill usage, overlap and staleness; merge/archive"
    )
    p.add_argument(
        "--transcripts",
        nargs="+",
        default=[],
        metavar="PATH",
        help="more transcript files or folders (besides runs/*/sessions)",
    )
    p.add_argument("--no-propose", action="store_true", help="report only; queue nothing")
    p.set_defaults(func=_curate)


def _curate(args: argparse.Namespace) -> int:
    ws = workspace_of(args)
    options = CurateOptions(transcripts=tuple(args.transcripts), propose=not args.no_propose)
    report = run(ws, options)
    if wants_json(args):
        print_json(report.to_dict())
        return 0
    print(f"{report.transcripts} transcript(s) read, {len(report.unreadable)} unreadable")
    print(f"{'skill':<28} {'loaded':>6} {'used':>5} {'patched':>7} {'idle d':>7}  state")
    for u in report.usage:
        state = "pinned" if u.pinned else ("stale" if u.stale else "active")
        idle = "-" if u.idle_days is None else f"{u.idle_days:g}"
        print(f"{u.skill:<28} {u.loaded:>6} {u.used:>5} {u.patched:>7} {idle:>7}  {state}")
    for o in report.overlaps:
        print(f"overlap {o.a} ~ {o.b}: {o.score:.0%} ({o.shared_steps} shared steps)")
    for p in report.proposals:
        status = p.skipped or ", ".join(f"{c['id']} {c['status']}" for c in p.candidates)
        print(f"{p.kind} {p.skill}: {p.reason} -> {status or 'not proposed (--no-propose)'}")
    for problem in report.unreadable:
        print(f"unreadable: {problem}")
    return 0
