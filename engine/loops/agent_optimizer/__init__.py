"""The Optimizer: rounds over the agent's editable state, each kept by a paired verdict.

PenguinHarness' agent-optimization as a session (engine.loops.agent_optimizer.session): from a
Formal Baseline, one bounded candidate per round (AGENTS.md, a skill, or the agent's turn budget,
time limit and tools), a snapshot before it, kept only when a paired comparison with a fresh
evaluation of the parent (same cases, same seeds) says "better" at ``gates.alpha``, rolled back
otherwise.
"""

from engine.loops.agent_optimizer.candidate import (
    AgentCandidate,
    NoneLeft,
    editable_files,
    parse_candidate,
)
from engine.loops.agent_optimizer.offline import optimizer_offline
from engine.loops.agent_optimizer.session import (
    AgentOptimizerOptions,
    AgentOptimizerResult,
    hypothesis_check,
    run,
)
from engine.loops.agent_optimizer.state import Attempt, OptimizerState, Reference, find_unfinished

__all__ = [
    "AgentCandidate",
    "AgentOptimizerOptions",
    "AgentOptimizerResult",
    "Attempt",
    "NoneLeft",
    "OptimizerState",
    "Reference",
    "editable_files",
    "find_unfinished",
    "hypothesis_check",
    "optimizer_offline",
    "parse_candidate",
    "run",
]
