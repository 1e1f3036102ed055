"""The shape of ``skillsmith.yaml``.

One dataclass per section; defaults are the numbers of the source designs so an empty file is a
valid configuration and every threshold stays configurable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass
class AgentConfig:
    """How the target agent is launched (see engine.agents)."""

    kind: Literal["demo", "claude-code", "command"] = "demo"
    command: list[str] = field(default_factory=list)
    model: str | None = None
    timeout_s: float = 120.0
    max_output_bytes: int = 4_000_000
    max_turns: int = 20
    allowed_tools: list[str] = field(default_factory=lambda: ["Skill", "Bash", "Read", "Grep"])
    env_allow: list[str] = field(default_factory=list)


@dataclass
class ModelConfig:
    """One model role (proposer, judge, reviewer, reflection)."""

    provider: Literal["offline", "anthropic"] = "offline"
    model: str = "claude-sonnet-4-5"
    max_tokens: int = 4096
    temperature: float = 0.0
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
    """Thresholds of the outcome-driven gates and the candidate gates."""

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


@dataclass
class Config:
    """``skillsmith.yaml``; ``version`` is the workspace (agent-state) version."""

    version: int = 0
    agent: AgentConfig = field(default_factory=AgentConfig)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    gates: GatesConfig = field(default_factory=GatesConfig)
    splits: SplitsConfig = field(default_factory=SplitsConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    pinned_skills: list[str] = field(default_factory=list)
    keymap: dict[str, str] = field(default_factory=dict)
