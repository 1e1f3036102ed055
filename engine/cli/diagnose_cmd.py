"""``skillsmith diagnose RUN``: why did the cases of a run fail, and can the labels be trusted?"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from engine.cli import print_json, wants_json, workspace_if_any
from engine.core.config import Config
from engine.core.printable import printable
from engine.evaluation.diagnosis import Diagnosis, Registry
from engine.evaluation.diagnosis.run import benchmark_of, diagnose_run, load_run
from engine.evaluation.gt_audit import GtAudit, audit_runs


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "diagnose",
        parents=[common],
        help="outcome and rule-hit counts, root causes, GT suspects (--verbose: per unit)",
    )
    p.add_argument("run", help="run id under runs/ or a path to a run folder")
    p.add_argument("--skill", help="skill whose steps are cross-checked (default: the only one)")
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="RUN",
        help="another run of the benchmark (e.g. another skill version) for the GT audit",
    )
    p.add_argument(
        "--split",
        action="append",
        metavar="NAME",
        help="attribute only rows of this split (repeatable; e.g. selection)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="also print one table row per unit")
    p.add_argument("--traces", action="store_true", help="print every trace summary in full")
    p.set_defaults(func=_diagnose)


def _diagnose(args: argparse.Namespace) -> int:
    ws = workspace_if_any(args)
    config = ws.load_config() if ws is not None else Config()
    registry = Registry.for_folder(ws.root / config.diagnosis.checkers_dir if ws else None)
    diagnosed = []
    for ref in [args.run, *args.also]:
        run = load_run(ref, ws)
        bench = benchmark_of(run, ws)
        diagnosis = diagnose_run(
            run,
            config=config.diagnosis,
            registry=registry,
            min_share=config.limits.root_cause_min_share,
            skill=args.skill,
            bench=bench,
            splits=args.split,
        )
        diagnosed.append((run, diagnosis, bench))
    primary_run, diagnosis, bench = diagnosed[0]
    gt = audit_runs(
        [(r, d) for r, d, _ in diagnosed], bench=bench, config=config.diagnosis.gt_audit
    )
    if wants_json(args):
        print_json(
            {
                "run_id": primary_run.run_id,
                "run_dir": str(primary_run.folder),
                "benchmark": primary_run.benchmark_id,
                "checkers": registry.ids(),
                "diagnosis": diagnosis.to_dict(),
                "gt_audit": gt.to_dict(),
            }
        )
        return 0
    console = Console(highlight=False)
    _render(console, primary_run.run_id, diagnosis, gt, verbose=args.verbose, traces=args.traces)
    return 0


def _render(
    console: Console,
    run_id: str,
    diagnosis: Diagnosis,
    gt: GtAudit,
    *,
    verbose: bool,
    traces: bool,
) -> None:
    console.print(
        f"[bold]diagnosis of {escape(run_id)}[/]: {len(diagnosis.cases)} rows, "
        f"{len(diagnosis.failing_case_ids)} failing cases"
    )
    if verbose:
        _render_rows(console, diagnosis)
    else:
        console.print(summary_line(diagnosis), markup=False, soft_wrap=True)
    _render_causes(console, diagnosis)
    _render_gt(console, gt, verbose=verbose)
    if traces:
        for case in diagnosis.cases:
            if case.summary is not None:
                console.print(printable(case.summary.render_text()), markup=False, soft_wrap=True)


def summary_line(diagnosis: Diagnosis) -> str:
    """A run of hundreds of units reads as its counts; the table per unit is ``--verbose``."""
    outcomes = Counter(case.outcome for case in diagnosis.cases)
    hits = Counter(rule for case in diagnosis.cases for rule in case.rule_ids)
    shown = ", ".join(f"{name} {n}" for name, n in sorted(outcomes.items()))
    rules = ", ".join(f"{rule} {n}" for rule, n in hits.most_common()) or "none"
    return f"outcomes: {shown or 'none'}; rule hits: {rules} (one row per unit: diagnose --verbose)"


def _render_rows(console: Console, diagnosis: Diagnosis) -> None:
    cases = Table(title="traces", title_justify="left")
    for column in ("row", "outcome", "calls", "errors", "claimed", "evidenced", "ratio", "hits"):
        cases.add_column(column, overflow="fold")
    for case in diagnosis.cases:
        s = case.summary
        if s is None:
            note = Text(printable(case.note or ""))
            cases.add_row(case.key, case.outcome, "-", "-", "-", "-", "-", note)
            continue
        cases.add_row(
            case.key,
            case.outcome,
            str(s.stats.tool_calls_total),
            f"{s.stats.errors} ({s.stats.benign_errors} benign)",
            ",".join(map(str, s.progress.claimed)) or "-",
            ",".join(map(str, s.progress.evidenced)) or "-",
            f"{s.compression_ratio:.0f}:1",
            ", ".join(case.rule_ids) or "-",
        )
    console.print(cases)


def _render_causes(console: Console, diagnosis: Diagnosis) -> None:
    if diagnosis.root_causes:
        causes = Table(
            title=f"root causes (a patch needs ≥ {diagnosis.min_share:.0%} of failures)",
            title_justify="left",
        )
        for column in ("root cause", "cases", "share", "patch", "case ids"):
            causes.add_column(column, overflow="fold")
        n = len(diagnosis.failing_case_ids)
        for rc in diagnosis.root_causes:
            causes.add_row(
                Text(rc.id),
                f"{rc.count}/{n}",
                f"{rc.share:.1%}",
                "[green]yes[/]" if rc.worth_patch else "no",
                Text(", ".join(rc.case_ids)),
            )
        console.print(causes)
        for rc in diagnosis.root_causes:
            explanation = escape(printable(rc.explanation))
            console.print(f"[bold]{escape(rc.id)}[/]: {explanation}", soft_wrap=True)
            for line in rc.evidence:  # quotes the agent's calls and claims
                console.print(f"    {printable(line)}", markup=False, soft_wrap=True)
    else:
        console.print("no root cause: no failing case shows a flow anomaly")
    if diagnosis.undiagnosed_case_ids:
        undiagnosed = ", ".join(diagnosis.undiagnosed_case_ids)
        console.print(f"undiagnosed failures: {undiagnosed}", markup=False, soft_wrap=True)
    if diagnosis.low_priority:
        flawed = "; ".join(f"{c} ({', '.join(r)})" for c, r in diagnosis.low_priority.items())
        console.print(f"passing but flawed (low priority): {flawed}", markup=False, soft_wrap=True)
    verdict = "evolution triggered" if diagnosis.triggers_evolution else "no evolution"
    console.print(f"[bold]{verdict}[/] (direction: {diagnosis.direction or '-'})")


def _render_gt(console: Console, gt: GtAudit, *, verbose: bool) -> None:
    signalled = [s for s in gt.suspicions if s.score > 0]
    shown = signalled if verbose else [s for s in signalled if s.flagged]
    if shown:
        table = Table(title=f"ground-truth suspicion (flag ≥ {gt.threshold})", title_justify="left")
        for column in ("case", "score", "flagged", "reasons"):
            table.add_column(column, overflow="fold")
        for s in shown:
            table.add_row(
                Text(s.case_id),
                f"{s.score:.2f}",
                "[yellow]GT suspect[/]" if s.flagged else "-",
                Text(printable("; ".join(s.reasons)) or "-"),
            )
        console.print(table)
    weaker = len(signalled) - len(shown)
    if weaker:
        console.print(f"{weaker} failing cases show a weaker sign, below the flag (--verbose)")
    quiet = len(gt.suspicions) - len(signalled)
    if quiet:
        console.print(f"{quiet} failing cases show no sign of a wrong label")
    for problem in gt.data_quality:
        if problem["problem"] == "contradictory_labels_in_type":
            total = sum(problem["counts"].values())
            for label in problem["outliers"]:
                ids = ", ".join(problem["labels"][label])
                console.print(
                    f"data quality: only {problem['counts'][label]} of the {total} "
                    f"{problem['case_type']!r} cases are labelled {label!r} ({ids}); "
                    "check those labels",
                    markup=False,
                    soft_wrap=True,
                )
        else:
            a, b = problem["case_ids"]
            console.print(
                f"data quality: {a} and {b} are near-identical "
                f"({problem['similarity']:.2f}) but labelled {problem['labels']}",
                markup=False,
                soft_wrap=True,
            )
