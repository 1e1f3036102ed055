"""The report as Markdown for a pull request comment: versions, verdicts, fates, the diff.

A comment has no room for transcripts; it names the cases and says where the full report is.
GitHub renders at most 65,536 characters of a comment, so the diff is cut well before that.
"""

from __future__ import annotations

from engine.share.report import FATE_ORDER, Redactor, Report

DIFF_KEEP = 20_000


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def render_markdown(report: Report, redact: Redactor) -> str:
    lines = [f"### {report.title}", "", report.headline, ""]
    lines += [
        "| version | pass rate | F1 | tokens | cost (USD) | agent time |",
        "|---|---|---|---|---|---|",
    ]
    for side in report.sides:
        m = side.metrics
        cost = "—" if m.cost_usd is None else f"{m.cost_usd:.4f}"
        lines.append(
            f"| {_cell(side.label)} | {_pct(m.pass_rate)} | {_pct(m.f1)} | "
            f"{m.tokens_input + m.tokens_output:,} | {cost} | {m.duration_ms / 1000:.1f} s |"
        )
    if report.verdicts:
        lines += ["", "| decision | outcome | verdict | what it means |", "|---|---|---|---|"]
        lines += [
            f"| {_cell(v.name)} | **{_cell(v.outcome)}** | `{_cell(v.line)}` | {_cell(v.meaning)} |"
            for v in report.verdicts
        ]
    lines.append("")
    for fate in FATE_ORDER:
        ids = [c.case_id for c in report.cases if c.fate == fate]
        if ids and fate != "still_passing":
            lines.append(f"- **{fate.replace('_', ' ')}** ({len(ids)}): {', '.join(ids)}")
    passing = report.fate_counts.get("still_passing", 0) + report.fate_counts.get("pass", 0)
    lines.append(f"- passing: {passing} cases")
    if report.diff:
        diff = report.diff
        cut = len(diff) > DIFF_KEEP
        diff = diff[:DIFF_KEEP]
        lines += ["", "<details><summary>diff</summary>", "", "```diff", diff.rstrip("\n"), "```"]
        if cut:
            lines.append(f"(diff cut at {DIFF_KEEP:,} characters)")
        lines.append("</details>")
    if report.kind == "runs":
        runs = ", ".join(f"`{r}`" for r in report.ref.split())
        lines += ["", f"_Transcripts: `skillsmith report RUN` writes the HTML report of {runs}._"]
    else:
        lines += ["", f"_Transcripts: `skillsmith report {report.ref}` writes the HTML report._"]
    return redact("\n".join(lines) + "\n")
