"""Reading what an agent left in its run folder without following its links.

A run folder is the agent's: whatever it holds may be a trap. An ``answer.txt`` that is a link
to a host file would be graded from that file and stored as evidence; a FIFO would hang the
reader. So every file the harness reads from a run folder is opened component by component
with ``O_NOFOLLOW`` (a link anywhere on the way is refused, not followed), without blocking,
and only when it is a regular file; links stay links for whoever looks at them later.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_inside(folder: Path, rel: str) -> int | None:
    """An fd of the regular file ``rel`` under ``folder``, or None when it is missing, is not
    a regular file, or a link stands anywhere on the way (``..`` is refused too)."""
    parts = PurePosixPath(rel).parts
    if not parts or any(p in ("..", "/") for p in parts):
        return None
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        file_fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):
        os.close(file_fd)
        return None
    return file_fd


def read_inside(folder: Path, rel: str, limit: int | None = None) -> bytes | None:
    """The bytes (at most ``limit``) of the regular file ``rel`` under ``folder``, never
    through a link; None when there is no such file."""
    fd = open_inside(folder, rel)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read(-1 if limit is None else limit)


def size_inside(folder: Path, rel: str) -> int | None:
    """The size of the regular file ``rel`` under ``folder`` (links not followed), or None."""
    fd = open_inside(folder, rel)
    if fd is None:
        return None
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)
