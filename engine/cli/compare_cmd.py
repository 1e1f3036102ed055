"""``skillsmith compare RUN_A RUN_B``: which cases an evaluation fixed, broke or left flaky.

Total scores hide regressions ("修复"和"回归"经常一起发生); this view puts the per-case fates
first and the metric deltas next to them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from engine.cli import print_json, wants_json, workspace_if_any
from engine.core.benchmark import load_benchmark
from engine.core.errors import SkillsmithError
from engine.core.results import read_results
from engine.core.runs import run_folder
from engine.core.workspace import Workspace
from engine.evaluation.metrics import Comparison, Metrics, compare

FATES = ("fixed", "newly_broken", "still_failing", "flaky", "unmeasured")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "compare", parents=[common], help="per-case fixed / newly broken / flaky, metric deltas"
    )
    p.add_argument("run_a", metavar="RUN_A", help="the earlier run (id under runs/ or a folder)")
    p.add_argument("run_b", metavar="RUN_B", help="the later run (id under runs/ or a folder)")
    p.add_argument(
        "--variant",
        choices=("skill", "baseline"),
        default="skill",
        help="which variant's rows to compare (default: skill)",
    )
    p.set_defaults(func=_compare)


def _rows(run_dir: Path, variant: str) -> list[dict[str, Any]]:
    """The latest row of each unit: a rerun of an invalid unit supersedes the earlier row."""
    latest: dict[tuple[str, int, str], dict[str, Any]] = {}
    for row in read_results(run_dir / "results.jsonl"):
        latest[(row["case_id"], row["run_index"], row["variant"])] = row
    return [r for r in latest.values() if r["variant"] == variant]


def _positive_label(run_dirs: list[Path], ws: Workspace | None) -> str | None:
    """The benchmark's first label if the run's benchmark is in the workspace."""
    for run_dir in run_dirs:
        manifest_path = run_dir / "manifest.json"
        if not manifest_path.is_file() or ws is None:
            continue
        try:
            bench_id = json.loads(manifest_path.read_text(encoding="utf-8")).get("benchmark")
        except (json.JSONDecodeError, AttributeError):
            raise SkillsmithError(f"{manifest_path}: expected a JSON object") from None
        if isinstance(bench_id, str) and (ws.benchmarks_dir / bench_id).is_dir():
            return load_benchmark(ws.benchmarks_dir / bench_id, check=False).positive_label
    return None


def _compare(args: argparse.Namespace) -> int:
    ws = workspace_if_any(args)
    runs_dir = ws.runs_dir if ws is not None else None
    dirs = [run_folder(args.run_a, runs_dir), run_folder(args.run_b, runs_dir)]
    rows_a, rows_b = (_rows(d, args.variant) for d in dirs)
    result = compare(rows_a, rows_b, _positive_label(dirs, ws))
    from engine.evaluation.verdict import (
        compare_paired,  # scipy: loaded only by the commands that decide
    )

    verdict = compare_paired(rows_a, rows_b)
    if wants_json(args):
        print_json(
            {
                "run_a": str(dirs[0]),
                "run_b": str(dirs[1]),
                **result.to_dict(),
                "verdict": verdict.to_dict(),
            }
        )
    else:
        _print(result, dirs[0].name, dirs[1].name)
        Console().print(
            f"pass rate {dirs[1].name} vs {dirs[0].name}: {verdict.line()}",
            soft_wrap=True,
            markup=False,
        )
    return 0


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _spread(m: Metrics, name: str) -> str:
    spread = getattr(m, f"{name}_spread")
    value = getattr(m, name)
    if value is None:
        return "—"
    if spread is None or len(m.runs) < 2:
        return _pct(value)
    return f"{_pct(value)} ({spread.mean * 100:.1f}±{spread.stddev * 100:.1f})"


def _signed(value: float | None, shown: str | None = None) -> str:
    """A delta coloured by sign; percentages in points unless ``shown`` formats it."""
    if value is None:
        return "—"
    colour = "green" if value > 0 else "red" if value < 0 else "dim"
    return f"[{colour}]{shown or f'{value * 100:+.1f} pp'}[/]"


def _print(result: Comparison, name_a: str, name_b: str) -> None:
    console = Console()
    a, b, d = result.before, result.after, result.deltas
    figures = Table(title="Metrics", title_justify="left")
    for column in ("", name_a, name_b, "Δ"):
        figures.add_column(column, justify="left" if not column else "right")
    figures.add_row(
        "pass rate", _spread(a, "pass_rate"), _spread(b, "pass_rate"), _signed(d["pass_rate"])
    )
    if a.f1 is not None or b.f1 is not None:
        figures.add_row("precision", _pct(a.precision), _pct(b.precision), _signed(d["precision"]))
        figures.add_row("recall", _pct(a.recall), _pct(b.recall), _signed(d["recall"]))
        figures.add_row("F1", _spread(a, "f1"), _spread(b, "f1"), _signed(d["f1"]))
        figures.add_row(
            "TP/FP/TN/FN", f"{a.tp}/{a.fp}/{a.tn}/{a.fn}", f"{b.tp}/{b.fp}/{b.tn}/{b.fn}", ""
        )
    figures.add_row("mean score", _pct(a.mean_score), _pct(b.mean_score), _signed(d["mean_score"]))
    figures.add_row("valid/invalid", f"{a.valid}/{a.invalid}", f"{b.valid}/{b.invalid}", "")
    figures.add_row(
        "tokens",
        f"{a.tokens_input + a.tokens_output:,}",
        f"{b.tokens_input + b.tokens_output:,}",
        f"{d['tokens'] or 0:+,.0f}",
    )
    cost = [f"${m.cost_usd:.4f}" if m.cost_usd is not None else "—" for m in (a, b)]
    figures.add_row("cost", *cost, _signed(d["cost_usd"], f"{d['cost_usd'] or 0:+.4f} $"))
    figures.add_row("duration", f"{a.duration_ms / 1000:.1f}s", f"{b.duration_ms / 1000:.1f}s", "")
    console.print(figures)
    cases = Table(title="Cases that changed or stay broken", title_justify="left")
    for column in ("fate", "case", name_a, name_b):
        cases.add_column(column, overflow="fold")  # a case id is never cut to "xss-js-innerh…"
    styles = {"fixed": "green", "newly_broken": "bold red", "still_failing": "red"}
    for change in result.cases:
        if change.category == "still_passing":
            continue
        style = styles.get(change.category, "yellow")
        cases.add_row(
            f"[{style}]{change.category.replace('_', ' ')}[/]",
            change.case_id,
            change.before_passes,
            change.after_passes,
        )
    if cases.row_count:
        console.print(cases)
    counts = ", ".join(f"{len(getattr(result, f))} {f.replace('_', ' ')}" for f in FATES)
    console.print(f"{counts}, {len(result.still_passing)} still passing")
