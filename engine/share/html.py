"""The report as one self-contained HTML page: styles inline, the chart inline SVG, no script.

A reviewer opens the file from a mail or a CI artifact, often offline, so the page loads nothing:
no font, no stylesheet, no script. Every text goes through the report's redactor, then HTML
escaping — in that order, so a secret is masked before escaping could hide it from the mask.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable

from engine.share.report import (
    FATE_MEANING,
    ChartPoint,
    Redactor,
    Report,
    SideFigures,
    Unit,
)

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;
background:#f6f7f9}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d5d9e0}
h3{font-size:14px;margin:14px 0 4px}
.headline{color:#3b4252;margin:0 0 12px}
table{border-collapse:collapse;width:100%;background:#fff;margin:6px 0}
th,td{border:1px solid #d5d9e0;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eceff4}
td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#fff;border:1px solid #d5d9e0;padding:8px;overflow-x:auto;white-space:pre-wrap;
word-break:break-word;margin:4px 0;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
.diff .add{background:#e3f6e5;color:#17622a;display:block}
.diff .del{background:#fbe4e4;color:#8a1c1c;display:block}
.diff .hunk{color:#5e6ad2;display:block}
.better,.pass,.fixed{color:#17622a;font-weight:600}
.worse,.fail,.newly_broken,.still_failing{color:#a11b1b;font-weight:600}
.inconclusive,.held,.flaky,.unmeasured{color:#8a5a00;font-weight:600}
.unit{background:#fff;border:1px solid #d5d9e0;border-radius:4px;padding:8px 12px;margin:10px 0}
.unit h3{margin-top:0}
.muted{color:#6b7280}
svg{background:#fff;border:1px solid #d5d9e0}
a{color:#2f54c9}
"""


def _e(redact: Redactor, value: object) -> str:
    return html.escape(redact(str(value)))


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _side_rows(redact: Redactor, sides: list[SideFigures]) -> str:
    head = "".join(f"<th>{_e(redact, s.label)}</th>" for s in sides)
    figures: list[tuple[str, Callable[[SideFigures], str]]] = [
        ("pass rate", lambda s: _pct(s.metrics.pass_rate)),
        ("F1", lambda s: _pct(s.metrics.f1)),
        ("units (valid / invalid)", lambda s: f"{s.metrics.valid} / {s.metrics.invalid}"),
        (
            "tokens (in / out)",
            lambda s: f"{s.metrics.tokens_input:,} / {s.metrics.tokens_output:,}",
        ),
        (
            "cost (USD)",
            lambda s: "—" if s.metrics.cost_usd is None else f"{s.metrics.cost_usd:.4f}",
        ),
        ("agent time (s)", lambda s: f"{s.metrics.duration_ms / 1000:.1f}"),
        ("runs", lambda s: ", ".join(s.runs)),
    ]
    body = "".join(
        f"<tr><th>{name}</th>"
        + "".join(f'<td class="num">{_e(redact, show(s))}</td>' for s in sides)
        + "</tr>"
        for name, show in figures
    )
    return f'<table id="versions"><tr><th></th>{head}</tr>{body}</table>'


def _diff(redact: Redactor, text: str) -> str:
    if not text:
        return '<p class="muted" id="diff">No change between the versions compared.</p>'
    lines = []
    for line in redact(text).splitlines():
        cls = (
            "hunk"
            if line.startswith("@@")
            else "add"
            if line.startswith("+") and not line.startswith("+++")
            else "del"
            if line.startswith("-") and not line.startswith("---")
            else ""
        )
        escaped = html.escape(line) or " "
        lines.append(f'<span class="{cls}">{escaped}</span>' if cls else escaped + "\n")
    return f'<pre class="diff" id="diff">{"".join(lines)}</pre>'


def chart_svg(
    points: list[ChartPoint], redact: Redactor, width: int = 720, height: int = 220
) -> str:
    """Scores 0–100 over the evaluations, a line with a dot each; this report's runs filled."""
    if not points:
        return '<p class="muted">No evaluation of this benchmark is on record.</p>'
    left, right, top, bottom = 40, 12, 12, 28
    span_x = max(1, len(points) - 1)

    def x(i: int) -> float:
        return left + (width - left - right) * (i / span_x if len(points) > 1 else 0.5)

    def y(score: float) -> float:
        return top + (height - top - bottom) * (1 - max(0.0, min(100.0, score)) / 100)

    grid = "".join(
        f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
        f'stroke="#e5e7eb"/><text x="{left - 6}" y="{y(v) + 4:.1f}" font-size="10" '
        f'text-anchor="end" fill="#6b7280">{v}</text>'
        for v in (0, 25, 50, 75, 100)
    )
    path = " ".join(f"{x(i):.1f},{y(p.score):.1f}" for i, p in enumerate(points))
    dots = "".join(
        f'<circle cx="{x(i):.1f}" cy="{y(p.score):.1f}" r="{5 if p.ours else 3.5}" '
        f'fill="{"#2f54c9" if p.ours else "#fff"}" stroke="#2f54c9">'
        f"<title>{_e(redact, p.label)}: {p.score:.1f}</title></circle>"
        for i, p in enumerate(points)
    )
    label = (
        f'<text x="{left}" y="{height - 8}" font-size="10" fill="#6b7280">'
        f"{len(points)} evaluations, oldest first · filled: this report's runs</text>"
    )
    return (
        f'<svg id="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="scoreboard">{grid}'
        f'<polyline points="{path}" fill="none" stroke="#2f54c9" stroke-width="1.5"/>'
        f"{dots}{label}</svg>"
    )


