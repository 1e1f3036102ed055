"""A unit's memory, process-count and disk limits: the kernel's inside, a watch from outside.

An agent is untrusted code on a shared machine: unbounded, one unit took 3 GB of memory, 3 GB of
disk and 1,500 processes. Inside its sandbox every process gets the kernel's resource limits
(``prlimit``): private memory (``RLIMIT_DATA``, what a process commits — not the address space
a JavaScript engine merely reserves), processes (``RLIMIT_NPROC``, counted per user namespace,
so per unit) and file size (``RLIMIT_FSIZE``). Those stop a runaway at once, but they are per
process, and a process that meets one only sees an allocation or a fork fail. So the harness
also watches the unit from outside — its processes together, their resident memory, its run
folder's size — ends it when one is over, and says which limit it met: the unit is recorded
invalid with that reason instead of as a crash nobody can explain.
"""

from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

MB = 1 << 20
_PROCESS_S = 0.25  # how often the unit's processes and their memory are counted
_DISK_S = 1.0  # how often its run folder is measured (a walk of the folder)
# what runtimes print when an allocation or a fork fails; read only when the agent died of it
_OUT_OF_MEMORY = re.compile(
    r"MemoryError|out of memory|Cannot allocate memory|bad_alloc|Allocation failed", re.I
)
_NO_FORK = re.compile(r"Resource temporarily unavailable|Cannot fork|fork: retry", re.I)


@dataclass(frozen=True)
class UnitLimits:
    """What one unit may use (``agent.memory_mb``, ``agent.max_processes``, ``agent.disk_mb``).

    The defaults leave a real Claude Code run (a node process near 400 MB, a few dozen
    processes with its tools) well inside.
    """

    memory_mb: int = 4096
    max_processes: int = 512
    disk_mb: int = 4096

    def prlimit_args(self) -> list[str]:
        """``prlimit`` options setting the kernel's limits on the agent (soft = hard)."""
        return [
            f"--data={self.memory_mb * MB}",
            f"--nproc={self.max_processes}",
            f"--fsize={self.disk_mb * MB}",
        ]

    def describe(self) -> dict[str, int]:
        return {
            "memory_mb": self.memory_mb,
            "max_processes": self.max_processes,
            "disk_mb": self.disk_mb,
        }

    def memory(self, detail: str) -> str:
        return f"over the memory limit (agent.memory_mb {self.memory_mb}): {detail}"

    def processes(self, detail: str) -> str:
        return f"over the process limit (agent.max_processes {self.max_processes}): {detail}"

    def disk(self, detail: str) -> str:
        return f"over the disk limit (agent.disk_mb {self.disk_mb}): {detail}"

    def after_exit(self, exit_code: int | None, stderr: str) -> str | None:
        """Which limit an agent that died met inside, by how it died (None: none of them).

        A write past the file-size limit is a SIGXFSZ; a failed allocation or fork is only
        seen in what the runtime printed, so it is read from the last lines of stderr.
        """
        if exit_code == -signal.SIGXFSZ:
            return self.disk("a file reached the size limit")
        if exit_code == 0:
            return None
        tail = "\n".join(stderr.strip().splitlines()[-5:])
        last = next((ln.strip() for ln in reversed(tail.splitlines()) if ln.strip()), "")
        if _OUT_OF_MEMORY.search(tail):
            return self.memory(last[:160])
        if _NO_FORK.search(tail):
            return self.processes(last[:160])
        return None


DEFAULT_LIMITS = UnitLimits()


class Watch:
    """Counts a sandboxed unit's processes, their memory and its folder, now and then."""

    def __init__(self, limits: UnitLimits, room: Path) -> None:
        self.limits, self.room = limits, room
        self._next_process = self._next_disk = 0.0

    def over(self, init_pid: int | None) -> str | None:
        """The reason the unit is over a limit, or None; cheap between the sampling times."""
        now = time.monotonic()
        if init_pid is not None and now >= self._next_process:
            self._next_process = now + _PROCESS_S
            pids = namespace_pids(init_pid)
            # the kernel refuses the fork that would pass the limit: reaching it is the sign
            if len(pids) >= self.limits.max_processes:
                return self.limits.processes(f"{len(pids)} processes running")
            resident = sum(_resident(pid) for pid in pids)
            if resident > self.limits.memory_mb * MB:
                return self.limits.memory(f"{resident // MB} MB resident")
        if now >= self._next_disk:
            self._next_disk = now + _DISK_S
            return self.disk()
        return None

    def disk(self) -> str | None:
        """The run folder measured now: also once the unit ended, when the kernel can no
        longer be asked about its processes but a folder filled between two looks remains."""
        used = folder_bytes(self.room)
        if used > self.limits.disk_mb * MB:
            return self.limits.disk(f"{used // MB} MB in the run folder")
        return None


def namespace_pids(init_pid: int) -> list[int]:
    """Host pids of the processes in the PID namespace whose init is ``init_pid``."""
    try:
        target = os.readlink(f"/proc/{init_pid}/ns/pid")
    except OSError:
        return []
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.readlink(f"/proc/{name}/ns/pid") == target:
                    found.append(int(name))
            except OSError:
                continue
    return found


def _resident(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def folder_bytes(folder: Path) -> int:
    """Disk the folder's files take (their allocated blocks), links not followed."""
    total = 0
    pending = [str(folder)]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += st.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    return total
