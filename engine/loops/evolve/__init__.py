"""Outcome-driven evolution (the outcome-driven article's loop): rounds of evaluate → diagnose →
audit → propose → filter → gate → accept or reject, checkpointed in ``.pending_round.json``."""

from engine.loops.evolve.convergence import Convergence, RoundSignal, stagnation
from engine.loops.evolve.loop import EvolveOptions, EvolveResult, round_seed, run

__all__ = [
    "Convergence",
    "EvolveOptions",
    "EvolveResult",
    "RoundSignal",
    "round_seed",
    "run",
    "stagnation",
]
