"""Offline optimization of a skill's sections with GEPA (``skillsmith optimize``).

See :mod:`engine.loops.gepa.run` for the run, :mod:`engine.loops.gepa.pareto` for the decisions,
:mod:`engine.loops.gepa.adapter` for how the ``gepa`` library is driven.
"""

from engine.loops.gepa.run import (
    GepaOptions,
    GepaResult,
    OptimizeFailed,
    OptimizeOptions,
    optimize,
    run,
)

__all__ = ["GepaOptions", "GepaResult", "OptimizeFailed", "OptimizeOptions", "optimize", "run"]
