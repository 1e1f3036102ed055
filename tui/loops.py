"""The eight loops as workbench jobs: for each, its form's fields and the job its values start.

A launcher only reads the form's text into the loop's typed options and calls the loop's
``run(ws, options, *, reporter, cancel)``; everything a loop does — its session, its events, its
decisions — happens in the engine, so the workbench runs exactly what the CLI runs. Loop modules
are imported when a job starts, never at start-up (several pull in model SDKs and gepa).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.budget import Budget
from engine.core.events import CancelToken, Reporter
from engine.core.workspace import Workspace
from tui.activity import Link
from tui.jobs import Job, JobOutcome
from tui.loop_form import Field

Values = dict[str, str]


@dataclass(frozen=True)
class Context:
    """What the workbench has selected when a form opens: its defaults."""

    ws: Workspace
    bench: str | None
    skill: str | None


@dataclass(frozen=True)
class Launcher:
    title: str
    needs: tuple[str, ...]  # "bench" / "skill": what must exist for the key to apply
    fields: Callable[[Context], list[Field]]
    job: Callable[[Context, Values], Job]


# -- reading the form --------------------------------------------------------------------------


def _required(values: Values, name: str) -> str:
    if not values[name]:
        raise ValueError(f"{name}: required")
    return values[name]


def _optional(values: Values, name: str) -> str | None:
    return values[name] or None


def _int(values: Values, name: str, minimum: int = 1) -> int | None:
    text = values[name]
    if not text:
        return None
    try:
        number = int(text)
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise ValueError(f"{name}: expected a number ≥ {minimum}, got {text!r}")
    return number


def _count(values: Values, name: str, default: int) -> int:
    number = _int(values, name)
    return default if number is None else number


def _float(values: Values, name: str, low: float, high: float) -> float | None:
    text = values[name]
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        number = low - 1
    if not low <= number <= high:
        raise ValueError(f"{name}: expected a number from {low:g} to {high:g}, got {text!r}")
    return number


def _yes(values: Values, name: str) -> bool:
    text = values[name].lower()
    if text not in ("yes", "no", "y", "n"):
        raise ValueError(f"{name}: expected yes or no, got {values[name]!r}")
    return text.startswith("y")


BUDGET_EXAMPLE = "200 runs, $5, 2M tokens"
_BUDGET_PART = re.compile(
    r"\$\s*(?P<dollars>\d+(?:\.\d+)?)"
    r"|(?P<amount>\d+(?:\.\d+)?)\s*(?P<scale>[km]?)\s*(?P<unit>runs?|usd|dollars?|tokens?)"
)
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000}


def _budget(values: Values, name: str = "budget") -> Budget:
    """A budget as a person writes it: ``200 runs``, ``$5`` (or ``5 usd``), ``2M tokens``, any
    of them separated by commas; empty: skillsmith.yaml's. It outranks that file's where it sets
    a limit, as the CLI's ``--budget-*`` options do."""
    runs: int | None = None
    usd: float | None = None
    tokens: int | None = None
    for part in (p.strip().lower() for p in values[name].split(",")):
        if not part:
            continue
        match = _BUDGET_PART.fullmatch(part)
        if match is None:
            raise ValueError(
                f"{name}: expected runs, dollars or tokens (e.g. {BUDGET_EXAMPLE}), got {part!r}"
            )
        if match["dollars"] is not None:
            usd = float(match["dollars"])
            continue
        amount, unit = float(match["amount"]) * _SCALE[match["scale"]], match["unit"]
        if unit.startswith(("usd", "dollar")):
            usd = amount
        elif amount != int(amount):
            raise ValueError(f"{name}: {unit} come whole, got {part!r}")
        elif unit.startswith("run"):
            runs = int(amount)
        else:
            tokens = int(amount)
    return Budget(runs=runs, usd=usd, tokens=tokens)


def _budget_field() -> Field:
    return Field("budget", "budget", hint=f"skillsmith.yaml's; e.g. {BUDGET_EXAMPLE}")


def _words(values: Values, name: str) -> tuple[str, ...]:
    """Several ids or paths in one field, separated by commas or spaces."""
    return tuple(w for w in re.split(r"[,\s]+", values[name]) if w)


def _job(title: str, run: Callable[[Reporter, CancelToken], JobOutcome]) -> Job:
    def call(*, reporter: Reporter, cancel: CancelToken) -> JobOutcome:
        return run(reporter, cancel)

    return Job(title, call)


def _session(result: Any, title: str) -> JobOutcome:
    return JobOutcome(f"{title}: {result.headline}", link=Link("session", result.session_id))


# -- the eight loops ---------------------------------------------------------------------------


def _eval_fields(ctx: Context) -> list[Field]:
    return [
        Field("bench", "benchmark", ctx.bench or ""),
        Field("runs", "runs per case", hint="the benchmark's"),
        Field("jobs", "agents at once", hint="CPU count"),
    ]


