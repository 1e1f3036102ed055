"""The confinement every agent run gets: bubblewrap namespaces around its run folder.

A scrubbed environment and a fresh cwd are not a wall: an agent that reads
``/proc/$PPID/environ`` gets the harness's secrets, ``/proc/$PPID/cwd`` leads to the workspace,
``..`` leads to the sibling run folders, and a grandchild that calls ``setsid`` outlives its
unit. So each run starts in its own mount, PID, IPC and user namespaces (bubblewrap): only the
system folders, the Python interpreter, the engine package and the agent's own program are
mounted, all read-only; its run folder is the one writable place; /tmp is private; /proc is the
new PID namespace's own, so the harness is not in it. When the agent's first process ends, the
namespace dies with every process in it, so nothing needs hunting down.

Root outside is no one inside. Every capability is dropped and the agent runs as an unprivileged
user of its own user namespace, so it cannot mount, make device nodes or remount the engine
read-write. When the harness itself runs as root, that user is also an unprivileged id on the
host (:data:`AGENT_UID`), not root mapped under another name: the kernel exempts root from the
process-count limit, and a file root owns would otherwise be the agent's own. Each unit gets its
memory, process-count and disk limits (agent.memory_mb, max_processes, disk_mb), set as the
kernel's resource limits inside and watched from outside (engine.evaluation.agents.limits).

The network namespace is the unit's own too: no network, or (``allow``) only the hosts on its
allow-list through the harness's proxy (engine.evaluation.agents.network); ``network`` gives it
the host's. ``agent.sandbox: none`` runs without all this, and only when it is asked for
explicitly. On macOS the same contract is kept by Seatbelt (engine.evaluation.agents.seatbelt).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import engine
import engine.evaluation.agents.forwarder as forwarder
import engine.evaluation.agents.seatbelt as seatbelt
from engine.core.errors import SkillsmithError
from engine.evaluation.agents.limits import DEFAULT_LIMITS, MB, UnitLimits
from engine.evaluation.agents.network import (
    PROXY_PORT,
    SOCKET_INSIDE,
    loopback_targets,
    proxy_port,
    proxy_socket,
    split_host,
)

BWRAP = "bwrap"
# the system as the agent sees it, read-only; folders missing on this machine are skipped
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# Who the agent is when the harness runs as root: "nobody", an id no one's files belong to. Its
# user namespace maps it, and root for bubblewrap's own set-up, to the same ids outside.
AGENT_UID = AGENT_GID = 65534
# the tools that drop to the agent's user (as root) and set its limits, from util-linux
SETPRIV = "setpriv"
PRLIMIT = "prlimit"
# what bubblewrap keeps until setpriv has switched users; setpriv then drops them all
_SWITCH_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
_SMALL_TMPFS = 1 * MB  # the emptied scratch root around the run folder holds nothing


@dataclass(frozen=True)
class Sandbox:
    """What one agent run may see and reach; ``kind`` is what every run manifest records."""

    kind: str  # "bwrap" | "seatbelt" | "none"
    network: bool = False  # the host's whole network
    allow: tuple[str, ...] = ()  # else these hosts ("host" or "host:port"), through the proxy
    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    # (target, path): links of a folder shown piece by piece around the workspace, kept as links
    links: tuple[tuple[str, Path], ...] = ()
    bwrap: str = BWRAP
    limits: UnitLimits = DEFAULT_LIMITS
    setpriv: str = SETPRIV
    prlimit: str = PRLIMIT

    def describe(self) -> dict[str, object]:
        if self.kind == "none":
            return {"kind": "none", "network": True}
        if self.allow and not self.network:
            return {
                "kind": self.kind,
                "network": "allow-list",
                "allow_hosts": list(self.allow),
                "limits": self.limits.describe(),
            }
        return {"kind": self.kind, "network": self.network, "limits": self.limits.describe()}

    @property
    def proxied(self) -> bool:
        """Whether the room reaches its allow-list through the harness's proxy."""
        return bool(self.allow) and not self.network and self.kind != "none"

    def reading(self, path: Path) -> Sandbox:
        """This sandbox with one more read-only folder (unconfined: nothing to add)."""
        if self.kind == "none" or path in self.read_only:
            return self
        return replace(self, read_only=(*self.read_only, path))

    def options(
        self, room: Path, status_fd: int, block_fd: int | None = None, info_fd: int | None = None
    ) -> list[str]:
        """bubblewrap's options for ``bwrap --args FD -- ARGV`` (a memfd: no length limit).

        ``block_fd`` (the harness runs as root): bubblewrap waits on it until the harness has
        written the user namespace's id maps (:func:`id_maps`), and keeps the capabilities
        setpriv needs to become the agent's user; otherwise it maps the caller's own ids.
        bubblewrap then also wants an ``info_fd`` (its pid is read from ``status_fd``).
        """
        # the agent is the namespace's init: when it ends, the kernel ends everything it left
        args = ["--unshare-user", "--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts"]
        args.append("--unshare-cgroup-try")
        args += ["--cap-drop", "ALL"]
        if block_fd is not None:
            args += ["--userns-block-fd", str(block_fd), "--info-fd", str(info_fd)]
            for cap in _SWITCH_CAPS:
                args += ["--cap-add", cap]
        if not self.network:
            args.append("--unshare-net")
        args += ["--die-with-parent", "--new-session", "--json-status-fd", str(status_fd)]
        # a minimal /dev (null, zero, random, tty…); its shm and /tmp are memory: capped
        tmp_size = str(self.limits.disk_mb * MB)
        args += ["--proc", "/proc", "--dev", "/dev", "--size", tmp_size, "--tmpfs", "/dev/shm"]
        args += ["--size", tmp_size, "--tmpfs", "/tmp"]
        inside = [SOCKET_INSIDE] if self.proxied else []
        args += _parents(
            [
                *self.read_only,
                *(link for _, link in self.links),
                room.parent,
                *self.writable,
                *inside,
            ],
            self.read_only,
        )
        if self.proxied:  # the room's one way out: the harness's proxy (network.py)
            args += ["--bind", str(proxy_socket(self.allow)), str(SOCKET_INSIDE)]
        for path in self.read_only:
            args += ["--ro-bind", str(path), str(path)]
        for target, path in self.links:
            args += ["--symlink", target, str(path)]
        # the scratch root holds the other units' folders: hide it, then bring back only ours
        args += ["--size", str(_SMALL_TMPFS), "--tmpfs", str(room.parent)]
        args += ["--bind", str(room), str(room)]
        for path in self.writable:
            args += ["--bind", str(path), str(path)]
        args += ["--chdir", str(room)]
        return args

    def command(self, argv: list[str], *, as_root: bool) -> list[str]:
        """The agent's command line inside: become the agent's user (as root), set the
        limits, run it. Each tool execs the next, so the agent stays the namespace's init."""
        prefix: list[str] = []
        if as_root:
            prefix += [self.setpriv, "--reuid", str(AGENT_UID), "--regid", str(AGENT_GID)]
            prefix += ["--clear-groups", "--inh-caps", "-all", "--bounding-set", "-all", "--"]
        prefix += [self.prlimit, *self.limits.prlimit_args(), "--"]
        if self.proxied:
            forwards = loopback_targets(self.allow)
            taken = {split_host(t)[1] for t in forwards}
            port = next(p for p in range(PROXY_PORT, PROXY_PORT + 100) if p not in taken)
            prefix += [sys.executable, "-I", "-S", forwarder.__file__, str(SOCKET_INSIDE)]
            prefix.append(str(port))
            for target in forwards:
                prefix += ["--forward", target]
            prefix.append("--")
        return prefix + argv


