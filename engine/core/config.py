"""The shape of ``skillsmith.yaml``.

One dataclass per section; defaults are the numbers of the source designs so an empty file is a
valid configuration and every threshold stays configurable. :func:`check_config` range-checks
the values the types cannot (a negative timeout, split shares that do not add up, a regex that
does not compile), so a bad value is refused when the file is read, not deep inside a run.
"""

from __future__ import annotations

import math
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine.core.errors import FormatError, SkillsmithError


@dataclass
class AgentConfig:
    """How the target agent is launched (see engine.evaluation.agents)."""

    kind: Literal["demo", "claude-code", "codex", "command"] = "demo"
    command: list[str] = field(default_factory=list)
    model: str | None = None
    timeout_s: float = 120.0
    max_output_bytes: int = 4_000_000
    max_turns: int = 20
    allowed_tools: list[str] = field(default_factory=lambda: ["Skill", "Bash", "Read", "Grep"])
    env_allow: list[str] = field(default_factory=list)
    noise: float = 0.0  # the demo agent's run-to-run slips, 0 (deterministic) … 1
    # every run is sealed: bubblewrap on Linux, Seatbelt on macOS (the default "bwrap" picks the
    # platform's); "none" runs agents unconfined (see engine.evaluation.agents.sandbox)
    sandbox: Literal["bwrap", "seatbelt", "none"] = "bwrap"
    # None: only the hosts the kind needs (claude-code: its Messages API) plus allow_hosts, through
    # the harness's proxy; false: no network; true: the whole network
    network: bool | None = None
    allow_hosts: list[str] = field(
        default_factory=list
    )  # "host" or "host:port" the agent may reach
    # per unit: memory of its processes, how many may run at once, bytes its run folder may hold
    memory_mb: int = 4096
    max_processes: int = 512
    disk_mb: int = 4096
    read_only_paths: list[str] = field(default_factory=list)  # more host paths the agent may read
    writable_paths: list[str] = field(default_factory=list)  # and may write (outside the workspace)
    # in a workspace adopted into a git project, what of the project each room holds: its
    # tracked files at HEAD (the commit evaluated), the working tree as git sees it (tracked
    # and untracked-but-not-ignored files, as they are now), or nothing (docs/agents.md)
    project: Literal["tracked", "worktree", "none"] = "tracked"
    # the same seed gives the same run (a seeded command agent): a repeated seeded eval reuses
    deterministic: bool = False


