"""The report of a run, session or experiment, as data both renderers (HTML, Markdown) read.

What a reviewer needs to check a decision without the workspace: the versions compared, every
verdict line with what it means, the diff, each case's fate (fixed, broken, flaky…) with the
transcript summary and kept outputs of every unit behind it, the benchmark's scoreboard, and
tokens, cost and time. Redaction is the renderers' last step on every text (``Redactor``), so a
vault value that reached a transcript never reaches the page.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.benchmark import load_benchmark
from engine.core.errors import FormatError, SkillsmithError
from engine.core.runs import OUTPUTS
from engine.core.scoreboard import read_heads
from engine.core.transcripts.content import clip
from engine.core.transcripts.trace import Trace, load_trace
from engine.core.vault import redact, secret_values
from engine.core.workspace import Workspace
from engine.evaluation.metrics import Metrics, case_status, compare, metrics
from engine.evaluation.traces.summary import skeleton
from engine.evaluation.verdict import Verdict, compare_paired
from engine.share.subject import Side, Subject, load_subject, version_diff

MAX_UNITS = 400  # units with a transcript section; a bigger report lists the rest by id
OUTPUT_KEEP = 4000  # characters of one kept output file shown
FINAL_KEEP = 2000  # characters of a unit's final answer shown
FATE_ORDER = ("newly_broken", "fixed", "flaky", "still_failing", "unmeasured", "still_passing")
FATE_MEANING = {
    "newly_broken": "passed every run before, fails every run after",
    "fixed": "failed every run before, passes every run after",
    "flaky": "runs disagree on at least one side: no settled outcome",
    "still_failing": "fails every run on both sides",
    "unmeasured": "no valid run on one side",
    "still_passing": "passes every run on both sides",
    "pass": "passes every run",
    "fail": "fails every run",
}

Redactor = Callable[[str], str]


@dataclass(frozen=True)
class VerdictLine:
    """One decision: what was compared, the line as every command prints it, and its meaning."""

    name: str
    outcome: str  # better | worse | inconclusive | a gate's pass / fail / held
    line: str
    meaning: str


@dataclass(frozen=True)
class OutputFile:
    path: str
    text: str  # the content shown (clipped), or what it is (a link, a binary file)


@dataclass(frozen=True)
class Unit:
    """One case run of one version, with its transcript summary and kept outputs."""

    anchor: str
    side: str
    run_id: str
    case_id: str
    run_index: int
    pass_fail: str
    verdict: str
    checks: list[dict[str, Any]]
    tokens: int
    cost_usd: float | None
    duration_ms: int
    prompt: str
    calls: list[str]
    errors: int
    final: str
    outputs: list[OutputFile]
    note: str = ""  # why the transcript is missing


@dataclass(frozen=True)
class CaseOutcome:
    case_id: str
    fate: str
    before: str  # passes / valid runs ("1/2"), "" for a one-version report
    after: str
    anchors: list[tuple[str, str]]  # (link text, anchor) of each unit of the case shown


@dataclass(frozen=True)
class SideFigures:
    label: str
    runs: list[str]
    metrics: Metrics


@dataclass(frozen=True)
class ChartPoint:
    n: int
    score: float  # 0–100
    label: str
    ours: bool  # an evaluation this report is about


@dataclass
class Report:
    title: str
    kind: str
    ref: str
    benchmark: str | None
    headline: str
    sides: list[SideFigures]
    verdicts: list[VerdictLine]
    diff: str
    cases: list[CaseOutcome]
    units: list[Unit]
    chart: list[ChartPoint]
    wall_time: str
    unlisted_units: int = 0
    fate_counts: dict[str, int] = field(default_factory=dict)


def meaning_of(verdict: Verdict) -> str:
    """What a verdict line says, in words: which way the interval lies and what would settle it."""
    low, high = f"{verdict.ci_low * 100:+.1f}", f"{verdict.ci_high * 100:+.1f}"
    bar = f"{verdict.threshold * 100:+.1f} pts" if verdict.threshold else "zero"
    if verdict.n_cases == 0:
        return "no case was measured validly by both versions: nothing to compare"
    if verdict.decision == "better":
        return (
            f"the interval [{low}, {high}] pts lies above {bar}: the later version passes more "
            f"often, and a change that did nothing would look this good at most "
            f"{verdict.alpha:.0%} of the time"
        )
    if verdict.decision == "worse":
        return (
            f"the interval [{low}, {high}] pts lies below {bar}: the later version passes less "
            f"often, with at most a {verdict.alpha:.0%} chance that this is noise"
        )
    more = (
        f"about {verdict.more} more runs per case would likely settle it"
        if verdict.more
        else "no affordable number of extra runs is likely to settle it"
    )
    return f"the interval [{low}, {high}] pts contains {bar}: these runs cannot tell; {more}"


def _gate_meaning(event: dict[str, Any]) -> str:
    figures = event["figures"] if isinstance(event.get("figures"), dict) else {}
    reasons = [str(r) for r in event.get("reasons") or []]
    if figures and "decision" in figures:
        with_verdict = meaning_of(Verdict.from_dict(figures))
        return f"{'; '.join(reasons)} — {with_verdict}" if reasons else with_verdict
    return "; ".join(reasons) or f"gate {event.get('verdict')}"


def _verdicts(subject: Subject, overall: Verdict | None) -> list[VerdictLine]:
    lines: list[VerdictLine] = []
    for event in subject.events:
        if event.get("kind") != "gate_verdict":
            continue
        figures = event["figures"] if isinstance(event.get("figures"), dict) else {}
        where = f"round {event.get('round')} · " if event.get("round") is not None else ""
        line = str(figures.get("line") or "; ".join(str(r) for r in event.get("reasons") or []))
        lines.append(
            VerdictLine(
                name=f"{where}{event.get('gate')} gate",
                outcome=str(event.get("verdict")),
                line=line,
                meaning=_gate_meaning(event),
            )
        )
    if overall is not None and subject.before is not None:
        lines.append(
            VerdictLine(
                name=f"pass rate, {subject.after.label} vs {subject.before.label}",
                outcome=overall.decision,
                line=overall.line(),
                meaning=meaning_of(overall),
            )
        )
    return lines


def _anchor(run_id: str, row: dict[str, Any], variant: str) -> str:
    raw = f"u-{run_id}-{row['case_id']}-{row.get('run_index', 0)}-{variant}"
    return re.sub(r"[^A-Za-z0-9_.-]", "-", raw)


def unit_trace(run_dir: Path, row: dict[str, Any]) -> tuple[Trace | None, str]:
    """A unit's transcript, or None and why there is none (missing, outside its run,
    unreadable)."""
    rel = str(row.get("session_file") or "")
    path = run_dir / rel
    if not rel or not path.is_file() or not path.resolve().is_relative_to(run_dir.resolve()):
        return None, "no transcript was kept for this unit"
    try:
        return load_trace(path, source=rel), ""
    except FormatError as exc:
        return None, f"transcript unreadable: {exc}"


def kept_outputs(run_dir: Path, row: dict[str, Any]) -> tuple[Path, list[Path], list[Path]]:
    """A unit's output folder, its regular files and its links (named, never followed)."""
    stem = Path(str(row.get("session_file") or "")).stem
    folder = run_dir / OUTPUTS / stem
    files: list[Path] = []
    links: list[Path] = []
    if not stem or not folder.is_dir() or folder.is_symlink():
        return folder, files, links
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        for name in sorted(filenames + [d for d in dirnames if (here / d).is_symlink()]):
            (links if (here / name).is_symlink() else files).append(here / name)
        dirnames[:] = sorted(d for d in dirnames if not (here / d).is_symlink())
    return folder, files, links


