"""The ``skillsmith`` console script: the engine's CLI with the workbench plugged in."""

from __future__ import annotations

import argparse
import sys

from engine.cli import main as cli_main
from engine.core.workspace import Workspace


def open_workbench(workspace: Workspace, args: argparse.Namespace) -> int:
    from tui.app import run_app

    return run_app(workspace, theme=getattr(args, "theme", None))


def main() -> None:
    sys.exit(cli_main(open_tui=open_workbench))
