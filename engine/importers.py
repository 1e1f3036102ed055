"""Bringing outside evaluations and test sets into a workspace.

Three sources: a run export of the outcome-driven article's platform (results.jsonl + sessions/ +
manifest.json, as a folder or a zip) into ``runs/``; skill-creator's ``evals/evals.json`` into a
benchmark folder; and a JSONL or CSV of (input, expected) into a benchmark folder.

Every import is all-or-nothing: everything is validated and written into a hidden staging folder
next to the target, checked again as the real reader would read it, and only then renamed into
place — a bad line anywhere leaves the workspace exactly as it was.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import secrets
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.benchmark import PROMPT_FILE, RUBRIC_YAML, Benchmark, label_text, load_benchmark
from engine.errors import FormatError, SkillsmithError
from engine.events import new_id, utc_now
from engine.fsutil import atomic_write_bytes, atomic_write_json, atomic_write_text, fsync_dir
from engine.metrics import read_results
from engine.schema import from_mapping
from engine.workspace import Workspace

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class ImportResult:
    kind: str
    path: Path
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": str(self.path), "count": self.count}


def _check_id(value: str, what: str) -> str:
    if not _ID.match(value):
        raise SkillsmithError(f"{what} {value!r}: expected letters, digits, '.', '_' or '-'")
    return value


@contextlib.contextmanager
def _staged(parent: Path, name: str) -> Iterator[Path]:
    """Yield ``parent/.import-*/name`` to fill; on success it becomes ``parent/name``."""
    target = parent / name
    if target.exists():
        raise SkillsmithError(f"{target}: already exists; choose another id")
    parent.mkdir(parents=True, exist_ok=True)
    staging = parent / f".import-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        yield staging / name
        os.rename(staging / name, target)
        fsync_dir(parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# -- (a) a run export --------------------------------------------------------------------------


@contextlib.contextmanager
def _export_root(source: Path) -> Iterator[Path]:
    """The folder holding results.jsonl: the source itself, or an unpacked zip of it.

    Errors inside an unpacked zip name ``<zip>!<member>`` rather than a temporary path.
    """
    if source.is_dir():
        yield _results_folder(source, source)
        return
    if not zipfile.is_zipfile(source):
        raise FormatError(source, None, "expected a run export folder or .zip")
    with tempfile.TemporaryDirectory(prefix="skillsmith-import-") as tmp:
        with zipfile.ZipFile(source) as archive:
            for member in archive.namelist():
                if member.startswith("/") or ".." in Path(member).parts:
                    raise FormatError(source, member, "zip member escapes the archive")
            archive.extractall(tmp)
        try:
            yield _results_folder(Path(tmp), source)
        except FormatError as exc:
            exc.args = (str(exc).replace(f"{tmp}/", f"{source}!"),)
            raise


def _results_folder(root: Path, source: Path) -> Path:
    if (root / "results.jsonl").is_file():
        return root
    inner = [p for p in root.iterdir() if p.is_dir() and (p / "results.jsonl").is_file()]
    if len(inner) == 1:
        return inner[0]
    raise FormatError(source, None, "no results.jsonl in the export")


def _read_session(path: Path) -> bytes:
    """A session file's bytes after checking every line is a typed JSON object."""
    data = path.read_bytes()
    for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise FormatError(path, None, f"line is not valid JSON ({exc.msg})", number) from None
        if not isinstance(line, dict) or not isinstance(line.get("type"), str):
            raise FormatError(path, "type", "expected a JSON object with a 'type'", number)
    return data


def _session_for(root: Path, row: dict[str, Any]) -> Path | None:
    names = [row.get("session_file")] if row.get("session_file") else []
    names += [
        f"sessions/{row['case_id']}.{row['run_index']}.jsonl",
        f"sessions/{row['case_id']}.jsonl",
    ]
    for name in names:
        candidate = (root / str(name)).resolve()
        if candidate.is_relative_to(root.resolve()) and candidate.is_file():
            return candidate
    return None


def _read_manifest(root: Path) -> dict[str, Any]:
    path = root / "manifest.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FormatError(path, None, f"invalid JSON ({exc.msg})", exc.lineno) from None
    if not isinstance(data, dict):
        raise FormatError(path, None, "expected a JSON object")
    return data


