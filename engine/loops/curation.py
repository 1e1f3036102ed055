"""Curation (Hermes' Curator): which skills are used, which overlap, which went stale.

A library that only grows gets slower to search and easier to mis-trigger. The curator reads the
agent's transcripts to count, per skill, the sessions that *loaded* it (a ``Skill`` call naming
it, or a read of its SKILL.md), *used* it (loaded it and ran at least one of its step commands —
the evidence rule of diagnosis) and *patched* it (a session that wrote its SKILL.md, plus every
version published through Skillsmith). From that it reports skills that overlap (shared steps or
mostly the same words) and skills nobody loaded for ``stale_after_days``.

It never acts silently: a merge (the umbrella skill absorbs the other's missing steps and
pitfalls) and an archive are *proposals* — candidates with source ``curate`` that always wait for
a person — and a pinned skill is never proposed for anything. A proposal already waiting, or one
a person rejected before (its patch is on the taboo list), is not made again.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.core.errors import FormatError
from engine.core.events import CancelToken, Reporter, SessionLog, null_reporter
from engine.core.queue import CandidateQueue
from engine.core.sessions import loop_session
from engine.core.skill import SkillDoc
from engine.core.store import SkillStore, unified_diff
from engine.core.workspace import Workspace
from engine.evaluation.gates.submission import submit_candidate
from engine.evaluation.traces import Trace, load_trace, normalise, progress
from engine.loops.online.library import ExistingSkill, existing_skills, is_skill_load
from engine.loops.online.policy import writes_skill_file
from engine.loops.online.reconciler import significant_words
from engine.loops.online.spec import SkillSpec, render_update, spec_of
from engine.loops.online.watch import session_files

ProposalKind = Literal["merge", "archive"]
APPROVAL = "curation proposals are always decided by a person"
_UNDECIDED = ("proposed", "pending_eval", "pending_approval")
DAY_S = 86_400.0


@dataclass
class SkillUsage:
    skill: str
    name: str
    pinned: bool
    loaded: int = 0
    used: int = 0
    patched: int = 0
    versions: int = 0
    last_activity: str | None = None
    idle_days: float | None = None
    stale: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Overlap:
    """Two skills that teach much the same: shared steps, or mostly the same words."""

    a: str
    b: str
    score: float
    shared_steps: int
    word_jaccard: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class CurationProposal:
    kind: ProposalKind
    skill: str
    reason: str
    absorbed: str | None = None
    candidates: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class CurationReport:
    transcripts: int
    unreadable: list[str]
    usage: list[SkillUsage]
    overlaps: list[Overlap]
    proposals: list[CurationProposal]
    session_log: str = ""  # the session's event log, when :func:`run` made the report

    @property
    def headline(self) -> str:
        """The pass in one line: what was read and what it proposes."""
        stale = sum(1 for u in self.usage if u.stale)
        return (
            f"{self.transcripts} transcript(s), {len(self.usage)} skill(s), {stale} stale, "
            f"{len(self.overlaps)} overlap(s), {len(self.proposals)} proposal(s)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "transcripts": self.transcripts,
            "unreadable": self.unreadable,
            "usage": [u.to_dict() for u in self.usage],
            "overlaps": [o.to_dict() for o in self.overlaps],
            "proposals": [p.to_dict() for p in self.proposals],
            "session_log": self.session_log,
        }


@dataclass(frozen=True)
class CurateOptions:
    transcripts: tuple[str, ...] = ()  # more transcript files or folders besides runs/*/sessions
    propose: bool = True  # False: report only, queue nothing


# -- usage -------------------------------------------------------------------------------------


def default_transcripts(ws: Workspace) -> list[Path]:
    """The sessions of every evaluation run (``runs/*/sessions/*.jsonl``)."""
    if not ws.runs_dir.is_dir():
        return []
    return sorted(ws.runs_dir.glob("*/sessions/*.jsonl"))


def _iso(timestamp: float) -> str:
    moment = dt.datetime.fromtimestamp(timestamp, dt.UTC).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


def _stamp(text: str) -> float | None:
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _loads(trace: Trace, skill: ExistingSkill) -> bool:
    marker = f"skills/{skill.folder}/skill.md"
    for call in trace.calls:
        if is_skill_load(call.name, call.args, skill.names):
            return True
        if call.name.lower() in ("read", "view", "cat") and marker in call.args.lower():
            return True
    return False


def _patches(trace: Trace, skill: ExistingSkill) -> bool:
    marker = f"skills/{skill.folder}/skill.md"
    return any(
        marker in call.args.lower() and writes_skill_file(call.name, call.args)
        for call in trace.calls
    )


def _usage(
    ws: Workspace,
    skills: Sequence[ExistingSkill],
    traces: Sequence[tuple[Trace, float]],
    now: float,
    stale_after_days: float,
) -> list[SkillUsage]:
    rows: list[SkillUsage] = []
    for skill in skills:
        row = SkillUsage(skill.folder, skill.name, skill.pinned)
        steps = SkillDoc.parse_lenient(skill.text)[0].steps
        active: list[float] = []
        for trace, when in traces:
            if _loads(trace, skill):
                row.loaded += 1
                active.append(when)
                if progress(trace, steps).evidenced:
                    row.used += 1
            if _patches(trace, skill):
                row.patched += 1
                active.append(when)
        versions = SkillStore(ws, skill.folder).versions()
        row.versions = len(versions)
        row.patched += max(0, len(versions) - 1)
        published = [t for t in (_stamp(v.created_at) for v in versions[1:]) if t is not None]
        created = _stamp(versions[0].created_at) if versions else None
        if created is None:
            created = ws.skill_path(skill.folder).stat().st_mtime
        anchor = max([*active, *published], default=created)
        row.last_activity = _iso(max(active + published)) if active or published else None
        row.idle_days = round(max(0.0, now - anchor) / DAY_S, 1)
        row.stale = row.idle_days > stale_after_days
        rows.append(row)
    return rows


# -- overlap -----------------------------------------------------------------------------------


def _content_words(spec: SkillSpec) -> set[str]:
    return significant_words(" ".join([spec.description, spec.when_to_use, *spec.steps]))


def _step_keys(spec: SkillSpec) -> list[str]:
    return [normalise(s).lower() for s in spec.steps]


def overlaps(specs: dict[str, SkillSpec], minimum: float) -> list[Overlap]:
    """Pairs whose shared steps (of the shorter list) or word Jaccard reach ``minimum``."""
    found: list[Overlap] = []
    names = sorted(specs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            sa, sb = specs[a], specs[b]
            wa, wb = _content_words(sa), _content_words(sb)
            jaccard = len(wa & wb) / len(wa | wb) if wa | wb else 0.0
            shared = len(set(_step_keys(sa)) & set(_step_keys(sb)))
            share = shared / min(len(sa.steps), len(sb.steps)) if sa.steps and sb.steps else 0.0
            score = round(max(jaccard, share), 3)
            if score >= minimum:
                found.append(Overlap(a, b, score, shared, round(jaccard, 3)))
    return sorted(found, key=lambda o: (-o.score, o.a, o.b))


def merged_spec(umbrella: SkillSpec, absorbed: SkillSpec) -> SkillSpec:
    """The umbrella plus the absorbed skill's steps and pitfalls it does not have yet."""
    have = set(_step_keys(umbrella))
    steps = [*umbrella.steps, *(s for s in absorbed.steps if normalise(s).lower() not in have)]
    pitfalls = list(dict.fromkeys([*umbrella.pitfalls, *absorbed.pitfalls]))
    when = umbrella.when_to_use
    if absorbed.when_to_use and normalise(absorbed.when_to_use) not in normalise(when):
        when = f"{when}\n{absorbed.when_to_use}".strip()
    return SkillSpec(umbrella.name, umbrella.description, when, tuple(steps), tuple(pitfalls))


# -- proposals ---------------------------------------------------------------------------------


class _Proposer:
    """Submits proposals through the candidate gates, once, never for a pinned skill."""

    def __init__(self, ws: Workspace, log: SessionLog | None) -> None:
        self.ws = ws
        self.log = log
        self.waiting = {
            (c.skill, c.operation, c.summary)
            for c in CandidateQueue(ws).list()
            if c.source == "curate" and c.status in _UNDECIDED
        }

    def submit(
        self, proposal: CurationProposal, skill: str, text: str | None, summary: str, rule: str
    ) -> bool:
        operation: Literal["update", "delete"] = "delete" if text is None else "update"
        if (skill, operation, summary) in self.waiting:
            proposal.skipped = "the same proposal is already waiting in the queue"
            return False
        store = SkillStore(self.ws, skill)
        parent = store.ensure_adopted()
        if parent is None:
            proposal.skipped = f"skill {skill} has no version to start from"
            return False
        diff = unified_diff(store.read(parent), text or "")
        if store.taboo().contains(rule, diff):
            proposal.skipped = "a person rejected this proposal before (taboo)"
            return False
        cand, decision = submit_candidate(
            self.ws,
            skill,
            text,
            source="curate",
            operation=operation,
            parent_version=parent,
            summary=summary,
            patch=diff,
            rule_id=rule,
            approval_required=APPROVAL,
            provenance={"curation": proposal.kind, "reason": proposal.reason},
        )
        row = {"id": cand.id, "skill": skill, "operation": operation, "status": cand.status}
        proposal.candidates.append(row | {"reason": decision.reason})
        if self.log is not None:
            self.log.emit("candidate_queued", **row)
        return True


def _umbrella(a: SkillUsage, b: SkillUsage, specs: dict[str, SkillSpec]) -> tuple[str, str]:
    """The skill that absorbs the other: more loads, then more steps, then the name first."""
    ranked = sorted((a, b), key=lambda u: (-u.loaded, -u.used, -len(specs[u.skill].steps), u.skill))
    return ranked[0].skill, ranked[1].skill


def curate(
    ws: Workspace,
    *,
    transcripts: Iterable[Path] | None = None,
    propose: bool = True,
    now: dt.datetime | None = None,
    log: SessionLog | None = None,
) -> CurationReport:
    """Report usage, overlap and staleness; queue merge and archive proposals if ``propose``."""
    cfg = ws.load_config().curation
    clock = (now or dt.datetime.now(dt.UTC)).timestamp()
    skills = existing_skills(ws, excerpt_chars=-1)
    paths = list(transcripts) if transcripts is not None else default_transcripts(ws)
    traces: list[tuple[Trace, float]] = []
    unreadable: list[str] = []
    for done, path in enumerate(paths, start=1):
        try:
            traces.append((load_trace(path), path.stat().st_mtime))
        except (FormatError, OSError) as exc:
            unreadable.append(str(exc))
        if log is not None:  # the transcripts are its units: the job bar counts them
            log.emit("progress", done=done, total=len(paths), label="reading transcripts")
    usage = _usage(ws, skills, traces, clock, cfg.stale_after_days)
    by_skill = {u.skill: u for u in usage}
    texts = {s.folder: s.text for s in skills}
    specs = {s.folder: spec_of(SkillDoc.parse_lenient(s.text)[0], s.name) for s in skills}
    pairs = overlaps(specs, cfg.overlap_min)
    proposals: list[CurationProposal] = []
    touched: set[str] = set()
    for pair in pairs:
        keep, drop = _umbrella(by_skill[pair.a], by_skill[pair.b], specs)
        reason = f"{pair.a} and {pair.b} overlap ({pair.score:.0%}); merge {drop} into {keep}"
        proposal = CurationProposal("merge", keep, reason, absorbed=drop)
        proposals.append(proposal)
        if by_skill[keep].pinned or by_skill[drop].pinned:
            proposal.skipped = "a pinned skill is never touched by automation"
        elif keep in touched or drop in touched:
            proposal.skipped = "one of them is already in another proposal of this pass"
        if proposal.skipped:
            continue
        touched.update((keep, drop))
        if propose:
            _merge(ws, proposal, keep, drop, texts, specs, log)
    for row in usage:
        if not row.stale or row.skill in touched:
            continue  # a skill in a merge is archived (or kept) by that merge
        reason = f"not loaded or patched for {row.idle_days:g} days (> {cfg.stale_after_days:g})"
        proposal = CurationProposal("archive", row.skill, reason)
        proposals.append(proposal)
        if row.pinned:
            proposal.skipped = "a pinned skill is never touched by automation"
        elif propose:
            summary = f"curate: archive stale skill {row.skill}"
            _Proposer(ws, log).submit(proposal, row.skill, None, summary, "curate-archive")
    report = CurationReport(len(traces), unreadable, usage, pairs, proposals)
    if log is not None:
        log.emit("message", report=report.to_dict())
    return report


def _merge(
    ws: Workspace,
    proposal: CurationProposal,
    keep: str,
    drop: str,
    texts: dict[str, str],
    specs: dict[str, SkillSpec],
    log: SessionLog | None,
) -> None:
    proposer = _Proposer(ws, log)
    merged = merged_spec(specs[keep], specs[drop])
    try:
        text = render_update(texts[keep], merged)
    except FormatError as exc:
        proposal.skipped = f"cannot merge into {keep}: {exc}"
        return
    archive = f"curate: archive {drop} (merged into {keep})"
    if text == texts[keep]:
        proposal.reason += f"; {keep} already has every step and pitfall of {drop}"
        proposer.submit(proposal, drop, None, archive, "curate-archive")
    elif proposer.submit(proposal, keep, text, f"curate: merge {drop} into {keep}", "curate-merge"):
        proposer.submit(proposal, drop, None, archive, "curate-archive")


__all__ = [
    "CurationProposal",
    "CurationReport",
    "Overlap",
    "SkillUsage",
    "curate",
    "default_transcripts",
    "merged_spec",
    "overlaps",
]


def run(
    ws: Workspace,
    options: CurateOptions,
    *,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> CurationReport:
    """The curate loop in the shape of every loop: one session around :func:`curate`."""
    ws.load_config()
    if cancel is not None:
        cancel.check()
    paths = default_transcripts(ws)
    paths += [path for item in options.transcripts for path in session_files(Path(item))]
    with loop_session(
        ws, "curate", reporter=reporter, transcripts=len(paths), propose=options.propose
    ) as log:
        report = curate(ws, transcripts=paths, propose=options.propose, log=log)
        report = dataclasses.replace(report, session_log=str(log.path))
        log.emit("finished", proposals=len(report.proposals), headline=report.headline)
    return report
