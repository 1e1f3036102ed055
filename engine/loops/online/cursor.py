"""The review cursor: how far each session file has been reviewed, so no segment is read twice.

A long session is reviewed in segments — whatever was appended since the last review — which
saves model calls and keeps one trace from being turned into a skill more than once
(tRPC-Agent-Go's ``evolution:last_review_at``). Here a session is a file, so the cursor is a byte
offset into it (at a line boundary) and the line count, stored per file under
``sessions/.review_cursors/``. It also keeps a digest of the bytes it covers: a file that was
rewritten rather than appended to (truncated, replaced) no longer matches, and is reviewed from
its start again instead of from a position that means nothing any more.

The cursor only moves when a review reached a decision (or decided there was nothing to review);
a reviewer error leaves it where it was, so the same segment is offered again next time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import FormatError
from engine.core.fsutil import atomic_write_json
from engine.core.schema import from_mapping
from engine.core.stamps import utc_now
from engine.core.transcripts import Transcript
from engine.core.workspace import Workspace

CURSOR_DIR = ".review_cursors"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Cursor:
    """``line`` lines (``offset`` bytes, hashing to ``digest``) of ``source`` are reviewed."""

    source: str
    offset: int
    line: int
    digest: str
    updated_at: str
    reviews: int = 0


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class CursorStore:
    """One JSON file per session file; written atomically under the workspace lock."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.dir = ws.sessions_dir / CURSOR_DIR

    def path_for(self, source: Path) -> Path:
        resolved = str(Path(source).resolve())
        stem = _UNSAFE.sub("_", Path(source).stem)[:60] or "session"
        return self.dir / f"{stem}-{_digest(resolved.encode())[:16]}.json"

    def get(self, source: Path) -> Cursor | None:
        path = self.path_for(source)
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FormatError(path, None, f"a review cursor (JSON object): {exc}") from None
        return from_mapping(Cursor, data, path)

    def start(self, transcript: Transcript) -> tuple[int, bool]:
        """The last reviewed line of ``transcript`` and whether the file was rewritten since.

        A rewritten file (shorter than the cursor, or different within the reviewed bytes)
        starts again from line 0.
        """
        cursor = self.get(transcript.path)
        if cursor is None:
            return 0, False
        if cursor.offset > transcript.size or _digest(transcript.data[: cursor.offset]) != (
            cursor.digest
        ):
            return 0, True
        return cursor.line, False

    def advance(self, transcript: Transcript) -> Cursor:
        """Mark every complete line of ``transcript`` as reviewed."""
        previous = self.get(transcript.path)
        cursor = Cursor(
            source=str(transcript.path.resolve()),
            offset=transcript.size,
            line=transcript.lines,
            digest=_digest(transcript.data),
            updated_at=utc_now(),
            reviews=(previous.reviews if previous else 0) + 1,
        )
        with self.ws.lock(f"review cursor {transcript.path.name}"):
            atomic_write_json(self.path_for(transcript.path), dataclasses.asdict(cursor))
        return cursor
