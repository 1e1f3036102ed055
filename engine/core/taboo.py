"""The taboo list: signatures of patches that were rejected, so nobody proposes them again.

The outcome-driven design keeps one ``taboo.json`` per skill, shared by every branch and never
cleared by a rollback: a lesson learnt on v3 still holds after going back to v2. A signature is
the rule that motivated the patch plus a hash of the patch itself; the hash is taken over a
normalised diff so the same edit produced by ``git diff`` and by ``difflib`` (timestamps, ``index``
lines, CRLF, trailing blanks) is recognised as the same edit.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import FormatError
from engine.core.schema import from_mapping, to_mapping

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
    """A view over one skill's ``taboo.json``; writes go through the owning store's journal."""

    def __init__(
        self, path: Path, append: Callable[[TabooEntry], TabooEntry], now: Callable[[], str]
    ):
        self.path = path
        self._append = append
        self._now = now

    def entries(self) -> list[TabooEntry]:
        return read_taboo(self.path)

    def find(self, rule_id: str, diff: str) -> TabooEntry | None:
        wanted = diff_hash(diff)
        for entry in self.entries():
            if entry.rule_id == rule_id and entry.diff_hash == wanted:
                return entry
        return None

    def contains(self, rule_id: str, diff: str) -> bool:
        return self.find(rule_id, diff) is not None

    def add(self, rule_id: str, diff: str, reason: str) -> TabooEntry:
        """Record a rejected patch; a signature already on the list is returned as it was."""
        entry = TabooEntry(
            rule_id=rule_id, diff_hash=diff_hash(diff), reason=reason, recorded_at=self._now()
        )
        return self._append(entry)
