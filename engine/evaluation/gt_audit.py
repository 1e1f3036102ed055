"""Ground-truth audit: doubt the label before bending the skill to it.

A wrong label turns a right answer into a "failure"; evolving the skill to satisfy it makes the
skill worse. Each failing case gets a 0–1 suspicion score from five deterministic signals,
weighted (``DiagnosisConfig.gt_audit``); a score ≥ 0.5 flags the case. Flagged cases are never
dropped — they stay in every gate, selectively ignoring data is its own bias — but the proposer
is told not to fit them. Types whose cases carry contradictory labels, and near-identical
statements labelled differently, are reported as data-quality problems.

The signals:

1. consistent_disagreement — every run gives the same verdict, and it is not the label;
2. cross_version_disagreement — at least two skill versions (or skill and baseline) each reach
   that same contrary verdict: the label is the odd one out, not one skill's blind spot;
3. evidenced_conclusion — the failing runs concluded confidently from a clean trace (all
   checkable skill steps evidenced, no rule hit, no hedging words);
4. similar_case_contradiction — a near-identical statement of the same type carries the label
   the agent gave;
5. type_label_outlier — the label is a small minority within its type and the agent gave the
   type's majority label.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.benchmark import Benchmark, normalise_label
from engine.core.config import GtAuditConfig
from engine.core.fsutil import iter_files
from engine.evaluation.diagnosis.attribution import FAILURE_OUTCOMES, CaseDiagnosis, Diagnosis
from engine.evaluation.diagnosis.run import LoadedRun
from engine.evaluation.similar_texts import shingles, similar_pairs
from engine.evaluation.traces import TraceSummary

SIGNALS = (
    "consistent_disagreement",
    "cross_version_disagreement",
    "evidenced_conclusion",
    "similar_case_contradiction",
    "type_label_outlier",
)
# Enough text to compare statements; a case is rarely told apart only after its first 50 KB.
TEXT_KEEP = 50_000


@dataclass(frozen=True)
class Observation:
    """One graded attempt at a case, by one skill version."""

    case_id: str
    version: str
    verdict: str | None
    label: str | None
    failed: bool
    case_type: str | None = None
    summary: TraceSummary | None = None
    rule_ids: tuple[str, ...] = ()

    @property
    def disagrees(self) -> bool:
        return self.verdict is not None and self.label is not None and self.verdict != self.label


@dataclass(frozen=True)
class CaseFacts:
    """What the benchmark says about a case: its label, its type, its statement text."""

    case_id: str
    label: str | None
    case_type: str | None = None
    text: str = ""


@dataclass(frozen=True)
class Suspicion:
    case_id: str
    score: float
    flagged: bool
    signals: dict[str, float]
    reasons: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "score": self.score,
            "flagged": self.flagged,
            "signals": self.signals,
            "reasons": self.reasons,
        }


@dataclass(frozen=True)
class GtAudit:
    threshold: float
    suspicions: list[Suspicion]
    data_quality: list[dict[str, Any]] = field(default_factory=list)

    @property
    def flagged_case_ids(self) -> list[str]:
        return [s.case_id for s in self.suspicions if s.flagged]

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "flagged_case_ids": self.flagged_case_ids,
            "suspicions": [s.to_dict() for s in self.suspicions],
            "data_quality": self.data_quality,
        }

    def prompt_note(self, max_chars: int = 500) -> str:
        """The proposer's warning (the article's ~0.5 KB GT audit input)."""
        flagged = [s for s in self.suspicions if s.flagged]
        if not flagged:
            return "No case is suspected of a wrong label."
        lines = ["These cases may carry wrong labels; do not bend SKILL.md to fit them:"]
        lines += [f"- {s.case_id} ({s.score:.2f}): {'; '.join(s.reasons[:2])}" for s in flagged]
        text = "\n".join(lines)
        return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------


def _norm(value: str | None) -> str | None:
    return None if value is None else normalise_label(str(value)) or None


def observations(
    diagnosis: Diagnosis, version: str | Callable[[CaseDiagnosis], str]
) -> list[Observation]:
    """The graded rows of one diagnosed run; ``version`` names the skill version of each row."""
    name_of = version if callable(version) else (lambda c: f"{version}:{c.variant}")
    return [
        Observation(
            case_id=c.case_id,
            version=name_of(c),
            verdict=_norm(c.verdict),
            label=_norm(c.ground_truth),
            failed=c.outcome in FAILURE_OUTCOMES,
            case_type=c.case_type,
            summary=c.summary,
            rule_ids=tuple(c.rule_ids),
        )
        for c in diagnosis.cases
        if c.outcome != "invalid"
    ]


def _statement_text(folder: Path) -> str:
    parts: list[str] = []
    size = 0
    for file in iter_files(folder):
        try:
            text = file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(text)
        size += len(text)
        if size >= TEXT_KEEP:
            break
    return "\n".join(parts)[:TEXT_KEEP]


def facts_of(bench: Benchmark) -> dict[str, CaseFacts]:
    return {
        case.id: CaseFacts(
            case_id=case.id,
            label=case.expected_label,
            case_type=case.rubric.type,
            text=_statement_text(case.statement_dir),
        )
        for case in bench.cases
    }


def facts_from_observations(obs: Iterable[Observation]) -> dict[str, CaseFacts]:
    """Labels and types as the results rows state them (no statement texts)."""
    facts: dict[str, CaseFacts] = {}
    for o in obs:
        if o.case_id not in facts or facts[o.case_id].label is None:
            facts[o.case_id] = CaseFacts(o.case_id, o.label, o.case_type)
    return facts


# ---------------------------------------------------------------------------------------------
# Similarity
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# The audit
# ---------------------------------------------------------------------------------------------


def _majority(values: Iterable[str | None]) -> str | None:
    counts = Counter(v for v in values if v is not None)
    if not counts:
        return None
    (top, n), *rest = counts.most_common()
    return None if rest and rest[0][1] == n else top


def _clean(o: Observation, hedges: Sequence[str]) -> bool:
    s = o.summary
    if s is None or o.rule_ids or s.conclusion is None:
        return False
    if s.stats.result is not None and s.stats.result.is_error:
        return False
    if s.progress.steps_known and (s.progress.missing or s.progress.skipped):
        return False
    if s.stats.tool_calls_total == 0:
        return False
    excerpt = s.final_excerpt.casefold()
    return not any(h.casefold() in excerpt for h in hedges)


class _Auditor:
    def __init__(
        self, obs: Sequence[Observation], facts: Mapping[str, CaseFacts], cfg: GtAuditConfig
    ) -> None:
        self.cfg = cfg
        self.facts = facts
        self.by_case: dict[str, list[Observation]] = defaultdict(list)
        for o in obs:
            self.by_case[o.case_id].append(o)
        self.by_type: dict[str, list[str]] = defaultdict(list)
        for cid in sorted(facts):
            if facts[cid].case_type:
                self.by_type[str(facts[cid].case_type)].append(cid)
        sets = {cid: shingles(f.text) for cid, f in facts.items() if f.text}
        self._similar = similar_pairs(sets, cfg.similarity_min)
        self._labels = {cid: self._label(cid) for cid in set(facts) | set(self.by_case)}
        self._type_labels = {
            kind: Counter(self._labels[c] for c in members)
            for kind, members in self.by_type.items()
        }

    def label(self, case_id: str) -> str | None:
        return self._labels.get(case_id)

    def _label(self, case_id: str) -> str | None:
        fact = self.facts.get(case_id)
        if fact is not None and fact.label is not None:
            return _norm(fact.label)
        return _majority(o.label for o in self.by_case.get(case_id, []))

    def peers(self, case_id: str) -> dict[str, float]:
        """The near-identical statements of the case's own type (of any, for an untyped case),
        with their similarity."""
        kind = self.facts[case_id].case_type if case_id in self.facts else None
        near = self._similar.get(case_id, {})
        if not kind:
            return near
        return {
            c: sim for c, sim in near.items() if c in self.facts and self.facts[c].case_type == kind
        }

    def score(self, case_id: str) -> Suspicion:
        cfg = self.cfg
        label = self.label(case_id)
        obs = [o for o in self.by_case.get(case_id, []) if o.verdict is not None]
        verdict = _majority(o.verdict for o in obs)
        values = dict.fromkeys(SIGNALS, 0.0)
        reasons: list[str] = []

        verdicts = {o.verdict for o in obs}
        if label is not None and len(obs) >= 2 and len(verdicts) == 1 and verdict != label:
            values["consistent_disagreement"] = 1.0
            reasons.append(f"all {len(obs)} runs say {verdict!r}, label {label!r}")

        versions: dict[str, list[Observation]] = defaultdict(list)
        for o in obs:
            versions[o.version].append(o)
        tops = {v: _majority(o.verdict for o in group) for v, group in versions.items()}
        if (
            label is not None
            and len(tops) >= 2
            and len(set(tops.values())) == 1
            and None not in tops.values()
            and verdict != label
        ):
            values["cross_version_disagreement"] = 1.0
            skills = len(tops) - ("no-skill" in tops)
            who = f"{skills} skill version{'s' if skills != 1 else ''}"
            if "no-skill" in tops:
                who += " and the baseline without skills"
            reasons.append(f"{who} all say {verdict!r}")

        failing = [o for o in obs if o.failed]
        clean = [o for o in failing if _clean(o, cfg.hedge_words)]
        if failing and clean:
            values["evidenced_conclusion"] = round(len(clean) / len(failing), 4)
            reasons.append(
                f"{len(clean)}/{len(failing)} failing runs concluded from a clean, evidenced trace"
            )

        if verdict is not None:
            best: tuple[float, str] | None = None
            for other, sim in sorted(self.peers(case_id).items()):
                if self.label(other) == verdict and (best is None or sim > best[0]):
                    best = (sim, other)
            if best is not None:
                values["similar_case_contradiction"] = 1.0
                reasons.append(f"near-identical case {best[1]} ({best[0]:.2f}) is {verdict!r}")

        kind = self.facts[case_id].case_type if case_id in self.facts else None
        members = self.by_type.get(str(kind), []) if kind else []
        if label is not None and len(members) >= cfg.min_type_cases:
            labels = self._type_labels[str(kind)]
            share = labels[label] / len(members)
            majority = _majority(labels.elements())
            if share <= cfg.outlier_max_share and majority is not None and verdict == majority:
                values["type_label_outlier"] = 1.0
                reasons.append(
                    f"only {labels[label]}/{len(members)} {kind!r} cases are {label!r}; "
                    f"the agent says {majority!r} like the rest"
                )

        weights = {
            "consistent_disagreement": cfg.w_consistent_disagreement,
            "cross_version_disagreement": cfg.w_cross_version_disagreement,
            "evidenced_conclusion": cfg.w_evidenced_conclusion,
            "similar_case_contradiction": cfg.w_similar_case_contradiction,
            "type_label_outlier": cfg.w_type_label_outlier,
        }
        total = round(sum(weights[k] * v for k, v in values.items()), 4)
        return Suspicion(case_id, total, total + 1e-9 >= cfg.flag_threshold, values, reasons)

    def data_quality(self) -> list[dict[str, Any]]:
        problems: list[dict[str, Any]] = []
        for kind, members in sorted(self.by_type.items()):
            groups: dict[str, list[str]] = defaultdict(list)
            for cid in members:
                lab = self.label(cid)
                if lab is not None:
                    groups[lab].append(cid)
            # a type that holds both labels in fair shares is by design (near-miss negatives
            # beside the real finds); only a label few of its type share points at a wrong one
            total = sum(len(v) for v in groups.values())
            outliers = sorted(
                lab for lab, v in groups.items() if len(v) / total <= self.cfg.outlier_max_share
            )
            if len(groups) > 1 and total >= self.cfg.min_type_cases and outliers:
                problems.append(
                    {
                        "problem": "contradictory_labels_in_type",
                        "case_type": kind,
                        "counts": {k: len(v) for k, v in sorted(groups.items())},
                        "labels": {k: v for k, v in sorted(groups.items())},
                        "outliers": outliers,
                    }
                )
        for a, near in sorted(self._similar.items()):
            for b, sim in sorted(near.items()):
                la, lb = self.label(a), self.label(b)
                if b <= a or la is None or lb is None or la == lb:
                    continue
                problems.append(
                    {
                        "problem": "near_identical_cases_labelled_differently",
                        "case_ids": [a, b],
                        "labels": [la, lb],
                        "similarity": round(sim, 4),
                    }
                )
        return problems


def audit(
    obs: Sequence[Observation],
    *,
    facts: Mapping[str, CaseFacts] | None = None,
    focus: Iterable[str] | None = None,
    config: GtAuditConfig | None = None,
) -> GtAudit:
    """Score every failing case (or those in ``focus``) and list data-quality problems."""
    cfg = config or GtAuditConfig()
    known = dict(facts) if facts is not None else {}
    for case_id, fact in facts_from_observations(obs).items():
        known.setdefault(case_id, fact)
    auditor = _Auditor(obs, known, cfg)
    targets = (
        sorted(set(focus)) if focus is not None else sorted({o.case_id for o in obs if o.failed})
    )
    scored = sorted((auditor.score(cid) for cid in targets), key=lambda s: (-s.score, s.case_id))
    return GtAudit(cfg.flag_threshold, scored, auditor.data_quality())


def audit_runs(
    runs: Sequence[tuple[LoadedRun, Diagnosis]],
    *,
    bench: Benchmark | None = None,
    focus: Iterable[str] | None = None,
    config: GtAuditConfig | None = None,
) -> GtAudit:
    """Audit over diagnosed runs (e.g. one per skill version); focus defaults to the first's
    failing cases, the run being diagnosed."""
    obs: list[Observation] = []
    for run, diagnosis in runs:
        obs += observations(diagnosis, _versions_of(run))
    if focus is None and runs:
        focus = runs[0][1].failing_case_ids
    return audit(
        obs, facts=facts_of(bench) if bench is not None else None, focus=focus, config=config
    )


def _versions_of(run: LoadedRun) -> Callable[[CaseDiagnosis], str]:
    def version(case: CaseDiagnosis) -> str:
        return run.version_of(case.variant)

    return version
