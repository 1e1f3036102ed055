"""Run one agent process and leave nothing behind.

A target agent is untrusted code: it may hang, fork helpers that outlive it, or flood its output.
Its output is read with a byte cap, and when it ends — normally, at its timeout, past the cap or
on cancel — every process it started goes with it. Under the sandbox
(engine.evaluation.agents.sandbox) the
agent is the init of its own PID namespace, so killing it kills them all and the kernel confirms
it. Unconfined (``agent.sandbox: none``) it starts in its own session: the whole group is sent
SIGTERM, given a short grace, then SIGKILL, and processes that left the group with ``setsid`` but
still sit in the run directory are found through one /proc scan and killed too. Killed orphans
may linger as zombies when PID 1 does not reap; they run no code and are not counted.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.evaluation.agents.limits import Watch
from engine.evaluation.agents.sandbox import (
    NO_SANDBOX,
    Sandbox,
    hand_over,
    id_maps,
    seatbelt_command,
)

_CHUNK = 65536
_STDERR_TAIL = 16_384
_POLL_S = 0.05
_DRAIN_S = 1.0
_MAP_WAIT_S = 30.0  # for bubblewrap to say its child's pid (a loaded machine is slow)


@dataclass
class ProcessResult:
    """What one agent process did, as far as the harness could observe it."""

    stdout: bytes
    stderr_tail: bytes
    exit_code: int | None  # negative: killed by that signal; None: never reaped
    duration_ms: int
    timed_out: bool = False
    over_cap: bool = False
    cancelled: bool = False
    pid: int = 0
    over_limit: str | None = None  # the unit met one of its limits (which, and how)


def run_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    max_output_bytes: int,
    grace_s: float = 2.0,
    should_stop: Callable[[], bool] = lambda: False,
    sandbox: Sandbox = NO_SANDBOX,
) -> ProcessResult:
    """Run ``argv`` in ``cwd`` with exactly ``env``; always returns with all its processes gone."""
    started = time.monotonic()
    deadline = started + timeout_s
    launch = _Launch(argv, cwd, sandbox)
    watch = Watch(sandbox.limits, cwd) if launch.confined else None
    try:
        proc = subprocess.Popen(
            launch.argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
            pass_fds=launch.pass_fds,
        )
    finally:
        launch.started()
    launch.release(proc)
    assert proc.stdout is not None and proc.stderr is not None
    result = ProcessResult(stdout=b"", stderr_tail=b"", exit_code=None, duration_ms=0, pid=proc.pid)
    out = bytearray()
    err = bytearray()
    total = 0
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, _Sink(out, tail_only=False))
    selector.register(proc.stderr, selectors.EVENT_READ, _Sink(err, tail_only=True))
    stopper = _Stopper(proc, cwd, grace_s, launch)
    try:
        while selector.get_map():
            if time.monotonic() >= deadline:
                result.timed_out = True
                break
            if should_stop():
                result.cancelled = True
                break
            if proc.poll() is not None:
                break  # the agent is done; helpers it left behind must not keep the pipes open
            if watch is not None:
                result.over_limit = watch.over(launch.agent_pid())
                if result.over_limit:
                    break
            for key, _ in selector.select(timeout=_POLL_S):
                total += _read_into(selector, key)
                if total > max_output_bytes:
                    result.over_cap = True
                    break
            if result.over_cap:
                break
        stopper.stop()
        if not (result.over_cap or result.timed_out or result.cancelled or result.over_limit):
            drain_until = time.monotonic() + _DRAIN_S
            while selector.get_map() and time.monotonic() < drain_until:
                for key, _ in selector.select(timeout=_POLL_S):
                    total += _read_into(selector, key)
                if total > max_output_bytes:
                    result.over_cap = True
                    break
    finally:
        stopper.stop()
        _reap(proc, grace_s + 1.0)
        result.exit_code = launch.exit_code(proc.returncode)  # read before its pipe closes
        for key in list(selector.get_map().values()):
            selector.unregister(key.fileobj)
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
        launch.close()
    if watch is not None and not result.over_limit:
        result.over_limit = watch.disk()
    result.stdout = bytes(out[:max_output_bytes])
    result.stderr_tail = bytes(err[-_STDERR_TAIL:])
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result


class _Launch:
    """How the process is started: directly, or under bubblewrap with its options in a memfd.

    Under bubblewrap the agent is the PID namespace's init (``--as-pid-1``): when it exits the
    kernel kills everything left in the namespace before bubblewrap can report the exit, so a
    reaped ``bwrap`` means no process of the unit is left — no /proc scan needed. Run by root,
    bubblewrap waits until the harness has mapped the agent's unprivileged user into its user
    namespace (:meth:`release`), and the run folder is handed to that user first.
    """

    def __init__(self, argv: list[str], cwd: Path, sandbox: Sandbox) -> None:
        self.confined = sandbox.kind == "bwrap"
        # Seatbelt has no PID namespace: its unit ends like an unconfined one (its group)
        self.argv = seatbelt_command(sandbox, argv, cwd) if sandbox.kind == "seatbelt" else argv
        self.pass_fds: tuple[int, ...] = ()
        self.status: int | None = None
        self._status_data = bytearray()
        self._child_fds: list[int] = []
        self._pidfd: int | None = None
        self._block: int | None = None  # the write end bubblewrap waits on (run as root)
        self._pid: int | None = None
        if not self.confined:
            return
        as_root = os.geteuid() == 0
        status_r, status_w = os.pipe()
        self._child_fds = [status_w]
        block_fd = info_fd = None
        if as_root:
            hand_over(cwd)
            block_fd, self._block = os.pipe()
            info_fd = os.open(os.devnull, os.O_WRONLY)
            self._child_fds += [block_fd, info_fd]
        options = sandbox.options(cwd, status_w, block_fd, info_fd)
        args_fd = os.memfd_create("bwrap-args", 0)
        os.write(args_fd, b"".join(a.encode() + b"\0" for a in options))
        os.lseek(args_fd, 0, os.SEEK_SET)
        self._child_fds.append(args_fd)
        for fd in self._child_fds:
            os.set_inheritable(fd, True)
        inner = sandbox.command(argv, as_root=as_root)
        self.argv = [sandbox.bwrap, "--args", str(args_fd), "--", *inner]
        self.pass_fds = tuple(self._child_fds)
        os.set_blocking(status_r, False)  # read when asked (_status_field), never waited on
        self.status = status_r

    def started(self) -> None:
        """Close the child's ends of the pipes in the harness (EOF comes when bwrap exits)."""
        for fd in self._child_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._child_fds = []

    def release(self, proc: subprocess.Popen[bytes]) -> None:
        """Run as root: map the agent's user into the sandbox's user namespace, then let
        bubblewrap go on. Unmapped, it cannot start: a failure here ends as its failed start."""
        if self._block is None:
            return
        try:
            until = time.monotonic() + _MAP_WAIT_S
            pid = self._status_field("child-pid")
            while pid is None and proc.poll() is None and time.monotonic() < until:
                select.select([self.status], [], [], _POLL_S)
                pid = self._status_field("child-pid")
            if pid is not None:
                with contextlib.suppress(OSError):  # it died already: its exit says why
                    for name in ("uid_map", "gid_map"):
                        Path(f"/proc/{pid}/{name}").write_text(id_maps())
                    os.write(self._block, b"1")
        finally:
            os.close(self._block)
            self._block = None

    def agent_pid(self) -> int | None:
        """The host pid of the namespace's init (the agent), once bubblewrap has said it."""
        if self._pid is None and self.confined:
            self._pid = self._status_field("child-pid")
        return self._pid

    def agent_pidfd(self) -> int | None:
        """A pidfd of the namespace's init (the agent), once bubblewrap has reported its pid."""
        if self._pidfd is None:
            pid = self._status_field("child-pid")
            if pid is not None:
                with contextlib.suppress(OSError):
                    self._pidfd = os.pidfd_open(pid)
        return self._pidfd

    def exit_code(self, returncode: int | None) -> int | None:
        """The agent's own exit status; bubblewrap reports a signal death as 128 + signal."""
        code = self._status_field("exit-code") if self.confined else None
        if code is None:
            return returncode
        if code > 128 and (code - 128) in _SIGNALS:
            return 128 - code
        return code

    def _status_field(self, name: str) -> int | None:
        """A field of bubblewrap's status lines, from what it has written so far.

        The pipe is read only here, not watched with the agent's output: its lines would wake
        the unit's thread twice per run for nothing (the pid matters only to a kill, the exit
        code only once bubblewrap is reaped, when both lines are in the pipe).
        """
        while self.status is not None:
            try:
                chunk = os.read(self.status, _CHUNK)
            except BlockingIOError:
                break
            if not chunk:
                break
            self._status_data.extend(chunk)
        for line in bytes(self._status_data).decode(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                value = json.loads(line)
                if isinstance(value, dict) and isinstance(value.get(name), int):
                    return int(value[name])
        return None

    def close(self) -> None:
        self.started()
        if self._block is not None:
            os.close(self._block)
            self._block = None
        for fd in (self.status, self._pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.status = self._pidfd = None


_SIGNALS = {int(s) for s in signal.Signals}


class _Stopper:
    """Ends the unit's processes once; calling :meth:`stop` again does nothing."""

    def __init__(self, proc: subprocess.Popen[bytes], cwd: Path, grace_s: float, launch: _Launch):
        self.proc, self.cwd, self.grace_s, self.launch = proc, cwd, grace_s, launch
        self.done = False

    def stop(self) -> None:
        if self.done:
            return
        self.done = True
        if self.launch.confined:
            _end_namespace(self.proc, self.launch, self.grace_s)
        else:
            _stop_group(self.proc, self.cwd, self.grace_s)


def _end_namespace(proc: subprocess.Popen[bytes], launch: _Launch, grace_s: float) -> None:
    """SIGKILL the namespace's init: the kernel then kills every process left in it.

    No grace period: whatever the agent would still write is no longer read.
    """
    if proc.poll() is not None:
        return  # bubblewrap reaped the agent, so the namespace is already empty
    pidfd = launch.agent_pidfd()
    if pidfd is not None:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    else:  # bubblewrap is still setting up: killing it takes the namespace (--die-with-parent)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    _reap(proc, grace_s + 5.0)
    if pidfd is not None:  # readable once the init is gone, which is after the whole namespace
        select.select([pidfd], [], [], grace_s + 5.0)


def _reap(proc: subprocess.Popen[bytes], limit_s: float) -> None:
    """Wait up to ``limit_s`` for ``proc`` to end, and reap it.

    Woken by a pidfd the moment it exits, where ``Popen.wait(timeout)`` sleeps and polls in
    growing steps and so adds up to a few milliseconds to every unit. The pid cannot be reused
    before this returns: only this ``Popen`` reaps it.
    """
    if proc.poll() is not None:
        return
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (OSError, AttributeError):  # no pidfds: an old kernel, or not Linux
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=limit_s)
        return
    try:
        poller = select.poll()  # not select(): a pidfd may be numbered past FD_SETSIZE
        poller.register(pidfd, select.POLLIN)
        poller.poll(limit_s * 1000)
    finally:
        os.close(pidfd)
    proc.poll()


@dataclass
class _Sink:
    """Where one pipe's bytes go; stderr keeps only its tail (it still counts toward the cap)."""

    data: bytearray
    tail_only: bool

    def take(self, chunk: bytes) -> None:
        self.data.extend(chunk)
        if self.tail_only and len(self.data) > 4 * _STDERR_TAIL:
            del self.data[:-_STDERR_TAIL]


def _read_into(selector: selectors.BaseSelector, key: selectors.SelectorKey) -> int:
    """Move one chunk from a ready pipe into its sink; unregister the pipe at EOF."""
    chunk = os.read(key.fd, _CHUNK)
    if not chunk:
        selector.unregister(key.fileobj)
        return 0
    sink: _Sink = key.data
    sink.take(chunk)
    return len(chunk)


def _stop_group(proc: subprocess.Popen[bytes], cwd: Path, grace_s: float) -> None:
    """SIGTERM the agent's group and stragglers in its run dir, wait ``grace_s``, then SIGKILL.

    The run dir's processes are found with one /proc scan; after that only those pids are
    watched, so a unit costs one scan, not one per poll.
    """
    pgid = proc.pid  # start_new_session makes the agent its group's leader
    targets = survivors(pgid, cwd)
    if proc.poll() is None and proc.pid not in targets:
        targets.append(proc.pid)
    if not targets:
        return
    _signal_all(pgid, targets, signal.SIGTERM)
    if _wait_gone(proc, targets, grace_s):
        return
    remaining = [p for p in targets if p != proc.pid and _living(p)]
    if proc.poll() is None:  # never signal a reaped pid: it may already belong to someone else
        remaining.append(proc.pid)
    _signal_all(pgid, remaining, signal.SIGKILL)
    _wait_gone(proc, remaining, grace_s)


def _wait_gone(proc: subprocess.Popen[bytes], pids: list[int], limit_s: float) -> bool:
    """Wait up to ``limit_s`` until the agent is reaped and every pid in ``pids`` has ended."""
    until = time.monotonic() + limit_s
    while True:
        proc.poll()
        if proc.returncode is not None and not any(_living(p) for p in pids if p != proc.pid):
            return True
        if time.monotonic() >= until:
            return False
        time.sleep(_POLL_S)


def _living(pid: int) -> bool:
    """Whether ``pid`` runs code (a zombie does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return not Path("/proc").is_dir()
    return stat[stat.rfind(")") + 2 :][:1] not in ("Z", "X")


def _signal_all(pgid: int, pids: list[int], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def survivors(pgid: int, run_dir: Path) -> list[int]:
    """Live (non-zombie) processes in group ``pgid`` or whose cwd lies inside ``run_dir``."""
    proc_root = Path("/proc")
    if not proc_root.is_dir():  # not Linux: only the group is observable
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    inside = str(Path(run_dir).resolve())
    found: list[int] = []
    own = os.getpid()
    for entry in proc_root.iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid == own:
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces or parentheses; the fields after the last ")" do not
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) < 3 or fields[0] in ("Z", "X"):
            continue
        if int(fields[2]) == pgid:
            found.append(pid)
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == inside or cwd.startswith(inside + os.sep):
            found.append(pid)
    return found
