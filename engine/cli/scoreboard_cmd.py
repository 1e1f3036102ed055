"""``skillsmith scoreboard [BENCH]``: every evaluation of a benchmark, one row each.

The workbench's Scoreboard pane as a terminal table: when, which skill versions, score, pass
rate and tokens (read from each run's results.jsonl, as the pane does), cost and the run it links
to. Tokens are shortened (2.69M) in the table and given whole in ``--json``.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from engine.cli import print_json, wants_json, workspace_of
from engine.core.benchmark import pick_benchmark
from engine.core.errors import SkillsmithError, check_counts
from engine.core.scoreboard import RecordHead, read_heads
from engine.core.workspace import Workspace
from engine.views.rows import RunFigures, compact_count, record_versions, run_figures


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "scoreboard", parents=[common], help="every evaluation of a benchmark, one row each"
    )
    p.add_argument("bench", metavar="BENCH", nargs="?", help="benchmark id (default: the only one)")
    p.add_argument("--last", type=int, metavar="N", help="only the newest N evaluations")
    p.set_defaults(func=_scoreboard)


def _figures(ws: Workspace, record: RecordHead) -> RunFigures | None:
    if not record.run_id:
        return None
    try:
        return run_figures(ws, record.run_id, record.variant or "skill")
    except SkillsmithError:
        return None


def _scoreboard(args: argparse.Namespace) -> int:
    ws = workspace_of(args)
    bench = pick_benchmark(ws, args.bench)
    check_counts(("--last", args.last))
    records = read_heads(ws.benchmarks_dir / bench)
    first = 0 if args.last is None else max(0, len(records) - args.last)
    rows = [(i + 1, r, _figures(ws, r)) for i, r in enumerate(records) if i >= first]
    if wants_json(args):
        print_json(
            [
                {
                    "n": n,
                    "timestamp": r.timestamp,
                    "versions": dict(r.skills),
                    "variant": r.variant,
                    "score": r.score,
                    "pass_rate": None if f is None else f.pass_rate,
                    "tokens": None if f is None else f.tokens,
                    "cost": r.cost,
                    "run_id": r.run_id,
                }
                for n, r, f in rows
            ]
        )
        return 0
    console = Console()
    if not rows:
        console.print(f"{bench}: no evaluation yet; run: skillsmith eval {bench}", markup=False)
        return 0
    count = f"{len(records)} evaluation{'s' if len(records) != 1 else ''}"
    table = Table(title=f"{bench} · {count}", title_justify="left")
    for name in ("#", "when", "versions", "score", "pass rate", "tokens", "cost $", "run"):
        table.add_column(
            name, overflow="fold", justify="right" if name in ("#", "score") else "left"
        )
    for n, r, f in rows:
        rate = "–" if f is None or f.pass_rate is None else f"{f.pass_rate:.2%}"
        table.add_row(
            str(n),
            r.timestamp,
            Text(record_versions(r)),
            f"{r.score:.2f}",
            rate,
            "–" if f is None else compact_count(f.tokens),
            "–" if r.cost is None else f"{r.cost:.4f}",
            Text(r.run_id or "–"),
        )
    console.print(table)
    return 0