def _eval_job(ctx: Context, values: Values) -> Job:
    from engine.evaluation.evaluate import EvalOptions

    bench = _required(values, "bench")
    options = EvalOptions(bench=bench, runs=_int(values, "runs"), jobs=_int(values, "jobs"))

    def run(reporter: Reporter, cancel: CancelToken) -> JobOutcome:
        from engine.evaluation.evaluate import run as evaluate

        result = evaluate(ctx.ws, options, reporter=reporter, cancel=cancel)
        return JobOutcome(f"Evaluated {bench}: {result.headline}", link=Link("run", result.run_id))

    return _job(f"Evaluate {bench}", run)


def _evolve_fields(ctx: Context) -> list[Field]:
    return [
        Field("skill", "skill", ctx.skill or ""),
        Field("bench", "benchmark", ctx.bench or ""),
        Field("rounds", "rounds", "1"),
        Field("proposer", "proposer", hint="models.proposer"),
        Field("seed", "seed", hint="the benchmark's"),
        _budget_field(),
    ]


def _evolve_job(ctx: Context, values: Values) -> Job:
    from engine.loops.evolve import EvolveOptions

    skill, bench = _required(values, "skill"), _required(values, "bench")
    options = EvolveOptions(
        skill=skill,
        bench=bench,
        rounds=_int(values, "rounds"),
        proposer=_optional(values, "proposer"),
        seed=_int(values, "seed", minimum=0),
        budget=_budget(values),
    )

    def run(reporter: Reporter, cancel: CancelToken) -> JobOutcome:
        from engine.loops.evolve import run as evolve  # imports the model SDK: lazily
        from tui.outcomes import evolve_outcome

        result = evolve(ctx.ws, options, reporter=reporter, cancel=cancel)
        return evolve_outcome(ctx.ws.root, result)

    return _job(f"Evolve {skill} on {bench}", run)


def _gepa_fields(ctx: Context) -> list[Field]:
    return [
        Field("skill", "skill", ctx.skill or ""),
        Field("bench", "benchmark", ctx.bench or ""),
        Field("iterations", "iterations", "10"),
        Field("max_metric_calls", "max metric calls", "1000"),
        Field("submit", "queue the pick", "yes"),
        _budget_field(),
    ]


def _gepa_job(ctx: Context, values: Values) -> Job:
    from engine.loops.gepa.run import GepaOptions, OptimizeOptions

    skill, bench = _required(values, "skill"), _required(values, "bench")
    search = OptimizeOptions(
        iterations=_count(values, "iterations", 10),
        max_metric_calls=_count(values, "max_metric_calls", 1000),
        submit=_yes(values, "submit"),
        budget=_budget(values),
    )
    options = GepaOptions(skill, bench, search)

    def run(reporter: Reporter, cancel: CancelToken) -> JobOutcome:
        from engine.loops.gepa.run import run as gepa  # imports gepa and the model SDK: lazily

        result = gepa(ctx.ws, options, reporter=reporter, cancel=cancel)
        text = f"Optimization of {skill}: {result.status} ({result.reason})"
        if result.candidate:
            return JobOutcome(
                f"{text}; queued {result.candidate} — press 1, then a.",
                link=Link("candidate", result.candidate),
            )
        return JobOutcome(text, "warning")

    return _job(f"Optimize {skill} on {bench}", run)


def _agent_fields(ctx: Context) -> list[Field]:
    return [
        Field("bench", "benchmark", ctx.bench or ""),
        Field("rounds", "rounds", "3"),
        Field("runs", "runs per case", hint="the benchmark's"),
        Field("target_score", "target score", hint="0-100, none"),
        _budget_field(),
    ]


def _agent_job(ctx: Context, values: Values) -> Job:
    from engine.loops.agent_optimizer.session import AgentOptimizerOptions

    bench = _required(values, "bench")
    options = AgentOptimizerOptions(
        bench=bench,
        rounds=_count(values, "rounds", 3),
        runs=_int(values, "runs"),
        target_score=_float(values, "target_score", 0, 100),
        budget=_budget(values),
    )

    def run(reporter: Reporter, cancel: CancelToken) -> JobOutcome:
        from engine.loops.agent_optimizer.session import run as optimize_agent

        result = optimize_agent(ctx.ws, options, reporter=reporter, cancel=cancel)
        return _session(result, "Agent Optimizer")

    return _job(f"Agent Optimizer on {bench}", run)


def _build_fields(ctx: Context) -> list[Field]:
    return [
        Field("bench", "new benchmark id", hint="required"),
        Field("goal", "goal", hint="the capability it measures"),
        Field("source", "import cases from", ctx.bench or "", "a benchmark id or folder"),
        Field("pick", "only these cases", hint="ids, comma separated"),
        Field("cases", "cases", "8"),
        Field("pilot_iterations", "pilot iterations", "3"),
    ]


