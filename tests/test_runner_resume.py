"""Interrupting and resuming an evaluation: finished units are kept and never run twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.core.errors import FormatError, SkillsmithError
from engine.core.events import Cancelled, CancelToken, Event
from engine.core.runs import run_folders
from engine.core.scoreboard import read_records
from engine.evaluation.runner import run_evaluation
from tests.runner_helpers import COUNT_ENV, command_workspace, launches, mode_benchmark

SAFE = "x = int(y)\n"
ROOT = Path(__file__).resolve().parents[1]


def _rows(run_dir: Path) -> list[dict[str, object]]:
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_cancel_keeps_finished_units_and_the_rerun_runs_only_the_missing(
    tmp_path: Path, count_dir: Path
) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {f"c{i}": ("sleep 0.2", SAFE, "safe") for i in range(3)}, runs=2)
    token = CancelToken()
    finished: list[Event] = []

    def reporter(event: Event) -> None:
        if event.kind == "case_finished":
            finished.append(event)
            if len(finished) == 2:
                token.cancel()

    with pytest.raises(Cancelled):
        run_evaluation(ws, "b", jobs=1, reporter=reporter, cancel=token)

    (run_dir,) = run_folders(ws.runs_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    assert manifest["counts"]["missing"] == 4
    kept = len(_rows(run_dir))
    assert kept == 2
    first_launches = len(launches(count_dir))
    assert first_launches <= 3  # the unit running at the cancel was killed, not recorded
    assert read_records(ws.benchmarks_dir / "b") == []  # an interrupted run scores nothing

    result = run_evaluation(ws, "b", jobs=2)  # the same evaluation: resumed automatically

    assert result.run_id == run_dir.name
    assert len(launches(count_dir)) - first_launches == 6 - kept
    assert result.launched == 6 - kept
    assert result.status == "finished" and len(result.rows) == 6
    assert len(_rows(run_dir)) == 6
    assert len(read_records(ws.benchmarks_dir / "b")) == 1
    # a finished evaluation is not resumed: asking again starts a fresh run
    again = run_evaluation(ws, "b", jobs=2)
    assert again.run_id != run_dir.name and again.launched == 6


def test_sigint_to_the_cli_then_resume_runs_only_the_missing_units(
    tmp_path: Path, count_dir: Path
) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {f"c{i}": ("sleep 0.3", SAFE, "safe") for i in range(4)}, runs=2)
    env = {**os.environ, COUNT_ENV: str(count_dir), "TMPDIR": str(tmp_path / "tmp")}
    cli = [sys.executable, "-m", "engine.cli", "eval", "b", "-w", str(ws.root)]
    proc = subprocess.Popen(
        [*cli, "-j", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # a test run started in the background by a non-interactive shell ignores SIGINT, and a
        # child inherits that: give the CLI the disposition it has in a terminal
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    results = None
    while time.monotonic() < deadline:
        found = list(ws.runs_dir.glob("*/results.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= 2:
            results = found[0]
            break
        time.sleep(0.05)
    assert results is not None, "the evaluation never got going"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run_id = results.parent.name
    assert f"--resume {run_id}" in err.decode()
    kept = len(_rows(results.parent))
    assert 2 <= kept < 8
    assert json.loads((results.parent / "manifest.json").read_text())["status"] == "interrupted"
    before = len(launches(count_dir))

    done = subprocess.run(
        [*cli, "--resume", run_id, "-j", "2", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert f"resuming run {run_id} at {kept}/8" in done.stderr  # never a silent resume
    report = json.loads(done.stdout)
    assert report["run_id"] == run_id and report["status"] == "finished"
    assert report["launched"] == 8 - kept
    assert len(launches(count_dir)) - before == 8 - kept
    assert report["metrics"]["units"] == 8 and report["metrics"]["pass_rate"] == 1.0


def test_rerun_retries_invalid_units_only(tmp_path: Path, count_dir: Path) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {"ok": ("answer", SAFE, "safe"), "flaky": ("flaky", SAFE, "safe")}, runs=2)
    first = run_evaluation(ws, "b", jobs=2)
    assert first.status == "incomplete"
    assert [r["pass_fail"] for r in first.rows] == ["invalid", "invalid", "pass", "pass"]
    (count_dir / "fixed").write_text("")  # the agent's bug is fixed

    second = run_evaluation(ws, "b", jobs=2)

    assert second.run_id == first.run_id
    assert second.launched == 2 and len(launches(count_dir)) == 6
    assert second.status == "finished"
    assert [r["pass_fail"] for r in second.rows] == ["pass"] * 4
    assert len(_rows(second.run_dir)) == 4  # superseded invalid rows were compacted away


def test_a_run_that_failed_to_score_stays_resumable_and_its_resume_records_it_once(
    tmp_path: Path, count_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scoreboard record comes before the final manifest: a run whose record could not be
    written is not marked finished, so the next run of it scores it without re-running a unit."""
    import engine.evaluation.runner as runner

    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {"a": ("answer", SAFE, "safe"), "b": ("answer", SAFE, "safe")}, runs=1)
    real = runner.append_record

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner, "append_record", disk_full)
    with pytest.raises(OSError):
        run_evaluation(ws, "b", jobs=1)
    (run_dir,) = run_folders(ws.runs_dir)
    assert json.loads((run_dir / "manifest.json").read_text())["status"] != "finished"
    assert read_records(ws.benchmarks_dir / "b") == []
    monkeypatch.setattr(runner, "append_record", real)

    again = run_evaluation(ws, "b", jobs=1)

    assert again.run_id == run_dir.name and again.launched == 0 and len(launches(count_dir)) == 2
    assert again.status == "finished"
    (record,) = read_records(ws.benchmarks_dir / "b")
    assert record.run_id == run_dir.name