def _outputs(run_dir: Path, row: dict[str, Any]) -> list[OutputFile]:
    """The kept outputs of a unit as shown: text clipped, a link as a link."""
    folder, files, links = kept_outputs(run_dir, row)
    shown = [
        OutputFile(p.relative_to(folder).as_posix(), f"(link to {os.readlink(p)}, not followed)")
        for p in links
    ]
    for path in files:
        data = path.read_bytes()[: OUTPUT_KEEP * 4]
        try:
            text = clip(data.decode("utf-8"), OUTPUT_KEEP)
        except UnicodeDecodeError:
            text = f"(binary, {path.stat().st_size} bytes)"
        shown.append(OutputFile(path.relative_to(folder).as_posix(), text))
    return sorted(shown, key=lambda o: o.path)


def _unit(side: Side, row: dict[str, Any], run_dir: Path) -> Unit:
    run_id = str(row["run_id"])
    trace, note = unit_trace(run_dir, row)
    calls = skeleton(trace.calls, width=110, max_entries=40)[0] if trace is not None else []
    tokens = row.get("tokens") or {}
    return Unit(
        anchor=_anchor(run_id, row, str(row.get("variant"))),
        side=side.label,
        run_id=run_id,
        case_id=str(row["case_id"]),
        run_index=int(row.get("run_index") or 0),
        pass_fail=str(row.get("pass_fail")),
        verdict=str(row.get("judge_verdict") or row.get("invalid_reason") or "—"),
        checks=[c for c in row.get("checks") or [] if isinstance(c, dict)],
        tokens=sum(int(v or 0) for v in tokens.values() if isinstance(v, int | float)),
        cost_usd=row.get("cost_usd"),
        duration_ms=int(row.get("duration_ms") or 0),
        prompt=clip(trace.prompt, 1200) if trace is not None else "",
        calls=calls,
        errors=sum(1 for c in trace.calls if c.is_error) if trace is not None else 0,
        final=clip(trace.final_text, FINAL_KEEP) if trace is not None else "",
        outputs=_outputs(run_dir, row),
        note=note,
    )


