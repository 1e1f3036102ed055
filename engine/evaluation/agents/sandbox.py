"""The confinement every agent run gets: bubblewrap namespaces around its run folder.

A scrubbed environment and a fresh cwd are not a wall: an agent that reads
``/proc/$PPID/environ`` gets the harness's secrets, ``/proc/$PPID/cwd`` leads to the workspace,
``..`` leads to the sibling run folders, and a grandchild that calls ``setsid`` outlives its
unit. So each run starts in its own mount, PID and IPC namespaces (bubblewrap): only the system
folders, the Python interpreter, the engine package and the agent's own program are mounted, all
read-only; its run folder is the one writable place; /tmp is private; /proc is the new PID
namespace's own, so the harness is not in it. When the agent's first process ends, the namespace
dies with every process in it, so nothing needs hunting down.

The network is cut unless the agent needs it (claude-code must reach its Messages API).
``agent.sandbox: none`` runs without all this, and only when it is asked for explicitly.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import engine
from engine.core.errors import SkillsmithError

BWRAP = "bwrap"
# the system as the agent sees it, read-only; folders missing on this machine are skipped
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")


@dataclass(frozen=True)
class Sandbox:
    """What one agent run may see and reach; ``kind`` is what every run manifest records."""

    kind: str  # "bwrap" | "none"
    network: bool = False
    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    # (target, path): links of a folder shown piece by piece around the workspace, kept as links
    links: tuple[tuple[str, Path], ...] = ()
    bwrap: str = BWRAP

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "network": self.network if self.kind != "none" else True}

    def reading(self, path: Path) -> Sandbox:
        """This sandbox with one more read-only folder (unconfined: nothing to add)."""
        if self.kind == "none" or path in self.read_only:
            return self
        return replace(self, read_only=(*self.read_only, path))

    def options(self, room: Path, status_fd: int) -> list[str]:
        """bubblewrap's options for ``bwrap --args FD -- ARGV`` (a memfd: no length limit)."""
        # the agent is the namespace's init: when it ends, the kernel ends everything it left
        args = ["--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts"]
        args.append("--unshare-cgroup-try")
        if not self.network:
            args.append("--unshare-net")
        args += ["--die-with-parent", "--new-session", "--json-status-fd", str(status_fd)]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for path in self.read_only:
            args += ["--ro-bind", str(path), str(path)]
        for target, path in self.links:
            args += ["--symlink", target, str(path)]
        # the scratch root holds the other units' folders: hide it, then bring back only ours
        args += ["--tmpfs", str(room.parent), "--bind", str(room), str(room)]
        for path in self.writable:
            args += ["--bind", str(path), str(path)]
        args += ["--chdir", str(room)]
        return args


NO_SANDBOX = Sandbox(kind="none")


def make_sandbox(
    mode: str,
    *,
    network: bool,
    command: Iterable[str],
    workspace: Path,
    read_only: Iterable[str] = (),
    writable: Iterable[str] = (),
) -> Sandbox:
    """The sandbox ``agent.sandbox`` asks for; refuses when bubblewrap cannot run here."""
    if mode == "none":
        return NO_SANDBOX
    binary = shutil.which(BWRAP)
    problem = _bwrap_problem(binary)
    if binary is None or problem is not None:
        raise SkillsmithError(
            f"agent.sandbox: bubblewrap cannot run here ({problem}); install it "
            "(Debian/Ubuntu: apt-get install bubblewrap) or set 'agent.sandbox: none' in "
            "skillsmith.yaml to run agents unconfined"
        )
    ws = workspace.resolve()
    visible = [*map(Path, SYSTEM_DIRS), *_runtime_paths(), *_program_paths(command)]
    shown, links = _around(visible + [Path(p) for p in read_only], ws)
    shared, _ = _around([Path(p) for p in writable], ws)
    return Sandbox(
        kind="bwrap",
        network=network,
        read_only=tuple(shown),
        writable=tuple(shared),
        links=tuple(links),
        bwrap=binary,
    )


@functools.cache
def _bwrap_problem(binary: str | None) -> str | None:
    """Why bubblewrap cannot make namespaces here (None when it can); asked once per process."""
    if binary is None:
        return "no 'bwrap' on PATH"
    probe = [binary, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-ipc", "--unshare-net"]
    probe += ["--proc", "/proc", "--dev", "/dev", "--die-with-parent", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary}: {exc}"
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        return f"{binary}: {lines[-1] if lines else f'exit status {done.returncode}'}"
    return None


def _runtime_paths() -> list[Path]:
    """The interpreter (its venv and base install) and the engine package, for the demo agent."""
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return [*sorted(prefixes), Path(engine.__file__).resolve().parent]


def _program_paths(command: Iterable[str]) -> list[Path]:
    """The agent's own program files: each absolute or relative path in its command line.

    A program inside a ``node_modules`` tree (the claude CLI) needs the whole tree.
    """
    found: list[Path] = []
    for index, word in enumerate(command):
        if index == 0 and os.sep not in word:
            word = shutil.which(word) or word
        if word.startswith("-") or os.sep not in word:
            continue
        path = Path(word).absolute()
        if not path.is_file():
            continue
        for candidate in (path, path.resolve()):
            modules = [p for p in candidate.parents if p.name == "node_modules"]
            found.append(modules[-1] if modules else candidate)
    return list(dict.fromkeys(found))


def _around(paths: Iterable[Path], workspace: Path) -> tuple[list[Path], list[tuple[str, Path]]]:
    """The existing parts of ``paths`` the agent may see, as binds and links; never the workspace.

    A path that holds the workspace (a workspace under /opt, or inside the engine's checkout) is
    shown piece by piece: everything in it but the branch that leads to the workspace, so the
    rest of the folder still works and not even an empty mount point names the workspace.
    """
    kept: list[Path] = []
    links: list[tuple[str, Path]] = []
    pending = list(paths)
    while pending:
        path = pending.pop(0)
        real = path.resolve()
        if not real.exists() or real == workspace:
            continue
        if workspace in real.parents:
            if not real.is_dir():  # a single program file inside the workspace may be shown
                kept.append(path.absolute())
            continue
        if real not in workspace.parents:
            kept.append(path.absolute())
            continue
        if path.is_symlink():
            links.append((os.readlink(path), path.absolute()))
        for child in sorted(real.iterdir()):
            if not child.is_symlink():
                pending.append(child)
            elif child.resolve() != workspace and workspace not in child.resolve().parents:
                links.append((os.readlink(child), child))
    # a path inside another one is already visible (and binding over a symlink there fails);
    # a set lookup per parent, not a scan of every kept path per parent (the engine's checkout
    # shown piece by piece is hundreds of paths, and this runs before any unit starts)
    unique = set(kept)
    shown = [p for p in dict.fromkeys(kept) if unique.isdisjoint(p.parents)]
    return shown, links
