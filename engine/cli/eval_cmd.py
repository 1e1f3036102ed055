"""``skillsmith eval BENCH``: run the Case × runs matrix and show what it measured.

Progress goes to stderr (a rich bar), the results table or ``--json`` to stdout, so the machine
output stays clean while a human still sees the run moving. Ctrl-C keeps every finished unit and
says how to resume.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from engine.cli import dry_run_option, executor_options, print_json, wants_json, workspace_of
from engine.cli.progress import LoopProgress, show_plan
from engine.core.errors import SkillsmithError, UsageError, check_counts
from engine.core.events import Cancelled
from engine.core.lint import model_invocation_notices
from engine.core.workspace import Workspace
from engine.evaluation.demo import demo_agent_notice
from engine.evaluation.evaluate import EvalOptions, plan, run
from engine.evaluation.metrics import Metrics, Spread
from engine.evaluation.runner import BASELINE, SEED_BITS, SKILL, RunResult

if TYPE_CHECKING:
    from engine.evaluation.verdict import Verdict


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("eval", parents=[common], help="run the Case × runs evaluation matrix")
    p.add_argument("bench", metavar="BENCH", help="benchmark id (a folder under benchmarks/)")
    p.add_argument("--runs", type=int, help="runs per case (default: the benchmark's)")
    p.add_argument("-j", "--jobs", type=int, help="parallel agent runs (default: CPU count)")
    p.add_argument(
        "--skill",
        action="append",
        default=[],
        metavar="NAME[@vK|@BRANCH/vK]",
        help="skill under test, optionally at a stored version, a branch's as exp1/v1 "
        "(repeatable; default: all)",
    )
    p.add_argument(
        "--baseline",
        metavar="none|vK|BRANCH/vK",
        help="also run without the skill, or at that stored version",
    )
    p.add_argument(
        "--cases", action="append", default=[], metavar="IDS", help="only these case ids (a,b,…)"
    )
    p.add_argument("--resume", metavar="RUN_ID", help="fill the missing units of this run")
    p.add_argument(
        "--seed",
        type=int,
        help="the evaluation's seed: the same seed repeats a run exactly (default: a fresh one)",
    )
    p.add_argument(
        "--judge",
        choices=("offline", "anthropic"),
        help="who grades llm_judge checks this time (default: models.judge in skillsmith.yaml); "
        "the offline judge grades only the decision standard's [evidence] rule",
    )
    p.add_argument(
        "--agents",
        metavar="KIND,KIND",
        help="run the benchmark on each of these agents (claude-code,codex,…) with one seed and "
        "report the paired difference between them per skill version",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="run again even when a finished run with the same --seed may stand in "
        "(docs/evaluate.md)",
    )
    dry_run_option(p)
    executor_options(p)
    p.set_defaults(func=_eval)


def _skill_texts(ws: Workspace, specs: list[str]) -> dict[str, str] | None:
    """``NAME`` → the active text, ``NAME@vK`` → that stored version's text, ``NAME@exp1/vK``
    → that version of branch exp1."""
    if not specs:
        return None
    from engine.core.store import SkillStore, split_version

    texts: dict[str, str] = {}
    for spec in specs:
        name, _, ref = spec.partition("@")
        if ref:
            branch, version = split_version(ref)
            texts[name] = SkillStore(ws, name, branch).read(version)
        elif ws.skill_path(name).is_file():
            texts[name] = ws.skill_path(name).read_bytes().decode("utf-8")
        else:
            have = ", ".join(ws.skill_names()) or "none"
            raise UsageError(f"--skill {spec}: no skill {name!r} in {ws.skills_dir} (have: {have})")
    return texts


def _eval(args: argparse.Namespace) -> int:
    ws = workspace_of(args)
    if args.baseline is not None and args.baseline != "none" and not args.baseline.startswith("v"):
        raise UsageError(f"--baseline {args.baseline}: expected 'none' or a version like v2")
    check_counts(("--runs", args.runs), ("-j", args.jobs))
    if args.seed is not None and not 0 <= args.seed < 2**SEED_BITS:
        raise UsageError(f"--seed: expected a number in [0, {2**SEED_BITS - 1}], got {args.seed}")
    if args.resume is not None and not (ws.runs_dir / args.resume / "manifest.json").is_file():
        raise SkillsmithError(f"--resume {args.resume}: no run folder {ws.runs_dir / args.resume}")
    case_ids = [c.strip() for group in args.cases for c in group.split(",") if c.strip()]
    options = EvalOptions(
        bench=args.bench,
        runs=args.runs,
        jobs=args.jobs,
        skills=_skill_texts(ws, args.skill),
        baseline=args.baseline,
        case_ids=tuple(case_ids),
        run_id=args.resume,
        seed=args.seed,
        judge=args.judge,
        fresh=args.fresh,
    )
    progress = LoopProgress(f"eval {args.bench}", quiet=wants_json(args))
    if args.resume is None and show_plan(args, plan(ws, options), progress):
        return 0
    notice = demo_agent_notice(ws, args.bench)
    if notice:
        sys.stderr.write(notice + "\n")
    for line in model_invocation_notices(ws):
        sys.stderr.write(line + "\n")
    try:
        with progress:
            if args.agents:
                return _compare_agents(ws, options, args, progress)
            result = run(ws, options, reporter=progress)
    except (KeyboardInterrupt, Cancelled):
        run_id = progress.session_id
        if run_id is None:
            raise
        sys.stderr.write(
            f"skillsmith: interrupted; finished units are kept in {ws.runs_dir / run_id}; "
            f"resume with: skillsmith eval {args.bench} --resume {run_id}\n"
        )
        return 130
    verdict = _baseline_verdict(result)
    if result.reused is not None:
        sys.stderr.write(f"skillsmith: {result.reused}; --fresh runs it again\n")
    if wants_json(args):
        print_json(
            {
                "run_id": result.run_id,
                "run_dir": str(result.run_dir),
                "seed": result.seed,
                "status": result.status,
                "launched": result.launched,
                "reused": result.reused,
                "metrics": result.metrics.to_dict(),
                "baseline_metrics": (
                    result.baseline_metrics.to_dict() if result.baseline_metrics else None
                ),
                "verdict": None if verdict is None else verdict.to_dict(),
            }
        )
    else:
        _print_results(result, args.bench)
        if verdict is not None:
            Console().print(
                f"skill vs baseline {args.baseline}: {verdict.line()}", soft_wrap=True, markup=False
            )
    if result.rows and not result.metrics.valid:
        # An evaluation that measured nothing must not look like a success to a script.
        reasons = result.metrics.invalid_reasons
        top = max(reasons, key=lambda r: reasons[r]) if reasons else "unknown"
        sys.stderr.write(f"skillsmith: error: run {result.run_id}: no valid unit ({top})\n")
        return 1
    return 0


def _compare_agents(
    ws: Workspace, options: EvalOptions, args: argparse.Namespace, progress: LoopProgress
) -> int:
    """``eval --agents a,b``: one evaluation per agent, then their paired differences."""
    from engine.evaluation.agent_compare import compare_agents, parse_kinds

    results, differences = compare_agents(ws, options, parse_kinds(args.agents), reporter=progress)
    if wants_json(args):
        print_json(
            {
                "runs": {
                    kind: {"run_id": r.run_id, "status": r.status, "metrics": r.metrics.to_dict()}
                    for kind, r in results.items()
                },
                "differences": [
                    {"before": d.before, "after": d.after, "variant": d.variant}
                    | {"verdict": d.verdict.to_dict()}
                    for d in differences
                ],
            }
        )
    else:
        for kind, result in results.items():
            Console().print(f"agent {kind}:", markup=False)
            _print_results(result, args.bench)
        for difference in differences:
            Console().print(difference.line(), soft_wrap=True, markup=False)
    measured = all(r.metrics.valid for r in results.values() if r.rows)
    return 0 if measured else 1


def _baseline_verdict(result: RunResult) -> Verdict | None:
    """The paired change from the baseline variant to the skill variant (same run, same cases)."""
    if result.baseline_metrics is None:
        return None
    from engine.evaluation.verdict import (
        compare_paired,  # scipy: loaded only when there is a comparison
    )

    before = [r for r in result.rows if r["variant"] == BASELINE]
    return compare_paired(before, [r for r in result.rows if r["variant"] == SKILL])


def _verdict_text(row: dict[str, Any]) -> Text:
    """One run's verdict, coloured; a failed run names the checks it failed. Built as Text:
    reasons and check texts quote the agent and the rubric ("[evidence]" is not markup)."""
    if row["pass_fail"] == "invalid":
        return Text(f"invalid: {row['invalid_reason']}", style="yellow")
    passed = row["pass_fail"] == "pass"
    text = Text(str(row["judge_verdict"] or "—"), style="green" if passed else "red")
    failed = [str(c.get("text")) for c in row.get("checks") or [] if not c.get("passed")]
    if failed and not passed:
        text.append(f" (failed: {'; '.join(failed)})")
    return text


def _cases_table(result: RunResult) -> Table:
    table = Table(title=f"run {result.run_id}", title_justify="left")
    for column in ("case", "split", "expected", "variant", "verdicts", "passed"):
        # ids wrap rather than end in "…": two cases must never read the same
        table.add_column(column, overflow="fold")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in result.rows:
        groups.setdefault((row["case_id"], row["variant"]), []).append(row)
    for (case_id, variant), rows in groups.items():
        ordered = sorted(rows, key=lambda r: r["run_index"])
        verdicts = Text(", ").join(_verdict_text(r) for r in ordered)
        valid = [r for r in rows if r["pass_fail"] != "invalid"]
        passed = sum(1 for r in valid if r["pass_fail"] == "pass")
        table.add_row(
            Text(case_id),
            rows[0].get("split") or "",
            Text(str(rows[0].get("ground_truth"))),
            variant,
            verdicts,
            f"{passed}/{len(valid)}",
        )
    return table


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _spread(spread: Spread | None) -> str:
    return "—" if spread is None else f"{spread.mean:.2f} ± {spread.stddev:.2f}"


def _metrics_table(result: RunResult) -> Table:
    table = Table(title="metrics", title_justify="left")
    table.add_column("figure")
    columns: list[tuple[str, Metrics]] = [(SKILL, result.metrics)]
    if result.baseline_metrics is not None:
        columns.append((BASELINE, result.baseline_metrics))
    for name, _ in columns:
        table.add_column(name, justify="right")
    figures: list[tuple[str, Callable[[Metrics], str]]] = [
        ("units (valid / invalid)", lambda m: f"{m.valid} / {m.invalid}"),
        ("pass rate", lambda m: _num(m.pass_rate)),
        ("pass rate mean ± sd over runs", lambda m: _spread(m.pass_rate_spread)),
        ("score mean ± sd over runs", lambda m: _spread(m.score_spread)),
        (
            "precision / recall / F1",
            lambda m: f"{_num(m.precision)} / {_num(m.recall)} / {_num(m.f1)}",
        ),
        ("F1 mean ± sd over runs", lambda m: _spread(m.f1_spread)),
        ("TP / FP / TN / FN", lambda m: f"{m.tp} / {m.fp} / {m.tn} / {m.fn}"),
        ("tokens in / out", lambda m: f"{m.tokens_input} / {m.tokens_output}"),
        ("cost (USD)", lambda m: _num(m.cost_usd, 4)),
        (
            "duration (s, total / mean)",
            lambda m: f"{m.duration_ms / 1000:.1f} / {_num((m.duration_mean_ms or 0) / 1000)}",
        ),
    ]
    for label, show in figures:
        table.add_row(label, *(show(m) for _, m in columns))
    return table


def _print_results(result: RunResult, bench: str) -> None:
    console = Console()
    console.print(_cases_table(result))
    console.print(_metrics_table(result))
    reasons = result.metrics.invalid_reasons
    if reasons:
        console.print("[yellow]invalid units (not counted as failures):")
        for reason, count in reasons.items():
            console.print(f"  {count} × {reason}", markup=False, highlight=False)
    console.print(
        f"run folder: {result.run_dir}  status: {result.status}  "
        f"seed: {result.seed} (repeat it with --seed {result.seed})"
    )
    if result.status == "incomplete":
        console.print(f"retry the invalid units: skillsmith eval {bench} --resume {result.run_id}")