def _build_job(ctx: Context, values: Values) -> Job:
    from engine.loops.builder.session import BuildOptions

    bench = _required(values, "bench")
    options = BuildOptions(
        bench=bench,
        goal=_optional(values, "goal"),
        source=_optional(values, "source"),
        pick=_words(values, "pick"),
        cases=_count(values, "cases", 8),
        pilot_iterations=_count(values, "pilot_iterations", 3),
    )

    def run(reporter: Reporter, cancel: CancelToken) -> JobOutcome:
        from engine.loops.builder.session import run as build

        return _session(build(ctx.ws, options, reporter=reporter, cancel=cancel), "Build")

    return _job(f"Build {bench}", run)


def _review_fields(ctx: Context) -> list[Field]:
    return [
        Field("sessions", "transcripts", hint="files or folders, comma separated"),
        Field("watch", "watch folder", hint="none"),
        Field("for_s", "watch for (seconds)", hint="until c cancels"),
    ]


def _review_job(ctx: Context, values: Values) -> Job:
    from engine.loops.online.session import ReviewOptions

    for_s = _float(values, "for_s", 0.1, 86400.0)
    options = ReviewOptions(
        sessions=_words(values, "sessions"), watch=_optional(values, "watch"), for_s=for_s
    )
    if not options.sessions and not options.watch:
        raise ValueError("transcripts: name a file or folder, or a folder to watch")
    for path in (*options.sessions, *((options.watch,) if options.watch else ())):
        if not Path(path).exists():
            raise ValueError(f"{path}: no such file or folder")

    def run(reporter: Reporter, cancel: CancelToken) -> JobOutcome:
        from engine.loops.online.session import run as review

        result = review(ctx.ws, options, reporter=reporter, cancel=cancel)
        link = Link("session", result.session_id)
        return JobOutcome(
            f"Review: {result.headline}", "warning" if result.failed else "result", link
        )

    return _job("Online review", run)


def _curate_fields(ctx: Context) -> list[Field]:
    return [
        Field("transcripts", "more transcripts", hint="besides runs/*/sessions"),
        Field("propose", "queue proposals", "yes"),
    ]


def _curate_job(ctx: Context, values: Values) -> Job:
    from engine.loops.curation import CurateOptions

    transcripts, propose = _words(values, "transcripts"), _yes(values, "propose")
    options = CurateOptions(transcripts=transcripts, propose=propose)

    def run(reporter: Reporter, cancel: CancelToken) -> JobOutcome:
        from engine.loops.curation import run as curate

        report = curate(ctx.ws, options, reporter=reporter, cancel=cancel)
        return JobOutcome(f"Curate: {report.headline}")

    return _job("Curate", run)


def _triggers_fields(ctx: Context) -> list[Field]:
    return [
        Field("skill", "skill", ctx.skill or ""),
        Field("queries", "queries file", hint="JSON: query, should_trigger"),
        Field("iterations", "proposals", "3"),
        Field("submit", "queue the best", "yes"),
        _budget_field(),
    ]


def _triggers_job(ctx: Context, values: Values) -> Job:
    from engine.loops.triggers import TuneOptions

    skill = _required(values, "skill")
    queries = Path(_required(values, "queries"))
    if not queries.is_file():
        raise ValueError(f"queries: {queries}: no such file")
    options = TuneOptions(
        skill=skill,
        queries=queries,
        iterations=_count(values, "iterations", 3),
        submit=_yes(values, "submit"),
        budget=_budget(values),
    )

    def run(reporter: Reporter, cancel: CancelToken) -> JobOutcome:
        from engine.loops.triggers import run as tune

        result = tune(ctx.ws, options, reporter=reporter, cancel=cancel)
        if result.candidate:
            link = Link("candidate", str(result.candidate["id"]))
            return JobOutcome(f"Tune description: {result.headline}", link=link)
        return JobOutcome(f"Tune description: {result.headline}")

    return _job(f"Tune description of {skill}", run)


LAUNCHERS: dict[str, Launcher] = {
    "evaluate": Launcher("Evaluate", ("bench",), _eval_fields, _eval_job),
    "evolve": Launcher("Evolve", ("bench", "skill"), _evolve_fields, _evolve_job),
    "optimize": Launcher("GEPA optimize", ("bench", "skill"), _gepa_fields, _gepa_job),
    "optimize_agent": Launcher("Agent Optimizer", ("bench",), _agent_fields, _agent_job),
    "build": Launcher("Build a benchmark", (), _build_fields, _build_job),
    "review": Launcher("Online review", (), _review_fields, _review_job),
    "curate": Launcher("Curate", (), _curate_fields, _curate_job),
    "tune_description": Launcher("Tune description", ("skill",), _triggers_fields, _triggers_job),
}
"""Keyed by the app action (and binding id) that opens the loop's form."""