def _line_numbers(path: Path) -> list[int]:
    """The file line of each row ``read_results`` returns (it skips blank lines)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [n for n, raw in enumerate(lines, 1) if raw.strip()]


def _import_rows(
    root: Path, run_id: str, benchmark: Benchmark | None
) -> tuple[list[dict[str, Any]], dict[str, bytes]]:
    """Validated rows in the workspace format, and the session files they point at."""
    results_file = root / "results.jsonl"
    rows = read_results(results_file)
    seen: set[tuple[str, int, str]] = set()
    sessions: dict[str, bytes] = {}
    for number, row in zip(_line_numbers(results_file), rows, strict=True):
        key = (row["case_id"], row["run_index"], row["variant"])
        if key in seen:
            raise FormatError(results_file, "case_id", "duplicate case × run × variant", number)
        seen.add(key)
        if benchmark is not None:
            try:
                case = benchmark.case(row["case_id"])
            except KeyError:
                raise FormatError(
                    results_file, "case_id", f"not a case of benchmark {benchmark.id}", number
                ) from None
            row["split"] = row["split"] or case.split
            row["case_type"] = row["case_type"] or case.rubric.type
            row["critical"] = row["critical"] or case.rubric.critical
        session = _session_for(root, row)
        if session is None and row["pass_fail"] != "invalid":
            raise FormatError(
                results_file,
                "case_id",
                f"no session file sessions/{row['case_id']}.jsonl for this row",
                number,
            )
        if session is not None:
            row["session_file"] = f"sessions/{session.name}"
            sessions[row["session_file"]] = _read_session(session)
        row["session_id"] = row["session_id"] or f"{run_id}/{row['case_id']}.{row['run_index']}"
    return rows, sessions


def import_run(
    ws: Workspace, source: Path, *, bench: str | None = None, run_id: str | None = None
) -> ImportResult:
    """Copy a run export into ``runs/<run-id>/`` in the workspace's own row format.

    With ``bench`` naming a benchmark of the workspace, every case id must belong to it and the
    rows get its splits, types and critical flags.
    """
    source = Path(source)
    run_id = _check_id(run_id or new_id("import"), "run id")
    benchmark = None
    if bench and (ws.benchmarks_dir / bench).is_dir():
        benchmark = load_benchmark(ws.benchmarks_dir / bench)
    with _export_root(source) as root:
        manifest = _read_manifest(root)
        rows, sessions = _import_rows(root, run_id, benchmark)
        manifest.update(
            run_id=run_id,
            benchmark=bench or manifest.get("benchmark") or manifest.get("dataset"),
            status="finished",
            imported_from=str(source.resolve()),
            imported_at=utc_now(),
        )
        with ws.lock("import run"), _staged(ws.runs_dir, run_id) as staging:
            for name, data in sessions.items():
                atomic_write_bytes(staging / name, data)
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            atomic_write_text(staging / "results.jsonl", text)
            atomic_write_json(staging / "manifest.json", manifest)
            read_results(staging / "results.jsonl")
    return ImportResult("run", ws.runs_dir / run_id, len(rows))


# -- benchmark folders from test sets ----------------------------------------------------------


@dataclass
class _NewCase:
    case_id: str
    prompt: str
    rubric: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)


def _write_benchmark(
    ws: Workspace, bench_id: str, config: dict[str, Any], cases: list[_NewCase]
) -> ImportResult:
    _check_id(bench_id, "benchmark id")
    with ws.lock("import benchmark"), _staged(ws.benchmarks_dir, bench_id) as staging:
        atomic_write_text(
            staging / "benchmark.yaml",
            yaml.safe_dump({"id": bench_id, **config}, sort_keys=False, allow_unicode=True),
        )
        for case in cases:
            statement = staging / case.case_id / "statement"
            atomic_write_text(statement / PROMPT_FILE, case.prompt)
            for name, data in case.files.items():
                atomic_write_bytes(statement / name, data)
            atomic_write_text(
                staging / case.case_id / "rubric" / RUBRIC_YAML,
                yaml.safe_dump(case.rubric, sort_keys=False, allow_unicode=True),
            )
        load_benchmark(staging)  # the same checks a later evaluation will make
    return ImportResult("benchmark", ws.benchmarks_dir / bench_id, len(cases))


@dataclass
class _Eval:
    id: int | str
    prompt: str
    expected_output: str = ""
    files: list[str] = field(default_factory=list)
    expectations: list[str] = field(default_factory=list)
    assertions: list[str] = field(default_factory=list)
    name: str | None = None
    eval_name: str | None = None


@dataclass
class _EvalSet:
    evals: list[_Eval]
    skill_name: str = ""


def import_evals(ws: Workspace, source: Path, *, bench: str, runs: int = 1) -> ImportResult:
    """skill-creator's ``evals/evals.json``: each eval a case judged by its expectations.

    skill-creator's prose calls the list ``assertions`` and its schema ``expectations``; both
    are read. Listed files are resolved against the evals folder, then the skill folder.
    """
    source = Path(source)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(source, None, "file not found") from None
    except json.JSONDecodeError as exc:
        raise FormatError(source, None, f"invalid JSON ({exc.msg})", exc.lineno) from None
    evalset = from_mapping(_EvalSet, data, source)
    if not evalset.evals:
        raise FormatError(source, "evals", "expected at least one eval")
    cases: list[_NewCase] = []
    for i, ev in enumerate(evalset.evals):
        at = f"evals[{i}]"
        case_id = f"eval-{ev.id}"
        if not _ID.match(case_id) or any(c.case_id == case_id for c in cases):
            raise FormatError(source, f"{at}.id", f"expected a unique simple id, got {ev.id!r}")
        if not ev.prompt.strip():
            raise FormatError(source, f"{at}.prompt", "expected the task text")
        criteria = ev.expectations or ev.assertions
        if not criteria and not ev.expected_output.strip():
            raise FormatError(source, at, "expected expectations or an expected_output")
        checks = [{"kind": "llm_judge", "criteria": text} for text in criteria] or [
            {"kind": "llm_judge", "criteria": f"The output achieves: {ev.expected_output}"}
        ]
        files: dict[str, bytes] = {}
        for j, name in enumerate(ev.files):
            found = next(
                (p / name for p in (source.parent, source.parent.parent) if (p / name).is_file()),
                None,
            )
            if found is None:
                raise FormatError(source, f"{at}.files[{j}]", f"file not found: {name}")
            if Path(name).name in files or Path(name).name == PROMPT_FILE:
                raise FormatError(source, f"{at}.files[{j}]", "duplicate file name")
            files[Path(name).name] = found.read_bytes()
        rubric: dict[str, Any] = {"expected": ev.expected_output or None, "checks": checks}
        if ev.name or ev.eval_name:
            rubric["notes"] = f"skill-creator eval {ev.name or ev.eval_name}"
        cases.append(_NewCase(case_id, ev.prompt.rstrip() + "\n", rubric, files))
    config = {
        "description": f"imported from skill-creator evals of {evalset.skill_name or source}",
        "runs_per_case": runs,
        "pass_threshold": 1.0,
    }
    return _write_benchmark(ws, bench, config, cases)


_CASE_COLUMNS = ("id", "input", "expected", "type", "critical", "split")


def _case_rows(source: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line, record) pairs from a JSONL or CSV test set."""
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError(source, None, "file not found") from None
    records: list[tuple[int, dict[str, Any]]] = []
    if source.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        missing = [c for c in ("input", "expected") if c not in (reader.fieldnames or [])]
        if missing:
            raise FormatError(source, missing[0], "missing column in the header", 1)
        for record in reader:
            if None in record:
                raise FormatError(source, None, "more cells than header columns", reader.line_num)
            records.append((reader.line_num, {k: v for k, v in record.items() if v != ""}))
        return records
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise FormatError(source, None, f"line is not valid JSON ({exc.msg})", number) from None
        if not isinstance(value, dict):
            raise FormatError(source, None, "line must be a JSON object", number)
        records.append((number, value))
    return records


