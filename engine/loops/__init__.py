"""The top floor: the loops that turn evaluations into candidates (evolve, GEPA, build ...)."""
