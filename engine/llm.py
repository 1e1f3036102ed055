"""The model client: one small interface for judges, proposers, reviewers and optimisers.

Everything that asks a model goes through :class:`LLM` (``complete(system, messages)``), so the
engine runs unchanged on the real Anthropic API (:class:`AnthropicLLM`) or on the bundled demo
with no network (:class:`OfflineLLM`). Every call is accounted (tokens, cache use, cost, retries)
per call and per client, because every number must trace back to what produced it.

Prompts are passed through :func:`engine.vault.redact` on the way out, so no vault value or
key-shaped string reaches the API whatever a caller put into them.

The system prompt is the stable prefix of every call a role makes (instructions, the skill under
edit), so it is sent as one text block marked ``cache_control: ephemeral``: repeated calls read it
from the prompt cache at a tenth of the input price.

The SDK (2.x, API version 2026-10-21) has no sampling parameters — the API rejects them — so
``ModelConfig.temperature`` is not sent.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import anthropic
from anthropic.types import (
    Message,
    MessageParam,
    TextBlockParam,
    ToolChoiceParam,
    ToolUnionParam,
)

from engine.config import ModelConfig
from engine.errors import SkillsmithError
from engine.vault import ANTHROPIC_KEY_NAME, anthropic_api_key, redact, register_secret
from engine.workspace import Workspace

log = logging.getLogger("skillsmith.llm")

Messages = list[dict[str, Any]]
TextSink = Callable[[str], None]
# Above this the API wants a streamed request (a non-streamed one could outlive 10 minutes).
STREAM_ABOVE_TOKENS = 16_000


@dataclass(frozen=True)
class Usage:
    """Tokens of one call or a running total; ``input_tokens`` excludes cached tokens."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
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
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    cost_usd: float | None
    model: str
    stop_reason: str | None
    tool_calls: tuple[ToolCall, ...] = ()
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
    def total_usage(self) -> Usage: ...

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

    def cost(self, usage: Usage) -> float:
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


def cost_usd(model: str, usage: Usage) -> float | None:
    price = price_for(model)
    return None if price is None else price.cost(usage)


