"""Workspaces wired to the test agents of tests/agents/, for the agent and runner tests.

Also a pytest plugin (tests/conftest.py): the ``count_dir`` fixture.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine.core.workspace import Workspace
from tests.bench_helpers import write_benchmark, write_case

AGENTS = Path(__file__).resolve().parent / "agents"
SCRIPTED = AGENTS / "scripted_agent.py"
ADVERSARIAL = AGENTS / "adversarial_agent.py"
COUNT_ENV = "SKILLSMITH_TEST_COUNT_DIR"
LABELS = {"labels": ["vulnerable", "safe"], "runs_per_case": 1, "seed": 7}


@pytest.fixture
def count_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the scripted agent counts its launches; run rooms go to a private tmp/ beside it."""
    folder = tmp_path / "count"
    folder.mkdir()
    folder.chmod(0o777)  # under a root harness the agent writes it as "nobody" (AGENT_UID)
    monkeypatch.setenv(COUNT_ENV, str(folder))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return folder


def command_workspace(
    root: Path,
    script: Path = SCRIPTED,
    *,
    timeout_s: float = 20.0,
    max_output_bytes: int = 1_000_000,
    env_allow: tuple[str, ...] = (COUNT_ENV,),
) -> Workspace:
    """A workspace whose target agent is ``python <script>`` (kind ``command``)."""
    ws = Workspace.init(root)
    cfg = ws.load_config()
    cfg.agent.kind = "command"
    cfg.agent.command = [sys.executable, str(script)]
    cfg.agent.timeout_s = timeout_s
    cfg.agent.max_output_bytes = max_output_bytes
    cfg.agent.env_allow = list(env_allow)
    count_dir = os.environ.get(COUNT_ENV)
    if COUNT_ENV in env_allow and count_dir:  # the scripted agent logs its launches there
        cfg.agent.writable_paths = [count_dir]
    ws.save_config(cfg)
    return ws


def add_skill(ws: Workspace, name: str, body: str, files: dict[str, str] | None = None) -> Path:
    folder = ws.skills_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    text = f"---\nname: {name}\ndescription: Audit code. Use for every audit.\n---\n{body}"
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    for rel, content in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(content, encoding="utf-8")
    return folder


def mode_benchmark(
    ws: Workspace,
    cases: dict[str, tuple[str, str, str]],
    *,
    bench_id: str = "b",
    runs: int = 1,
) -> Path:
    """Cases ``id → (mode, code, expected)`` for the scripted agent (mode.txt, code.txt)."""
    root = write_benchmark(
        ws.benchmarks_dir / bench_id, {}, config={**LABELS, "runs_per_case": runs}
    )
    for case_id, (mode, code, expected) in cases.items():
        write_case(
            root, case_id, {"expected": expected}, files={"mode.txt": mode, "code.txt": code}
        )
    return root


def launches(count_dir: Path) -> list[str]:
    path = count_dir / "launches"
    return path.read_text().splitlines() if path.exists() else []


def require_bwrap() -> None:
    """Sandbox tests need bubblewrap: skipped without it on a developer's machine, failed in CI
    (``CI=true``, which ``.ci/run`` and hosted CI services set) and under SKILLSMITH_REQUIRE_E2E=1,
    where a missing sandbox must never pass as a green run."""
    if shutil.which("bwrap") is not None:
        return
    if os.environ.get("SKILLSMITH_REQUIRE_E2E") == "1" or os.environ.get("CI") == "true":
        pytest.fail("bubblewrap (bwrap) is not installed; CI and SKILLSMITH_REQUIRE_E2E=1 need it")
    pytest.skip("bubblewrap (bwrap) is not installed")


def running(marker: str) -> list[int]:
    """Host pids of live processes whose command line holds ``marker``.

    A sandboxed agent reports pids of its own PID namespace, which mean nothing out here; its
    command line (the script path, a token) is what finds it from outside.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs code: a zombie (killed, not yet reaped by init) does not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X")


@contextmanager
def lock_held_elsewhere(ws: Workspace, label: str) -> Iterator[None]:
    """``ws``'s lock held by another thread under ``label`` for the ``with`` block.

    The lock excludes threads of the same process as well as other processes; a thread is the
    cheapest other holder, and it lets go however the block ends.
    """
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with ws.lock(label):
            held.set()
            release.wait(60)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(10), "the other thread never took the lock"
        yield
    finally:
        release.set()
        thread.join(10)


LINK_AGENT = AGENTS / "link_agent.py"


def linked_host_files(ws: Workspace, host: Path) -> list[bytes]:
    """A benchmark for ``link_agent.py`` whose case hands it a host file and a host folder to
    link its answer to; returns the tokens only those host files hold."""
    tokens = [f"host-{uuid.uuid4().hex}".encode() for _ in range(2)]
    (host / "folder").mkdir(parents=True)
    (host / "secret.txt").write_bytes(b"VERDICT: vulnerable " + tokens[0] + b"\n")
    (host / "folder" / "inside.txt").write_bytes(tokens[1])
    targets = f"{host / 'secret.txt'}\n{host / 'folder'}\n"
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    write_case(root, "linked", {"expected": "safe"}, files={"targets.txt": targets})
    return tokens


def holding(folder: Path, tokens: list[bytes]) -> list[Path]:
    """Files under ``folder`` (links not followed) whose bytes hold one of ``tokens``."""
    return [
        p
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink() and any(t in p.read_bytes() for t in tokens)
    ]
