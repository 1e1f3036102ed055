"""The demo agent's tools: the commands a SKILL.md step may name, run for real in the run dir.

A skill is text an LLM proposer rewrites, so its commands are never handed to a shell: each is
parsed into ``grep`` (real GNU grep on files of the run directory, a small option allow-list),
``read [-n] PATH`` or ``list``, and every path must stay inside the run directory. What a step
cannot run is reported as a failed call, exactly as a real agent's tool would fail.
"""

from __future__ import annotations

import glob
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

TOOL_NAMES = ("grep", "read", "list")
GREP_FLAGS = frozenset("nEiFwxvoHh")
GREP_TIMEOUT_S = 10.0
RESULT_KEEP = 4000
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Hit:
    """One line a grep matched: where, and the line's text."""

    path: str
    line: int
    text: str


@dataclass(frozen=True)
class ToolResult:
    """What one tool call returned, as logged in the session and used by the agent."""

    output: str
    is_error: bool = False
    hits: tuple[Hit, ...] = field(default_factory=tuple)


def tool_of(command: str) -> str | None:
    """The tool a backticked span invokes, or None when the span is not a command."""
    head = command.strip().split(maxsplit=1)
    return head[0] if head and head[0] in TOOL_NAMES else None


def clip(text: str, keep: int = RESULT_KEEP) -> str:
    return text if len(text) <= keep else text[:keep] + f"\n… ({len(text) - keep} more characters)"


class RunDir:
    """The agent's working directory; all tools resolve paths against it and refuse to leave it."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def inside(self, name: str) -> Path | None:
        """``name`` as a path in the run dir, or None for an absolute or escaping path."""
        pure = PurePosixPath(name)
        if pure.is_absolute() or ".." in pure.parts:
            return None
        path = (self.root / pure).resolve()
        return path if path == self.root or self.root in path.parents else None

    def expand(self, operand: str) -> list[str]:
        """Shell-like expansion of one file operand (an unmatched glob expands to nothing)."""
        if self.inside(operand) is None:
            return []
        if _GLOB_CHARS.isdisjoint(operand):
            return [operand] if (self.root / operand).is_file() else []
        return sorted(glob.glob(operand, root_dir=self.root))

    def run(self, command: str) -> ToolResult:
        """Run one concrete command (placeholders already filled in)."""
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            return ToolResult(f"cannot parse command: {exc}", is_error=True)
        tool = argv[0] if argv else ""
        if tool == "grep":
            return self._grep(argv[1:])
        if tool == "read":
            return self._read(argv[1:])
        if tool == "list":
            return self._list()
        return ToolResult(
            f"{tool or command}: unknown tool (use grep, read or list)", is_error=True
        )

    # -- tools --------------------------------------------------------------------------------

    def _list(self) -> ToolResult:
        entries = sorted(p for p in self.root.iterdir() if not p.name.startswith("."))
        return ToolResult("\n".join(p.name + ("/" if p.is_dir() else "") for p in entries))

    def _read(self, args: list[str]) -> ToolResult:
        numbered = bool(args) and args[0] == "-n"
        names = args[1:] if numbered else args
        if len(names) != 1:
            return ToolResult("read: expected one file: read [-n] FILE", is_error=True)
        path = self.inside(names[0])
        if path is None:
            return ToolResult(f"read: {names[0]}: outside the working directory", is_error=True)
        if not path.is_file():
            return ToolResult(f"read: {names[0]}: No such file or directory", is_error=True)
        text = path.read_text(encoding="utf-8", errors="replace")
        if numbered:
            text = "\n".join(f"{n:4}  {line}" for n, line in enumerate(text.splitlines(), 1))
        return ToolResult(text)

    def _grep(self, args: list[str]) -> ToolResult:
        parsed = parse_grep(args)
        if isinstance(parsed, str):
            return ToolResult(parsed, is_error=True)
        files = [name for operand in parsed.operands for name in self.expand(operand)]
        if not files:
            missing = parsed.operands[0] if parsed.operands else "(no file given)"
            return ToolResult(f"grep: {missing}: No such file or directory", is_error=True)
        try:
            proc = subprocess.run(
                ["grep", *parsed.flags, "-H", "-n", "-e", parsed.pattern, "--", *files],
                cwd=self.root,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=GREP_TIMEOUT_S,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
            )
        except subprocess.TimeoutExpired:
            return ToolResult(f"grep: timed out after {GREP_TIMEOUT_S:g}s", is_error=True)
        except OSError as exc:
            return ToolResult(f"grep: cannot run: {exc.strerror or exc}", is_error=True)
        if proc.returncode > 1:
            return ToolResult((proc.stderr or proc.stdout).strip() or "grep failed", is_error=True)
        hits = tuple(_hit(line) for line in proc.stdout.splitlines())
        return ToolResult(proc.stdout.rstrip("\n") or "(no matches)", hits=hits)

    def applies(self, command: str) -> bool:
        """False when a grep searches only file globs that match nothing here: a step written
        for ``*.py *.js`` does not apply to a Java case. Named files always apply (and may fail).
        """
        parsed = parse_grep(_argv(command)[1:])
        if isinstance(parsed, str) or not parsed.operands:
            return True
        if any(_GLOB_CHARS.isdisjoint(op) for op in parsed.operands):
            return True
        return any(self.expand(op) for op in parsed.operands)


@dataclass(frozen=True)
class GrepArgs:
    flags: tuple[str, ...]
    pattern: str
    operands: tuple[str, ...]


def parse_grep(args: list[str]) -> GrepArgs | str:
    """Options, pattern and file operands of a grep argv, or the error grep would print."""
    flags: list[str] = []
    pattern: str | None = None
    operands: list[str] = []
    rest = iter(args)
    for arg in rest:
        if pattern is None and arg == "-e":
            pattern = next(rest, "")
        elif pattern is None and arg.startswith("-") and len(arg) > 1:
            bad = set(arg[1:]) - GREP_FLAGS
            if bad:
                return f"grep: unsupported option -- {''.join(sorted(bad))}"
            flags.append(arg)
        elif pattern is None:
            pattern = arg
        else:
            operands.append(arg)
    if pattern is None:
        return "grep: no pattern given"
    return GrepArgs(tuple(flags), pattern, tuple(operands))


def _argv(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _hit(line: str) -> Hit:
    path, _, rest = line.partition(":")
    number, _, text = rest.partition(":")
    return Hit(path, int(number) if number.isdigit() else 0, text)