def _checks(redact: Redactor, unit: Unit) -> str:
    if not unit.checks:
        return ""
    items = "".join(
        f'<li><span class="{"pass" if c.get("passed") else "fail"}">'
        f"{'passed' if c.get('passed') else 'failed'}</span> {_e(redact, c.get('text'))}"
        f' <span class="muted">— {_e(redact, c.get("evidence") or "")}</span></li>'
        for c in unit.checks
    )
    return f"<ul>{items}</ul>"


def _outputs(redact: Redactor, unit: Unit) -> str:
    if not unit.outputs:
        return ""
    files = "".join(
        f"<h3>output {_e(redact, o.path)}</h3><pre>{_e(redact, o.text)}</pre>" for o in unit.outputs
    )
    return f'<div class="outputs">{files}</div>'


def _unit(redact: Redactor, unit: Unit) -> str:
    cost = "—" if unit.cost_usd is None else f"${unit.cost_usd:.4f}"
    calls = "\n".join(unit.calls) or "(no tool call)"
    body = (
        f'<p class="muted">{_e(redact, unit.note)}</p>'
        if unit.note
        else (
            f"<h3>task</h3><pre>{_e(redact, unit.prompt)}</pre>"
            f"<h3>tool calls ({len(unit.calls)} lines, {unit.errors} failed)</h3>"
            f"<pre>{_e(redact, calls)}</pre>"
            f"<h3>final answer</h3><pre>{_e(redact, unit.final)}</pre>"
        )
    )
    return (
        f'<section class="unit transcript" id="{html.escape(unit.anchor)}">'
        f"<h3>{_e(redact, unit.case_id)} · run {unit.run_index} · {_e(redact, unit.side)} · "
        f'<span class="{html.escape(unit.pass_fail)}">{html.escape(unit.pass_fail)}</span> '
        f"({_e(redact, unit.verdict)})</h3>"
        f'<p class="muted">run {_e(redact, unit.run_id)} · {unit.tokens:,} tokens · {cost} · '
        f'{unit.duration_ms / 1000:.1f} s · <a href="#cases">back to the cases</a></p>'
        f"{_checks(redact, unit)}{body}{_outputs(redact, unit)}</section>"
    )


def _case_rows(redact: Redactor, report: Report, compared: bool) -> Iterable[str]:
    for case in report.cases:
        links = " ".join(
            f'<a href="#{html.escape(a)}">{_e(redact, text)}</a>' for text, a in case.anchors
        )
        before = f'<td class="num">{html.escape(case.before)}</td>' if compared else ""
        yield (
            f'<tr><td class="{html.escape(case.fate)}">{html.escape(case.fate.replace("_", " "))}'
            f"</td><td>{_e(redact, case.case_id)}</td>{before}"
            f'<td class="num">{html.escape(case.after)}</td><td>{links}</td></tr>'
        )


def render_html(report: Report, redact: Redactor) -> str:
    compared = len(report.sides) > 1
    verdicts = "".join(
        f'<tr><td>{_e(redact, v.name)}</td><td class="{html.escape(v.outcome)}">'
        f"{_e(redact, v.outcome)}</td><td><code>{_e(redact, v.line)}</code></td>"
        f"<td>{_e(redact, v.meaning)}</td></tr>"
        for v in report.verdicts
    )
    verdict_table = (
        '<table id="verdicts"><tr><th>decision</th><th>outcome</th><th>verdict line</th>'
        f"<th>what it means</th></tr>{verdicts}</table>"
        if verdicts
        else '<p class="muted" id="verdicts">One version only: no paired verdict.</p>'
    )
    counts = ", ".join(f"{n} {fate.replace('_', ' ')}" for fate, n in report.fate_counts.items())
    legend = "".join(
        f"<li><b>{fate.replace('_', ' ')}</b>: {FATE_MEANING.get(fate, '')}</li>"
        for fate in report.fate_counts
    )
    before_head = "<th>before</th>" if compared else ""
    cases = (
        f'<table id="cases"><tr><th>fate</th><th>case</th>{before_head}'
        f"<th>{'after' if compared else 'passes'}</th><th>units</th></tr>"
        + "".join(_case_rows(redact, report, compared))
        + "</table>"
    )
    unlisted = (
        f'<p class="muted">{report.unlisted_units} more units are not shown (the report '
        f"keeps at most {len(report.units)}).</p>"
        if report.unlisted_units
        else ""
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_e(redact, report.title)}</title><style>{STYLE}</style></head><body><main>"
        f"<h1>{_e(redact, report.title)}</h1>"
        f'<p class="headline">{_e(redact, report.headline)}</p>'
        f'<p class="muted">benchmark {_e(redact, report.benchmark or "—")} · '
        f"{_e(redact, report.wall_time)}</p>"
        f"<h2>Versions compared</h2>{_side_rows(redact, report.sides)}"
        f"<h2>Verdicts</h2>{verdict_table}"
        f"<h2>Diff</h2>{_diff(redact, report.diff)}"
        f"<h2>Scoreboard</h2>{chart_svg(report.chart, redact)}"
        f"<h2>Cases</h2><p>{html.escape(counts)}</p><ul>{legend}</ul>{cases}"
        f"<h2>Transcripts of the cases that changed or fail</h2>"
        + "".join(_unit(redact, u) for u in report.units)
        + f"{unlisted}</main></body></html>\n"
    )
