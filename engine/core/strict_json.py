"""Reading JSON an untrusted program printed, and writing JSON a strict reader accepts.

Python's ``json`` reads ``NaN``, ``Infinity`` and ``1e999`` (as infinity) without a word, turns
a 5,000-digit number into a ``ValueError`` that is not a ``JSONDecodeError``, and recurses once
per nesting level until a line 200,000 deep raises ``RecursionError``. An agent's output line is
untrusted, so each one goes through :func:`load_line`: whatever is refused is refused with a
reason (:class:`Refused`), never with an exception nobody expected. What the harness writes goes
through :func:`dump_line`, which never writes a non-finite number: results.jsonl must stay JSON
every strict reader (and ``eval --resume``) accepts.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_LINE_CHARS = 2_000_000  # a Claude Code tool result is cut far below this
MAX_DEPTH = 64  # a session line is a handful of levels deep; tool inputs a few more
MAX_NUMBER_CHARS = 40  # any honest count, cost or duration fits; 10**40 tokens is garbage


class Refused(ValueError):
    """A line that is not acceptable JSON; the message says why as a predicate ("is not
    JSON (…)", "nests deeper than 64 levels"), to follow the line's name."""


def _number_text(text: str) -> str:
    if len(text) > MAX_NUMBER_CHARS:
        raise Refused(f"holds a number of {len(text)} characters")
    return text


def _int(text: str) -> int:
    return int(_number_text(text))


def _float(text: str) -> float:
    value = float(_number_text(text))
    if not math.isfinite(value):
        raise Refused(f"holds a number out of range ({text[:20]})")
    return value


def _constant(name: str) -> Any:
    raise Refused(f"holds a non-finite number ({name})")


def _depth(value: Any) -> int:
    """How deep ``value`` nests, without recursion (the reader already bounded it)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item)
    return deepest


def load_line(raw: str) -> Any:
    """One line of JSON from an untrusted source, or :class:`Refused` saying what is wrong.

    Refused: a line over :data:`MAX_LINE_CHARS`, nesting over :data:`MAX_DEPTH`, a number
    written with more than :data:`MAX_NUMBER_CHARS` characters, ``NaN``/``Infinity`` and a
    float that overflows to infinity; a line that is not JSON at all is a :class:`Refused` too.
    """
    if len(raw) > MAX_LINE_CHARS:
        raise Refused(f"is a line of {len(raw)} characters (limit {MAX_LINE_CHARS})")
    try:
        value = json.loads(raw, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except RecursionError:
        raise Refused(f"nests deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError:
        raise Refused("is not JSON") from None
    except Refused:
        raise
    except ValueError as exc:  # what int() or float() refused past the hooks
        raise Refused(f"holds a number that cannot be read ({str(exc)[:60]})") from None
    if _depth(value) > MAX_DEPTH:
        raise Refused(f"nests deeper than {MAX_DEPTH} levels")
    return value


def finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (rows written by older versions
    may hold a ``NaN`` cost; nothing may carry it into a file again)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def dump_line(record: Any) -> str:
    """One JSONL line no strict reader refuses (no ``NaN``/``Infinity``), without its newline."""
    return json.dumps(finite(record), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def load_stored(raw: str) -> Any:
    """A line the harness once wrote: ``NaN``/``Infinity`` an older version let through read as
    None, so an old row never stops a resume."""
    return json.loads(raw, parse_constant=lambda _name: None)