def _parents(paths: Iterable[Path], bound: Iterable[Path]) -> list[str]:
    """Traversable folders (0755) on the way to each path, made before anything is mounted.

    bubblewrap would make them as the host has them, and the agent's user (not root) could
    then not pass a root-only folder such as /root on the way to a Python installed there.
    """
    args: list[str] = []
    made: set[Path] = set()
    covered = set(bound)
    for path in paths:
        for parent in reversed(path.parents):
            if parent in made or parent == Path(parent.anchor):
                continue
            if parent in covered or not covered.isdisjoint(parent.parents):
                break  # inside something mounted: there already, read-only
            made.add(parent)
            args += ["--perms", "0755", "--dir", str(parent)]
    return args


def seatbelt_command(sandbox: Sandbox, argv: list[str], room: Path) -> list[str]:
    """The agent's command line under Seatbelt (macOS), with this sandbox's folders, network
    and limits (engine.evaluation.agents.seatbelt)."""
    ports: list[int] = []
    proxy = None
    if sandbox.proxied:
        port = proxy_port(sandbox.allow)
        ports = [port, *(split_host(t)[1] or 0 for t in loopback_targets(sandbox.allow))]
        proxy = f"http://127.0.0.1:{port}"
    return seatbelt.command(
        argv,
        room=room,
        read_only=sandbox.read_only,
        writable=sandbox.writable,
        network=sandbox.network,
        ports=ports,
        limits=sandbox.limits,
        proxy=proxy,
    )


