"""What a transcript line's content amounts to: text, a one-line tool-input summary, clipping.

Every reader of a transcript (diagnosis, online review, the runner's conversion of ``claude -p``
output) must see a tool call and a tool result alike, or a step evidenced for one would be missed
by the other; so the summary of a tool input and the text of a result are made here, once.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Keys of a Claude Code tool input that say nothing about *what* was done (flags, long bodies).
_NOISY_INPUT_KEYS = frozenset(
    {
        "description",
        "output_mode",
        "head_limit",
        "timeout",
        "run_in_background",
        "content",
        "old_string",
        "new_string",
        "new_source",
        "replace_all",
        "-n",
        "-i",
        "-A",
        "-B",
        "-C",
        "multiline",
        "type",
    }
)
_ARG_VALUE_KEEP = 300
_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Collapse whitespace so a command logged with other spacing still counts as the same."""
    return _WS.sub(" ", text).strip()


def clip(text: str, keep: int) -> str:
    """``text`` within ``keep`` characters, an ellipsis marking the cut."""
    return text if len(text) <= keep else text[: keep - 1] + "…"


def cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, saying how much was cut."""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


def text_of(content: Any) -> str:
    """Text of a tool_result ``content``: a string or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        ]
        return "\n".join(parts)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


def tool_output(content: Any) -> str:
    """A tool_result's text, with a ``[image]``-like mark for each block that is not text."""
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type', 'block')}]"
            for b in content
            if isinstance(b, dict)
        )
    if isinstance(content, str):
        return content
    return "" if content is None else str(content)


def summarise_input(name: str, data: Any) -> str:
    """A one-line summary of a Claude Code tool input: what it ran or looked at, no bodies.

    ``Bash`` keeps its whole command (skill steps are evidenced by it), ``Skill`` just the skill
    name (a load is recognised by it); other tools keep the scalar values of their meaningful
    keys in the input's own order.
    """
    if not isinstance(data, dict):
        return "" if data is None else str(data)
    command = data.get("command")
    if isinstance(command, str):
        return command
    if name == "Skill" and isinstance(data.get("skill"), str):
        return str(data["skill"])
    # Numbers keep their key: a chunked read (offset=2000) is another call, not a loop.
    parts = [
        clip(value, _ARG_VALUE_KEEP) if isinstance(value, str) else f"{key}={value}"
        for key, value in data.items()
        if key not in _NOISY_INPUT_KEYS
        and isinstance(value, (str, int, float))
        and not isinstance(value, bool)
        and value != ""
    ]
    if parts:
        return " ".join(parts)
    return clip(json.dumps(data, ensure_ascii=False, sort_keys=True), _ARG_VALUE_KEEP)


def int_of(value: Any) -> int:
    """``value`` when it is a whole number (not a bool), else 0: token counts are optional."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
