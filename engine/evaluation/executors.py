"""Where a unit's agent runs: as a child process here (the default) or as a task on a Ray cluster.

The runner builds each unit's sealed run folder, grades the answer, stores the row and session,
resumes and cancels — all locally, against the workspace. An executor only runs the agent in
that folder and hands back its outcome, so a benchmark that outgrows one machine fans out to a
cluster without anything else changing. On Ray the folder travels as the task's input (a tar of
its bytes, links kept as links and never followed, both ways), the agent runs in a
fresh copy on a worker, and the outcome (session, answer, usage) comes back with the folder's
final files, which the graders may inspect (``answer.txt``, files a script check looks at).

Ray is optional (``pip install 'skillsmith[ray]'``) and imported only when asked for.
"""

from __future__ import annotations

import functools
import io
import os
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from engine.core.config import Config
from engine.core.errors import SkillsmithError, UsageError
from engine.evaluation.agents import Agent, AgentOutcome

EXECUTORS = ("local", "ray")
_POLL_S = 0.1  # how often a waiting unit looks at the cancel flag
_CANCEL_GRACE_S = 10.0  # a cancelled task may stop its agent this long before its worker is killed
# A loaded machine starts Ray workers slowly; Ray's default (60 s) fails tasks that only waited.
_REGISTER_TIMEOUT_S = 300


class Executor(Protocol):
    def describe(self) -> dict[str, Any]: ...

    def run(
        self,
        agent: Agent,
        room: Path,
        prompt: str,
        should_stop: Callable[[], bool],
        run_index: int,
        seed: int,
    ) -> AgentOutcome: ...


class LocalExecutor:
    """The agent runs as a child process of this one."""

    def describe(self) -> dict[str, Any]:
        return {"kind": "local"}

    def run(
        self,
        agent: Agent,
        room: Path,
        prompt: str,
        should_stop: Callable[[], bool],
        run_index: int,
        seed: int,
    ) -> AgentOutcome:
        return agent.run(room, prompt, should_stop, run_index=run_index, seed=seed)


