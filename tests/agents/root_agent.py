"""A hostile agent for a harness that runs as root: it tries what root could do, or eats the
machine. ``mode.txt`` in its statement picks what it does:

``probe``      report its capabilities and try to mount (also from a user namespace of its own,
               remounting the engine read-write), make device nodes, and write to each path in
               ``targets.txt``; the report is hex-encoded in its answer, past secret redaction.
``hog``        allocate memory in one process until an allocation fails.
``hog-many``   four processes each touch 48 MB and hold it (together over a 128 MB limit).
``forkbomb``   fork without end, waiting a moment whenever a fork fails.
``disk``       write one file until the writes stop.
``disk-many``  write 1 MB files, 3 MB past ``disk.txt`` MB, then hold on.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import json
import os
import stat
import sys
import time
from pathlib import Path

MS_BIND, MS_REMOUNT = 4096, 32
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def emit(line: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def answer(text: str) -> int:
    emit({"type": "user", "content": "task"})
    emit({"type": "assistant", "content": text})
    emit({"type": "result", "tokens": {"input": 1, "output": 1}, "cost_usd": 0.0})
    return 0


def _errno_of(result: int) -> str | None:
    return None if result == 0 else errno.errorcode.get(ctypes.get_errno(), "?")


def mount_tmpfs(target: str) -> str | None:
    """None when the mount went through, else the errno's name."""
    return _errno_of(_libc.mount(b"none", target.encode(), b"tmpfs", 0, None))


def remount_writable(target: str) -> str | None:
    return _errno_of(_libc.mount(None, target.encode(), None, MS_REMOUNT | MS_BIND, None))


def nested(engine_dir: str, token: str) -> dict[str, object]:
    """In a child: a user and mount namespace of its own, then the engine remounted writable."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        report: dict[str, object] = {
            "unshare": _errno_of(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS))
        }
        report["remount"] = remount_writable(engine_dir)
        report["wrote"] = try_write(Path(engine_dir) / f"{token}-nested")
        os.write(write_end, json.dumps(report).encode())
        os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 4096):
        data += chunk
    os.waitpid(pid, 0)
    return dict(json.loads(data))


def try_write(path: Path) -> bool:
    try:
        path.write_text("planted")
        return True
    except OSError:
        return False


def probe() -> int:
    status = Path("/proc/self/status").read_text()
    caps = {ln.split(":")[0]: ln.split()[1] for ln in status.splitlines() if ln.startswith("Cap")}
    token = Path("token.txt").read_text().strip()
    targets = Path("targets.txt").read_text().split()
    engine_dir = targets[0]
    devices = {}
    for name, kind in (("block", stat.S_IFBLK), ("char", stat.S_IFCHR)):
        try:
            os.mknod(f"dev-{name}", kind | 0o600, os.makedev(8, 0))
            devices[name] = None
        except OSError as exc:
            devices[name] = errno.errorcode.get(exc.errno or 0, "?")
    os.mkdir("mnt")
    report = {
        "uid": os.getuid(),
        "caps": caps,
        "mount": mount_tmpfs(os.path.abspath("mnt")),
        "remount": remount_writable(engine_dir),
        "mknod": devices,
        "nested": nested(engine_dir, token),
        "writes": {t: try_write(Path(t) / f"{token}-planted") for t in targets},
    }
    return answer("REPORT " + json.dumps(report).encode().hex())


def hog() -> int:
    held = []
    while True:
        held.append(bytearray(16 << 20))


def hog_many() -> int:
    for _ in range(4):
        if os.fork() == 0:
            block = b"x" * (48 << 20)  # touched: resident, not only reserved
            time.sleep(60)
            os._exit(len(block) & 1)
    time.sleep(60)
    return 1


def forkbomb() -> int:
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.05)


def disk() -> int:
    with open("big.bin", "wb") as fh:
        while True:
            fh.write(b"\0" * (1 << 20))


def disk_many() -> int:
    limit_mb = int(Path("disk.txt").read_text())
    for i in range(limit_mb + 3):
        Path(f"part-{i}.bin").write_bytes(os.urandom(1 << 20))
    time.sleep(60)
    return 1


MODES = {
    "probe": probe,
    "hog": hog,
    "hog-many": hog_many,
    "forkbomb": forkbomb,
    "disk": disk,
    "disk-many": disk_many,
}

if __name__ == "__main__":
    sys.exit(MODES[Path("mode.txt").read_text().strip()]())