def id_maps() -> str:
    """The user namespace's uid and gid map when the harness runs as root: the agent's user
    as itself, root (bubblewrap's set-up, gone once setpriv switches) as itself."""
    return f"0 0 1\n{AGENT_UID} {AGENT_UID} 1\n"


def hand_over(room: Path) -> None:
    """Give the run folder to the agent's user (the harness runs as root; the agent does not).

    Links are not followed; a file with more than one link is left as it is, since changing
    it would change the other name too (it stays readable, not writable, to the agent).
    """
    # the folder's group stays root's: bubblewrap, root without capabilities in the
    # namespace, must still enter it (--chdir) before it becomes the agent
    os.lchown(room, AGENT_UID, 0)
    os.chmod(room, 0o770)
    for dirpath, dirnames, filenames in os.walk(room):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                if os.lstat(path).st_nlink == 1 or name in dirnames:
                    os.lchown(path, AGENT_UID, AGENT_GID)


NO_SANDBOX = Sandbox(kind="none")


def make_sandbox(
    mode: str,
    *,
    network: bool,
    command: Iterable[str],
    workspace: Path,
    read_only: Iterable[str] = (),
    writable: Iterable[str] = (),
    limits: UnitLimits = DEFAULT_LIMITS,
    allow: Iterable[str] = (),
) -> Sandbox:
    """The sandbox ``agent.sandbox`` asks for (the default: the platform's); refuses when it
    cannot run here."""
    if mode == "none":
        return NO_SANDBOX
    mac = mode == "seatbelt" or seatbelt.backend() == "seatbelt"
    tools = _seatbelt_ready() if mac else _bwrap_tools()
    ws = workspace.resolve()
    system = seatbelt.MACOS_DIRS if mac else SYSTEM_DIRS
    visible = [*map(Path, system), *_runtime_paths(), *_program_paths(command)]
    shown, links = _around(visible + [Path(p) for p in read_only], ws)
    shared, _ = _around([Path(p) for p in writable], ws)
    return Sandbox(
        kind="seatbelt" if mac else "bwrap",
        network=network,
        read_only=tuple(shown),
        writable=tuple(shared),
        links=tuple(links),
        limits=limits,
        allow=tuple(dict.fromkeys(allow)),
        **tools,
    )


def _seatbelt_ready() -> dict[str, str]:
    if not os.access(seatbelt.SANDBOX_EXEC, os.X_OK):
        raise SkillsmithError(
            f"agent.sandbox: Seatbelt cannot run here (no {seatbelt.SANDBOX_EXEC}: it is "
            "macOS's); set 'agent.sandbox: none' in skillsmith.yaml to run agents unconfined"
        )
    return {}


def _bwrap_tools() -> dict[str, str]:
    """Where bubblewrap, setpriv and prlimit are; refused (one line) when one is missing."""
    binary = shutil.which(BWRAP)
    problem = _bwrap_problem(binary)
    tools = {"bwrap": binary, "setpriv": shutil.which(SETPRIV), "prlimit": shutil.which(PRLIMIT)}
    if problem is None:
        problem = next((f"no {name!r} on PATH" for name, at in tools.items() if not at), None)
    if problem is not None:
        raise SkillsmithError(
            f"agent.sandbox: bubblewrap cannot run here ({problem}); install it "
            "(Debian/Ubuntu: apt-get install bubblewrap util-linux) or set 'agent.sandbox: none' "
            "in skillsmith.yaml to run agents unconfined"
        )
    return {name: str(at) for name, at in tools.items()}


@functools.cache
def _bwrap_problem(binary: str | None) -> str | None:
    """Why bubblewrap cannot make namespaces here (None when it can); asked once per process."""
    if binary is None:
        return "no 'bwrap' on PATH"
    probe = [binary, "--ro-bind", "/", "/", "--unshare-user", "--unshare-pid", "--unshare-net"]
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