def pack(folder: Path) -> bytes:
    """The folder's contents as tar bytes: files, folders, and links kept as links.

    Never followed: the agent's folder comes back from a worker this way, and a link it left to
    a host folder would otherwise bring that folder back whole. Pipes and sockets are left out.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", dereference=False) as tar:
        for path in sorted(folder.iterdir()):
            tar.add(path, arcname=path.name, filter=_plain)
    return buffer.getvalue()


def _plain(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return member if member.isreg() or member.isdir() or member.issym() else None


def unpack(data: bytes, folder: Path) -> None:
    """Make ``folder`` hold exactly the files of :func:`pack` (nothing lands outside it, no
    device files, no setuid bits); links come back as links, whatever they point at."""
    folder.mkdir(parents=True, exist_ok=True)
    for child in folder.iterdir():  # files the agent deleted must not linger for the graders
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(folder, filter=_links_kept)


def _links_kept(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """The "data" filter, except that a symlink may point anywhere: it is only ever a link to
    the harness (which opens nothing through one), and the filter would refuse the whole folder
    over it. Its own name is still checked, and a member inside one is still refused."""
    if member.issym():
        tarfile.data_filter(member.replace(linkname="", deep=False), dest)
        return member
    return tarfile.data_filter(member, dest)


def _never() -> bool:
    return False


def run_packed(
    agent: Agent, packed: bytes, prompt: str, run_index: int, seed: int
) -> tuple[AgentOutcome, bytes]:
    """The Ray task: run the agent in a fresh copy of the run folder, return outcome and files.

    A cancel reaches it as KeyboardInterrupt, which ends the agent's processes on the way out.
    """
    with tempfile.TemporaryDirectory(prefix="skillsmith-unit-") as tmp:
        room = Path(tmp) / "room"
        unpack(packed, room)
        outcome = agent.run(room, prompt, _never, run_index=run_index, seed=seed)
        return outcome, pack(room)


def _invalid(reason: str, started: float) -> AgentOutcome:
    return AgentOutcome(
        session=[],
        answer="",
        tokens={"input": 0, "output": 0},
        cost_usd=None,
        duration_ms=round((time.monotonic() - started) * 1000),
        exit_code=None,
        invalid_reason=reason,
    )


def _import_ray() -> Any:
    # Under `uv run` Ray would start each worker with `uv run` in an uploaded copy of the
    # project, which re-resolves a whole environment per worker: workers must use this
    # interpreter and its installed packages instead.
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray
    except ImportError:
        raise UsageError(
            "executor ray: Ray is not installed; install it with pip install 'skillsmith[ray]'"
        ) from None
    return ray


class RayExecutor:
    """Each unit is one Ray task; no retries, so a unit whose worker dies is invalid, with why."""

    def __init__(self, address: str | None = None) -> None:
        ray = _import_ray()
        self._ray: Any = ray
        if not ray.is_initialized():
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None and not os.environ.get("RAY_ADDRESS"):
                # a new cluster on this machine, reachable on loopback only
                options["_node_ip_address"] = "127.0.0.1"
                options["_system_config"] = {"worker_register_timeout_seconds": _REGISTER_TIMEOUT_S}
            try:
                ray.init(address=address, **options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                where = address or os.environ.get("RAY_ADDRESS") or "a local cluster"
                raise SkillsmithError(f"executor ray: cannot reach {where}: {first}") from None
        self._task = ray.remote(max_retries=0, num_cpus=1)(run_packed)
        self._address = address

    def describe(self) -> dict[str, Any]:
        """What the run manifest records: the cluster as named (its nodes come and go)."""
        return {"kind": "ray", "address": self._address or os.environ.get("RAY_ADDRESS")}

    def run(
        self,
        agent: Agent,
        room: Path,
        prompt: str,
        should_stop: Callable[[], bool],
        run_index: int,
        seed: int,
    ) -> AgentOutcome:
        ray = self._ray
        started = time.monotonic()
        ref = self._task.remote(agent, pack(room), prompt, run_index, seed)
        while not ray.wait([ref], timeout=_POLL_S)[0]:
            if should_stop():
                self._cancel(ref)
                return replace(_invalid("cancelled", started), cancelled=True)
        try:
            outcome, files = ray.get(ref)
        except ray.exceptions.RayError as exc:
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            return _invalid(f"Ray worker failed ({type(exc).__name__}): {first}", started)
        unpack(files, room)
        return outcome  # type: ignore[no-any-return]

    def _cancel(self, ref: Any) -> None:
        """Interrupt the task (its agent is stopped as on a local cancel); kill its worker only
        when it does not end in time."""
        ray = self._ray
        ray.cancel(ref, force=False)
        if not ray.wait([ref], timeout=_CANCEL_GRACE_S)[0]:
            ray.cancel(ref, force=True)


@functools.cache
def make_executor(kind: str, address: str | None = None) -> Executor:
    """The executor named ``kind``; one per process and address (a Ray connection is costly)."""
    if kind == "local":
        if address is not None:
            raise UsageError("--address: only the ray executor connects to a cluster")
        return LocalExecutor()
    if kind == "ray":
        return RayExecutor(address)
    raise UsageError(f"executor {kind!r}: expected one of {', '.join(EXECUTORS)}")


_chosen: tuple[str, str | None] | None = None


def choose_executor(kind: str | None, address: str | None) -> None:
    """The command line's ``--executor/--address``: they outrank skillsmith.yaml for every
    evaluation this process makes, however deep inside a loop it runs."""
    global _chosen
    if kind is None and address is None:
        _chosen = None  # this command asks for nothing: skillsmith.yaml decides
        return
    _chosen = (kind or "ray", address)  # an address alone can only mean a Ray cluster
    make_executor(*_chosen)  # a bad choice is refused before the command starts anything


def configured_executor(cfg: Config) -> Executor:
    """The command line's choice, else the one ``executor:`` in skillsmith.yaml names."""
    if _chosen is not None:
        return make_executor(*_chosen)
    return make_executor(cfg.executor.kind, cfg.executor.address)


__all__ = [
    "EXECUTORS",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "choose_executor",
    "configured_executor",
    "make_executor",
    "pack",
    "run_packed",
    "unpack",
]
