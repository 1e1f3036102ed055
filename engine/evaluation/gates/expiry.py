"""The approval timeout: a candidate that waited in ``pending_approval`` too long is decided.

The optional approval timeout of tRPC-Agent-Go (``gates.approval_timeout_s``): a deadline
promotes, it does not reject — unless the candidate went stale while it waited. Submission sweeps
before it gates, and a view of the queue sweeps when it opens.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from engine.core.workspace import Workspace

if TYPE_CHECKING:
    from engine.core.config import Config
    from engine.core.queue import Candidate


def _entered_pending(cand: Candidate) -> dt.datetime | None:
    entry = next((h for h in reversed(cand.history) if h.status == "pending_approval"), None)
    if entry is None:
        return None
    return dt.datetime.fromisoformat(entry.at.replace("Z", "+00:00"))


def expire_pending(
    ws: Workspace, timeout_s: float, *, now: dt.datetime | None = None
) -> list[tuple[str, str]]:
    """Approve every candidate that waited in pending_approval longer than ``timeout_s``.

    The optional approval timeout of tRPC-Agent-Go: a deadline promotes, it does not reject.
    A candidate gone stale while it waited is rejected instead (its parent is not active any
    more). Returns (candidate id, what happened) pairs.
    """
    # imported here: a view that sweeps an unset timeout (the default) never decides anything
    from engine.core.queue import CandidateQueue
    from engine.core.stamps import utc_now
    from engine.core.store import SkillStore

    moment = now or dt.datetime.now(dt.UTC)
    queue = CandidateQueue(ws)
    done: list[tuple[str, str]] = []
    with ws.lock("approval timeout"):
        for cand in queue.list():
            since = _entered_pending(cand)
            if cand.status != "pending_approval" or cand.operation == "delete" or since is None:
                continue
            if (moment - since).total_seconds() <= timeout_s:
                continue
            current = SkillStore(ws, cand.skill).ensure_adopted()
            stale = (cand.operation == "update" and current != cand.parent_version) or (
                cand.operation == "create" and current is not None
            )
            if stale:
                why = f"stale after the approval timeout: skill is at {current}"
                queue.reject(cand.id, why=why)
                done.append((cand.id, "rejected (stale)"))
                continue
            version = queue.approve(
                cand.id, why=f"pending_approval timeout ({timeout_s:g}s, {utc_now()})"
            )
            done.append((cand.id, f"published {version}"))
    return done


def sweep_expired(ws: Workspace, config: Config | None = None) -> list[tuple[str, str]]:
    """:func:`expire_pending` with the workspace's ``gates.approval_timeout_s`` (off when unset;
    ``config``: the workspace's, when the caller has loaded it already).

    Candidate submission sweeps first; a view of the queue should sweep when it opens.
    """
    timeout = (config or ws.load_config()).gates.approval_timeout_s
    return [] if timeout is None else expire_pending(ws, timeout)


__all__ = ["expire_pending", "sweep_expired"]
