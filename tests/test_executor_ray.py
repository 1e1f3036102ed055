"""Evaluation on a Ray cluster: the same outcomes as locally, resume, and a worker that dies.

Runs against one local two-CPU cluster (``ray.init(num_cpus=2)``, loopback only) shared by the
module: starting one costs ~30 s on a loaded machine. Ray is an optional extra: without it these
tests are skipped, and fail under SKILLSMITH_REQUIRE_E2E=1 (CI installs the extra).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.core.events import Cancelled, CancelToken, Event
from engine.core.runs import RunFolder, run_folders
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.evaluation import executors
from engine.evaluation.demo import DEMO_SKILL, copy_demo
from engine.evaluation.executors import LocalExecutor, RayExecutor, make_executor
from engine.evaluation.gates.candidate import TaskOutcome
from engine.evaluation.gates.submission import submit_candidate
from engine.evaluation.runner import run_evaluation
from tests.runner_helpers import (
    LINK_AGENT,
    command_workspace,
    holding,
    linked_host_files,
    mode_benchmark,
)

pytestmark = pytest.mark.ray

if importlib.util.find_spec("ray") is None:
    if os.environ.get("SKILLSMITH_REQUIRE_E2E") == "1":
        raise RuntimeError("SKILLSMITH_REQUIRE_E2E=1, but Ray is missing (uv sync --extra ray)")
    pytestmark = [pytest.mark.ray, pytest.mark.skipif(True, reason="Ray is not installed")]

CASES = ["cmdi-js-exec", "cmdi-php-escaped", "cmdi-go-args", "cmdi-go-shell"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayExecutor]:
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # as RayExecutor does
    import ray

    # Ray waits a fixed 30 s for its raylet to register; a machine loaded by other work can miss
    # that once, so the cluster gets three tries to start (a real failure still fails).
    for attempt in range(3):
        try:
            ray.init(
                num_cpus=2,
                include_dashboard=False,
                log_to_driver=False,
                _node_ip_address="127.0.0.1",
                # workers of a loaded machine register slowly: far longer than Ray's default
                _system_config={"worker_register_timeout_seconds": 300},
            )
            break
        except Exception:
            ray.shutdown()
            if attempt == 2:
                raise
    try:
        executor = make_executor("ray")  # joins the running cluster, as the runner would
        assert isinstance(executor, RayExecutor)
        yield executor
    finally:
        make_executor.cache_clear()
        ray.shutdown()


def _outcomes(run_dir: Path) -> dict[tuple[str, int, str], tuple[Any, ...]]:
    rows = RunFolder(run_dir).latest_rows()
    return {
        (k.case_id, k.run_index, k.variant): (
            r["pass_fail"],
            r["judge_verdict"],
            r["score"],
            r["seed"],
        )
        for k, r in rows.items()
    }


def _noisy_demo(root: Path) -> Workspace:
    ws = Workspace.at(copy_demo(root))
    cfg = ws.load_config()
    cfg.agent.noise = 0.5  # slips that only the seed decides: a wrong seed shows as other outcomes
    ws.save_config(cfg)
    return ws


def test_the_noisy_demo_with_one_seed_gives_the_same_outcomes_locally_and_on_ray(
    tmp_path: Path, cluster: RayExecutor
) -> None:
    results, run_dirs = [], []
    for name, executor in (("local", LocalExecutor()), ("ray", cluster)):
        ws = _noisy_demo(tmp_path / name)
        result = run_evaluation(
            ws, "vuln-detect", case_ids=CASES, runs=2, jobs=2, seed=4242, executor=executor
        )
        assert result.status == "finished" and result.launched == 2 * len(CASES)
        results.append(_outcomes(result.run_dir))
        run_dirs.append(result.run_dir)
    local, on_ray = results
    kinds = [json.loads((r / "manifest.json").read_text())["executor"]["kind"] for r in run_dirs]
    assert kinds == ["local", "ray"]
    assert local == on_ray and len(local) == 2 * len(CASES)
    # the noise is real at this level: the seed, not a constant, made the outcomes agree
    assert len({outcome[:3] for outcome in local.values()}) > 1


def test_eval_executor_ray_on_the_command_line(
    tmp_path: Path, cluster: RayExecutor, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = _noisy_demo(tmp_path / "cli")
    argv = ["-w", str(ws.root), "eval", "vuln-detect", "--cases", ",".join(CASES)]
    assert main([*argv, "--executor", "ray", "--seed", "7", "-j", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (run_dir,) = run_folders(ws.runs_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["seed"] == 7 and manifest["status"] == "finished"
    assert manifest["executor"]["kind"] == "ray"
    assert len(RunFolder(run_dir).latest_rows()) == manifest["runs"] * len(CASES)
    assert out["run_id"] == run_dir.name


def test_a_loop_sends_its_evaluations_to_ray_with_executor_on_its_command_line(
    tmp_path: Path, cluster: RayExecutor, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = _noisy_demo(tmp_path / "queue")
    bench = ws.benchmarks_dir / "vuln-detect"
    cases = sorted(p.name for p in bench.iterdir() if p.is_dir())
    for case in set(cases) - set(cases[::10]):
        shutil.rmtree(bench / case)  # a tenth of the cases keeps the paired evaluation quick
    store = SkillStore(ws, DEMO_SKILL)
    current = str(store.ensure_adopted())
    cand, decision = submit_candidate(
        ws,
        DEMO_SKILL,
        store.read(current) + "\n11. Say which line each finding is on.\n",
        source="manual",
        operation="update",
        parent_version=current,
        summary="a step more",
        outcome=TaskOutcome(status="fail"),  # no proof from the task: parked for queue eval
    )
    assert decision.status == "pending_eval"
    argv = ["-w", str(ws.root), "queue", "eval", cand.id, "--executor", "ray", "-j", "2"]
    assert main([*argv, "--json"]) == 0
    run_ids = json.loads(capsys.readouterr().out)["run_ids"]
    assert run_ids  # the candidate and its parent, each evaluated on the cluster
    for run_id in run_ids:
        manifest = json.loads((ws.runs_dir / run_id / "manifest.json").read_text())
        assert manifest["executor"]["kind"] == "ray" and manifest["status"] == "finished"


def test_an_interrupted_ray_evaluation_resumes_only_the_missing_units(
    tmp_path: Path, cluster: RayExecutor
) -> None:
    ws = command_workspace(tmp_path / "ws", env_allow=())
    cfg = ws.load_config()
    cfg.executor.kind = "ray"  # skillsmith.yaml alone sends the units to the cluster
    ws.save_config(cfg)
    cases = {f"c{i}": ("sleep 0.5", "x = 1\n", "safe") for i in range(6)}
    mode_benchmark(ws, cases)
    cancel = CancelToken()
    finished: list[str] = []

    def report(event: Event) -> None:
        if event.kind == "case_finished":
            finished.append(event.data["case_id"])
            if len(finished) == 2:
                threading.Thread(target=cancel.cancel).start()

    with pytest.raises(Cancelled):
        run_evaluation(ws, "b", jobs=2, reporter=report, cancel=cancel)
    (run_dir,) = run_folders(ws.runs_dir)
    done = {k.case_id for k, r in RunFolder(run_dir).latest_rows().items() if r["pass_fail"]}
    assert 2 <= len(done) < len(cases)
    resumed = run_evaluation(ws, "b", jobs=2, run_id=run_dir.name)
    assert resumed.status == "finished"
    assert resumed.launched == len(cases) - len(done)
    assert {r["case_id"] for r in resumed.rows} == set(cases)
    assert all(r["pass_fail"] == "pass" for r in resumed.rows)


def test_a_unit_whose_ray_worker_dies_is_invalid_and_the_rest_completes(
    tmp_path: Path, cluster: RayExecutor
) -> None:
    ws = command_workspace(tmp_path / "ws", env_allow=())
    cfg = ws.load_config()
    cfg.agent.sandbox = "none"  # the agent must see the worker process above it to kill it
    ws.save_config(cfg)
    cases = {f"ok{i}": ("answer", "x = 1\n", "safe") for i in range(3)}
    cases["dies"] = ("kill-worker", "x = 1\n", "safe")
    mode_benchmark(ws, cases)
    result = run_evaluation(ws, "b", jobs=2, executor=cluster)
    rows = {r["case_id"]: r for r in result.rows}
    assert rows["dies"]["pass_fail"] == "invalid"
    assert "Ray worker failed" in rows["dies"]["invalid_reason"]
    assert all(rows[f"ok{i}"]["pass_fail"] == "pass" for i in range(3))


def test_links_the_agent_leaves_come_back_from_ray_as_links_and_are_never_read(
    tmp_path: Path, cluster: RayExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker packs the agent's folder without following its links (a linked host folder
    would come back whole) and the harness grades nothing through them."""
    ws = command_workspace(tmp_path / "ws", LINK_AGENT, env_allow=())
    tokens = linked_host_files(ws, tmp_path / "host")
    seen: dict[str, object] = {}
    real_unpack = executors.unpack

    def unpack(data: bytes, folder: Path) -> None:
        real_unpack(data, folder)
        if (folder / "evidence").is_symlink():  # the folder the worker sent back
            seen["evidence"] = os.readlink(folder / "evidence")
            seen["answer"] = os.readlink(folder / "answer.txt")
            seen["held"] = holding(folder, tokens)

    monkeypatch.setattr(executors, "unpack", unpack)  # the real one, looked at after it ran
    result = run_evaluation(ws, "b", executor=cluster)

    (row,) = result.rows
    assert (row["pass_fail"], row["judge_verdict"]) == ("pass", "safe")
    assert seen == {
        "evidence": str(tmp_path / "host" / "folder"),
        "answer": str(tmp_path / "host" / "secret.txt"),
        "held": [],
    }
    assert holding(ws.root, tokens) == []
