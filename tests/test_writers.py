"""Writes handed to threads: all done when the block ends, the first failure raised to the
reader, and nothing written after the block has been left (a refused restore deletes its
staging folder right after)."""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path

import pytest

from engine.core.writers import Writers


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def test_every_write_is_done_when_the_block_ends(tmp_path: Path) -> None:
    # a bound smaller than two files: the reader waits for the oldest write to hand over more
    with Writers(threads=2, max_bytes=1000) as writers:
        for n in range(50):
            writers.submit(partial(_write, tmp_path / f"f{n}", bytes([n]) * 600), 600)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"f{n}" for n in range(50))
    assert all((tmp_path / f"f{n}").read_bytes() == bytes([n]) * 600 for n in range(50))


def test_a_failed_write_is_raised_to_the_reader(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), Writers() as writers:
        writers.submit(lambda: _write(tmp_path / "ok", b"x"), 1)
        writers.submit(lambda: _write(tmp_path / "missing" / "f", b"x"), 1)
    assert (tmp_path / "ok").read_bytes() == b"x"


def test_leaving_on_an_error_waits_for_the_running_writes(tmp_path: Path) -> None:
    started, release = threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        release.wait(5)
        _write(tmp_path / "slow", b"late")

    class Refused(Exception):
        pass

    with pytest.raises(Refused), Writers(threads=1) as writers:
        writers.submit(slow, 4)
        writers.submit(lambda: _write(tmp_path / "queued", b"x"), 1)
        started.wait(5)
        threading.Timer(0.2, release.set).start()
        raise Refused
    # the running write finished before the block was left; the queued one never ran
    assert (tmp_path / "slow").read_bytes() == b"late"
    assert not (tmp_path / "queued").exists()
