"""scoreboard.yaml: PenguinHarness records, appended without ever rewriting earlier ones."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.core import yaml_log
from engine.core.errors import FormatError, LockError
from engine.core.schema import to_mapping
from engine.core.scoreboard import (
    Runtime,
    append_record,
    count_records,
    latest_head,
    read_heads,
    read_record,
    read_records,
    record_from_rows,
)
from engine.core.workspace import Workspace

RUNTIME = Runtime(provider="offline", model="demo-agent")


def _row(case_id: str, run: int, score: float, cost: float | None, duration: int) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "run_index": run,
        "pass_fail": "pass" if score == 1.0 else "fail",
        "score": score,
        "cost_usd": cost,
        "duration_ms": duration,
        "session_id": f"sess-{case_id}-{run}",
    }


ROWS = [
    _row("a", 0, 1.0, 0.001234567, 1000),
    _row("a", 1, 0.5, None, 1002),
    _row("b", 0, 0.25, None, 10),
    _row("b", 1, 0.0, None, 20),
    {**_row("b", 2, 0.0, 0.5, 99999), "pass_fail": "invalid"},
]


def _record(**kw: Any) -> Any:
    return record_from_rows(
        ROWS,
        runtime=RUNTIME,
        summary_title=kw.pop("summary_title", "baseline"),
        summary="first formal baseline",
        run_id="run-1",
        timestamp=kw.pop("timestamp", "2025-01-02T03:04:05Z"),
        **kw,
    )


def test_record_averages_follow_the_penguinharness_rules() -> None:
    rec = _record()
    a, b = rec.cases
    assert [r.score for r in a.runs] == [100.0, 50.0] and a.score == 75.0
    assert a.runs[0].cost == 0.001235 and a.runs[1].cost is None
    assert a.cost == 0.001235  # nulls ignored
    assert (b.score, b.cost, b.duration_ms) == (12.5, None, 15)  # all unknown → null
    assert len(b.runs) == 2  # the invalid unit is not scored
    assert (rec.score, rec.cost, rec.duration_ms) == (43.75, 0.001235, 508)
    assert a.runs[0].session_id == "sess-a-0" and a.runs[0].run_id == "run-1"


def test_append_then_read_round_trips(tmp_path: Path) -> None:
    first = append_record(tmp_path, _record())
    second = append_record(tmp_path, to_mapping(_record(summary_title="candidate 1")))
    assert read_records(tmp_path) == [first, second]
    data = yaml.safe_load((tmp_path / "scoreboard.yaml").read_text())
    assert data[0]["runtime"] == {
        "provider": "offline",
        "model": "demo-agent",
        "thinking_level": None,
    }
    assert data[1]["summary_title"] == "candidate 1"


def test_append_never_rewrites_earlier_records(tmp_path: Path) -> None:
    append_record(tmp_path, _record())
    path = tmp_path / "scoreboard.yaml"
    # A hand-written comment and odd spacing inside record 0 must survive byte for byte.
    text = path.read_text().replace("summary_title: baseline", "summary_title:   baseline  # ok")
    path.write_text(text)
    before = path.read_bytes()
    append_record(tmp_path, _record(summary_title="next"))
    after = path.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    assert [r.summary_title for r in read_records(tmp_path)] == ["baseline", "next"]


def test_refused_appends_leave_the_file_unchanged(tmp_path: Path) -> None:
    append_record(tmp_path, _record())
    path = tmp_path / "scoreboard.yaml"
    before = path.read_bytes()
    bad = to_mapping(_record())
    bad["cases"][0]["score"] = 80.0
    with pytest.raises(
        FormatError, match=r"field '\[1\]\.cases\[0\]\.score': expected the average"
    ):
        append_record(tmp_path, bad)
    with pytest.raises(FormatError, match=r"field '\[new\]\.colour': unknown key"):
        append_record(tmp_path, {**to_mapping(_record()), "colour": "red"})
    assert path.read_bytes() == before
    # A flow-style list cannot be appended to textually: refuse rather than rewrite it.
    flow = yaml.safe_dump(yaml.safe_load(before), default_flow_style=True)
    path.write_text(flow)
    with pytest.raises(FormatError, match="cannot append without rewriting"):
        append_record(tmp_path, _record())
    assert path.read_text() == flow


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.update(score=43.757), r"field '\[1\]\.score': expected a score in 0–100"),
        (lambda r: r.update(score=101.0), r"field '\[1\]\.score': expected a score"),
        (lambda r: r.update(timestamp="yesterday"), r"field '\[1\]\.timestamp'"),
        (lambda r: r["cases"][0]["runs"][0].update(cost=0.1234567), r"runs\[0\]\.cost"),
        (lambda r: r["cases"][1].update(cost=0.5), r"field '\[1\]\.cases\[1\]\.cost'"),
        (lambda r: r["cases"][0]["runs"][1].update(duration_ms=1.5), r"runs\[1\]\.duration_ms"),
        (lambda r: r.pop("summary"), r"field '\[1\]\.summary': is required"),
        (lambda r: r.update(cases=[]), r"field '\[1\]\.cases': expected at least one"),
    ],
)
def test_read_validates_every_record(tmp_path: Path, edit: Any, message: str) -> None:
    append_record(tmp_path, _record())
    path = tmp_path / "scoreboard.yaml"
    broken = to_mapping(_record())
    edit(broken)
    with path.open("a") as fh:
        fh.write(yaml.safe_dump([broken], sort_keys=False))
    with pytest.raises(FormatError, match=message):
        read_records(tmp_path)
    # An append validates only its own record: the cost of an evaluation must not grow with
    # the history, so the broken record stays for the readers to name.
    append_record(tmp_path, _record(summary_title="after"))
    with pytest.raises(FormatError, match=message):
        read_records(tmp_path)
    assert yaml.safe_load(path.read_text())[2]["summary_title"] == "after"


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "scoreboard.yaml").write_text("- timestamp: x\n  runtime: [\n")
    with pytest.raises(FormatError, match=r"scoreboard.yaml:\d+: invalid YAML"):
        read_records(tmp_path)
    assert read_records(tmp_path / "nowhere") == []


def test_append_takes_the_workspace_lock(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = workspace.benchmarks_dir / "demo"
    bench.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom engine.core.workspace import Workspace\n"
            f"with Workspace.at({str(workspace.root)!r}).lock('test holder'):\n"
            "    print('held', flush=True)\n    time.sleep(30)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("SKILLSMITH_LOCK_WAIT", "0.2")
        with pytest.raises(LockError, match="test holder"):
            append_record(bench, _record())
        assert not (bench / "scoreboard.yaml").exists()
    finally:
        holder.kill()
        holder.wait()
    append_record(bench, _record())
    assert len(read_records(bench)) == 1


def test_heads_and_single_records_skip_the_rest(tmp_path: Path) -> None:
    records = [append_record(tmp_path, _record(summary_title=f"r{n}")) for n in range(3)]
    path = tmp_path / "scoreboard.yaml"
    # Break the per-run rows of record 0 only: a headline view and record 2 never read them.
    text = path.read_text()
    path.write_text(text.replace("duration_ms: 1000", "duration_ms: [oops", 1))
    heads = read_heads(tmp_path)
    assert [h.summary_title for h in heads] == ["r0", "r1", "r2"]
    assert (heads[0].score, heads[0].run_id) == (records[0].score, "run-1")
    assert not hasattr(heads[0], "cases")
    assert read_record(tmp_path, -1) == records[2] and count_records(tmp_path) == 3
    with pytest.raises(FormatError, match=r"scoreboard.yaml:\d+: invalid YAML"):
        read_record(tmp_path, 0)
    with pytest.raises(IndexError):
        read_record(tmp_path, 3)


def test_cases_are_written_after_the_headline(tmp_path: Path) -> None:
    append_record(tmp_path, _record())
    keys = list(yaml.safe_load((tmp_path / "scoreboard.yaml").read_text())[0])
    assert keys[0] == "timestamp" and keys[-1] == "cases"


def test_the_first_record_creates_the_scoreboard_whole_and_the_next_ones_append(
    tmp_path: Path,
) -> None:
    append_record(tmp_path, _record(summary_title="first"))
    path = tmp_path / "scoreboard.yaml"
    first = path.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scoreboard.yaml"]  # no intent, no temp
    append_record(tmp_path, _record(summary_title="second"))
    assert path.read_bytes().startswith(first)
    assert [r.summary_title for r in read_records(tmp_path)] == ["first", "second"]
    assert yaml.safe_load(path.read_text())[0] == yaml.safe_load(first)[0]


def test_an_interrupted_append_reads_as_before_and_is_finished_next_time(tmp_path: Path) -> None:
    append_record(tmp_path, _record(summary_title="first"))
    path = tmp_path / "scoreboard.yaml"
    before = path.read_bytes()
    # A crash after the intent was written and half the new record appended.
    piece = yaml.safe_dump([to_mapping(_record(summary_title="lost"))], sort_keys=False)
    (tmp_path / ".scoreboard.yaml.append").write_text(
        json.dumps({"size": len(before), "tail": _tail(before), "piece": piece})
    )
    with path.open("a") as fh:
        fh.write(piece[: len(piece) // 2])
    assert [r.summary_title for r in read_records(tmp_path)] == ["first"]
    append_record(tmp_path, _record(summary_title="next"))
    assert [r.summary_title for r in read_records(tmp_path)] == ["first", "lost", "next"]
    assert path.read_bytes().startswith(before)
    assert not (tmp_path / ".scoreboard.yaml.append").exists()


def test_a_stale_intent_for_a_replaced_file_is_dropped(tmp_path: Path) -> None:
    append_record(tmp_path, _record(summary_title="first"))
    (tmp_path / ".scoreboard.yaml.append").write_text(
        json.dumps({"size": 3, "tail": _tail(b"abc"), "piece": "- broken\n"})
    )
    assert [r.summary_title for r in read_records(tmp_path)] == ["first"]
    append_record(tmp_path, _record(summary_title="next"))
    assert [r.summary_title for r in read_records(tmp_path)] == ["first", "next"]


def _tail(data: bytes) -> str:
    return hashlib.blake2b(data[-65536:], digest_size=16).hexdigest()


def test_heads_are_read_from_an_index_kept_with_the_history(tmp_path: Path) -> None:
    """A list of evaluations reads the heads index, not the history, while the history's size and
    mtime are those the index was written for; appends keep it current; any other change to the
    history makes the next read parse the history again."""
    for n in range(3):
        append_record(tmp_path, _record(summary_title=f"r{n}"))
    path = tmp_path / "scoreboard.yaml"
    index = yaml_log.index_path(path)
    assert [h.summary_title for h in read_heads(tmp_path)] == ["r0", "r1", "r2"]
    append_record(tmp_path, _record(summary_title="r3"))  # appended to the index as well
    st = path.stat()
    assert json.loads(index.read_text())["key"] == [st.st_size, st.st_mtime_ns]
    # The history's bytes replaced by same-sized garbage, its mtime put back: served by the index.
    original = path.read_bytes()
    path.write_bytes(b"#" * len(original))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert [h.summary_title for h in read_heads(tmp_path)] == ["r0", "r1", "r2", "r3"]
    count, last = latest_head(tmp_path)  # the Overview's figures: the count and the newest
    assert count == 4 and last is not None and last.summary_title == "r3"
    # A hand edit (new mtime) is read from the history again, and the index follows it.
    path.write_bytes(original.replace(b"summary_title: r1", b"summary_title: r1-edited"))
    assert [h.summary_title for h in read_heads(tmp_path)][1] == "r1-edited"
    index.write_text("{not json")  # a broken index is rebuilt, never an error
    assert len(read_heads(tmp_path)) == 4
    assert json.loads(index.read_text())["heads"][1]["summary_title"] == "r1-edited"
    # the index is the history's, not the benchmark's: fingerprints skip it like the log
    assert yaml_log.is_log_file(index.name, path.name)


@pytest.mark.parametrize(
    "garbage",
    [
        "- timestamp: '2026-03-01T09:",  # a record torn mid-line
        "- {unclosed: [\n",  # a half-written flow item
        "- \x00\x01 binary junk\n",  # bytes a bad copy left
    ],
    ids=["torn-record", "half-item", "junk"],
)
def test_a_garbage_tail_is_not_appended_to(tmp_path: Path, garbage: str) -> None:
    append_record(tmp_path, _record())
    path = tmp_path / "scoreboard.yaml"
    path.write_bytes(path.read_bytes() + garbage.encode())
    before = path.read_bytes()

    with pytest.raises(
        FormatError, match=r"the last record \(from line \d+\) is not a YAML mapping"
    ):
        append_record(tmp_path, _record(summary_title="next"))

    assert path.read_bytes() == before
