"""One online-learning job: a session file's new lines → policy → reviewer → reconciler → gates.

The order is the article's: the review policy decides whether the new segment is worth a look,
the reviewer extracts a method, the reconciler folds obvious variants into updates and each change
into the open review candidate of the same skill and section, and the candidate gates (through the
one door, ``engine.evaluation.gates.submission``) decide what becomes of each change — every one
lands in the queue with source ``review``, never written straight into ``skills/``. A candidate
that absorbed older ones supersedes them once it is queued (a gate-rejected one supersedes
nothing), so the queue holds one open candidate per skill and intent. Folding and submitting run
under one lock per learner: two sessions reviewed at once must not both absorb the same
candidate.

When the cursor moves is the contract that makes "each segment once" true without losing any:

* it moves when the policy says no, when the agent already wrote a SKILL.md itself, when the
  reviewer decides to skip, and after the changes were submitted (a failed submission is logged,
  not retried — the trace was read);
* it stays when the file cannot be read, when the new lines hold no conversation yet, and when the
  reviewer fails (model error, malformed or invalid reply), so the same segment is offered again.

Jobs for one file are serialised (a lock per file), so a watcher and an inline fallback can
never review the same segment twice at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.core.errors import FormatError, SkillsmithError
from engine.core.events import SessionLog
from engine.core.fsutil import read_jsonl
from engine.core.queue import CandidateQueue
from engine.core.store import SkillStore
from engine.core.transcripts import NotATranscript, Transcript, read_transcript
from engine.core.vault import remember_vault
from engine.core.workspace import Workspace
from engine.evaluation.gates.candidate import OutcomeStatus, TaskOutcome
from engine.evaluation.gates.submission import submit_candidate
from engine.loops.online.cursor import CursorStore
from engine.loops.online.library import ExistingSkill, existing_skills, open_ideas
from engine.loops.online.policy import ReviewPolicy, scan
from engine.loops.online.reconciler import SkillChange, fold, reconcile
from engine.loops.online.reviewer import (
    Reviewer,
    ReviewRequest,
    make_reviewer,
    redacted_message,
)
from engine.loops.online.spec import render_new, render_update

Status = Literal["reviewed", "skipped", "waiting", "unchanged", "error"]
_OUTCOME_OF: dict[str, OutcomeStatus] = {
    "pass": "success",
    "fail": "fail",
    "invalid": "agent_error",
}


@dataclass
class ReviewResult:
    """What one job did; ``advanced`` says whether the cursor moved past the segment."""

    source: str
    status: Status
    reason: str
    first_line: int = 0
    last_line: int = 0
    advanced: bool = False
    signals: dict[str, object] | None = None
    decision: dict[str, object] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": self.status,
            "reason": self.reason,
            "lines": [self.first_line, self.last_line],
            "cursor_advanced": self.advanced,
            "signals": self.signals,
            "decision": self.decision,
            "reconciler": self.events,
            "candidates": self.candidates,
        }


def run_outcome(path: Path) -> TaskOutcome | None:
    """The graded outcome of a session that belongs to a run folder (``runs/<id>/sessions/``).

    The Effectiveness gate needs to know whether the task behind a candidate succeeded; for a
    session our runner produced, ``results.jsonl`` says so.
    """
    if path.parent.name != "sessions":
        return None
    run_dir = path.parent.parent
    results = run_dir / "results.jsonl"
    if not results.is_file():
        return None
    for row in read_jsonl(results):
        if (run_dir / str(row.get("session_file", ""))).resolve() != path.resolve():
            continue
        score = row.get("score")
        fair = isinstance(score, (int, float)) and 0 <= score <= 1
        return TaskOutcome(
            status=_OUTCOME_OF.get(str(row.get("pass_fail"))),
            score=float(score) if fair and score is not None else None,
            notes=str(row.get("invalid_reason") or ""),
            evaluator=f"run {run_dir.name}",
        )
    return None


class OnlineLearner:
    """Reviews session files for one workspace; safe to call from several threads."""

    def __init__(
        self,
        ws: Workspace,
        *,
        reviewer: Reviewer | None = None,
        policy: ReviewPolicy | None = None,
        log: SessionLog | None = None,
    ) -> None:
        cfg = ws.load_config()
        remember_vault(ws)  # before any transcript is read: the offline reviewer has no client
        self.ws = ws
        self.cfg = cfg
        self.reviewer = reviewer or make_reviewer(ws, cfg)
        self.policy = policy or ReviewPolicy.from_config(cfg.online)
        self.cursors = CursorStore(ws)
        self.log = log
        self._locks: dict[Path, threading.Lock] = {}
        self._guard = threading.Lock()
        self._queueing = threading.Lock()

    def _lock(self, path: Path) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(self.cursors.path_for(path), threading.Lock())

    def review(self, path: Path | str, outcome: TaskOutcome | None = None) -> ReviewResult:
        """Review whatever ``path`` gained since its last review (see the module docstring)."""
        path = Path(path)
        with self._lock(path):
            result = self._review(path, outcome)
        self._emit(result)
        return result

    def _review(self, path: Path, outcome: TaskOutcome | None) -> ReviewResult:
        source = str(path)
        try:
            transcript = read_transcript(path)
            start, rewritten = self.cursors.start(transcript)
        except NotATranscript as exc:
            return ReviewResult(source, "skipped", str(exc))
        except FormatError as exc:
            return ReviewResult(source, "error", str(exc))
        if transcript.lines <= start:
            return ReviewResult(source, "unchanged", "no new lines since the last review")
        result = ReviewResult(source, "skipped", "", start + 1, transcript.lines)
        if rewritten:
            result.events.append({"kind": "file_rewritten", "reason": "reviewed from line 1"})
        # everything the review writes (decision, candidate, session log) quotes this redacted
        # form, whichever reviewer reads it
        segment = [redacted_message(m) for m in transcript.messages if m.line > start]
        signals = scan(segment, [m for m in transcript.messages if m.line <= start])
        result.signals = signals.to_dict()
        if not signals.conversation:
            result.status, result.reason = "waiting", "no user or assistant text in the new lines"
            return result
        why = self.policy.reason(signals)
        if why is None:
            result.reason = "policy: fewer tool calls than needed, no correction, no recovery"
            return self._advance(result, transcript)
        if signals.wrote_skill:
            result.reason = "the agent wrote a SKILL.md itself in this segment"
            return self._advance(result, transcript)
        try:
            existing = existing_skills(self.ws, self.cfg.online.excerpt_chars)
            outcome = outcome or run_outcome(path)
            request = ReviewRequest(source, segment, existing, start + 1, transcript.lines, outcome)
            decision = self.reviewer.review(request)
        except SkillsmithError as exc:
            result.status, result.reason = "error", str(exc)
            return result
        result.decision = decision.to_dict()
        if decision.empty:
            result.reason = "reviewer: " + (decision.skip_reason or "nothing worth saving")
            return self._advance(result, transcript)
        changes, events = reconcile(decision, existing)
        result.events += [e.to_dict() for e in events]
        texts = {s.folder: s for s in existing}
        with self._queueing:
            try:
                changes, events = fold(changes, open_ideas(self.ws), existing)
            except SkillsmithError as exc:
                result.status, result.reason = "error", str(exc)
                return result
            result.events += [e.to_dict() for e in events]
            for change in changes:
                result.candidates.append(self._submit(change, texts, request, outcome))
        result.status = "reviewed"
        result.reason = f"{why}; {len(changes)} change(s) proposed"
        return self._advance(result, transcript)

    def _advance(self, result: ReviewResult, transcript: Transcript) -> ReviewResult:
        self.cursors.advance(transcript)
        result.advanced = True
        return result

    def _submit(
        self,
        change: SkillChange,
        existing: dict[str, ExistingSkill],
        request: ReviewRequest,
        outcome: TaskOutcome | None,
    ) -> dict[str, Any]:
        where = f"{request.source}:{request.first_line}-{request.last_line}"
        row: dict[str, Any] = {"skill": change.skill, "operation": change.operation}
        try:
            parent = SkillStore(self.ws, change.skill).ensure_adopted()
            text: str | None = None
            if change.spec is not None:
                text = (
                    render_new(change.spec, change.skill)
                    if change.operation == "create"
                    else render_update(existing[change.skill].text, change.spec)
                )
            verb = {"create": "new skill", "update": "update", "delete": "delete"}[change.operation]
            summary = f"review: {verb} {change.skill} from {where}"
            if change.proposed_as:
                summary += f" (proposed as {change.proposed_as!r})"
            if change.supersedes:
                summary += f" (supersedes {', '.join(change.supersedes)})"
            cand, decision = submit_candidate(
                self.ws,
                change.skill,
                text,
                source="review",
                operation=change.operation,
                parent_version=parent if change.operation != "create" else None,
                summary=summary,
                outcome=outcome,
                provenance={
                    "session": request.source,
                    "sessions": list(dict.fromkeys((*change.sessions, request.source))),
                    "lines": [request.first_line, request.last_line],
                    "reviewer": self.reviewer.name,
                    "reason": change.reason,
                    "proposed_as": change.proposed_as,
                    "supersedes": list(change.supersedes),
                },
            )
        except SkillsmithError as exc:
            return {**row, "id": None, "status": "not_submitted", "reason": str(exc)}
        return {
            **row,
            "id": cand.id,
            "status": cand.status,
            "reason": decision.reason,
            "proposed_as": change.proposed_as,
            "superseded": self._supersede(change, cand.id) if cand.status != "rejected" else [],
        }

    def _supersede(self, change: SkillChange, by: str) -> list[str]:
        """Retire the candidates ``by`` absorbed; one decided meanwhile (by a person) stays."""
        queue = CandidateQueue(self.ws)
        done: list[str] = []
        for old in change.supersedes:
            try:
                queue.supersede(old, by=by, why=f"superseded by {by}: same skill and section")
            except SkillsmithError:
                continue
            done.append(old)
        return done

    def _emit(self, result: ReviewResult) -> None:
        if self.log is None:
            return
        if result.status == "error":
            self.log.emit("error", source=result.source, message=result.reason)
            return
        self.log.emit("message", **result.to_dict())
        for cand in result.candidates:
            if cand.get("id"):
                self.log.emit("candidate_queued", source=result.source, **cand)
