"""``skillsmith demo``: copy the bundled demo workspace and open it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import platformdirs

from engine.cli import print_json, wants_json
from engine.core.workspace import Workspace
from engine.evaluation.demo import copy_demo


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "demo",
        parents=[common],
        help="copy the bundled demo workspace (security-audit skill, vuln-detect benchmark)",
    )
    p.add_argument(
        "dir", nargs="?", help="where to create it (default: a new demo-<n> in the user data dir)"
    )
    p.add_argument("--no-tui", action="store_true", help="only create it and print its path")
    p.set_defaults(func=_demo)


def default_demo_dir() -> Path:
    """The first unused ``demo-<n>`` folder under the user data dir (earlier demos are kept)."""
    base = Path(platformdirs.user_data_dir("skillsmith"))
    n = 1
    while (base / f"demo-{n}").exists():
        n += 1
    return base / f"demo-{n}"


def _demo(args: argparse.Namespace) -> int:
    root = copy_demo(Path(args.dir) if args.dir else default_demo_dir())
    open_tui = getattr(args, "open_tui", None)
    if args.no_tui or wants_json(args) or open_tui is None:
        if wants_json(args):
            print_json({"workspace": str(root)})
        else:
            print(root)
        if open_tui is None and not args.no_tui and not wants_json(args):
            sys.stderr.write(
                f"the TUI is not installed; open the demo with: skillsmith -w {root}\n"
            )
        return 0
    result: int = open_tui(Workspace.at(root), args)
    return result