def _cases(subject: Subject) -> list[CaseOutcome]:
    """Each case's fate; a one-version report has pass / fail / flaky instead of a change."""
    after = subject.after
    before = subject.before
    by_case: dict[str, list[dict[str, Any]]] = {}
    for side in subject.sides:
        for row in side.rows:
            by_case.setdefault(str(row["case_id"]), []).append(row)
    outcomes: list[CaseOutcome] = []
    if before is None:
        for case_id, rows in sorted(by_case.items()):
            status, shown = case_status(rows)
            outcomes.append(CaseOutcome(case_id, status, "", shown, []))
        return outcomes
    comparison = compare(before.rows, after.rows)
    for change in comparison.cases:
        outcomes.append(
            CaseOutcome(
                change.case_id, change.category, change.before_passes, change.after_passes, []
            )
        )
    order = {fate: i for i, fate in enumerate(FATE_ORDER)}
    return sorted(outcomes, key=lambda c: (order.get(c.fate, len(order)), c.case_id))


def _chart(ws: Workspace | None, subject: Subject) -> list[ChartPoint]:
    """The benchmark's scoreboard (0–100) and, where a run of this report wrote no record (a
    loop's own evaluations), that run's pass rate, in time order; this report's runs marked."""
    ours = {run: side for side in subject.sides for run in side.run_ids}
    timed: list[tuple[str, float, str, bool]] = []
    recorded: set[str] = set()
    bench_dir = ws.benchmarks_dir / subject.benchmark if ws and subject.benchmark else None
    if bench_dir is not None and bench_dir.is_dir():
        for head in read_heads(bench_dir):
            versions = ", ".join(f"{k} {v}" for k, v in head.skills.items())
            timed.append((head.timestamp, float(head.score), versions, head.run_id in ours))
            recorded.add(head.run_id or "")
    for run_id, side in ours.items():
        if run_id in recorded:
            continue
        rows = [r for r in side.rows if r["run_id"] == run_id]
        rate = metrics(rows).pass_rate
        if rate is not None:
            started = str(subject.manifests[run_id].get("started_at") or "")
            timed.append((started, rate * 100, f"{side.label} ({run_id})", True))
    timed.sort(key=lambda t: t[0])
    return [
        ChartPoint(n=i + 1, score=score, label=f"#{i + 1} {when} {what}", ours=mine)
        for i, (when, score, what, mine) in enumerate(timed)
    ]


