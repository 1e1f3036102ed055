"""The evaluate loop in the shape every loop has: ``run(ws, options, *, reporter, cancel)``.

:func:`engine.evaluation.runner.run_evaluation` is also the measuring instrument the other
loops call with their own judge and scoreboard rules; this entry is the loop a person starts
(``skillsmith eval``, ``e`` in the workbench), with only the settings a person chooses.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from engine.core.benchmark import load_benchmark
from engine.core.config import AgentConfig
from engine.core.events import CancelToken, Reporter, null_reporter
from engine.core.workspace import Workspace
from engine.evaluation.agents import make_agent
from engine.evaluation.costplan import JobPlan, per_run, workers
from engine.evaluation.reuse import Reuse
from engine.evaluation.runner import RunResult, make_plan, run_evaluation


@dataclass(frozen=True)
class EvalOptions:
    bench: str
    runs: int | None = None  # default: the benchmark's runs per case
    jobs: int | None = None
    skills: dict[str, str] | None = None  # skill name → SKILL.md text (default: active skills)
    baseline: str | None = None  # "none" or "vK": a variant to compare against
    case_ids: tuple[str, ...] = ()  # default: every case
    run_id: str | None = None  # resume this run
    seed: int | None = None
    # the judge of llm_judge checks for this evaluation (default: models.judge in skillsmith.yaml)
    judge: Literal["offline", "anthropic"] | None = None
    agent: AgentConfig | None = None  # default: skillsmith.yaml's agent (eval --agents: each)
    fresh: bool = False  # run again even when a finished run of the same seed may stand in


def run(
    ws: Workspace,
    options: EvalOptions,
    *,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> RunResult:
    """Evaluate the active skills on ``options.bench`` (resuming an unfinished identical run)."""
    judge = None
    if options.judge is not None:
        from engine.evaluation.judge import make_judge

        configured = ws.load_config().models.judge
        judge = make_judge(ws, dataclasses.replace(configured, provider=options.judge))
    return run_evaluation(
        ws,
        options.bench,
        runs=options.runs,
        jobs=options.jobs,
        skills=options.skills,
        baseline=options.baseline,
        case_ids=list(options.case_ids) or None,
        run_id=options.run_id,
        seed=options.seed,
        judge=judge,
        agent_config=options.agent,
        reporter=reporter,
        cancel=cancel,
        # a person's seeded eval: a finished run of the same seed stands in for a deterministic
        # agent, for a noisy one when skillsmith.yaml says reuse: always
        reuse=Reuse(fresh=options.fresh, loop=False),
    )


def plan(ws: Workspace, options: EvalOptions) -> JobPlan:
    """The evaluation's agent runs and their estimated cost, without running any."""
    bench = load_benchmark(ws.benchmarks_dir / options.bench)
    agent = make_agent(ws, ws.load_config().agent)
    matrix = make_plan(
        ws,
        bench,
        agent,
        runs=options.runs,
        skills=options.skills,
        baseline=options.baseline,
        case_ids=list(options.case_ids) or None,
    )
    variants = len(matrix.variants)
    detail = f"{len(matrix.cases)} cases × {matrix.runs} runs" + (
        f" × {variants} variants" if variants > 1 else ""
    )
    return JobPlan(
        job=f"eval {bench.id}",
        base=len(matrix.cases) * matrix.runs * variants,
        extra=0,
        workers=workers(ws, options.jobs),
        per_run=per_run(ws, bench.id, agent.describe()),
        detail=detail,
    )


__all__ = ["EvalOptions", "RunResult", "plan", "run"]
