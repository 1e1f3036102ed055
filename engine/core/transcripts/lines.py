"""JSON lines as transcripts are read: each line one object, a bad line named by file and number.

Two ways in: a file streamed line by line (diagnosis reads transcripts of many megabytes), and the
complete lines of a file that may still be growing (online review reads a live transcript; a
half-written last line waits for the next look).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from engine.core.errors import FormatError

Numbered = tuple[int, dict[str, Any]]  # (1-based file line, the parsed object)


def _objects(path: Path | str, raws: Iterable[bytes]) -> Iterator[Numbered]:
    for number, raw in enumerate(raws, start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
            raise FormatError(path, None, f"line is not valid JSON ({msg})", line=number) from None
        if not isinstance(value, dict):
            raise FormatError(path, None, "line must be a JSON object", line=number)
        yield number, value


def iter_objects(path: Path) -> Iterator[Numbered]:
    """Every line of ``path`` as an object, streamed."""
    with path.open("rb") as fh:
        yield from _objects(path, fh)


def read_complete(path: Path) -> bytes:
    """The bytes of ``path`` up to and including its last newline."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FormatError(path, None, "session file not found") from None
    except OSError as exc:
        raise FormatError(path, None, f"cannot read ({exc.strerror or exc})") from None
    return data[: data.rfind(b"\n") + 1]


def objects_of(path: Path, data: bytes) -> list[Numbered]:
    """The complete lines ``data`` (see :func:`read_complete`) as objects."""
    return list(_objects(path, data.split(b"\n")[:-1]))
