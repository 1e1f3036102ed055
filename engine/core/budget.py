"""A session's budget in agent runs, tokens and dollars, and the meter that holds it to it.

With Claude Code an agent run takes minutes and real money, and a default evolve session makes
thousands of them; a run's own ``max_turns`` and timeout bound one run, not a session. So a
loop may be given a budget (``--budget-runs/--budget-usd/--budget-tokens``, or ``budget:`` in
skillsmith.yaml): the meter counts every finished agent run from the runner's events, and once
a limit is reached it cancels the running evaluation — the units already in flight finish and
are kept, so a session overshoots by at most one batch of workers — and the loop stops at that
clean point with ``stopped: budget`` and what was spent. Nothing is thrown away: the session
resumes from its checkpoint when it is started again with a larger budget.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.core.events import CancelToken, Event, Reporter, null_reporter

if TYPE_CHECKING:
    from engine.core.config import BudgetConfig


@dataclass(frozen=True)
class Budget:
    """The most a session may spend; None: no limit on that figure."""

    runs: int | None = None
    usd: float | None = None
    tokens: int | None = None

    @property
    def limited(self) -> bool:
        return any(v is not None for v in (self.runs, self.usd, self.tokens))

    def reached(self, spent: Spent) -> str | None:
        """The first limit ``spent`` has reached, named (None: all within budget)."""
        if self.runs is not None and spent.runs >= self.runs:
            return f"{spent.runs} of {self.runs} agent runs"
        if self.tokens is not None and spent.tokens >= self.tokens:
            return f"{spent.tokens:,} of {self.tokens:,} tokens"
        if self.usd is not None and spent.usd >= self.usd:
            return f"${spent.usd:.2f} of ${self.usd:.2f}"
        return None

    def merged(self, other: Budget) -> Budget:
        """This budget with ``other``'s limits where it sets one."""
        return Budget(
            runs=other.runs if other.runs is not None else self.runs,
            usd=other.usd if other.usd is not None else self.usd,
            tokens=other.tokens if other.tokens is not None else self.tokens,
        )

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "usd": self.usd, "tokens": self.tokens}


@dataclass
class Spent:
    """What a session has spent so far: agent runs, tokens and dollars."""

    runs: int = 0
    tokens: int = 0
    usd: float = 0.0

    def line(self, budget: Budget) -> str:
        """``spent 212/400 agent runs, 318k tokens, $0.00``: each figure over its limit, if any."""

        def over(value: str, limit: str | None) -> str:
            return value if limit is None else f"{value}/{limit}"

        runs = over(str(self.runs), None if budget.runs is None else str(budget.runs))
        tokens = over(f"{self.tokens:,}", None if budget.tokens is None else f"{budget.tokens:,}")
        usd = over(f"${self.usd:.2f}", None if budget.usd is None else f"${budget.usd:.2f}")
        return f"spent {runs} agent runs, {tokens} tokens, {usd}"

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "tokens": self.tokens, "usd": round(self.usd, 6)}


class BudgetReached(Exception):
    """A one-shot job (``queue eval``) stopped past its budget before deciding anything; its
    finished units are kept, so the same command with a larger budget goes on from them."""

    def __init__(self, meter: BudgetMeter) -> None:
        self.reason = f"budget reached: {meter.exhausted}; {meter.line()}"
        self.spent = meter.spent.to_dict()
        self.budget = meter.budget.to_dict()
        super().__init__(self.reason)


def session_budget(configured: BudgetConfig, *over: Budget) -> Budget:
    """skillsmith.yaml's ``budget:`` (the default of every loop), then each of ``over`` where it
    sets a limit, the last one winning: every loop resolves its budget the same way."""
    budget = Budget(configured.runs, configured.usd, configured.tokens)
    for other in over:
        budget = budget.merged(other)
    return budget


def check_budget(budget: Budget, where: str) -> Budget:
    """Refuse a negative or non-finite limit, naming where it came from."""
    from engine.core.errors import UsageError

    for name, value in budget.to_dict().items():
        if value is not None and (not math.isfinite(value) or value < 0):
            raise UsageError(f"{where}: budget {name}: expected a number ≥ 0, got {value!r}")
    return budget


class BudgetMeter:
    """Counts the agent runs a session's evaluations finish and cancels them at the budget.

    Hand :attr:`token` to every evaluation as its cancel token and :meth:`report` as its
    reporter: each ``case_finished`` event is one agent run, with its tokens and cost. The
    caller's own cancel token still cancels (it is chained to :attr:`token`).
    """

    def __init__(
        self,
        budget: Budget,
        spent: Spent,
        *,
        forward: Reporter = null_reporter,
        cancel: CancelToken | None = None,
    ) -> None:
        self.budget = budget
        self.spent = spent
        self.forward = forward
        self.token = CancelToken()
        self.exhausted: str | None = budget.reached(spent)
        self._lock = threading.Lock()
        if cancel is not None:
            cancel.on_cancel(self.token.cancel)

    def report(self, event: Event) -> None:
        if event.kind == "case_finished":
            self.count(event.data)
        self.forward(event)

    def count(self, data: Mapping[str, Any]) -> None:
        """One finished agent run, from its ``case_finished`` event or its result row, with its
        ``tokens`` and ``cost_usd`` (a loop that runs the agent itself, not through the runner,
        counts here)."""
        tokens = data.get("tokens")
        cost = data.get("cost_usd")
        with self._lock:
            self.spent.runs += 1
            if isinstance(tokens, dict):
                self.spent.tokens += int(
                    sum(v for v in tokens.values() if isinstance(v, (int, float)))
                )
            if isinstance(cost, (int, float)) and math.isfinite(cost):
                self.spent.usd += float(cost)
            reached = self.budget.reached(self.spent)
        if reached is not None and self.exhausted is None:
            self.exhausted = reached
            self.token.cancel()

    def line(self) -> str:
        return self.spent.line(self.budget)

    def label(self, text: str) -> str:
        """A progress label with the spent line after it when there is a budget: the CLI bar
        and the workbench's job bar show spent / budget as the session goes."""
        return f"{text} · {self.line()}" if self.budget.limited else text


__all__ = [
    "Budget",
    "BudgetMeter",
    "BudgetReached",
    "Spent",
    "check_budget",
    "session_budget",
]
