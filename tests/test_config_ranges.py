"""``skillsmith.yaml`` values of the right type but out of range are refused when it is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main
from engine.core.errors import FormatError, SkillsmithError
from engine.core.workspace import Workspace
from engine.evaluation.agents import make_agent
from tests.bench_helpers import write_benchmark, write_case


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("agent:\n  timeout_s: -5\n", "field 'agent.timeout_s': expected a number > 0, got -5.0"),
        ("agent:\n  timeout_s: 0\n", "field 'agent.timeout_s': expected a number > 0"),
        ("agent:\n  max_turns: 0\n", "field 'agent.max_turns': expected a number > 0"),
        ("models:\n  judge:\n    timeout_s: -1\n", "field 'models.judge.timeout_s'"),
        ("gates:\n  approval_timeout_s: -2\n", "field 'gates.approval_timeout_s'"),
        ("limits:\n  lock_wait_s: -1\n", "field 'limits.lock_wait_s': expected ≥ 0"),
        (
            "gates:\n  holdout_max_f1_drop: 5\n",
            "field 'gates.holdout_max_f1_drop': expected an F1 share in [0, 1) (0.01 = 1 point)",
        ),
        ("splits:\n  selection: 5\n", "field 'splits.selection': expected a share in (0, 1)"),
        ("splits:\n  golden: 0\n", "field 'splits.golden': expected a share in (0, 1), got 0"),
        (
            "splits: {selection: 0.5, holdout: 0.25, golden: 0.1}\n",
            "field 'splits': selection, holdout and golden must sum to 1 (got 0.5 + 0.25 + 0.1)",
        ),
        ("diagnosis:\n  label_pattern: 'VERDICT: ('\n", "field 'diagnosis.label_pattern': regex"),
        (
            "diagnosis:\n  benign_error_patterns: ['ok', '[unclosed']\n",
            "field 'diagnosis.benign_error_patterns[1]': regex does not compile",
        ),
        ("agent:\n  writable_paths: [cache]\n", "field 'agent.writable_paths[0]': expected an abs"),
        ("agent:\n  sandbox: docker\n", "field 'agent.sandbox': expected one of 'bwrap', 'seat"),
        ("agent:\n  memory_mb: 10\n", "field 'agent.memory_mb': expected a whole number in [64,"),
        ("agent:\n  max_processes: 0\n", "field 'agent.max_processes': expected a whole number"),
        ("agent:\n  disk_mb: 1e9\n", "field 'agent.disk_mb': expected"),
        ("agent:\n  allow_hosts: ['a b']\n", "field 'agent.allow_hosts[0]': expected 'host'"),
        ("gates:\n  alpha: -0.5\n", "field 'gates.alpha': expected a rate in (0, 0.5), got -0.5"),
        ("gates:\n  alpha: 0.5\n", "field 'gates.alpha': expected a rate in (0, 0.5)"),
        ("gates:\n  alpha: .nan\n", "field 'gates.alpha'"),
        ("gates:\n  looks: 0\n", "field 'gates.looks': expected a number in [1, 20], got 0"),
        ("gates:\n  max_extra_runs: -1\n", "field 'gates.max_extra_runs': expected a number in"),
        ("limits:\n  max_rounds: 0\n", "field 'limits.max_rounds': expected a number in [1,"),
        ("version: -3\n", "field 'version': expected a number in [0,"),
        ("limits:\n  workers: -2\n", "field 'limits.workers': expected a number in [0, 1024]"),
        ("online:\n  workers: 0\n", "field 'online.workers': expected a number in [1, 1024]"),
        (
            "limits:\n  snapshot_max_member_bytes: 0\n",
            "field 'limits.snapshot_max_member_bytes': expected a number > 0",
        ),
        (
            "limits: {snapshot_max_member_bytes: 100, snapshot_max_total_bytes: 10}\n",
            "field 'limits.snapshot_max_total_bytes': expected a number in [100,",
        ),
    ],
)
def test_out_of_range_value_names_file_and_field(
    workspace: Workspace, body: str, expected: str
) -> None:
    workspace.config_path.write_text(body)
    with pytest.raises(FormatError) as info:
        workspace.load_config()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(workspace.config_path))
    assert expected in message


def test_values_inside_their_ranges_load(workspace: Workspace) -> None:
    workspace.config_path.write_text(
        "agent: {timeout_s: 0.5, sandbox: none, network: true, read_only_paths: [/opt]}\n"
        "splits: {selection: 0.5, holdout: 0.3, golden: 0.2}\n"
        "limits: {lock_wait_s: 0}\n"
    )
    cfg = workspace.load_config()
    assert cfg.agent.timeout_s == 0.5 and cfg.splits.golden == 0.2 and cfg.agent.network is True


def test_a_missing_agent_command_binary_is_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = Workspace.init(tmp_path / "ws")
    cfg = ws.load_config()
    cfg.agent.kind = "command"
    cfg.agent.command = [str(tmp_path / "no-such-agent"), "--flag"]
    ws.save_config(cfg)
    with pytest.raises(SkillsmithError, match=r"no-such-agent: not an .*field 'agent.command'"):
        make_agent(ws)
    cfg.agent.command = ["no-such-agent-on-path-4711"]
    ws.save_config(cfg)
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config={"labels": ["safe"]})
    write_case(root, "one", {"expected": "safe"})
    assert main(["eval", "b", "-w", str(ws.root)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no-such-agent-on-path-4711" in err
    assert not ws.runs_dir.exists() or list(ws.runs_dir.iterdir()) == []


@pytest.mark.parametrize("runs", [0, 1_000_000_000])
def test_runs_per_case_out_of_range_names_the_benchmark_file(
    workspace: Workspace, capsys: pytest.CaptureFixture[str], runs: int
) -> None:
    root = write_benchmark(
        workspace.benchmarks_dir / "b", {}, config={"labels": ["safe"], "runs_per_case": runs}
    )
    write_case(root, "one", {"expected": "safe"})

    assert main(["eval", "b", "-w", str(workspace.root)]) == 1

    [error] = [ln for ln in capsys.readouterr().err.splitlines() if not ln.startswith("warning:")]
    assert error.endswith(f"field 'runs_per_case': expected a number in [1, 1000], got {runs}")
    assert "benchmarks/b/benchmark.yaml" in error
