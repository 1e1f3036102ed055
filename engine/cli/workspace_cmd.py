"""``skillsmith init``."""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli import print_json, wants_json
from engine.workspace import Workspace


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("init", parents=[common], help="create an empty workspace")
    p.add_argument("dir", help="folder to create the workspace in")
    p.set_defaults(func=_init)


def _init(args: argparse.Namespace) -> int:
    ws = Workspace.init(args.dir)
    if wants_json(args):
        print_json({"workspace": str(ws.root)})
    else:
        print(f"created workspace {ws.root}")
    return 0