def _positive_label(ws: Workspace | None, bench: str | None) -> str | None:
    if ws is None or not bench or not (ws.benchmarks_dir / bench).is_dir():
        return None
    return load_benchmark(ws.benchmarks_dir / bench, check=False).positive_label


def _wall_time(subject: Subject) -> str:
    times = [(m.get("started_at"), m.get("finished_at")) for m in subject.manifests.values()]
    if subject.info is not None:
        times.append((subject.info.started_at, subject.info.finished_at))
    starts = sorted(str(s) for s, _ in times if s)
    ends = sorted(str(e) for _, e in times if e)
    if not starts:
        return "unknown"
    return f"{starts[0]} → {ends[-1] if ends else 'still running'}"


def _headline(subject: Subject, overall: Verdict | None) -> str:
    if subject.info is not None and subject.info.headline:
        return subject.info.headline
    if overall is not None and subject.before is not None:
        return f"{subject.after.label} vs {subject.before.label}: {overall.line()}"
    return f"{subject.after.label} on {subject.benchmark or 'its benchmark'}"


def build_report(ws: Workspace | None, ref: str) -> Report:
    """The report of RUN, SESSION or EXPERIMENT ``ref`` (see :func:`load_subject`)."""
    return report_of(ws, load_subject(ws, ref))


def report_of(ws: Workspace | None, subject: Subject) -> Report:
    if not subject.sides:
        raise SkillsmithError(f"{subject.ref}: no evaluated unit to report on")
    positive = _positive_label(ws, subject.benchmark)
    before = subject.before
    overall = compare_paired(before.rows, subject.after.rows) if before is not None else None
    cases = _cases(subject)
    shown_cases = {c.case_id for c in cases if c.fate not in ("still_passing", "pass")}
    units: list[Unit] = []
    unlisted = 0
    anchors: dict[str, list[tuple[str, str]]] = {}
    for number, side in enumerate(subject.sides):
        mark = "" if before is None else "before " if number == 0 else "after "
        for row in sorted(side.rows, key=lambda r: (str(r["case_id"]), int(r["run_index"]))):
            if row["case_id"] not in shown_cases:
                continue
            if len(units) >= MAX_UNITS:
                unlisted += 1
                continue
            unit = _unit(side, row, subject.run_dirs[str(row["run_id"])])
            units.append(unit)
            text = f"{mark}{unit.run_index}" if number in (0, len(subject.sides) - 1) else ""
            anchors.setdefault(unit.case_id, []).append(
                (text or f"{side.label} {unit.run_index}", unit.anchor)
            )
    cases = [
        CaseOutcome(c.case_id, c.fate, c.before, c.after, anchors.get(c.case_id, [])) for c in cases
    ]
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.fate] = counts.get(case.fate, 0) + 1
    return Report(
        title=subject.title,
        kind=subject.kind,
        ref=subject.ref,
        benchmark=subject.benchmark,
        headline=_headline(subject, overall),
        sides=[SideFigures(s.label, s.run_ids, metrics(s.rows, positive)) for s in subject.sides],
        verdicts=_verdicts(subject, overall),
        diff=version_diff(before, subject.after),
        cases=cases,
        units=units,
        chart=_chart(ws, subject),
        wall_time=_wall_time(subject),
        unlisted_units=unlisted,
        fate_counts=counts,
    )


def redactor(ws: Workspace | None) -> Redactor:
    """The one text filter of every report: known secrets and key-shaped strings masked."""
    secrets = secret_values(ws) if ws is not None else []

    def run(text: str) -> str:
        return redact(text, secrets)

    return run
