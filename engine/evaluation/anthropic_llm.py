"""The real Messages API through the ``anthropic`` SDK.

Kept apart from :mod:`engine.evaluation.llm` because importing the SDK costs seconds: every CLI
command and
the TUI load ``engine.evaluation.llm``, and only a run that really talks to Anthropic should pay
for the SDK.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from typing import Any, cast

import anthropic
from anthropic.types import (
    Message,
    MessageParam,
    TextBlockParam,
    ToolChoiceParam,
    ToolUnionParam,
)

from engine.core.config import ModelConfig
from engine.core.errors import SkillsmithError
from engine.core.vault import ANTHROPIC_KEY_NAME, redact, redact_tree, register_secret
from engine.evaluation.llm import (
    STREAM_ABOVE_TOKENS,
    Completion,
    Messages,
    TextSink,
    TokenUsage,
    ToolUse,
    _Accounted,
    cost_usd,
)

log = logging.getLogger("skillsmith.llm")


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
        params = cast("list[MessageParam]", redact_tree(messages))
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": limit,
            "system": system_blocks,
            "messages": params,
            "tools": tool_params,
            "tool_choice": choice,
        }
        started = time.monotonic()
        try:
            if on_text is None and limit <= STREAM_ABOVE_TOKENS:
                raw = self._client.messages.with_raw_response.create(**request)
                message: Message = raw.parse()
                retries = raw.retries_taken
            else:
                with self._client.messages.stream(**request) as stream:
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
        usage = TokenUsage(
            input_tokens=message.usage.input_tokens,
            output_tokens=message.usage.output_tokens,
            cache_read_tokens=message.usage.cache_read_input_tokens or 0,
            cache_write_tokens=message.usage.cache_creation_input_tokens or 0,
        )
        texts = [block.text for block in message.content if block.type == "text"]
        calls = tuple(
            ToolUse(block.id, block.name, dict(cast("dict[str, Any]", block.input)))
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


def _api_error(exc: anthropic.APIStatusError) -> dict[str, Any]:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return cast("dict[str, Any]", body["error"])
    return {}


def _api_type(exc: anthropic.APIStatusError) -> str:
    return str(_api_error(exc).get("type", "error"))


def _api_message(exc: anthropic.APIStatusError) -> str:
    return str(_api_error(exc).get("message") or exc.message)
