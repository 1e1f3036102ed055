"""The headless command line (README.md lists the commands).

Each command family lives in its own module of this package and exposes
``register(sub, common)``. Start-up must not pay for every command (their modules pull in GEPA,
the Anthropic SDK, curation…), so ``COMMANDS`` names each command's module and help line, and
only the module of the command being run is imported; ``--help`` lists the table. A command
module must have its line in the table (a test finds any that does not, by its ``def
register(``): searching the package at every start cost more than a quick command's own work.
Exit codes: 0 success, 1 refused or failed operation, 2 bad usage; errors are one line.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from engine.core.errors import SkillsmithError
from engine.core.workspace import Workspace, resolve

if TYPE_CHECKING:
    from engine.core.budget import Budget

OpenTui = Callable[[Workspace, argparse.Namespace], int]

# command → (module in this package, the help line ``--help`` shows for it)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": (
        "workspace_cmd",
        "adopt a project's skills in place (.skillsmith/), or create an empty workspace",
    ),
    "demo": (
        "demo_cmd",
        "copy the bundled demo workspace (security-audit skill, vuln-detect benchmark)",
    ),
    "eval": ("eval_cmd", "run the Case × runs evaluation matrix"),
    "compare": ("compare_cmd", "per-case fixed / newly broken / flaky, metric deltas"),
    "scoreboard": ("scoreboard_cmd", "every evaluation of a benchmark, one row each"),
    "queue": (
        "queue_cmd",
        "list candidates; approve / reject / evaluate / repropose / dismiss / undo",
    ),
    "history": ("store_cmd", "versions, current pointer and timeline of a skill"),
    "publish": ("store_cmd", "make a folder (or a SKILL.md text) the next version"),
    "rollback": ("store_cmd", "point current at vK; nothing is deleted"),
    "fork": ("store_cmd", "start a branch sharing the taboo list"),
    "taboo": ("taboo_cmd", "list a skill's taboo entries; 'taboo clear SKILL [ID]' removes them"),
    "snapshot": ("snapshot_cmd", "write snapshots/v<version>-<UTC time>.tar.gz of the agent state"),
    "restore": ("snapshot_cmd", "restore the agent state from FILE, a snapshot name or vK"),
    "skill": ("skill_cmd", "lint and render SKILL.md files"),
    "evolve": ("evolve_cmd", "outcome-driven evolution rounds for one skill"),
    "optimize": ("optimize_cmd", "GEPA over description / when_to_use / steps / pitfalls"),
    "optimize-agent": (
        "optimize_agent_cmd",
        "improve AGENTS.md, skills and agent settings round by round against a benchmark",
    ),
    "build": ("build_cmd", "design a benchmark: draft, pilot, freeze, Formal Baseline"),
    "review": ("review_cmd", "online learning: review new lines of finished sessions"),
    "curate": ("curate_cmd", "skill usage, overlap and staleness; merge/archive"),
    "tune-description": (
        "triggers_cmd",
        "tune a skill's description on should / should-not trigger queries",
    ),
    "diagnose": (
        "diagnose_cmd",
        "outcome and rule-hit counts, root causes, GT suspects (--verbose: per unit)",
    ),
    "report": (
        "share_cmd",
        "one self-contained HTML (or Markdown) report of a run, session or experiment",
    ),
    "export": ("share_cmd", "a run in skill-creator's eval-N/with_skill/run-K layout"),
    "check": (
        "check_cmd",
        "CI: evaluate each skill changed since a git ref, paired; exit 1 when one is worse",
    ),
    "import": (
        "import_cmd",
        "import a run export, skill-creator evals.json, or a JSONL/CSV of cases",
    ),
}
# options of the top-level parser that take a value (to find the command in argv)
_VALUED = {"-w", "--workspace", "--theme"}


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


def verbose_option(p: argparse.ArgumentParser) -> None:
    """``-v`` for a loop whose library logs (GEPA's, the builder's steps) are kept in the session
    log: quiet by default, like uv and cargo, on the terminal only when asked."""
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also print the loop's raw log lines (always kept in its session log)",
    )


def executor_options(p: argparse.ArgumentParser) -> None:
    """``--executor/--address`` for a command that evaluates: they outrank skillsmith.yaml for
    every evaluation the command makes (engine.evaluation.executors)."""
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        help="where the agents run: child processes here, or tasks on a Ray cluster "
        "(default: 'executor:' in skillsmith.yaml, else local)",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="the Ray cluster to send units to (default: $RAY_ADDRESS, else a local one)",
    )


def dry_run_option(p: argparse.ArgumentParser) -> None:
    """``--dry-run`` for a command that runs agents: print the plan (agent runs, estimated
    time, tokens and dollars) and run nothing (engine.evaluation.costplan)."""
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (agent runs, estimated time, tokens, dollars) and run nothing",
    )


def budget_options(p: argparse.ArgumentParser) -> None:
    """``--budget-runs/--budget-usd/--budget-tokens`` for a loop: it stops at the first clean
    point past any of them and resumes when started again with more (engine.core.budget)."""
    p.add_argument("--budget-runs", type=int, metavar="N", help="stop after N agent runs")
    p.add_argument("--budget-usd", type=float, metavar="USD", help="stop after spending USD")
    p.add_argument("--budget-tokens", type=int, metavar="N", help="stop after N agent tokens")


def budget_of(args: argparse.Namespace) -> Budget:
    """The budget the command line sets (None where a flag is not given)."""
    from engine.core.budget import Budget, check_budget

    budget = Budget(
        runs=getattr(args, "budget_runs", None),
        usd=getattr(args, "budget_usd", None),
        tokens=getattr(args, "budget_tokens", None),
    )
    return check_budget(budget, "--budget")


def _choose_executor(args: argparse.Namespace) -> None:
    if not hasattr(args, "executor"):
        return  # the command evaluates nothing; its start-up skips the executors module
    from engine.evaluation.executors import choose_executor

    choose_executor(args.executor, args.address)


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


def command_of(argv: Sequence[str]) -> str | None:
    """The command word of ``argv`` (the first argument that is not a top-level option)."""
    args = iter(argv)
    for arg in args:
        if arg == "--":
            return next(args, None)
        if arg in _VALUED:
            next(args, None)
        elif not arg.startswith("-"):
            return arg
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with the full options of the command ``argv`` runs (all commands when
    ``argv`` is None) and only a name and help line for the others."""
    common = common_parser()
    parser = _Parser(
        prog="skillsmith",
        description="Evolve the SKILL.md files of an LLM agent against a benchmark.",
        parents=[common],
    )
    parser.add_argument("--theme", help="TUI colour theme (persisted in the user config)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    wanted = command_of(argv) if argv is not None else None
    modules: list[str] = []
    if argv is None:
        modules = sorted({module for module, _ in COMMANDS.values()})
    elif wanted in COMMANDS:
        modules = [COMMANDS[wanted][0]]
    for name in modules:
        register = getattr(importlib.import_module(f"{__name__}.{name}"), "register", None)
        if register is not None:
            register(sub, common)
    for command, (_, help_line) in COMMANDS.items():
        if command not in sub.choices:
            sub.add_parser(command, help=help_line, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None, open_tui: OpenTui | None = None) -> int:
    """Run one command; the TUI package supplies ``open_tui`` (the engine never imports it)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    args.open_tui = open_tui
    try:
        handler: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
        if handler is None:
            if open_tui is None:
                raise SkillsmithError("the TUI is not installed; use a subcommand (see --help)")
            return open_tui(workspace_of(args), args)
        _choose_executor(args)
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
