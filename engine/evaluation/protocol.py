"""Strict protocol YAML: how the Builder and the Optimizer talk to a model.

Every model answer the sessions act on (a judge's grade, drafted cases, predictions, a
calibration, a candidate) must be *pure* protocol YAML — one mapping, no prose around it, no code
fence, no unknown key — and is validated before anything is read from it (PenguinHarness: "先验证
…是否为纯协议 YAML，再读取状态或分数"). A malformed answer is not guessed at: the same model is
asked again, in the same conversation, with the reason appended, so whatever it was answering
about (a finished agent run, a pilot's results) is neither recomputed nor rerun.

The structured input of a request travels as a fenced ``json`` block in the user message: a real
model reads it like any other text, and the offline stand-in (:func:`request_data`) parses it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml

from engine.core.errors import SkillsmithError
from engine.evaluation.grading import JudgeModel

T = TypeVar("T")
MAX_REQUESTS = 3
_FENCE = re.compile(r"^\s*```")
_JSON_BLOCK = re.compile(r"```json\n(.*?)\n```", re.DOTALL)
_PROTOCOL_LINE = re.compile(r"^protocol: (\S+)$", re.MULTILINE)


class ProtocolError(SkillsmithError):
    """A model reply that is not valid protocol YAML; the message says what is wrong."""


class ProtocolExhausted(SkillsmithError):
    """The model gave no valid reply within the allowed number of requests."""


@dataclass(frozen=True)
class Exchange:
    """The validated answer of one request and what getting it took."""

    value: Any
    requests: int
    errors: tuple[str, ...]  # why each rejected reply was rejected, in order


Rerequest = Callable[[str, int], None]
"""Called with the validation error and the number of the request that failed."""


def load_reply(text: str, protocol: str) -> dict[str, Any]:
    """The reply as a mapping, if it is exactly one protocol YAML mapping of ``protocol``."""
    if _FENCE.match(text):
        raise ProtocolError("the reply is wrapped in a code fence; send the bare YAML only")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ProtocolError(
            f"the reply is not YAML{where}: {getattr(exc, 'problem', exc)}"
        ) from None
    if not isinstance(data, dict):
        raise ProtocolError("the reply is not one YAML mapping (prose or a list around it?)")
    if data.get("protocol") != protocol:
        raise ProtocolError(f"expected 'protocol: {protocol}', got {data.get('protocol')!r}")
    return data


def check_keys(
    data: Mapping[str, Any], where: str, required: Sequence[str], optional: Sequence[str] = ()
) -> None:
    """Refuse a missing or an unknown key: a strict protocol has no optional surprises."""
    missing = [k for k in required if k not in data]
    if missing:
        raise ProtocolError(f"{where}: missing key {missing[0]!r}")
    unknown = [k for k in data if k not in required and k not in optional]
    if unknown:
        raise ProtocolError(f"{where}: unknown key {unknown[0]!r}")


def text_field(data: Mapping[str, Any], key: str, where: str, *, one_line: bool = False) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ProtocolError(f"{where}.{key}: expected a non-empty string")
    if one_line and "\n" in value.strip():
        raise ProtocolError(f"{where}.{key}: expected one line")
    return value.strip()


def score_field(data: Mapping[str, Any], key: str, where: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        raise ProtocolError(f"{where}.{key}: expected a score from 0 to 100, got {value!r}")
    return float(value)


def ask(
    llm: JudgeModel,
    system: str,
    messages: list[dict[str, Any]],
    parse: Callable[[str], T],
    *,
    max_requests: int = MAX_REQUESTS,
    max_tokens: int | None = None,
    on_rerequest: Rerequest | None = None,
) -> Exchange:
    """Ask ``llm`` until ``parse`` accepts a reply; re-request in the same conversation.

    ``parse`` raises :class:`ProtocolError` for a malformed reply; the reply and the reason are
    appended to the conversation so the model answers the same question again. After
    ``max_requests`` malformed replies :class:`ProtocolExhausted` names the last reason.
    """
    conversation = list(messages)
    errors: list[str] = []
    for number in range(1, max_requests + 1):
        reply = llm.complete(system, conversation, max_tokens=max_tokens)
        text = str(getattr(reply, "text", reply))
        try:
            value = parse(text)
        except ProtocolError as exc:
            errors.append(str(exc))
            if on_rerequest is not None:
                on_rerequest(str(exc), number)
            conversation += [
                {"role": "assistant", "content": text or "(empty reply)"},
                {
                    "role": "user",
                    "content": f"That reply is not valid protocol YAML: {exc}. Answer the same "
                    "request again with only the protocol YAML mapping.",
                },
            ]
            continue
        return Exchange(value, number, tuple(errors))
    raise ProtocolExhausted(
        f"model {getattr(llm, 'model', '?')}: no valid protocol YAML after {max_requests} "
        f"requests; last problem: {errors[-1]}"
    )


def data_message(intro: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """A user message: the request in words, then its structured input as a ``json`` block."""
    block = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True)
    return {"role": "user", "content": f"{intro}\n\n```json\n{block}\n```"}


def request_data(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The structured input of the first user message (what an offline model answers from)."""
    for message in messages:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str):
            found = _JSON_BLOCK.search(content)
            if found:
                data = json.loads(found.group(1))
                if isinstance(data, dict):
                    return data
    raise SkillsmithError("offline model: the request carries no json block to answer from")


def protocol_of(system: str) -> str | None:
    """The protocol a system prompt asks for (its ``protocol: …`` line)."""
    found = _PROTOCOL_LINE.search(system)
    return found.group(1) if found else None


def dump_reply(data: Mapping[str, Any]) -> str:
    """Protocol YAML as an offline model writes it."""
    return yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True, width=100)
