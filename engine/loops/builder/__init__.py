"""The Builder: turning a capability goal into a frozen benchmark with a Formal Baseline.

PenguinHarness' benchmark-design as a session (engine.loops.builder.session): cases are drafted by a
model or imported, checked before their first dispatch, calibrated over pilot iterations with
recorded predictions, and frozen; the frozen pilot's single run is the Formal Baseline that agent
optimization (engine.loops.agent_optimizer) must beat. The strict protocol every model answer
follows and the judge that grades llm_judge checks by it sit a floor below, in
engine.evaluation.protocol and engine.evaluation.judge, because the runner grades with them too;
the decision standard is a benchmark file, read by engine.core.standard.
"""

from engine.loops.builder.baseline import (
    ACCEPTED,
    FORMAL_BASELINE,
    FormalBaseline,
    formal_baseline,
    has_formal_baseline,
)
from engine.loops.builder.session import BuildOptions, BuildResult, Pilot, run

__all__ = [
    "ACCEPTED",
    "FORMAL_BASELINE",
    "BuildOptions",
    "BuildResult",
    "FormalBaseline",
    "Pilot",
    "formal_baseline",
    "has_formal_baseline",
    "run",
]