def import_cases(
    ws: Workspace,
    source: Path,
    *,
    bench: str,
    labels: list[str] | None = None,
    runs: int = 1,
    seed: int = 7,
) -> ImportResult:
    """A JSONL/CSV of (input, expected): with ``labels`` a classification benchmark (label
    checks, the prompt names the labels); without, the answer must contain the expected text."""
    source = Path(source)
    cases: list[_NewCase] = []
    for number, record in _case_rows(source):
        unknown = [k for k in record if k not in _CASE_COLUMNS]
        if unknown:
            raise FormatError(
                source, unknown[0], f"unknown column (known: {_CASE_COLUMNS})", number
            )
        for key in ("input", "expected"):
            if not str(record.get(key) or "").strip():
                raise FormatError(source, key, "expected a non-empty value", number)
        case_id = str(record.get("id") or f"case-{len(cases) + 1:03d}")
        if not _ID.match(case_id) or any(c.case_id == case_id for c in cases):
            raise FormatError(source, "id", f"expected a unique simple id, got {case_id!r}", number)
        expected = str(label_text(record["expected"]))
        critical = record.get("critical", False)
        if isinstance(critical, str):
            critical = critical.strip().lower() in ("1", "true", "yes")
        rubric: dict[str, Any] = {"expected": expected, "critical": bool(critical)}
        for key in ("type", "split"):
            if record.get(key):
                rubric[key] = str(record[key])
        prompt = str(record["input"]).rstrip() + "\n"
        if labels:
            prompt += f"\nEnd with a line `VERDICT: <label>`, label one of: {', '.join(labels)}.\n"
        else:
            rubric["checks"] = [{"kind": "contains", "value": expected}]
        cases.append(_NewCase(case_id, prompt, rubric))
    if not cases:
        raise FormatError(source, None, "no cases in the file")
    config: dict[str, Any] = {
        "description": f"imported from {source.name}",
        "runs_per_case": runs,
        "seed": seed,
    }
    if labels:
        config["labels"] = labels
    return _write_benchmark(ws, bench, config, cases)


__all__ = ["ImportResult", "import_cases", "import_evals", "import_run"]