@dataclass
class ExecutorConfig:
    """Where units run: ``local`` (child processes here) or ``ray`` (tasks on the Ray cluster at
    ``address``; none: $RAY_ADDRESS, else a cluster started on this machine)."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = None


@dataclass
class ModelConfig:
    """One model role (proposer, judge, reviewer, reflection)."""

    provider: Literal["offline", "anthropic"] = "offline"
    model: str = "claude-sonnet-4-6"
    max_tokens: int = 4096
    timeout_s: float = 120.0
    max_retries: int = 3


@dataclass
class ModelsConfig:
    proposer: ModelConfig = field(default_factory=ModelConfig)
    judge: ModelConfig = field(default_factory=ModelConfig)
    reviewer: ModelConfig = field(default_factory=ModelConfig)
    reflection: ModelConfig = field(default_factory=ModelConfig)


@dataclass
class GatesConfig:
    """Thresholds of the outcome-driven gates and the candidate gates.

    ``alpha`` is the one-sided false-accept rate of every paired verdict
    (engine.evaluation.verdict);
    ``max_extra_runs`` the case-runs per variant a comparison may add when it is inconclusive,
    spread over ``looks − 1`` extra looks (a decision's several comparisons and confirmations
    may spend more in all: docs/verdicts.md, "What a decision can spend"): 48, because with
    24 an 8-case Optimizer round and the holdout gate find a real +50-point fix only about
    70 % of the time on the noisy demo (``benchmarks/bench_verdicts.py``); a decision that is
    clear at once adds nothing.
    """

    alpha: float = 0.05
    max_extra_runs: int = 48
    looks: int = 5
    # the Cost gate refuses a candidate whose tokens or dollars per case rise with confidence by
    # more than this share without a better pass rate (docs/cost.md says why 25 %)
    max_cost_increase: float = 0.25
    holdout_every: int = 5
    holdout_max_f1_drop: float = 0.01
    verify_min_score: float = 75.0
    verify_max_drop: float = 5.0
    effectiveness_min_score: float = 0.8
    human: Literal["none", "create-only", "always"] = "always"
    shadow: bool = False
    approval_timeout_s: float | None = None


@dataclass
class SplitsConfig:
    """Deterministic split assignment: ratios and the seed that orders the cases."""

    seed: int = 7
    selection: float = 0.60
    holdout: float = 0.25
    golden: float = 0.15


@dataclass
class LimitsConfig:
    max_patch_lines: int = 80
    max_skill_bytes: int = 15_000
    max_skill_lines: int = 500
    root_cause_min_share: float = 0.30
    convergence_f1: float = 0.95
    stagnation_limit: float = 5.0
    max_rounds: int = 10
    workers: int = 0  # 0 = CPU count
    lock_wait_s: float = 5.0
    # the most the agent Optimizer may raise the agent's turn budget and time limit to
    agent_max_turns: int = 100
    agent_max_timeout_s: float = 1800.0
    # restore refuses archives beyond these (a gzip bomb or a planted huge file)
    snapshot_max_member_bytes: int = 256 * 1024 * 1024
    snapshot_max_total_bytes: int = 4 * 1024 * 1024 * 1024


@dataclass
class GtAuditConfig:
    """Weights of the five ground-truth suspicion signals (they sum to 1) and the flag line.

    The two disagreement signals together stay below the flag line: a case that every version
    keeps failing is as likely a hard case as a wrong label, so a flag also needs evidence from
    the content (an evidenced, confident conclusion or a near-identical case labelled otherwise).
    """

    flag_threshold: float = 0.5
    w_consistent_disagreement: float = 0.20
    w_cross_version_disagreement: float = 0.20
    w_evidenced_conclusion: float = 0.25
    w_similar_case_contradiction: float = 0.25
    w_type_label_outlier: float = 0.10
    similarity_min: float = 0.8
    outlier_max_share: float = 0.25
    min_type_cases: int = 3
    hedge_words: list[str] = field(
        default_factory=lambda: [
            "uncertain",
            "not sure",
            "unclear",
            "low confidence",
            "cannot determine",
            "could not verify",
            "possibly",
            "might be",
            "置信度低",
            "不确定",
            "可能",
        ]
    )


@dataclass
class DiagnosisConfig:
    """Thresholds of the trace-diagnosis rules (engine.evaluation.diagnosis) and the GT audit."""

    error_burst_min: int = 3
    error_burst_window: int = 10
    benign_error_patterns: list[str] = field(
        default_factory=lambda: [
            r"\b0 (results|matches|files)\b",
            r"\bno (results|matches|files)( found)?\b",
            r"\bfound 0\b",
            r"no such file",
            r"does not exist",
            r"not found",
        ]
    )
    search_tools: list[str] = field(
        default_factory=lambda: ["grep", "glob", "search", "ls", "read", "find", "websearch"]
    )
    search_commands: list[str] = field(
        default_factory=lambda: ["grep", "egrep", "fgrep", "rg", "ag", "find", "ls", "git grep"]
    )
    redundant_retry_min: int = 2
    tool_loop_min_repeats: int = 5
    premature_min_calls: int = 3
    token_budget: int = 1_000_000
    budget_reasons: list[str] = field(
        default_factory=lambda: ["max_turns", "budget", "max_tokens", "timeout", "timed out"]
    )
    label_pattern: str = r"VERDICT:\s*(\S+)"
    checkers_dir: str = "checkers"
    gt_audit: GtAuditConfig = field(default_factory=GtAuditConfig)


@dataclass
class OnlineConfig:
    """Online learning from finished sessions (tRPC-Agent-Go's review policy and workers).

    A segment is reviewed when it has at least ``min_tool_calls`` tool calls (≤ 0 turns that
    trigger off), a user correction, or an error the agent recovered from.
    """

    min_tool_calls: int = 4
    user_correction: bool = True
    recovered_error: bool = True
    workers: int = 1
    queue_size: int = 10
    excerpt_chars: int = 600
    message_max_chars: int = 4000


@dataclass
class CurationConfig:
    """Hermes' Curator thresholds: when a skill is stale, when two skills overlap."""

    stale_after_days: float = 30.0
    overlap_min: float = 0.5


@dataclass
class PathsConfig:
    """Where the live agent state sits, relative to the workspace folder (``~`` is expanded).

    A standalone workspace keeps both inside itself; a workspace adopted into a project
    (``<project>/.skillsmith/``) points them at the project's own files, so a published version
    is what the next ``claude`` session in that project loads (docs/workspace.md).
    """

    skills: str = "skills"
    agents_md: str = "AGENTS.md"


@dataclass
class BudgetConfig:
    """The default budget of every loop (``--budget-*`` outrank it): None, no limit."""

    runs: int | None = None
    usd: float | None = None
    tokens: int | None = None


@dataclass
class Config:
    """``skillsmith.yaml``, the user's file. ``version`` is only the legacy place of the agent-state
    version (``Workspace.version`` reads history/workspace.json first)."""

    version: int = 0
    paths: PathsConfig = field(default_factory=PathsConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    gates: GatesConfig = field(default_factory=GatesConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    splits: SplitsConfig = field(default_factory=SplitsConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    diagnosis: DiagnosisConfig = field(default_factory=DiagnosisConfig)
    online: OnlineConfig = field(default_factory=OnlineConfig)
    curation: CurationConfig = field(default_factory=CurationConfig)
    pinned_skills: list[str] = field(default_factory=list)
    # when a finished run stands in for a new one (engine.evaluation.reuse): loops and a seeded
    # eval of a deterministic agent (auto), also a seeded eval of a noisy one (always), never
    reuse: Literal["auto", "always", "never"] = "auto"
    keymap: dict[str, str] = field(default_factory=dict)


# (field, low, high) of the per-unit limits: below the lows not even the demo agent starts
_AGENT_LIMITS = (
    ("memory_mb", 64, 1_048_576),
    ("max_processes", 8, 65_536),
    ("disk_mb", 1, 1_048_576),
)
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:[0-9]{1,5})?")
# Upper bounds past which a value is a typo, not a setting (``runs_per_case: 1e9`` once sat
# silent for hours): an evaluation or a loop that large is started by hand, not by configuration.
MAX_LOOKS = 20
MAX_EXTRA_RUNS = 10_000
MAX_ROUNDS = 10_000
MAX_WORKERS = 1024


def check_config(cfg: Config, path: Path) -> Config:
    """Refuse values of the right type but outside their range, naming file and field."""

    def positive(name: str, value: float | None, *, optional: bool = False) -> None:
        if value is None and optional:
            return
        if value is None or not math.isfinite(value) or value <= 0:
            raise FormatError(path, name, f"expected a number > 0, got {value!r}")

    def within(name: str, value: float, low: float, high: float) -> None:
        if not low <= value <= high:  # also refuses nan
            raise FormatError(
                path, name, f"expected a number in [{low:g}, {high:g}], got {value!r}"
            )

    if not 0.0 < cfg.gates.alpha < 0.5:  # a false-accept rate: 0 accepts nothing, 0.5 a coin
        raise FormatError(
            path, "gates.alpha", f"expected a rate in (0, 0.5), got {cfg.gates.alpha!r}"
        )
    within("gates.looks", cfg.gates.looks, 1, MAX_LOOKS)
    within("gates.max_extra_runs", cfg.gates.max_extra_runs, 0, MAX_EXTRA_RUNS)
    within("limits.max_rounds", cfg.limits.max_rounds, 1, MAX_ROUNDS)
    within("version", cfg.version, 0, 2**53)
    within("limits.workers", cfg.limits.workers, 0, MAX_WORKERS)
    within("online.workers", cfg.online.workers, 1, MAX_WORKERS)
    positive("limits.snapshot_max_member_bytes", cfg.limits.snapshot_max_member_bytes)
    within(
        "limits.snapshot_max_total_bytes",
        cfg.limits.snapshot_max_total_bytes,
        cfg.limits.snapshot_max_member_bytes,
        2**62,
    )
    agent = cfg.agent
    positive("agent.timeout_s", agent.timeout_s)
    positive("agent.max_output_bytes", agent.max_output_bytes)
    positive("agent.max_turns", agent.max_turns)
    for name, low, high in _AGENT_LIMITS:
        value = getattr(agent, name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise FormatError(
                path, f"agent.{name}", f"expected a whole number in [{low}, {high}], got {value!r}"
            )
    for i, host in enumerate(agent.allow_hosts):
        if not _HOST.fullmatch(host):
            raise FormatError(
                path, f"agent.allow_hosts[{i}]", f"expected 'host' or 'host:port', got {host!r}"
            )
    if not 0.0 <= agent.noise <= 1.0:  # also refuses nan
        raise FormatError(path, "agent.noise", f"expected a number in [0, 1], got {agent.noise!r}")
    for role in ("proposer", "judge", "reviewer", "reflection"):
        positive(f"models.{role}.timeout_s", getattr(cfg.models, role).timeout_s)
        positive(f"models.{role}.max_tokens", getattr(cfg.models, role).max_tokens)
    positive("gates.approval_timeout_s", cfg.gates.approval_timeout_s, optional=True)
    if cfg.limits.lock_wait_s < 0:
        raise FormatError(path, "limits.lock_wait_s", f"expected ≥ 0, got {cfg.limits.lock_wait_s}")
    drop = cfg.gates.holdout_max_f1_drop
    if not 0.0 <= drop < 1.0:  # an F1 share: 0.01 is one point, so 1.0 would allow any drop
        raise FormatError(
            path,
            "gates.holdout_max_f1_drop",
            f"expected an F1 share in [0, 1) (0.01 = 1 point), got {drop!r}",
        )
    for name in ("runs", "usd", "tokens"):
        limit = getattr(cfg.budget, name)
        if limit is not None and (not math.isfinite(limit) or limit < 0):
            raise FormatError(path, f"budget.{name}", f"expected a number ≥ 0, got {limit!r}")
    rise = cfg.gates.max_cost_increase
    if not (math.isfinite(rise) and rise >= 0):
        raise FormatError(
            path, "gates.max_cost_increase", f"expected a share ≥ 0 (0.25 = +25 %), got {rise!r}"
        )
    shares = {k: getattr(cfg.splits, k) for k in ("selection", "holdout", "golden")}
    for name, share in shares.items():
        if not 0 < share < 1:
            raise FormatError(path, f"splits.{name}", f"expected a share in (0, 1), got {share}")
    if not math.isclose(sum(shares.values()), 1.0, abs_tol=1e-6):
        total = " + ".join(f"{v:g}" for v in shares.values())
        raise FormatError(
            path, "splits", f"selection, holdout and golden must sum to 1 (got {total})"
        )
    patterns = {"diagnosis.label_pattern": cfg.diagnosis.label_pattern}
    for i, pattern in enumerate(cfg.diagnosis.benign_error_patterns):
        patterns[f"diagnosis.benign_error_patterns[{i}]"] = pattern
    for name, pattern in patterns.items():
        try:
            re.compile(pattern)
        except re.error as exc:
            raise FormatError(path, name, f"regex does not compile ({exc}): {pattern!r}") from None
    for name in ("read_only_paths", "writable_paths"):
        for i, entry in enumerate(getattr(agent, name)):
            if not os.path.isabs(entry):
                raise FormatError(
                    path, f"agent.{name}[{i}]", f"expected an absolute path: {entry!r}"
                )
    return cfg


def check_agent_command(agent: AgentConfig, path: Path) -> None:
    """The configured agent program must exist before any unit is started with it."""
    if not agent.command:
        return
    program = agent.command[0]
    if os.sep in program:
        ok = os.path.isfile(program) and os.access(program, os.X_OK)
    else:
        ok = shutil.which(program) is not None
    if (
        not ok
    ):  # worded like the fail-fast stop of a unit that could not start (engine.evaluation.failfast)
        raise SkillsmithError(
            f"cannot start the agent {program}: not an executable file or a program on PATH "
            f"({path}: field 'agent.command')"
        )
