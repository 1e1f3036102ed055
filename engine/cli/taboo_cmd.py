"""``skillsmith taboo SKILL`` lists a skill's taboo entries; ``taboo clear SKILL [ID]`` removes
them. An entry is identified by its diff hash (any unique prefix of at least 4 characters); each
removal leaves a ``taboo_remove`` line, with the reason, in the skill's timeline."""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli import print_json, wants_json, workspace_of
from engine.core.errors import SkillsmithError, UsageError
from engine.core.schema import to_mapping
from engine.core.store import SkillStore
from engine.core.taboo import TabooEntry, Thresholds

_MIN_ID = 4


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "taboo",
        parents=[common],
        help="list a skill's taboo entries; 'taboo clear SKILL [ID]' removes them",
    )
    p.add_argument(
        "words",
        nargs="+",
        metavar="SKILL | clear SKILL [ID]",
        help="a skill to list, or 'clear', the skill and optionally one entry's ID (its diff "
        "hash, or a prefix of at least 4 characters); without an ID every entry goes",
    )
    p.add_argument("--why", default="cleared by hand", help="reason, kept in the audit log")
    p.set_defaults(func=_taboo)


def _taboo(args: argparse.Namespace) -> int:
    words: list[str] = args.words
    clear = words[0] == "clear" and len(words) > 1
    rest = words[1:] if clear else words
    if len(rest) > (2 if clear else 1):
        raise UsageError(f"taboo: unexpected {' '.join(rest[2 if clear else 1 :])!r}")
    ws = workspace_of(args)
    ws.load_config()
    skill = rest[0]
    if skill not in ws.skill_names() and not (ws.history_dir / skill).is_dir():
        raise SkillsmithError(f"{ws.skills_dir}: no skill {skill!r}")
    store = SkillStore(ws, skill)
    if clear:
        return _clear(args, store, rest[1] if len(rest) > 1 else None)
    return _list(args, store)


def _state(entry: TabooEntry, current: Thresholds) -> str:
    stale = entry.stale(current)
    if not stale:
        return "blocks"
    changed = ", ".join(
        f"{k} {then:g} → {now if now is None else f'{now:g}'}" for k, (then, now) in stale.items()
    )
    return f"no longer blocks ({changed})"


def _list(args: argparse.Namespace, store: SkillStore) -> int:
    taboo = store.taboo()
    entries, current = taboo.listed(), taboo.thresholds()
    if wants_json(args):
        print_json([{**to_mapping(e), "blocks": not e.stale(current)} for e in entries])
        return 0
    if not entries:
        print(f"{store.name}: no taboo entries")
    for e in entries:
        by = f" by {e.gate}" if e.gate else ""
        print(f"{e.diff_hash}  {e.rule_id}  {e.recorded_at}{by}  {_state(e, current)}")
        print(f"    {e.reason}")
    return 0


def _clear(args: argparse.Namespace, store: SkillStore, wanted: str | None) -> int:
    entries = store.taboo().listed()
    if wanted is not None:
        if len(wanted) < _MIN_ID:
            raise UsageError(f"taboo clear: ID {wanted!r}: give at least {_MIN_ID} characters")
        entries = [e for e in entries if e.diff_hash.startswith(wanted)]
        if not entries:
            raise SkillsmithError(f"{store.taboo_path}: no taboo entry {wanted!r}")
        if len({e.diff_hash for e in entries}) > 1:
            raise UsageError(f"taboo clear: ID {wanted!r} names more than one entry")
    for entry in entries:
        store.remove_taboo(entry, why=f"taboo clear: {args.why}")
    if wants_json(args):
        print_json({"skill": store.name, "cleared": [to_mapping(e) for e in entries]})
    else:
        print(
            f"{store.name}: cleared {len(entries)} taboo entr{'y' if len(entries) == 1 else 'ies'}"
        )
    return 0
