"""Exclusive claims: one process at a time fills a run, drives a session, evolves a workspace.

A claim is the kernel's lock (flock) on a file, not a pid file: a killed process releases it
with its file descriptors, so "is anyone working here" is answered by :func:`is_claimed`, never
by a stale marker. Unlike ``Workspace.lock`` it never waits: a second claimant is refused at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from engine.core.errors import SkillsmithError


@contextlib.contextmanager
def exclusive_claim(lock_file: Path, busy: str) -> Iterator[None]:
    """Hold ``lock_file`` (created with its folder) while the block runs; a claim already held
    elsewhere raises ``SkillsmithError(busy)``."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SkillsmithError(busy) from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def is_claimed(lock_file: Path) -> bool:
    """Whether someone holds ``lock_file`` now (this process too, under another claim)."""
    try:
        with exclusive_claim(lock_file, "claimed"):
            return False
    except SkillsmithError:
        return True
