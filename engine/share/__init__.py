"""Handing results on: a report a reviewer opens, skill-creator's file layout, a CI check.

A session ends with JSON under ``runs/``, ``experiments/`` and ``sessions/``; these modules turn
that into what another person or tool reads — ``report`` (one self-contained HTML page, or
Markdown for a pull request comment), ``skill_creator`` (the ``eval-N/with_skill/run-K/`` layout
skill-creator's scripts read) and ``check`` (a paired verdict per changed skill, with an exit code
a CI job can use). They only read the workspace (``check`` writes its own runs, like ``eval``).
"""
