"""Online learning from finished sessions (tRPC-Agent-Go Evolution's online path).

review policy (policy) → review cursor (cursor) → reviewer (reviewer, spec) → reconciler
(reconciler) → candidate gates (``engine.evaluation.gates.candidate``), run per session file by
``pipeline.OnlineLearner``, in bounded workers (worker), for files given or watched (watch).
"""

from engine.loops.online.cursor import Cursor, CursorStore
from engine.loops.online.pipeline import OnlineLearner, ReviewResult, run_outcome
from engine.loops.online.policy import ReviewPolicy, Signals, scan
from engine.loops.online.reconciler import ReconcileEvent, SkillChange, reconcile
from engine.loops.online.reviewer import (
    ModelReviewer,
    OfflineReviewer,
    Reviewer,
    ReviewRequest,
    make_reviewer,
)
from engine.loops.online.spec import ReviewDecision, ReviewerError, SkillSpec, parse_decision
from engine.loops.online.watch import session_files, watch_folder
from engine.loops.online.worker import BoundedWorkers

__all__ = [
    "BoundedWorkers",
    "Cursor",
    "CursorStore",
    "ModelReviewer",
    "OfflineReviewer",
    "OnlineLearner",
    "ReconcileEvent",
    "ReviewDecision",
    "ReviewPolicy",
    "ReviewRequest",
    "ReviewResult",
    "Reviewer",
    "ReviewerError",
    "Signals",
    "SkillChange",
    "SkillSpec",
    "make_reviewer",
    "parse_decision",
    "reconcile",
    "run_outcome",
    "scan",
    "session_files",
    "watch_folder",
]
