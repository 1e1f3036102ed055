"""A finished evaluation standing in for one asked again, so no run is paid for twice.

An evaluation is the same measurement when everything that decides its rows is the same: the
skill texts of every variant (with a candidate's own files), the benchmark's fingerprint, the
agent's settings (kind, command, model, noise, turn and time limits, tools, sandbox), AGENTS.md,
the case set × runs, the evaluation seed, and the judge when a rubric asks for one. The
runner's resume key (``Plan.key``) holds all of that but the seed, the judge and the agent's
limits, so the identity here is that key plus those three, plus the *purpose* below.

Why the purpose: a loop that picks targets on some rows (evolve diagnoses the parent's
selection rows and patches the cases that failed there) must never judge its patch against
those same rows — cases chosen because they failed once tend to pass on a rerun whatever the
patch does (regression to the mean). So rows are reused only for the purpose they were made
for: rows a loop picked targets on (``targets``) only to pick targets again, every other
measurement (``measure``) only as a measurement. A reused run is read, never written: its
manifest, rows and scoreboard record stay as they were.

When: a loop reuses any agent's recorded runs (its rows are a valid draw the loop never chose
on); a seeded ``eval`` reuses a deterministic agent's run (the same seed would give the same
rows) and a noisy agent's only when ``reuse: always``; ``reuse: never`` or ``--fresh`` runs
again. Every finished run that had a purpose is filed under its identity in ``runs/.reuse/``
(one small file naming the newest such run), so looking one up costs a read, not a scan of
the history.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from engine.core.config import Config
from engine.core.errors import SkillsmithError
from engine.core.fsutil import atomic_write_text
from engine.core.runs import RunFolder, check_run_id

if TYPE_CHECKING:
    from engine.evaluation.agents import Agent

Purpose = Literal["measure", "targets"]
INDEX = ".reuse"


@dataclass(frozen=True)
class Reuse:
    """How a caller of the runner wants a recorded run to stand in for a new one.

    ``purpose``: what the caller does with the rows (see the module doc). ``fresh``: run again
    all the same (``--fresh``); the new run is still filed for later reuse. ``loop``: a loop's
    own measurement, reused for any agent; otherwise a person's ``eval``, reused for a noisy
    agent only when the configuration says ``reuse: always``.
    """

    purpose: Purpose = "measure"
    fresh: bool = False
    loop: bool = True


def deterministic(cfg: Config) -> bool:
    """Whether the same seed gives the same rows: the demo agent draws its slips from the
    unit's seed (any noise), a command agent when declared ``agent.deterministic``; Claude Code
    never."""
    agent = cfg.agent
    return agent.kind == "demo" or (agent.kind == "command" and agent.deterministic)


def allowed(cfg: Config, reuse: Reuse) -> bool:
    """Whether a recorded run may stand in for this evaluation at all."""
    if reuse.fresh or cfg.reuse == "never":
        return False
    return reuse.loop or cfg.reuse == "always" or deterministic(cfg)


def identity(
    key: str, seed: int, agent: Agent, judge: dict[str, Any] | None, purpose: Purpose
) -> str:
    """The evaluation's identity: the resume ``key`` with the seed, the agent's whole settings,
    the judge (None: no rubric asks for one) and the purpose."""
    material = {
        "key": key,
        "seed": seed,
        "agent": agent.describe(),
        "judge": judge,
        "purpose": purpose,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def lookup(runs_dir: Path, ident: str) -> RunFolder | None:
    """The newest finished run filed under ``ident`` whose manifest still says so (a run
    deleted, resumed into another status or edited since is not reused)."""
    try:
        run_id = (runs_dir / INDEX / ident).read_text(encoding="utf-8").strip()
        folder = RunFolder(runs_dir / check_run_id(run_id))
        manifest = folder.read_manifest()
    except (OSError, SkillsmithError):  # no entry, a garbled one, a run gone or unreadable
        return None
    if manifest.get("status") != "finished" or manifest.get("reuse") != ident:
        return None
    return folder


def file_run(folder: RunFolder, ident: str) -> None:
    """File a run that finished with every unit valid under its identity (the newest wins)."""
    with contextlib.suppress(OSError):
        atomic_write_text(folder.path.parent / INDEX / ident, folder.run_id + "\n")


def reused_line(run_id: str, skills: list[dict[str, Any]], units: int, seed: int) -> str:
    """What a reuse says in a log: which run, for which skills, how many units it saved."""
    shown = ", ".join(
        f"{s['name']} {s['version'] or 'sha256:' + s['sha256'][:12]}"
        for s in skills
        if s["under_test"]
    )
    return f"reused {run_id} for {shown or 'no skills'}: {units} units (seed {seed})"


__all__ = [
    "INDEX",
    "Purpose",
    "Reuse",
    "allowed",
    "deterministic",
    "file_run",
    "identity",
    "lookup",
    "reused_line",
]
