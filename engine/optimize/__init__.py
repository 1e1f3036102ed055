"""Offline optimisation of a skill's sections with GEPA (``skillsmith optimize``).

See :mod:`engine.optimize.run` for the run, :mod:`engine.optimize.pareto` for the decisions,
:mod:`engine.optimize.adapter` for how the ``gepa`` library is driven.
"""

from engine.optimize.run import OptimizeFailed, OptimizeOptions, OptimizeResult, optimize

__all__ = ["OptimizeFailed", "OptimizeOptions", "OptimizeResult", "optimize"]
