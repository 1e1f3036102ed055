"""One benchmark on several agents, and the paired difference between them (``eval --agents``).

A skill is written once and loaded by several agent CLIs (Claude Code, Codex); whether it helps
each of them equally is a measurement, not a guess. Each agent kind runs the same cases, runs
and skill versions with the same seed, so unit ``(case, run)`` of one agent pairs with the same
unit of the other, and every skill version (the skill variant, and the baseline when one is
asked for) gets its own paired verdict: the first agent named against each other one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.core.config import AgentConfig
from engine.core.errors import UsageError
from engine.core.events import CancelToken, Reporter, null_reporter
from engine.core.workspace import Workspace
from engine.evaluation.evaluate import EvalOptions, run
from engine.evaluation.runner import BASELINE, SKILL, RunResult, fresh_seed
from engine.evaluation.verdict import Verdict, compare_paired

KINDS = ("claude-code", "codex", "demo", "command")


@dataclass(frozen=True)
class AgentDifference:
    """The paired change from agent ``before`` to agent ``after`` on one skill version."""

    before: str
    after: str
    variant: str  # "skill" | "baseline"
    verdict: Verdict

    def line(self) -> str:
        return f"{self.after} vs {self.before} ({self.variant}): {self.verdict.line()}"


def parse_kinds(spec: str) -> list[str]:
    """``claude-code,codex`` → the kinds, refused unless two or more distinct known ones."""
    kinds = list(dict.fromkeys(k.strip() for k in spec.split(",") if k.strip()))
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or len(kinds) < 2:
        why = f"unknown kind {unknown[0]!r}" if unknown else "name two or more kinds"
        raise UsageError(f"--agents {spec}: {why} (kinds: {', '.join(KINDS)})")
    return kinds


def agent_config(configured: AgentConfig, kind: str) -> AgentConfig:
    """skillsmith.yaml's agent settings run as ``kind``. Its command line and model belong to
    its own kind (a Claude model name means nothing to Codex): another kind runs its own CLI with
    its default model, and a ``command`` agent can only be the one configured."""
    if kind == configured.kind:
        return configured
    if kind == "command":
        raise UsageError(
            "--agents: a 'command' agent needs its command line: set agent.kind: command and "
            "agent.command in skillsmith.yaml"
        )
    return replace(configured, kind=kind, command=[], model=None)  # type: ignore[arg-type]


def compare_agents(
    ws: Workspace,
    options: EvalOptions,
    kinds: list[str],
    *,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> tuple[dict[str, RunResult], list[AgentDifference]]:
    """Run ``options`` once per kind (one seed for all) and compare the first kind with each
    other one, per skill version."""
    if options.run_id is not None:
        raise UsageError("--agents starts new evaluations; --resume one run at a time")
    configured = ws.load_config().agent
    configs = {kind: agent_config(configured, kind) for kind in kinds}  # refuse before any run
    seed = fresh_seed() if options.seed is None else options.seed
    results = {
        kind: run(
            ws, replace(options, agent=configs[kind], seed=seed), reporter=reporter, cancel=cancel
        )
        for kind in kinds
    }
    first = kinds[0]
    differences = []
    for other in kinds[1:]:
        for variant in (SKILL, BASELINE):
            before = [r for r in results[first].rows if r["variant"] == variant]
            after = [r for r in results[other].rows if r["variant"] == variant]
            if before and after:
                differences.append(
                    AgentDifference(first, other, variant, compare_paired(before, after))
                )
    return results, differences
