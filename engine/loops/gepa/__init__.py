"""Offline optimisation of a skill's sections with GEPA (``skillsmith optimize``).

See :mod:`engine.loops.gepa.run` for the run, :mod:`engine.loops.gepa.pareto` for the decisions,
:mod:`engine.loops.gepa.adapter` for how the ``gepa`` library is driven.
"""

from engine.loops.gepa.run import OptimizeFailed, OptimizeOptions, OptimizeResult, optimize

__all__ = ["OptimizeFailed", "OptimizeOptions", "OptimizeResult", "optimize"]
