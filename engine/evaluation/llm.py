"""The model client: one small interface for judges, proposers, reviewers and optimizers.

Everything that asks a model goes through :class:`LLM` (``complete(system, messages)``), so the
engine runs unchanged on the real Anthropic API (:class:`AnthropicLLM`) or on the bundled demo
with no network (:class:`OfflineLLM`). Every call is accounted (tokens, cache use, cost, retries)
per call and per client, because every number must trace back to what produced it.

Prompts are passed through :func:`engine.core.vault.redact` on the way out, so no vault value or
key-shaped string reaches the API whatever a caller put into them.

The system prompt is the stable prefix of every call a role makes (instructions, the skill under
edit), so it is sent as one text block marked ``cache_control: ephemeral``: repeated calls read it
from the prompt cache at a tenth of the input price.

The SDK (2.x, API version 2026-10-21) has no sampling parameters — the API rejects them — so
``ModelConfig.temperature`` is not sent.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.core.config import ModelConfig
from engine.core.errors import SkillsmithError
from engine.core.vault import anthropic_api_key, remember_vault
from engine.core.workspace import Workspace

Messages = list[dict[str, Any]]
TextSink = Callable[[str], None]
# Above this the API wants a streamed request (a non-streamed one could outlive 10 minutes).
STREAM_ABOVE_TOKENS = 16_000


@dataclass(frozen=True)
class TokenUsage:
    """Tokens of one call or a running total; ``input_tokens`` excludes cached tokens."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def prompt_tokens(self) -> int:
        """All input the model read, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True)
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Completion:
    text: str
    usage: TokenUsage
    cost_usd: float | None
    model: str
    stop_reason: str | None
    tool_calls: tuple[ToolUse, ...] = ()
    retries: int = 0
    duration_ms: int = 0


class LLM(Protocol):
    model: str

    def complete(
        self,
        system: str,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        """Answer ``messages`` under ``system``; ``on_text`` receives the text as it arrives."""
        ...

    @property
    def calls(self) -> int: ...

    @property
    def total_usage(self) -> TokenUsage: ...

    @property
    def total_cost_usd(self) -> float | None: ...


# -- prices --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Price:
    """USD per million tokens; cache writes (5-minute TTL) cost 1.25x input, reads 0.1x."""

    input: float
    output: float

    @property
    def cache_write(self) -> float:
        return self.input * 1.25

    @property
    def cache_read(self) -> float:
        return self.input * 0.1

    def cost(self, usage: TokenUsage) -> float:
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_write_tokens * self.cache_write
            + usage.cache_read_tokens * self.cache_read
        ) / 1_000_000


# Exact ids and their dated snapshots (``<id>-YYYYMMDD``); a model missing here has an unknown
# cost (None), never a guess.
PRICES: dict[str, Price] = {
    "claude-opus-4-8": Price(5.0, 25.0),
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4-0": Price(15.0, 75.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-3-opus": Price(15.0, 75.0),
    "claude-sonnet-5": Price(3.0, 15.0),
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4-0": Price(3.0, 15.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-3-5-sonnet": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    "claude-3-haiku": Price(0.25, 1.25),
}
_DATED = re.compile(r"(.+)-\d{8}")


def price_for(model: str) -> Price | None:
    dated = _DATED.fullmatch(model)
    return PRICES.get(model) or (PRICES.get(dated.group(1)) if dated else None)


def cost_usd(model: str, usage: TokenUsage) -> float | None:
    price = price_for(model)
    return None if price is None else price.cost(usage)


# -- the running ledger --------------------------------------------------------------------------
@dataclass
class _Ledger:
    """Per-client totals; a lock because judges may run from several worker threads."""

    calls: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost: float | None = 0.0
    retries: int = 0
    guard: threading.Lock = field(default_factory=threading.Lock)

    def add(self, completion: Completion) -> None:
        with self.guard:
            self.calls += 1
            self.usage = self.usage + completion.usage
            self.retries += completion.retries
            if self.cost is not None and completion.cost_usd is not None:
                self.cost += completion.cost_usd
            else:
                self.cost = None


class _Accounted:
    """The running totals every :class:`LLM` exposes."""

    def __init__(self) -> None:
        self._ledger = _Ledger()

    @property
    def calls(self) -> int:
        return self._ledger.calls

    @property
    def total_usage(self) -> TokenUsage:
        return self._ledger.usage

    @property
    def total_cost_usd(self) -> float | None:
        """Sum of call costs; None once any call had an unknown price."""
        return self._ledger.cost

    @property
    def total_retries(self) -> int:
        return self._ledger.retries


# -- offline -------------------------------------------------------------------------------------
def estimate_tokens(text: str) -> int:
    """Tokens at the usual 4 characters per token: the offline client's stand-in for a count."""
    return (len(text) + 3) // 4


class OfflineLLM(_Accounted):
    """A deterministic stand-in that needs no network: ``respond(system, messages) -> text``.

    The demo's proposers and reviewers plug their rule-based answers in here, so the whole loop
    (and its accounting) runs offline; it costs nothing and its token counts are estimates.
    """

    def __init__(self, respond: Callable[[str, Messages], str], model: str = "offline") -> None:
        super().__init__()
        self._respond = respond
        self.model = model

    def complete(
        self,
        system: str,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        started = time.monotonic()
        text = self._respond(system, messages)
        if on_text is not None:
            on_text(text)
        prompt = system + "".join(_message_text(m) for m in messages)
        completion = Completion(
            text=text,
            usage=TokenUsage(estimate_tokens(prompt), estimate_tokens(text)),
            cost_usd=0.0,
            model=self.model,
            stop_reason="end_turn",
            duration_ms=int((time.monotonic() - started) * 1000),
        )
        self._ledger.add(completion)
        return completion


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def make_llm(
    model_cfg: ModelConfig,
    ws: Workspace | None = None,
    *,
    offline: Callable[[str, Messages], str] | None = None,
) -> LLM:
    """The client a model role is configured for.

    ``offline`` is the caller's deterministic answerer for ``provider: offline``; a role without
    one cannot run offline and says so. For ``anthropic`` the key comes from the environment, else
    the workspace vault; the base URL from ``$ANTHROPIC_BASE_URL`` when set. The workspace's
    vault values are registered first, so whatever prompt the caller builds is masked.
    """
    if ws is not None:
        remember_vault(ws)
    if model_cfg.provider == "anthropic":
        from engine.evaluation.anthropic_llm import AnthropicLLM

        return AnthropicLLM(model_cfg, api_key=anthropic_api_key(ws))
    if offline is None:
        raise SkillsmithError(
            "skillsmith.yaml: field 'models': this role has no offline model; "
            "set its provider to anthropic"
        )
    return OfflineLLM(offline)


def __getattr__(name: str) -> Any:
    """``engine.evaluation.llm.AnthropicLLM`` without importing the SDK until it is asked for."""
    if name == "AnthropicLLM":
        from engine.evaluation.anthropic_llm import AnthropicLLM

        return AnthropicLLM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
