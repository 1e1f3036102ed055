"""Time stamps and ids: the one time format of every file, and ids that sort by time.

Their own module, not part of the events: the queue, the store and the scoreboard stamp what
they write, and a quick command (``skillsmith queue``) should not load the event machinery to
do so.
"""

from __future__ import annotations

import datetime as dt
import secrets


def utc_now() -> str:
    """ISO-8601 UTC timestamp with seconds, the one time format of every file."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    """A sortable, collision-resistant id: ``<prefix>-YYYYmmdd-HHMMSS-<6 hex>``."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{prefix}-{stamp}-{secrets.token_hex(3)}"


__all__ = ["new_id", "utc_now"]
