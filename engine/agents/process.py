"""Run one agent process and leave nothing behind.

A target agent is untrusted code: it may hang, fork helpers that outlive it, or flood its output.
So it starts in its own session (its own process group), its output is read with a byte cap, and
when it ends — normally, at its timeout, past the cap or on cancel — the whole group is sent
SIGTERM, given a short grace, then SIGKILL. Processes that left the group with ``setsid`` but still
sit in the run directory are found through /proc and killed too. Killed orphans may linger as
zombies when PID 1 does not reap; they run no code and are not counted as survivors.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_CHUNK = 65536
_STDERR_TAIL = 16_384
_POLL_S = 0.05
_DRAIN_S = 1.0


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


def run_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    max_output_bytes: int,
    grace_s: float = 2.0,
    should_stop: Callable[[], bool] = lambda: False,
) -> ProcessResult:
    """Run ``argv`` in ``cwd`` with exactly ``env``; always returns with its process group gone."""
    started = time.monotonic()
    deadline = started + timeout_s
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    result = ProcessResult(stdout=b"", stderr_tail=b"", exit_code=None, duration_ms=0, pid=proc.pid)
    out = bytearray()
    err = bytearray()
    total = 0
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, _Sink(out, tail_only=False))
    selector.register(proc.stderr, selectors.EVENT_READ, _Sink(err, tail_only=True))
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
            for key, _ in selector.select(timeout=_POLL_S):
                total += _read_into(selector, key)
                if total > max_output_bytes:
                    result.over_cap = True
                    break
            if result.over_cap:
                break
        _stop_group(proc, cwd, grace_s)
        if not (result.over_cap or result.timed_out or result.cancelled):
            drain_until = time.monotonic() + _DRAIN_S
            while selector.get_map() and time.monotonic() < drain_until:
                for key, _ in selector.select(timeout=_POLL_S):
                    total += _read_into(selector, key)
                if total > max_output_bytes:
                    result.over_cap = True
                    break
    finally:
        _stop_group(proc, cwd, grace_s)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s + 1.0)
        for key in list(selector.get_map().values()):
            selector.unregister(key.fileobj)
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
    result.stdout = bytes(out[:max_output_bytes])
    result.stderr_tail = bytes(err[-_STDERR_TAIL:])
    result.exit_code = proc.returncode
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result


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
    """SIGTERM the agent's group and stragglers in its run dir, wait ``grace_s``, then SIGKILL."""
    pgid = proc.pid  # start_new_session makes the agent its group's leader
    targets = survivors(pgid, cwd)
    if proc.poll() is None and proc.pid not in targets:
        targets.append(proc.pid)
    if not targets:
        return
    _signal_all(pgid, targets, signal.SIGTERM)
    until = time.monotonic() + grace_s
    while time.monotonic() < until:
        proc.poll()
        if not survivors(pgid, cwd) and proc.poll() is not None:
            return
        time.sleep(_POLL_S)
    remaining = survivors(pgid, cwd)
    if proc.poll() is None:  # never signal a reaped pid: it may already belong to someone else
        remaining.append(proc.pid)
    _signal_all(pgid, remaining, signal.SIGKILL)
    deadline = time.monotonic() + grace_s
    while survivors(pgid, cwd) and time.monotonic() < deadline:
        time.sleep(_POLL_S)


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
