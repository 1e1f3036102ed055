"""The sandbox on macOS: Seatbelt (``sandbox-exec``) keeps bubblewrap's contract.

macOS has no mount or network namespaces, so the same promises are made by a Seatbelt profile
instead: everything is denied, then the agent may read the system folders, the interpreter, the
engine package and its own program (:attr:`Sandbox.read_only`, as under bubblewrap), read and
write its run folder and the configured writable paths, run programs, and open network
connections only to the harness's allow-list proxy on the host's loopback and to the allowed
loopback endpoints themselves — never to the host's other services, never anywhere else
directly. Its limits are the kernel's resource limits, set by ``ulimit`` before the agent starts.

What it cannot copy: a file outside those folders can still be *stat*-ed (its name and size,
not its content; programs need to look up the folders on their way), the agent's processes are
not in a PID namespace of their own (the harness ends its process group), and the process limit
counts the user's processes, not the unit's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from engine.evaluation.agents.limits import MB, UnitLimits

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
# macOS's own system folders (the Linux ones that exist there are in SYSTEM_DIRS too)
MACOS_DIRS = (
    "/System",
    "/Library",
    "/usr",
    "/bin",
    "/sbin",
    "/private/etc",
    "/private/var/db/timezone",
    "/opt/homebrew",
    "/dev",
)
_DEVICES = ("/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper", "/dev/urandom")


def backend(platform: str = sys.platform) -> str:
    """The sandbox the default ``agent.sandbox`` means on this platform."""
    return "seatbelt" if platform == "darwin" else "bwrap"


def _quoted(path: Path | str) -> str:
    """A path as an SBPL string literal (backslashes and quotes escaped)."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def profile(
    *,
    room: Path,
    read_only: Iterable[Path],
    writable: Iterable[Path],
    network: bool,
    ports: Iterable[int],
) -> str:
    """The Seatbelt profile for one run in ``room``.

    ``network``: the whole network; else only TCP to ``ports`` on the loopback (the proxy's
    port and the allowed loopback endpoints'), and nothing when there are none.
    """
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-fork)",
        "(allow process-exec)",
        "(allow signal (target same-sandbox))",
        "(allow sysctl-read)",
        "(allow mach-lookup)",
        "(allow ipc-posix-shm)",
        "(allow file-read-metadata)",
    ]
    readable = [*read_only]
    lines += [f"(allow file-read* (subpath {_quoted(p)}))" for p in readable]
    for place in (room, *writable):
        lines.append(f"(allow file-read* file-write* (subpath {_quoted(place)}))")
    lines += [f"(allow file-read* file-write-data (literal {_quoted(d)}))" for d in _DEVICES]
    if network:
        lines.append("(allow network*)")
    else:
        lines.append("(deny network*)")
        for port in sorted(set(ports)):
            lines.append(f'(allow network-outbound (remote ip "localhost:{port}"))')
    return "\n".join(lines) + "\n"


def command(
    argv: list[str],
    *,
    room: Path,
    read_only: Iterable[Path],
    writable: Iterable[Path],
    network: bool,
    ports: Iterable[int],
    limits: UnitLimits,
    proxy: str | None = None,
) -> list[str]:
    """``sandbox-exec`` around the agent, its limits (and ``proxy``, the allow-list proxy's
    URL, in ``HTTP(S)_PROXY``) set by the shell it starts under."""
    rules = profile(room=room, read_only=read_only, writable=writable, network=network, ports=ports)
    kb, blocks = limits.memory_mb * 1024, limits.disk_mb * MB // 512
    shell = f"ulimit -d {kb} -u {limits.max_processes} -f {blocks}"
    if proxy is not None:
        names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
        shell += "".join(f" && export {name}={proxy}" for name in names)
    return [SANDBOX_EXEC, "-p", rules, "/bin/sh", "-c", shell + ' && exec "$@"', "sh", *argv]
