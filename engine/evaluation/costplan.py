"""What a job will cost before it starts: agent runs, wall time, tokens and dollars.

On the demo an agent run is free and takes a tenth of a second; with Claude Code it takes
minutes and real money, and a default evolve session runs thousands of them. So every command
that runs agents can print its plan first (``--dry-run`` prints it and runs nothing): the agent
runs it will make for sure, the most its adaptive reruns may add, and an estimate per run from
this benchmark's recorded runs of this agent — the mean duration, tokens and cost of its
recent units — or, when it has none, a stated default for the agent's kind (the figures of
issue 28: a Claude Code run takes about a minute and $0.30).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

from engine.core.errors import SkillsmithError
from engine.core.runs import RunFolder, run_folders
from engine.core.workspace import Workspace

RECENT_RUNS = 20  # recorded runs read for the estimate: the newest, so it tracks the agent now

# seconds, tokens and dollars an agent run of each kind takes when nothing is recorded yet
DEFAULTS: dict[str, tuple[float, float, float]] = {
    "demo": (0.1, 1_500.0, 0.0),
    "claude-code": (60.0, 40_000.0, 0.30),
    "codex": (60.0, 40_000.0, 0.30),
    "command": (10.0, 0.0, 0.0),
}


@dataclass(frozen=True)
class PerRun:
    """One agent run's expected cost, and where the figure comes from."""

    seconds: float
    tokens: float
    usd: float
    source: str


@dataclass(frozen=True)
class JobPlan:
    """A job's agent runs (``base`` for sure, up to ``extra`` more from adaptive reruns) and
    what they are expected to cost on ``workers`` parallel agents."""

    job: str
    base: int
    extra: int
    workers: int
    per_run: PerRun
    detail: str = ""
    extra_from: str = "adaptive reruns"  # what may add the ``extra`` runs

    def _most(self) -> int:
        return self.base + self.extra

    def seconds(self, runs: int) -> float:
        return math.ceil(runs / max(1, self.workers)) * self.per_run.seconds

    def line(self) -> str:
        """``plan: 216 agent runs (108 cases × 2 runs), up to +0 from reruns; estimate …``."""
        detail = f" ({self.detail})" if self.detail else ""
        runs = f"{self.base} agent runs{detail}"
        if self.extra:
            runs += f", up to {self._most()} with {self.extra_from}"
        low, high, each = self.base, self._most(), self.per_run
        wall = _span(self.seconds(low), self.seconds(high), _duration)
        tokens = _span(low * each.tokens, high * each.tokens, _tokens)
        usd = _span(low * each.usd, high * each.usd, _usd)
        return (
            f"plan: {runs}; estimate {wall} on {self.workers} workers, {tokens} tokens, {usd} "
            f"({each.source})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "agent_runs": self.base,
            "max_extra_runs": self.extra,
            "workers": self.workers,
            "estimate": {
                "seconds": [
                    round(self.seconds(self.base), 1),
                    round(self.seconds(self._most()), 1),
                ],
                "tokens": [
                    round(self.base * self.per_run.tokens),
                    round(self._most() * self.per_run.tokens),
                ],
                "usd": [
                    round(self.base * self.per_run.usd, 4),
                    round(self._most() * self.per_run.usd, 4),
                ],
                "source": self.per_run.source,
            },
            "line": self.line(),
        }


def _span(low: float, high: float, show: Any) -> str:
    return show(low) if show(low) == show(high) else f"{show(low)}–{show(high)}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _tokens(tokens: float) -> str:
    if tokens >= 1e6:
        return f"{tokens / 1e6:.1f}M"
    if tokens >= 1e3:
        return f"{tokens / 1e3:.0f}k"
    return f"{tokens:.0f}"


def _usd(usd: float) -> str:
    return f"${usd:,.2f}"


def workers(ws: Workspace, jobs: int | None) -> int:
    """The parallel agents a job gets: ``-j``, else ``limits.workers``, else the CPU count."""
    return jobs or ws.load_config().limits.workers or os.cpu_count() or 1


def per_run(ws: Workspace, bench: str | None, agent: dict[str, Any]) -> PerRun:
    """The mean duration, tokens and cost of the units recorded on ``bench`` by this agent
    (same kind, command and model) in its newest runs; a stated default when there are none,
    or when the job's runs are of no benchmark (``None``: a description's trigger queries)."""
    same = ("kind", "command", "model")
    seconds: list[float] = []
    tokens: list[float] = []
    usd: list[float] = []
    runs = 0
    for path in reversed(run_folders(ws.runs_dir) if bench is not None else []):
        if runs >= RECENT_RUNS:
            break
        folder = RunFolder(path)
        try:
            manifest = folder.read_manifest()
        except SkillsmithError:  # an unreadable run says nothing about cost
            continue
        recorded = manifest.get("agent") or {}
        if manifest.get("benchmark") != bench or any(recorded.get(k) != agent.get(k) for k in same):
            continue
        found = _units(folder)
        if found:
            runs += 1
        for row in found:
            seconds.append(float(row.get("duration_ms") or 0) / 1000)
            counts = row.get("tokens") or {}
            tokens.append(float(sum(v for v in counts.values() if isinstance(v, (int, float)))))
            cost = row.get("cost_usd")
            usd.append(float(cost) if isinstance(cost, (int, float)) else 0.0)
    kind = str(agent.get("kind") or "command")
    if not seconds:
        s, t, d = DEFAULTS.get(kind, DEFAULTS["command"])
        where = "on this benchmark" if bench is not None else "to go by"
        return PerRun(s, t, d, f"no recorded runs {where}: {kind} default per run")
    n = len(seconds)
    return PerRun(
        sum(seconds) / n,
        sum(tokens) / n,
        sum(usd) / n,
        f"from {n} recorded units of this agent on this benchmark",
    )


def _units(folder: RunFolder) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    try:
        text = folder.results_path.read_text(encoding="utf-8")
    except OSError:
        return rows
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("duration_ms"), (int, float)):
            rows.append(row)
    return rows


__all__ = ["DEFAULTS", "JobPlan", "PerRun", "per_run", "workers"]
