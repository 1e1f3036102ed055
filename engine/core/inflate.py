"""A gzip file's decompressed bytes, inflated on a thread beside the reader.

A restore reads a snapshot once, parsing and checking tar headers and writing files on the main
thread; through :class:`gzip.GzipFile` the inflating and the CRC happen on that same thread. zlib
releases the GIL while it inflates, so on its own thread the decompression overlaps the checks
and the writes — the way ``tar -xz`` runs gzip as a second process.

The stream is what :class:`gzip.GzipFile` would read, checked as strictly: every member's CRC and
length (zlib checks them at the member's end), members one after another, zero padding between
or after them, and an error for anything else (a truncated or corrupt file). Memory stays bounded
however well the input compresses: the thread inflates at most one chunk ahead of the reader per
slot of a small queue.
"""

from __future__ import annotations

import queue
import threading
import zlib
from typing import BinaryIO

CHUNK = 1024 * 1024
_AHEAD = 8  # chunks inflated ahead of the reader
_GZIP = 16 + zlib.MAX_WBITS  # a gzip header and trailer around the deflate data


class _Stopped(Exception):
    """The reader closed the stream: the inflating thread leaves."""


class Inflated:
    """A read-only, forward-only file of the inflated bytes of ``raw`` (a gzip file).

    Use as a context manager: leaving it stops the thread even when the reader stopped early.
    An error of the gzip data (``zlib.error``, ``EOFError``) or of reading ``raw`` (``OSError``)
    is raised by the :meth:`read` that reaches it.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._chunks: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=_AHEAD)
        self._stop = threading.Event()
        self._buf = b""
        self._pos = 0
        self._done = False
        self._thread = threading.Thread(target=self._inflate, name="inflate", daemon=True)

    def __enter__(self) -> Inflated:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    # -- the inflating thread --------------------------------------------------------------------
    def _put(self, item: bytes | BaseException | None) -> None:
        while True:
            if self._stop.is_set():
                raise _Stopped
            try:
                self._chunks.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def _inflate(self) -> None:
        try:
            self._members()
            self._put(None)
        except _Stopped:
            return
        except (zlib.error, EOFError, OSError) as exc:
            try:
                self._put(exc)
            except _Stopped:
                return

    def _members(self) -> None:
        member: zlib._Decompress | None = zlib.decompressobj(_GZIP)  # None between two members
        data = b""
        while True:
            if not data:
                data = self._raw.read(CHUNK)
                if not data:
                    if member is not None:
                        raise EOFError("compressed file ended before the end-of-stream marker")
                    return
            if member is None:  # zero padding, or the header of the next member
                data = data.lstrip(b"\0")
                if not data:
                    continue
                member = zlib.decompressobj(_GZIP)
            out = member.decompress(data, CHUNK)
            while True:
                if out:
                    self._put(out)
                if member.eof or member.unconsumed_tail or len(out) < CHUNK:
                    break
                out = member.decompress(b"", CHUNK)  # a full chunk: zlib may hold more output
            if member.eof:
                data, member = member.unused_data, None
            else:
                data = member.unconsumed_tail

    # -- the reader ------------------------------------------------------------------------------
    def read(self, size: int = -1) -> bytes:
        parts: list[bytes] = []
        want = size
        while want != 0:
            if self._pos >= len(self._buf):
                if self._done:
                    break
                item = self._chunks.get()
                if item is None or isinstance(item, BaseException):
                    self._done = True
                    if item is None:
                        break
                    raise item
                self._buf, self._pos = item, 0
            end = len(self._buf) if want < 0 else min(len(self._buf), self._pos + want)
            parts.append(self._buf[self._pos : end])
            if want > 0:
                want -= end - self._pos
            self._pos = end
        return b"".join(parts)
