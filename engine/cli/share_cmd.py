"""``skillsmith report REF`` and ``skillsmith export RUN --format skill-creator DIR``.

``report`` writes one file a reviewer opens (HTML) or pastes (Markdown); ``export`` writes a run
in skill-creator's layout. Both only read the workspace; see engine.share.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engine.cli import print_json, wants_json, workspace_if_any
from engine.core.runs import run_folder
from engine.share.report import redactor
from engine.share.write import write_report


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "report",
        parents=[common],
        help="one self-contained HTML (or Markdown) report of a run, session or experiment",
    )
    p.add_argument("ref", metavar="RUN|SESSION|EXPERIMENT", help="an id, or a run folder")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="where to write it; '-' for stdout (default: reports/<ref>.html in the workspace)",
    )
    p.add_argument(
        "--format", choices=("html", "md"), default="html", help="html, or md for a PR comment"
    )
    p.set_defaults(func=_report)
    e = sub.add_parser(
        "export", parents=[common], help="a run in skill-creator's eval-N/with_skill/run-K layout"
    )
    e.add_argument("run", metavar="RUN", help="run id under runs/, or a run folder")
    e.add_argument(
        "--format",
        choices=("skill-creator",),
        required=True,
        help="skill-creator: the layout its aggregate_benchmark.py and review page read",
    )
    e.add_argument("dest", metavar="DIR", type=Path, help="a new (or empty) folder")
    e.set_defaults(func=_export)


def _report(args: argparse.Namespace) -> int:
    ws = workspace_if_any(args)
    path = write_report(ws, args.ref, args.format, args.output)
    if path is None:
        return 0
    if wants_json(args):
        print_json({"path": str(path), "format": args.format})
    else:
        sys.stdout.write(f"{path}\n")
    return 0


def _export(args: argparse.Namespace) -> int:
    from engine.share.skill_creator import export_skill_creator

    ws = workspace_if_any(args)
    run_dir = run_folder(args.run, ws.runs_dir if ws is not None else None)
    result = export_skill_creator(ws, run_dir, args.dest, redactor(ws))
    if wants_json(args):
        print_json(result.to_dict())
        return 0
    for warning in result.warnings:
        sys.stderr.write(f"skillsmith: warning: {warning}\n")
    sys.stdout.write(
        f"{result.path}: {result.evals} evals, {result.runs} runs in skill-creator's layout "
        f"(evals/evals.json, eval-N/with_skill|without_skill/run-K/)\n"
    )
    return 0
