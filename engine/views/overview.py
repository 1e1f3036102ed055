"""What a person needs first when they open a workspace: where things stand and what to do next.

The workbench opens on this (and ``skillsmith status``-like readers may too), so it reads only
small files — each skill's current version and its metrics.json, the last scoreboard record of
each benchmark, the candidate folders and the newest session logs — and never fails as a whole:
an unreadable part shows as its one-line error. The next action is spelled out with the key that
does it, because a first screen that only shows numbers leaves a new user guessing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from engine.core.benchmark import benchmark_ids
from engine.core.errors import SkillsmithError
from engine.core.queue import CandidateQueue
from engine.core.scoreboard import latest_head
from engine.core.session_logs import list_session_logs
from engine.core.sessions import SessionInfo, session_info
from engine.core.store import SkillStore, stores_of
from engine.core.workspace import Workspace
from engine.views.rows import CandidateCache

RECENT_SESSIONS = 5
OPEN_STATUSES = ("pending_approval", "pending_eval", "proposed")


@dataclass(frozen=True)
class SkillLine:
    name: str
    version: str | None
    selection: float | None = None
    holdout: float | None = None
    measure: str = ""
    error: str | None = None
    recorded: bool = True
    """False: SKILL.md exists but has no history yet (it becomes v0 at its first use)."""


@dataclass(frozen=True)
class BenchLine:
    name: str
    evaluations: int = 0
    last_when: str | None = None
    last_score: float | None = None
    last_run: str | None = None
    last_versions: dict[str, str] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class CandidateLine:
    id: str
    skill: str
    status: str
    summary: str


@dataclass(frozen=True)
class NextAction:
    text: str
    key: str | None  # None: nothing in the workbench does it (a CLI command is named instead)


@dataclass(frozen=True)
class Overview:
    workspace_version: int | None
    skills: list[SkillLine]
    benchmarks: list[BenchLine]
    candidates: list[CandidateLine]
    unfinished: list[SessionInfo]
    """Sessions without a finished event: running now, or interrupted (the same command resumes)."""
    recent: list[SessionInfo]
    errors: list[str]

    @property
    def awaiting(self) -> list[CandidateLine]:
        return [c for c in self.candidates if c.status == "pending_approval"]

    def next_action(self) -> NextAction:
        """The one thing that moves the work on, in the order a person would do it."""
        if not self.skills:
            return NextAction("no skill yet — add skills/<name>/SKILL.md", None)
        if not self.benchmarks:
            return NextAction("no benchmark yet — run: skillsmith build --help", None)
        if self.awaiting:
            n = len(self.awaiting)
            word = "candidate awaits" if n == 1 else "candidates await"
            return NextAction(f"{n} {word} your decision — press 1, then a (approve) or r", "1")
        unevaluated = [b for b in self.benchmarks if b.evaluations == 0 and b.error is None]
        if unevaluated:
            return NextAction(f"{unevaluated[0].name}: no evaluation yet — press e", "e")
        return NextAction("evaluated — press v for an evolve round (it proposes a patch)", "v")


def _metrics_of(store: SkillStore, version: str | None) -> dict[str, Any]:
    if version is None:
        return {}
    path = store.dir / version / "metrics.json"
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SkillsmithError(f"{path}: not readable JSON ({exc})") from exc
    return data if isinstance(data, dict) else {}


def _value(figures: Any) -> float | None:
    value = figures.get("value") if isinstance(figures, dict) else None
    return float(value) if isinstance(value, int | float) else None


def _skill_lines(ws: Workspace) -> list[SkillLine]:
    names = set(ws.skill_names()) | {store.name for store in stores_of(ws)}
    lines: list[SkillLine] = []
    for name in sorted(names):
        try:
            store = SkillStore(ws, name)
            current = store.current()
            figures = _metrics_of(store, current)
        except SkillsmithError as exc:
            lines.append(SkillLine(name, None, error=str(exc)))
            continue
        recorded = current is not None
        lines.append(
            SkillLine(
                name,
                current if recorded else "v0",
                _value(figures.get("selection")),
                _value(figures.get("holdout")),
                str(figures.get("measure") or ""),
                recorded=recorded,
            )
        )
    return lines


def _bench_lines(ws: Workspace) -> list[BenchLine]:
    lines: list[BenchLine] = []
    for name in benchmark_ids(ws):
        try:
            count, last = latest_head(ws.benchmarks_dir / name)
        except SkillsmithError as exc:
            lines.append(BenchLine(name, error=str(exc)))
            continue
        if last is None:
            lines.append(BenchLine(name))
            continue
        lines.append(
            BenchLine(name, count, last.timestamp, last.score, last.run_id, dict(last.skills))
        )
    return lines


def load_overview(ws: Workspace, queue: CandidateCache | None = None) -> Overview:
    """The first screen's figures; each unreadable part becomes one line in ``errors``.

    A live view passes the ``queue`` cache it shares with its queue pane: reloaded on every
    change, the overview then re-reads only the candidates that changed, not all of them.
    """
    errors: list[str] = []
    try:
        version: int | None = ws.version()
    except SkillsmithError as exc:
        version = None
        errors.append(str(exc))
    candidates: list[CandidateLine] = []
    try:
        if queue is None:
            found = CandidateQueue(ws).list()
        else:
            views, unreadable = queue.load(incremental=True)
            found = [view.candidate for view in views]
            errors += unreadable
        for c in found:
            if str(c.status) in OPEN_STATUSES:
                candidates.append(CandidateLine(c.id, str(c.skill), str(c.status), c.summary))
    except SkillsmithError as exc:
        errors.append(str(exc))
    sessions: list[SessionInfo] = []
    for log in list_session_logs(ws)[-RECENT_SESSIONS * 4 :]:
        try:
            sessions.append(session_info(ws, log.session_id))
        except SkillsmithError as exc:
            errors.append(str(exc))
    unfinished = [s for s in sessions if s.status == "running"]
    recent = [s for s in sessions if s.status != "running"][-RECENT_SESSIONS:]
    return Overview(
        version, _skill_lines(ws), _bench_lines(ws), candidates, unfinished, recent, errors
    )


@dataclass(frozen=True)
class EvalSize:
    """How big an evaluation would be, told before it starts (a person decides whether now)."""

    bench: str
    cases: int
    runs: int
    units: int
    resume_run: str | None
    done: int
    versions: dict[str, str | None]
    room: str | None = None  # the project each room copies, and its size (adopted projects)
    estimate: str = ""  # the plan's line: agent runs left and their time, tokens and dollars

    def describe(self) -> str:
        size = f"{self.units} units ({self.cases} cases × {self.runs} run(s))"
        on = ", ".join(
            f"{n} {v or '(not yet in history)'}" for n, v in sorted(self.versions.items())
        )
        text = f"{size} on {on or 'no skills'}."
        if self.room is not None:
            text += f"\n{self.room[0].upper()}{self.room[1:]}."
        if self.resume_run is not None:
            text += f"\nResumes run {self.resume_run} at {self.done}/{self.units}."
        if self.estimate:
            text += f"\n{self.estimate}"
        return text


def evaluation_size(ws: Workspace, bench_id: str) -> EvalSize:
    """The matrix ``run_evaluation(ws, bench_id)`` would run, and the run it would resume."""
    # The runner and agents load only when a job is about to start, not with the first screen.
    from engine.core.benchmark import load_benchmark
    from engine.core.runs import find_resumable
    from engine.evaluation.agents import make_agent, scratch_root
    from engine.evaluation.agents.project import project_snapshot
    from engine.evaluation.costplan import JobPlan, per_run, workers
    from engine.evaluation.runner import SKILL, make_plan

    cfg = ws.load_config()
    bench = load_benchmark(ws.benchmarks_dir / bench_id)
    agent = make_agent(ws, cfg.agent)
    # the project is read as the evaluation would read it: its digest decides what resumes
    root = scratch_root(ws.root)
    with project_snapshot(ws, cfg.agent.project, root, agent.skills_subdir) as project:
        plan = make_plan(
            ws, bench, agent, runs=None, skills=None, baseline=None, case_ids=None, project=project
        )
    units = plan.units()
    folder = find_resumable(ws.runs_dir, plan.key())
    done = 0
    if folder is not None:
        latest = folder.latest_rows()
        done = sum(latest.get(u, {}).get("pass_fail") not in (None, "invalid") for u in units)
    return EvalSize(
        bench_id,
        len(plan.cases),
        plan.runs,
        len(units),
        None if folder is None else folder.run_id,
        done,
        dict(plan.versions.get(SKILL, {})),
        None if plan.project is None else plan.project.line(),
        JobPlan(
            f"eval {bench_id}", len(units) - done, 0, workers(ws, None),
            per_run(ws, bench_id, agent.describe()),
        ).line(),
    )  # fmt: skip
