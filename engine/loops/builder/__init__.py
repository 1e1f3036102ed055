"""The Builder: turning a capability goal into a frozen benchmark with a Formal Baseline.

PenguinHarness' benchmark-design as a session (engine.loops.builder.session): cases are drafted by a
model or imported, checked before their first dispatch, calibrated over pilot iterations with
recorded predictions, and frozen; the frozen pilot's single run is the Formal Baseline that agent
optimisation (engine.loops.agent_optimizer) must beat. The strict protocol every model answer
follows,
and the judge that grades llm_judge checks by it, live here too (protocol, judge).
"""

from engine.loops.builder.baseline import (
    ACCEPTED,
    FORMAL_BASELINE,
    FormalBaseline,
    formal_baseline,
    has_formal_baseline,
)
from engine.loops.builder.judge import ProtocolJudge, make_judge, offline_judge, parse_judge_reply
from engine.loops.builder.protocol import ProtocolError, ask
from engine.loops.builder.session import BuildResult, Pilot, build_benchmark
from engine.loops.builder.standard import Rule, Standard, load_standard

__all__ = [
    "ACCEPTED",
    "FORMAL_BASELINE",
    "BuildResult",
    "FormalBaseline",
    "Pilot",
    "ProtocolError",
    "ProtocolJudge",
    "Rule",
    "Standard",
    "ask",
    "build_benchmark",
    "formal_baseline",
    "has_formal_baseline",
    "load_standard",
    "make_judge",
    "offline_judge",
    "parse_judge_reply",
]
