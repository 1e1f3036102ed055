"""The headless command line (DESIGN.md "Command line").

Each command family lives in its own module of this package and exposes
``register(sub, common)``; ``main`` discovers them, so adding a command never edits this file.
Exit codes: 0 success, 1 refused or failed operation, 2 bad usage; errors are one line.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engine.errors import SkillsmithError
from engine.workspace import Workspace, resolve

OpenTui = Callable[[Workspace, argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse that prints one usage line and exits 2, as the CLI contract requires."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def common_parser() -> argparse.ArgumentParser:
    """Options every command accepts: the workspace and machine-readable output."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-w",
        "--workspace",
        default=argparse.SUPPRESS,
        help="workspace folder (default: $SKILLSMITH_WORKSPACE, else the current directory)",
    )
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )
    return common


def workspace_of(args: argparse.Namespace) -> Workspace:
    return resolve(getattr(args, "workspace", None))


def workspace_if_any(args: argparse.Namespace) -> Workspace | None:
    """The workspace if there is one: commands on run folders given as paths need none, but a
    ``--workspace`` that was named and does not resolve is still an error."""
    try:
        return workspace_of(args)
    except SkillsmithError:
        if getattr(args, "workspace", None):
            raise
        return None


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def wants_json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def build_parser() -> argparse.ArgumentParser:
    common = common_parser()
    parser = _Parser(
        prog="skillsmith",
        description="Evolve the SKILL.md files of an LLM agent against a benchmark.",
        parents=[common],
    )
    parser.add_argument("--theme", help="TUI colour theme (persisted in the user config)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    package = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(package)]), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None, open_tui: OpenTui | None = None) -> int:
    """Run one command; the TUI package supplies ``open_tui`` (the engine never imports it)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.open_tui = open_tui
    try:
        handler: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
        if handler is None:
            if open_tui is None:
                raise SkillsmithError("the TUI is not installed; use a subcommand (see --help)")
            return open_tui(workspace_of(args), args)
        return handler(args)
    except SkillsmithError as exc:
        sys.stderr.write(f"skillsmith: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("skillsmith: interrupted; finished work is kept\n")
        return 130
    except BrokenPipeError:
        return 1


def run() -> None:
    """Console entry without the TUI (``python -m engine.cli``)."""
    sys.exit(main())
