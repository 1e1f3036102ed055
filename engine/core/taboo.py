"""The taboo list: signatures of patches that were rejected, so nobody proposes them again.

The outcome-driven design keeps one ``taboo.json`` per skill, shared by every branch and never
cleared by a rollback: a lesson learnt on v3 still holds after going back to v2. A signature is
the rule that motivated the patch plus a hash of the patch itself; the hash is taken over a
normalised diff so the same edit produced by ``git diff`` and by ``difflib`` (timestamps, ``index``
lines, CRLF, trailing blanks) is recognised as the same edit.

An entry made by a gate records the gate and the thresholds it judged with (``gates.alpha``,
``gates.verify_max_drop`` …). A threshold is the user's statement of what is good enough; once it
changes, the old verdict answered another question, so the entry stops blocking (it stays listed,
marked, for the record). ``skillsmith taboo clear`` removes entries by hand, with an audit line in
the skill's timeline.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.core.errors import FormatError
from engine.core.schema import from_mapping, to_mapping

if TYPE_CHECKING:
    from engine.core.config import Config

Thresholds = Mapping[str, Mapping[str, float]]

_NOISE_LINE = re.compile(r"^(index [0-9a-fA-F]+\.\.[0-9a-fA-F]+.*|diff --git .*)$")
_STAMP = re.compile(
    r"^((?:---|\+\+\+) .*?)(?:\t.*|\s+\d{4}-\d\d-\d\d[ T][\d:.]+(?:\s*[+-]\d{4}|Z)?)$"
)


@dataclass(frozen=True)
class TabooEntry:
    rule_id: str
    diff_hash: str
    reason: str
    recorded_at: str
    gate: str | None = None  # the gate that rejected the patch, when a gate did
    thresholds: dict[str, float] | None = None  # the settings that gate judged with

    def stale(self, current: Thresholds) -> dict[str, tuple[float, float | None]]:
        """The recorded thresholds that differ from ``current`` (name: (then, now)); an entry
        with any is stale and blocks nothing."""
        now = current.get(self.gate or "", {})
        return {k: (v, now.get(k)) for k, v in (self.thresholds or {}).items() if now.get(k) != v}


def gate_thresholds(cfg: Config) -> dict[str, dict[str, float]]:
    """The settings each threshold gate judges with, by gate name (what an entry records)."""
    g = cfg.gates
    alpha = {"gates.alpha": g.alpha}
    return {
        "target": alpha,
        "guardrail": alpha,
        "holdout": {**alpha, "gates.holdout_max_f1_drop": g.holdout_max_f1_drop},
        "verify": {"gates.verify_max_drop": g.verify_max_drop},
        "effectiveness": {"gates.effectiveness_min_score": g.effectiveness_min_score},
    }


def normalise_diff(diff: str) -> str:
    """The parts of a unified diff that describe the edit, in one canonical spelling."""
    lines: list[str] = []
    for raw in diff.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = raw.rstrip()
        if _NOISE_LINE.match(line):
            continue
        stamped = _STAMP.match(line)
        if stamped:  # "--- a/SKILL.md\t2026-05-27 14:30:00 +0800": keep the name, drop the time
            line = stamped.group(1)
        lines.append(line)
    return "\n".join(lines).strip("\n") + "\n"


def diff_hash(diff: str) -> str:
    """First 16 hex of the sha256 of the normalised diff (the article's patch fingerprint)."""
    return hashlib.sha256(normalise_diff(diff).encode("utf-8")).hexdigest()[:16]


def read_taboo(path: Path) -> list[TabooEntry]:
    """Entries of a ``taboo.json``; a damaged file is a one-line error, never silently empty."""
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(path, None, f"expected a JSON list of taboo entries ({exc})") from None
    if not isinstance(data, list):
        raise FormatError(path, None, "expected a JSON list of taboo entries")
    return [from_mapping(TabooEntry, item, path, f"[{i}]") for i, item in enumerate(data)]


def taboo_records(entries: list[TabooEntry]) -> list[dict[str, str]]:
    return [to_mapping(e) for e in entries]


class TabooList:
    """A view over one skill's ``taboo.json``; writes go through the owning store's journal.

    ``current`` gives the workspace's thresholds now: :meth:`entries` (what every proposer and
    filter consults) holds only the entries that still block; :meth:`listed` holds them all.
    """

    def __init__(
        self,
        path: Path,
        append: Callable[[TabooEntry], TabooEntry],
        now: Callable[[], str],
        current: Callable[[], Thresholds] = dict,
    ):
        self.path = path
        self._append = append
        self._now = now
        self._current = current

    def listed(self) -> list[TabooEntry]:
        """Every entry on file, stale ones included (see :meth:`TabooEntry.stale`)."""
        return read_taboo(self.path)

    def thresholds(self) -> Thresholds:
        return self._current()

    def entries(self) -> list[TabooEntry]:
        """The entries that still block: made under today's thresholds, or by no threshold."""
        entries = self.listed()
        if not any(e.thresholds for e in entries):
            return entries
        current = self._current()
        return [e for e in entries if not e.stale(current)]

    def find(self, rule_id: str, diff: str) -> TabooEntry | None:
        wanted = diff_hash(diff)
        for entry in self.entries():
            if entry.rule_id == rule_id and entry.diff_hash == wanted:
                return entry
        return None

    def contains(self, rule_id: str, diff: str) -> bool:
        return self.find(rule_id, diff) is not None

    def add(self, rule_id: str, diff: str, reason: str, gate: str | None = None) -> TabooEntry:
        """Record a rejected patch; a signature already on the list is returned as it was.

        ``gate`` names the gate that rejected it; its thresholds now are recorded with it."""
        thresholds = self._current().get(gate or "")
        entry = TabooEntry(
            rule_id=rule_id,
            diff_hash=diff_hash(diff),
            reason=reason,
            recorded_at=self._now(),
            gate=gate,
            thresholds=dict(thresholds) if thresholds else None,
        )
        return self._append(entry)