# -- the running ledger --------------------------------------------------------------------------
@dataclass
class _Ledger:
    """Per-client totals; a lock because judges may run from several worker threads."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage)
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
    def total_usage(self) -> Usage:
        return self._ledger.usage

    @property
    def total_cost_usd(self) -> float | None:
        """Sum of call costs; None once any call had an unknown price."""
        return self._ledger.cost

    @property
    def total_retries(self) -> int:
        return self._ledger.retries


# -- Anthropic -----------------------------------------------------------------------------------
class AnthropicLLM(_Accounted):
    """The real Messages API through the ``anthropic`` SDK (its retries and timeouts)."""

    def __init__(
        self, model_cfg: ModelConfig, api_key: str | None = None, base_url: str | None = None
    ) -> None:
        super().__init__()
        key = api_key or os.environ.get("ANTHROPIC_API_KEY", "").strip()
        if not key:
            raise SkillsmithError(
                "anthropic: no API key; set ANTHROPIC_API_KEY or write it to "
                f"vault/{ANTHROPIC_KEY_NAME} in the workspace"
            )
        register_secret(key)
        self.model = model_cfg.model
        self.max_tokens = model_cfg.max_tokens
        self.timeout_s = model_cfg.timeout_s
        self.max_retries = model_cfg.max_retries
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self._client = anthropic.Anthropic(
            api_key=key,
            base_url=self.base_url,
            timeout=model_cfg.timeout_s,
            max_retries=model_cfg.max_retries,
        )

    def complete(
        self,
        system: str,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        return self._call(system, messages, max_tokens, on_text, (), None)

    def complete_tools(
        self,
        system: str,
        messages: Messages,
        tools: Sequence[dict[str, Any]],
        *,
        tool_choice: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        """One model turn that may call ``tools`` (Messages-API tool definitions).

        The tool uses come back as ``Completion.tool_calls``; the caller runs them and sends the
        ``tool_result`` blocks in the next user message.
        """
        return self._call(system, messages, max_tokens, on_text, tools, tool_choice)

    def _call(
        self,
        system: str,
        messages: Messages,
        max_tokens: int | None,
        on_text: TextSink | None,
        tools: Sequence[dict[str, Any]],
        tool_choice: dict[str, Any] | None,
    ) -> Completion:
        limit = max_tokens or self.max_tokens
        system_blocks: list[TextBlockParam] | anthropic.Omit = (
            [{"type": "text", "text": redact(system), "cache_control": {"type": "ephemeral"}}]
            if system
            else anthropic.omit
        )
        tool_params = cast("list[ToolUnionParam]", list(tools)) if tools else anthropic.omit
        choice = cast("ToolChoiceParam", tool_choice) if tool_choice else anthropic.omit
        params = cast("list[MessageParam]", _redacted(messages))
        started = time.monotonic()
        try:
            if on_text is None and limit <= STREAM_ABOVE_TOKENS:
                raw = self._client.messages.with_raw_response.create(
                    model=self.model,
                    max_tokens=limit,
                    system=system_blocks,
                    messages=params,
                    tools=tool_params,
                    tool_choice=choice,
                )
                message: Message = raw.parse()
                retries = raw.retries_taken
            else:
                with self._client.messages.stream(
                    model=self.model,
                    max_tokens=limit,
                    system=system_blocks,
                    messages=params,
                    tools=tool_params,
                    tool_choice=choice,
                ) as stream:
                    for text in stream.text_stream:
                        if on_text is not None:
                            on_text(text)
                    message = stream.get_final_message()
                    retries = int(stream.response.request.headers.get("x-stainless-retry-count", 0))
        except anthropic.APIError as exc:
            raise SkillsmithError(self._explain(exc)) from None
        completion = self._completion(message, retries, started)
        self._ledger.add(completion)
        log.info(
            "llm %s: in=%d out=%d cache_read=%d cache_write=%d cost=%s retries=%d %dms",
            completion.model,
            completion.usage.input_tokens,
            completion.usage.output_tokens,
            completion.usage.cache_read_tokens,
            completion.usage.cache_write_tokens,
            "unknown" if completion.cost_usd is None else f"${completion.cost_usd:.6f}",
            completion.retries,
            completion.duration_ms,
        )
        return completion

    def _completion(self, message: Message, retries: int, started: float) -> Completion:
        usage = Usage(
            input_tokens=message.usage.input_tokens,
            output_tokens=message.usage.output_tokens,
            cache_read_tokens=message.usage.cache_read_input_tokens or 0,
            cache_write_tokens=message.usage.cache_creation_input_tokens or 0,
        )
        texts = [block.text for block in message.content if block.type == "text"]
        calls = tuple(
            ToolCall(block.id, block.name, dict(cast("dict[str, Any]", block.input)))
            for block in message.content
            if block.type == "tool_use"
        )
        return Completion(
            text="".join(texts),
            usage=usage,
            cost_usd=cost_usd(message.model or self.model, usage),
            model=message.model or self.model,
            stop_reason=message.stop_reason,
            tool_calls=calls,
            retries=retries,
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    def _explain(self, exc: anthropic.APIError) -> str:
        """One redacted line: what failed, after how many attempts, and what to do."""
        attempts = f"{self.max_retries + 1} attempt{'s' if self.max_retries else ''}"
        where = f"anthropic ({self.model})"
        if isinstance(exc, anthropic.APITimeoutError):
            line = f"{where}: no answer within {self.timeout_s:g}s after {attempts}"
        elif isinstance(exc, anthropic.APIConnectionError):
            target = self.base_url or "api.anthropic.com"
            line = f"{where}: cannot reach {target} after {attempts}"
        elif isinstance(exc, anthropic.AuthenticationError):
            line = (
                f"{where}: authentication failed (401); check ANTHROPIC_API_KEY or "
                f"vault/{ANTHROPIC_KEY_NAME}"
            )
        elif isinstance(exc, anthropic.PermissionDeniedError):
            line = f"{where}: permission denied (403): {_api_message(exc)}"
        elif isinstance(exc, anthropic.RateLimitError):
            line = f"{where}: rate limited (429) after {attempts}; retry later or use fewer workers"
        elif isinstance(exc, anthropic.APIStatusError) and _api_type(exc) == "overloaded_error":
            tries = "mid-answer" if exc.status_code == 200 else f"after {attempts}"
            line = f"{where}: API overloaded ({tries}); retry later"
        elif isinstance(exc, anthropic.APIStatusError) and exc.status_code == 200:
            line = f"{where}: the answer broke off ({_api_type(exc)}): {_api_message(exc)}"
        elif isinstance(exc, anthropic.InternalServerError):
            line = f"{where}: server error {exc.status_code} after {attempts}: {_api_message(exc)}"
        elif isinstance(exc, anthropic.APIStatusError):
            line = (
                f"{where}: request refused ({exc.status_code} {_api_type(exc)}): "
                f"{_api_message(exc)}"
            )
        else:
            line = f"{where}: {type(exc).__name__}: {exc}"
        return redact(" ".join(line.split()))


def _redacted(value: Any) -> Any:
    """A copy of a message structure with every string passed through :func:`redact`.

    The last line of defence of "no secret in a prompt": whatever a caller assembled (traces,
    tool output, file contents), no vault value or key-shaped string leaves the machine.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    return value


def _api_error(exc: anthropic.APIStatusError) -> dict[str, Any]:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return cast("dict[str, Any]", body["error"])
    return {}


def _api_type(exc: anthropic.APIStatusError) -> str:
    return str(_api_error(exc).get("type", "error"))


def _api_message(exc: anthropic.APIStatusError) -> str:
    return str(_api_error(exc).get("message") or exc.message)


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
            usage=Usage(estimate_tokens(prompt), estimate_tokens(text)),
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
    the workspace vault; the base URL from ``$ANTHROPIC_BASE_URL`` when set.
    """
    if model_cfg.provider == "anthropic":
        return AnthropicLLM(model_cfg, api_key=anthropic_api_key(ws))
    if offline is None:
        raise SkillsmithError(
            "skillsmith.yaml: field 'models': this role has no offline model; "
            "set its provider to anthropic"
        )
    return OfflineLLM(offline)