def test_resuming_with_other_inputs_is_refused(tmp_path: Path, count_dir: Path) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {"ok": ("answer", SAFE, "safe")})
    first = run_evaluation(ws, "b", runs=1)
    manifest = (first.run_dir / "manifest.json").read_bytes()
    with pytest.raises(SkillsmithError, match="different runs"):
        run_evaluation(ws, "b", runs=2, run_id=first.run_id)
    assert (first.run_dir / "manifest.json").read_bytes() == manifest
    same = run_evaluation(ws, "b", run_id=first.run_id)  # nothing left to do
    assert same.launched == 0 and same.run_id == first.run_id
    assert len(read_records(ws.benchmarks_dir / "b")) == 1  # no duplicate scoreboard record


def test_torn_last_row_is_dropped_and_malformed_rows_are_named(
    tmp_path: Path, count_dir: Path
) -> None:
    ws = command_workspace(tmp_path / "ws")
    mode_benchmark(ws, {"a": ("answer", SAFE, "safe"), "b2": ("answer", SAFE, "safe")})
    run = run_evaluation(ws, "b", run_id="run-fixed", case_ids=["a"])
    results = run.run_dir / "results.jsonl"
    manifest_path = run.run_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["status"] = "interrupted"
    manifest_path.write_text(json.dumps(manifest))
    results.write_text(results.read_text() + '{"case_id": "a", "run_in')  # a crash mid-append

    resumed = run_evaluation(ws, "b", run_id="run-fixed")
    assert resumed.launched == 0 and len(_rows(run.run_dir)) == 1

    results.write_text('{"case_id": "a", "run_index": "zero", "pass_fail": "pass"}\n')
    before = manifest_path.read_bytes()
    with pytest.raises(FormatError, match=r"results\.jsonl:1: field 'run_index'"):
        run_evaluation(ws, "b", run_id="run-fixed")
    assert manifest_path.read_bytes() == before


def test_walk_files_lists_what_os_walk_lists_so_fingerprints_and_resume_keys_stay(
    tmp_path: Path,
) -> None:
    """The fingerprint (part of every run's resume key) walks the benchmark with one scandir
    per folder; a run made before must still be found, so the listing is os.walk's exactly."""
    from engine.core.fsutil import iter_files, walk_files

    root = tmp_path / "tree"
    for rel in ("b/z.txt", "b/a/deep.txt", "a.txt", "B.txt", "c d/e.txt", "b/a b/x", ".hidden"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "b" / ".x.abcd1234.tmp").write_text("a killed writer's temp file")
    (root / "link-to-dir").symlink_to(root / "b", target_is_directory=True)
    (root / "link-to-file").symlink_to(root / "a.txt")
    (root / "dangling").symlink_to(root / "missing")
    (root / "empty").mkdir()

    expected = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(".tmp"):
                path = Path(dirpath) / name
                expected.append((str(path), path.relative_to(root).as_posix()))

    assert list(walk_files(root)) == expected
    assert [str(p) for p in iter_files(root)] == [path for path, _ in expected]
    assert "link-to-dir/z.txt" not in {rel for _, rel in expected}  # not entered, as before


def test_a_statement_edited_in_place_after_a_run_is_another_evaluation_not_its_resume(
    tmp_path: Path, count_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The benchmark's fingerprint (part of the resume key) is kept in process by its files'
    stamps; an edit that keeps the file's size must still change it."""
    from engine.core import fsutil

    monkeypatch.setattr(fsutil, "SETTLED_AFTER_S", 0.0)  # keep files written a moment ago
    ws = command_workspace(tmp_path / "ws")
    root = mode_benchmark(ws, {"ok": ("answer", SAFE, "safe"), "flaky": ("flaky", SAFE, "safe")})
    first = run_evaluation(ws, "b", jobs=1)
    assert first.status == "incomplete"  # resumable: the next identical evaluation resumes it
    assert run_evaluation(ws, "b", jobs=1).run_id == first.run_id
    time.sleep(0.05)  # past the timestamp tick: the edit moves mtime and ctime
    code = root / "ok" / "statement" / "code.txt"
    code.write_text(SAFE.replace("y", "z"), encoding="utf-8")

    other = run_evaluation(ws, "b", jobs=1)

    assert other.run_id != first.run_id
    old, new = (json.loads((r.run_dir / "manifest.json").read_text()) for r in (first, other))
    assert old["inputs"]["benchmark_sha256"] != new["inputs"]["benchmark_sha256"]
