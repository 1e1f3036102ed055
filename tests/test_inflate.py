"""The threaded gzip reader reads what gzip reads and refuses what gzip refuses."""

from __future__ import annotations

import gzip
import io
import random
import threading
import zlib
from collections.abc import Callable

import pytest

from engine.core.inflate import CHUNK, Inflated

RNG = random.Random(15)
PAYLOADS = {
    "one byte": b"a",
    "incompressible": RNG.randbytes(3 * CHUNK + 17),
    "a bomb-like run": b"x" * (6 * CHUNK),  # inflates far past one chunk per input chunk
    "text": b"".join(RNG.choice([b"grep ", b"read ", b"\n"]) for _ in range(400_000)),
}


def _read_all(raw: bytes, sizes: list[int]) -> bytes:
    got = []
    with Inflated(io.BytesIO(raw)) as f:
        while chunk := f.read(RNG.choice(sizes)):
            got.append(chunk)
    return b"".join(got)


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_members_padding_and_read_sizes_match_gzip(name: str) -> None:
    blob = gzip.compress(PAYLOADS[name], 6)
    for raw in (
        blob,
        blob + b"\0" * 100,  # zero padding after the last member
        blob + b"\0\0" + gzip.compress(b"next member"),  # members one after another
    ):
        assert _read_all(raw, [1, 512, 10240, CHUNK, 3 * CHUNK]) == gzip.decompress(raw)
        with Inflated(io.BytesIO(raw)) as f:
            assert f.read() == gzip.decompress(raw)


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[:-3],  # truncated in the trailer
        lambda b: b[: len(b) // 2],  # truncated in the data
        lambda b: b[:-5] + bytes([b[-5] ^ 1]) + b[-4:],  # a wrong CRC
        lambda b: b + b"garbage",  # not a member after the end
    ],
)
def test_damaged_streams_raise_like_gzip(damage: Callable[[bytes], bytes]) -> None:
    bad = damage(gzip.compress(PAYLOADS["text"]))
    with pytest.raises((zlib.error, EOFError, gzip.BadGzipFile)):
        gzip.decompress(bad)
    with pytest.raises((zlib.error, EOFError)), Inflated(io.BytesIO(bad)) as f:
        f.read()


def test_a_reader_that_stops_early_stops_the_thread() -> None:
    with Inflated(io.BytesIO(gzip.compress(PAYLOADS["a bomb-like run"] * 4, 1))) as f:
        assert f.read(10) == b"x" * 10
        assert "inflate" in [t.name for t in threading.enumerate()]
    assert "inflate" not in [t.name for t in threading.enumerate()]
