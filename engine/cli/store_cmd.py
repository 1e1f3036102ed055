"""``skillsmith history | publish | rollback | fork``: the version store from the command line."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import Any

from engine.cli import print_json, wants_json, workspace_of
from engine.core.admission import check_resources, check_skill, text_of
from engine.core.errors import SkillsmithError, UsageError
from engine.core.schema import to_mapping
from engine.core.skill import SKILL_FILE, resolve_skill_file
from engine.core.skill_folder import read_resources
from engine.core.store import SkillStore, split_version, version_label
from engine.core.vault import secret_values


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "history", parents=[common], help="versions, current pointer and timeline of a skill"
    )
    p.add_argument("skill", metavar="SKILL", help="the skill (its folder name under skills/)")
    p.add_argument("--branch", help="show a branch instead of the main line")
    p.set_defaults(func=_history)

    p = sub.add_parser(
        "publish", parents=[common], help="make a folder (or a SKILL.md text) the next version"
    )
    p.add_argument("skill", metavar="SKILL", help="the skill (its folder name under skills/)")
    p.add_argument(
        "file",
        type=Path,
        help="a skill folder, or the SKILL.md of a folder named SKILL: the whole folder becomes "
        "the version; any other file is a new SKILL.md text and keeps the other files",
    )
    p.add_argument("--why", required=True, help="reason, kept in the audit log")
    p.add_argument("--branch", help="publish on a branch (leaves the active skill alone)")
    p.set_defaults(func=_publish)

    p = sub.add_parser("rollback", parents=[common], help="point current at vK; nothing is deleted")
    p.add_argument("skill", metavar="SKILL", help="the skill (its folder name under skills/)")
    p.add_argument("version", help="vK, or BRANCH/vK for a branch's version")
    p.add_argument("--why", required=True, help="reason, kept in the audit log")
    p.add_argument("--branch", help="move a branch's pointer instead")
    p.set_defaults(func=_rollback)

    p = sub.add_parser("fork", parents=[common], help="start a branch sharing the taboo list")
    p.add_argument("skill", metavar="SKILL", help="the skill (its folder name under skills/)")
    p.add_argument(
        "branch", metavar="BRANCH", help="the new branch's name (its versions are kept apart)"
    )
    p.add_argument("--from", dest="source", help="fork a branch instead of the main line")
    p.set_defaults(func=_fork)


def _store(args: argparse.Namespace, branch: str | None) -> SkillStore:
    ws = workspace_of(args)
    ws.load_config()  # a broken skillsmith.yaml is reported before anything is touched
    return SkillStore(ws, args.skill, branch)


def _history(args: argparse.Namespace) -> int:
    store = _store(args, args.branch)
    current = store.ensure_adopted()
    if current is None:
        raise SkillsmithError(f"{store.skill_file}: no such skill (and no history)")
    versions = store.versions()
    data: dict[str, Any] = {
        "skill": store.name,
        "branch": store.branch,
        "current": current,
        "versions": [
            {**to_mapping(v), "path": str(v.path), "current": v.version == current}
            for v in versions
        ],
        "branches": store.branches(),
        "taboo": [to_mapping(e) for e in store.taboo().listed()],
        "audit": store.audit(),
        "timeline": store.timeline(),
    }
    if wants_json(args):
        print_json(data)
        return 0
    label = partial(version_label, store.branch)
    print(f"{store.name} ({store.branch or 'main'}): current {label(current)}")
    for v in versions:
        mark = "*" if v.version == current else " "
        print(f"{mark} {label(v.version):<5} {v.created_at:<21} {v.why}")
    if data["branches"]:
        print("branches: " + ", ".join(data["branches"]))
    print(f"taboo: {len(data['taboo'])} entries")
    print("timeline:")
    for row in data["timeline"]:
        print("  " + _describe(row))
    return 0


def _describe(row: dict[str, Any]) -> str:
    where = f"[{row['branch']}] " if row.get("branch") else ""
    op = row.get("op", "?")
    if op in ("publish", "rollback", "fork"):
        branch, frm = row.get("branch"), row.get("from")
        frm = "-" if frm is None else version_label(branch, frm)
        what = f"{frm} → {version_label(branch, row['to'])}  {row.get('why', '')}"
    elif op == "taboo_append":
        what = f"{row.get('rule_id')} {row.get('diff_hash')}  {row.get('reason', '')}"
    elif op == "candidate":
        what = f"{row.get('candidate')} {row.get('from_status')} → {row.get('to_status')}"
    elif op == "snapshot":
        what = f"{row.get('file')}  {row.get('note', '')}"
    else:
        what = " ".join(f"{k}={v}" for k, v in row.items() if k not in ("when", "op", "branch"))
    return f"{row.get('when', ''):<21} {where}{op:<12} {what}".rstrip()


def _publish(args: argparse.Namespace) -> int:
    store = _store(args, args.branch)
    path: Path = args.file
    # A folder is the whole new version; so is the SKILL.md of a folder named for the skill
    # (.claude/skills/pdf/SKILL.md). Any other file is only a new text: a loose SKILL.md in
    # /tmp must not make everything beside it part of the skill.
    inside = path.name == SKILL_FILE and path.resolve().parent.name == store.name
    folder = path if path.is_dir() else path.parent if inside else None
    file = resolve_skill_file(path)
    text = text_of(file)
    secrets = secret_values(store.ws)
    check_skill(text, skill=store.name, where=file, secrets=secrets)
    resources = None if folder is None else read_resources(folder)
    if resources is not None:
        check_resources(resources, folder=folder or file.parent, secrets=secrets)
    version = store.publish(
        text,
        why=args.why,
        provenance={"source": "manual", "file": str(file.resolve())},
        resources=resources,
    )
    if wants_json(args):
        print_json({"skill": store.name, "branch": store.branch, "version": version})
    else:
        where = " (main)" if store.branch is None else ""
        print(f"published {store.name} {version_label(store.branch, version)}{where}")
    return 0


def _rollback(args: argparse.Namespace) -> int:
    named, version = split_version(args.version)
    if named is not None and args.branch not in (None, named):
        raise UsageError(
            f"{args.version}: a version of branch {named}, not of --branch {args.branch}"
        )
    store = _store(args, named or args.branch)
    before = store.ensure_adopted()
    store.rollback(version, why=args.why)
    if wants_json(args):
        print_json({"skill": store.name, "branch": store.branch, "from": before, "to": version})
    else:
        label = partial(version_label, store.branch)
        print(
            f"{store.name} ({store.branch or 'main'}): current {label(before or '-')} → "
            f"{label(version)}"
        )
    return 0


def _fork(args: argparse.Namespace) -> int:
    store = _store(args, args.source)
    branch = store.fork(args.branch)
    if wants_json(args):
        print_json({"skill": store.name, "branch": branch.branch, "current": branch.current()})
    else:
        at = branch.current() or "-"
        print(
            f"forked {store.name} at {version_label(store.branch, at)} into branch "
            f"{branch.branch}: {version_label(branch.branch, at)} ({branch.dir})"
        )
    return 0
