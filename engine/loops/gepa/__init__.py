"""Offline optimization of a skill's sections with GEPA (``skillsmith optimize``).

See :mod:`engine.loops.gepa.run` for the run, :mod:`engine.loops.gepa.pareto` for the decisions,
:mod:`engine.loops.gepa.adapter` for how the ``gepa`` library is driven.
"""

from engine.loops.gepa.run import GepaResult, OptimizeFailed, OptimizeOptions, optimize

__all__ = ["GepaResult", "OptimizeFailed", "OptimizeOptions", "optimize"]
