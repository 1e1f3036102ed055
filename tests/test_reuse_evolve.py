"""A second evolve session on an unchanged version and benchmark pays for none of the first's runs.

Both sessions run ``skillsmith evolve`` as a subprocess on nine path-traversal cases of the noisy
demo with one run per case and one round, to stay fast (enough for a candidate, the gates'
paired parent and their reruns). The session seed is fixed (``--seed 7``, the same in
both) because it fixes the seed of every evaluation a session asks for: a second session with the
same seed asks for exactly the measurements the first made, which is what may be reused; another
seed asks for other draws. The units are read from the run folders on disk, not from the loop's
own account.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from engine.core.results import read_results
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL
from tests.evolve_helpers import demo, run_evolve, session_events

pytestmark = pytest.mark.slow

Unit = tuple[str, int, int]  # case, run index, unit seed
KEEP = {
    "path-go-base",
    "path-go-join",
    "path-java-file",
    "path-java-normalize",
    "path-js-readfile",
    "path-js-root",
    "path-php-readfile",
    "path-py-basename",
    "path-py-concat",
}


def units_by_text(ws: Workspace, runs: set[str]) -> dict[str, set[Unit]]:
    """The units each skill text (by its SHA-256) had run in ``runs``, from rows on disk."""
    found: dict[str, set[Unit]] = {}
    for run_id in runs:
        manifest = json.loads((ws.runs_dir / run_id / "manifest.json").read_text())
        (sha,) = [s["sha256"] for s in manifest["skills"] if s["name"] == DEMO_SKILL]
        rows = read_results(ws.runs_dir / run_id / "results.jsonl")
        found.setdefault(sha, set()).update((r["case_id"], r["run_index"], r["seed"]) for r in rows)
    return found


def runs(ws: Workspace) -> set[str]:
    return {p.name for p in ws.runs_dir.iterdir() if not p.name.startswith(".")}


def messages(ws: Workspace, session_id: str) -> list[str]:
    return [str(e.get("text", "")) for e in session_events(ws, session_id)]


def test_a_second_evolve_session_reuses_the_first_sessions_runs_and_fresh_runs_them_again(
    tmp_path: Path,
) -> None:
    ws = demo(tmp_path / "ws", ("path",))
    bench = ws.benchmarks_dir / DEMO_BENCHMARK
    for case in bench.iterdir():
        if case.is_dir() and case.name not in KEEP:
            shutil.rmtree(case)
    spec = bench / "benchmark.yaml"
    spec.write_text(re.sub(r"runs_per_case: \d+", "runs_per_case: 1", spec.read_text()))
    store = SkillStore(ws, DEMO_SKILL)
    args = ("--rounds", "1", "--seed", "7")

    first = run_evolve(ws, *args)
    assert first["final_version"] == first["start_version"]  # unchanged: queued, not published
    version = first["start_version"]
    sha = hashlib.sha256(store.read(version).encode()).hexdigest()
    made = runs(ws)
    before = units_by_text(ws, made)[sha]
    assert len(before) > 20  # baseline, selection, the paired parent and reruns

    second = run_evolve(ws, *args)
    new = runs(ws) - made
    assert sha not in units_by_text(ws, new)  # what ran was another candidate's
    assert second["versions"] == first["versions"]  # the same figures, from the same rows
    said = messages(ws, second["session_id"])
    reused = [m for m in said if re.search(rf"reused run-\S+ for {DEMO_SKILL} {version}: ", m)]
    roles = {m.split(":")[0] for m in reused}
    assert {"baseline", "selection", "parent_paired"} <= roles
    saved = sum(int(re.search(r": (\d+) units", m).group(1)) for m in reused)  # type: ignore[union-attr]
    assert saved == len(before)
    # a reused evaluation launched no agent and counts none: the session's runs are its rows
    wrote = sum(len(read_results(ws.runs_dir / r / "results.jsonl")) for r in new)
    assert sum(second["agent_runs"].values()) == second["spent"]["runs"] == wrote
    assert "baseline" not in second["agent_runs"]

    third = run_evolve(ws, *args, "--fresh")
    again = units_by_text(ws, runs(ws) - made)[sha]
    assert again == before  # every unit of the version ran again, with the same seeds
    assert not [m for m in messages(ws, third["session_id"]) if "reused" in m]
