"""Patch signatures and how they meet the taboo list.

The article fingerprints a patch by the rule that motivated it, the direction of the failures it
targets (FN / FP / fail) and a hash of the diff. The store's ``taboo.json`` entries carry
``rule_id`` and ``diff_hash`` only, so the direction travels inside ``rule_id`` as
``"<rule_id>:<direction>"`` (:func:`taboo_rule`). Whoever records a rejected proposal passes
``proposal.taboo_rule`` as the rule id; entries recorded with a bare rule id still match by hash.

Two checks use the list: before a model is asked, a (rule, direction) pair that already has a
rejected patch is skipped (the model would only circle the same idea; the article saves the call);
after a diff exists, its exact hash is refused whatever rule it was proposed for, because the
gates judged the edit, not the reason given for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.core.taboo import TabooEntry, diff_hash

_SEP = ":"


def taboo_rule(rule_id: str, direction: str) -> str:
    """The ``rule_id`` a taboo entry gets for a patch of ``rule_id`` against ``direction``."""
    return f"{rule_id}{_SEP}{direction}" if direction else rule_id


def split_taboo_rule(value: str) -> tuple[str, str | None]:
    """``(rule_id, direction)`` of a taboo entry's rule id; None when it names no direction."""
    rule, sep, direction = value.rpartition(_SEP)
    return (rule, direction) if sep and rule and direction else (value, None)


def signature(rule_id: str, direction: str, diff: str) -> str:
    """The patch fingerprint: ``<rule_id>:<direction>:<diff_hash>``."""
    return f"{taboo_rule(rule_id, direction)}{_SEP}{diff_hash(diff)}"


def blocking_entry(
    entries: Iterable[TabooEntry], rule_id: str, direction: str
) -> TabooEntry | None:
    """A rejected patch of the same rule and direction, if one is on the list."""
    for entry in entries:
        if split_taboo_rule(entry.rule_id) == (rule_id, direction):
            return entry
    return None


def same_edit(entries: Iterable[TabooEntry], diff: str) -> TabooEntry | None:
    """The taboo entry of exactly this edit (by normalised diff hash), if any."""
    wanted = diff_hash(diff)
    return next((e for e in entries if e.diff_hash == wanted), None)
