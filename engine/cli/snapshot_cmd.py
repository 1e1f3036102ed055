"""``skillsmith snapshot`` and ``skillsmith restore``: the whole agent state as tar.gz files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.cli import print_json, wants_json, workspace_of
from engine.core.snapshots import (
    create_snapshot,
    finish_pending,
    finish_pending_in_background,
    import_snapshot,
    list_snapshots,
    restore,
    snapshot_name,
)
from engine.core.workspace import Workspace


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "snapshot",
        parents=[common],
        help="write snapshots/v<version>-<UTC time>.tar.gz of the agent state",
    )
    p.add_argument("--note", default="", help="a line kept inside the snapshot")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--list", action="store_true", help="list the snapshots instead")
    group.add_argument(
        "--import", dest="import_file", type=Path, help="copy a snapshot from elsewhere in"
    )
    p.set_defaults(func=_snapshot)

    p = sub.add_parser(
        "restore", parents=[common], help="restore the agent state from FILE, a snapshot name or vK"
    )
    p.add_argument(
        "source",
        help="a .tar.gz file, a snapshot name (snapshot --list) or vK (when one snapshot holds K)",
    )
    p.add_argument(
        "--yes", action="store_true", help="restore even a version not newer than the current one"
    )
    p.add_argument(
        "--trust-agent-config",
        action="store_true",
        help="restore even a skillsmith.yaml that changes the agent's command or environment",
    )
    p.set_defaults(func=_restore)


def _open(args: argparse.Namespace) -> Workspace:
    ws = workspace_of(args)
    ws.load_config()  # a broken skillsmith.yaml is reported before anything is touched
    return ws


def _snapshot(args: argparse.Namespace) -> int:
    ws = _open(args)
    if args.list:
        finish_pending(ws)  # a restore's replaced state may still be on its way to an archive
        found = list_snapshots(ws)
        if wants_json(args):
            print_json(
                [
                    {
                        "version": s.version,
                        "path": str(s.path),
                        "size": s.size,
                        "created_at": s.created_at,
                        "note": s.note,
                    }
                    for s in found
                ]
            )
        else:
            for s in found:
                print(f"{snapshot_name(s.path):<24} {s.size:>10}  {s.created_at:<21} {s.note}")
        return 0
    path = (
        import_snapshot(ws, args.import_file)
        if args.import_file
        else create_snapshot(ws, args.note)
    )
    if wants_json(args):
        print_json({"path": str(path)})
    else:
        print(f"{'imported' if args.import_file else 'wrote'} {path}")
    return 0


def _restore(args: argparse.Namespace) -> int:
    ws = _open(args)
    before = restore(ws, args.source, yes=args.yes, trust_agent_config=args.trust_agent_config)
    finish_pending_in_background(ws)  # the prompt comes back while the replaced state is archived
    version = ws.version()
    if wants_json(args):
        print_json({"version": version, "pre_restore": str(before)})
    else:
        print(f"restored {args.source} (version {version}); the replaced state is kept as {before}")
    return 0
