"""``skillsmith check``: the CI guard — a paired verdict per skill changed since a git ref.

Exit 0: no skill is worse with confidence (an inconclusive one warns). Exit 1: some skill is
worse, or — with ``--strict`` — some verdict is inconclusive. The Markdown report (one section
per judged skill) is written for a pull request comment or a job summary.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engine.cli import executor_options, print_json, wants_json, workspace_of
from engine.cli.progress import LoopProgress
from engine.core.benchmark import pick_benchmark
from engine.core.errors import check_counts
from engine.core.fsutil import atomic_write_text
from engine.core.workspace import Workspace
from engine.share.check import CheckOptions, SkillCheck, changed_skills, run_check
from engine.share.write import REPORTS


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "check",
        parents=[common],
        help="CI: evaluate each skill changed since a git ref, paired; exit 1 when one is worse",
    )
    p.add_argument("--bench", metavar="B", help="benchmark id (default: the only one)")
    p.add_argument(
        "--against",
        metavar="REF",
        help="git ref to compare with (default: the merge base of HEAD with main)",
    )
    p.add_argument(
        "--cases",
        action="append",
        default=[],
        metavar="IDS",
        help="only these case ids (a,b,…; default: the benchmark's smoke cases, else all)",
    )
    p.add_argument(
        "--budget-runs",
        type=int,
        metavar="N",
        help="at most N agent runs per skill, both versions together; what the first look "
        "leaves is spent on reruns of the cases that can still change the verdict",
    )
    p.add_argument(
        "--runs", type=int, help="runs per case of the first look (default: the benchmark's)"
    )
    p.add_argument("--seed", type=int, help="the evaluations' seed (default: a fresh one)")
    p.add_argument("-j", "--jobs", type=int, help="parallel agent runs (default: CPU count)")
    p.add_argument("--strict", action="store_true", help="an inconclusive verdict fails too")
    p.add_argument(
        "--report",
        metavar="FILE",
        help="where the Markdown report goes (default: reports/check.md in the workspace)",
    )
    executor_options(p)
    p.set_defaults(func=_check)


def _markdown(ws: Workspace, ref: str, results: list[SkillCheck]) -> str:
    from engine.share.markdown import render_markdown
    from engine.share.report import redactor, report_of
    from engine.share.subject import runs_subject, sha256_text

    redact = redactor(ws)
    parts = [f"## skillsmith check against {ref[:12]}", ""]
    parts += [f"- {r.line()}" for r in results] or ["- no skill changed; nothing evaluated"]
    for result in results:
        if result.runs and result.texts:
            old, new = (sha256_text(t.encode("utf-8")) for t in result.texts)
            labels = {old: f"at {ref[:12]}", new: "in the working tree"}
            title = f"{result.skill}: {result.status}"
            subject = runs_subject(ws, list(result.runs), title, labels)
            parts += ["", render_markdown(report_of(ws, subject), redact)]
    return redact("\n".join(parts) + "\n")


def _check(args: argparse.Namespace) -> int:
    ws = workspace_of(args)
    check_counts(("--budget-runs", args.budget_runs), ("--runs", args.runs), ("-j", args.jobs))
    options = CheckOptions(
        bench=pick_benchmark(ws, args.bench, "--bench"),
        against=args.against,
        cases=tuple(c.strip() for group in args.cases for c in group.split(",") if c.strip()),
        budget_runs=args.budget_runs,
        runs=args.runs,
        seed=args.seed,
        jobs=args.jobs,
    )
    changes = changed_skills(ws, options.against)
    progress = LoopProgress("check", quiet=wants_json(args))
    with progress:
        results = run_check(ws, options, changes, reporter=progress)
    path = Path(args.report) if args.report else ws.root / REPORTS / "check.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, _markdown(ws, changes.ref, results))
    worse = [r.skill for r in results if r.status == "worse"]
    unsure = [r.skill for r in results if r.status == "inconclusive"]
    if wants_json(args):
        print_json(
            {
                "against": changes.ref,
                "skills": [r.to_dict() for r in results],
                "report": str(path),
                "worse": worse,
                "inconclusive": unsure,
            }
        )
    else:
        if not results:
            sys.stdout.write(f"no skill changed since {changes.ref[:12]}; nothing evaluated\n")
        for result in results:
            sys.stdout.write(result.line() + "\n")
        sys.stdout.write(f"report: {path}\n")
    if worse:
        sys.stderr.write(f"skillsmith: error: worse with confidence: {', '.join(worse)}\n")
        return 1
    if unsure:
        level = "error" if args.strict else "warning"
        sys.stderr.write(
            f"skillsmith: {level}: inconclusive (more runs, or --budget-runs, would tell): "
            f"{', '.join(unsure)}\n"
        )
        return 1 if args.strict else 0
    return 0
