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
import io
import json
import os
import re
import secrets
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from engine.core.benchmark import PROMPT_FILE, RUBRIC_YAML, Benchmark, label_text, load_benchmark
from engine.core.errors import FormatError, SkillsmithError
from engine.core.fsutil import atomic_write_bytes, atomic_write_json, atomic_write_text, fsync_dir
from engine.core.results import read_results
from engine.core.schema import from_mapping
from engine.core.stamps import new_id, utc_now
from engine.core.workspace import IMPORT_STAGE, Workspace

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class ImportResult:
    kind: str
    path: Path
    count: int
    warnings: list[str] = field(default_factory=list)
    # how many llm_judge checks the imported cases hold: free criteria only a model judge grades
    judged_checks: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": str(self.path),
            "count": self.count,
            "warnings": self.warnings,
            "judged_checks": self.judged_checks,
            "judge_needed": "anthropic" if self.judged_checks else None,
        }


def _check_id(value: str, what: str) -> str:
    if not _ID.match(value):
        raise SkillsmithError(f"{what} {value!r}: expected letters, digits, '.', '_' or '-'")
    return value


@contextlib.contextmanager
def _staged(parent: Path, name: str) -> Iterator[Path]:
    """Yield ``parent/.import-*/name`` to fill; on success it becomes ``parent/name``. Callers
    hold the workspace lock, so a stage found under the lock is a killed import's: opening the
    workspace removes it (engine.core.recovery)."""
    target = parent / name
    if target.exists():
        raise SkillsmithError(f"{target}: already exists; choose another id")
    parent.mkdir(parents=True, exist_ok=True)
    staging = parent / f"{IMPORT_STAGE}{secrets.token_hex(4)}"
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
        try:
            with zipfile.ZipFile(source) as archive:
                _check_members(source, archive.infolist())
                archive.extractall(tmp)
        except (zipfile.BadZipFile, EOFError) as exc:
            raise FormatError(source, None, f"damaged zip archive ({exc})") from None
        try:
            yield _results_folder(Path(tmp), source)
        except FormatError as exc:
            exc.args = (str(exc).replace(f"{tmp}/", f"{source}!"),)
            raise


# A run export is text (rows and session logs): these caps leave room for the largest real one
# while refusing a zip bomb from its central directory, before a byte is inflated.
MAX_ZIP_MEMBERS = 20_000
MAX_ZIP_BYTES = 1 << 30
MAX_ZIP_RATIO = 200
_RATIO_FLOOR = 1 << 20  # tiny members compress arbitrarily well and hold nothing dangerous


def _check_members(source: Path, members: list[zipfile.ZipInfo]) -> None:
    """Refuse an archive whose directory already shows an escape, a duplicate or a bomb.

    ``zipfile`` inflates no more than a member's declared size, so the declared figures bound
    what extraction writes.
    """
    if len(members) > MAX_ZIP_MEMBERS:
        raise FormatError(
            source, None, f"zip holds {len(members)} members (at most {MAX_ZIP_MEMBERS})"
        )
    seen: set[str] = set()
    total = 0
    for info in members:
        name = info.filename
        shown = name if len(name) <= 120 else name[:117] + "..."
        if name.startswith("/") or ".." in Path(name).parts or "\\" in name:
            raise FormatError(source, shown, "zip member escapes the archive")
        key = name.rstrip("/")
        if key in seen:
            raise FormatError(source, shown, "duplicate zip member name")
        seen.add(key)
        total += info.file_size
        if total > MAX_ZIP_BYTES:
            raise FormatError(source, None, f"zip inflates to more than {MAX_ZIP_BYTES >> 20} MiB")
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > _RATIO_FLOOR and ratio > MAX_ZIP_RATIO:
            raise FormatError(
                source, shown, f"compression ratio {ratio:.0f}:1 (at most {MAX_ZIP_RATIO}:1)"
            )


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

# Keys of an imported file that Skillsmith has no use for yet (skill-creator's ``version``, a
# ``category`` column) are kept here, in the benchmark folder but outside every statement.
ASIDE_FILE = "import-extras.yaml"


@dataclass
class _NewCase:
    case_id: str
    prompt: str
    rubric: dict[str, Any]
    line: int | None
    files: dict[str, bytes] = field(default_factory=dict)


def _relocated(exc: FormatError, path: Path, line: int | None) -> FormatError:
    """``exc`` re-aimed at the user's own file and line (not a staging copy, not a bare field)."""
    message = str(exc)
    prefix = str(exc.path)
    rest = message[len(prefix) :] if message.startswith(prefix) else f": {message}"
    moved = FormatError(path, None, re.sub(r"^(:\d+)?:\s*", "", rest), line)
    moved.field = exc.field
    return moved


def _write_benchmark(
    ws: Workspace,
    bench_id: str,
    config: dict[str, Any],
    cases: list[_NewCase],
    source: Path,
    aside: dict[str, Any],
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
        if aside:
            document = {"source": str(source), "unknown_keys": aside}
            atomic_write_text(
                staging / ASIDE_FILE, yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
            )
        try:
            load_benchmark(staging)  # the same checks a later evaluation will make
        except FormatError as exc:
            # The staging copy is gone when the user reads this: name the line it came from.
            line = None
            if exc.path.is_relative_to(staging):
                case_id = exc.path.relative_to(staging).parts[0]
                line = next((c.line for c in cases if c.case_id == case_id), None)
            raise _relocated(exc, source, line) from None
    return ImportResult("benchmark", ws.benchmarks_dir / bench_id, len(cases))


def _input_files(
    names: list[str],
    bases: list[Path],
    root: Path,
    source: Path,
    at: str,
    line_of: Callable[[int], int | None],
) -> dict[str, bytes]:
    """Each named file's bytes, under the relative path the prompt uses for it.

    A name is tried against each of ``bases`` in turn; wherever it points it must stay inside
    ``root``, so no entry can pull ``/etc/passwd`` or the vault into a statement.
    """
    root = root.resolve()
    files: dict[str, bytes] = {}
    for j, name in enumerate(names):
        where, line = f"{at}[{j}]", line_of(j)
        rel = os.path.normpath(name.strip()) if name.strip() else ""
        candidates = [(base / rel).resolve() for base in bases] if rel else []
        inside = [c for c in candidates if c.is_relative_to(root)]
        if Path(rel).is_absolute() or rel.startswith("..") or not inside:
            raise FormatError(source, where, f"{name!r} lies outside {root}; refused", line)
        found = next((c for c in inside if c.is_file()), None)
        if found is None:
            raise FormatError(source, where, f"file not found: {name}", line)
        key = Path(rel).as_posix()
        if key in files or key.split("/")[0] == PROMPT_FILE:
            raise FormatError(source, where, f"duplicate statement file {key}", line)
        files[key] = found.read_bytes()
    return files


def _json_locator(text: str) -> Callable[[str], int | None]:
    """The line of a dotted field (``evals[2].files[0]``) in a JSON text, for messages.

    JSON parses as YAML, and PyYAML's node tree keeps where every value starts.
    """
    try:
        root: yaml.Node | None = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        root = None

    def locate(dotted: str) -> int | None:
        node = root
        for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", dotted):
            if isinstance(node, yaml.MappingNode) and name:
                node = next((v for k, v in node.value if k.value == name), None)
            elif isinstance(node, yaml.SequenceNode) and index and int(index) < len(node.value):
                node = node.value[int(index)]
            else:
                node = None
        return None if node is None else node.start_mark.line + 1

    return locate


def _known_part(data: Any, cls: type[Any], prefix: str, aside: dict[str, Any]) -> Any:
    """``data`` without the keys ``cls`` does not declare; those go to ``aside``."""
    if not isinstance(data, dict):
        return data
    known = {f.name for f in fields(cls)}
    for key in data:
        if key not in known:
            aside[f"{prefix}.{key}" if prefix else str(key)] = data[key]
    return {k: v for k, v in data.items() if k in known}


def _aside_warnings(
    aside: dict[str, Any], source: Path, bench: str, locate: Callable[[str], int | None]
) -> list[str]:
    """One line per unknown key name (not per occurrence: 50 evals with a ``category`` is one
    fact), naming where it first appears."""
    first: dict[str, str] = {}
    count: dict[str, int] = {}
    for dotted in aside:
        name = dotted.rsplit(".", 1)[-1]
        first.setdefault(name, dotted)
        count[name] = count.get(name, 0) + 1
    lines = []
    for name, dotted in first.items():
        line = locate(dotted)
        where = f"{source}:{line}" if line is not None else str(source)
        times = f" ({count[name]} times)" if count[name] > 1 else ""
        lines.append(
            f"{where}: field '{dotted}': unknown key{times}, kept aside in "
            f"benchmarks/{bench}/{ASIDE_FILE}"
        )
    return lines


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


def _read_text(source: Path) -> str:
    try:
        return source.read_text(encoding="utf-8-sig")  # spreadsheet exports start with a BOM
    except FileNotFoundError:
        raise FormatError(source, None, "file not found") from None
    except IsADirectoryError:
        raise FormatError(source, None, "expected a file, got a folder") from None
    except UnicodeDecodeError as exc:
        raise FormatError(source, None, f"not UTF-8 text (byte {exc.start})") from None


def import_evals(ws: Workspace, source: Path, *, bench: str, runs: int = 1) -> ImportResult:
    """skill-creator's ``evals/evals.json``: each eval a case judged by its expectations.

    skill-creator's prose calls the list ``assertions`` and its schema ``expectations``; both
    are read. A listed file is looked up in the evals folder, then the skill folder, must lie
    inside the evals folder, and keeps the relative path the prompt names it by.
    """
    source = Path(source)
    text = _read_text(source)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(source, None, f"invalid JSON ({exc.msg})", exc.lineno) from None
    locate = _json_locator(text)
    aside: dict[str, Any] = {}
    data = _known_part(data, _EvalSet, "", aside)
    if isinstance(data, dict) and isinstance(data.get("evals"), list):
        data["evals"] = [
            _known_part(ev, _Eval, f"evals[{i}]", aside) for i, ev in enumerate(data["evals"])
        ]
    try:
        evalset = from_mapping(_EvalSet, data, source)
    except FormatError as exc:
        raise _relocated(exc, source, locate(exc.field or "")) from None
    if not evalset.evals:
        raise FormatError(source, "evals", "expected at least one eval", locate("evals"))
    evals_dir = source.parent
    cases: list[_NewCase] = []
    for i, ev in enumerate(evalset.evals):
        at = f"evals[{i}]"
        line = locate(at)
        case_id = f"eval-{ev.id}"
        if not _ID.match(case_id) or any(c.case_id == case_id for c in cases):
            raise FormatError(
                source, f"{at}.id", f"expected a unique simple id, got {ev.id!r}", line
            )
        if not ev.prompt.strip():
            raise FormatError(source, f"{at}.prompt", "expected the task text", line)
        criteria = ev.expectations or ev.assertions
        if not criteria and not ev.expected_output.strip():
            raise FormatError(source, at, "expected expectations or an expected_output", line)
        checks = [{"kind": "llm_judge", "criteria": text} for text in criteria] or [
            {"kind": "llm_judge", "criteria": f"The output achieves: {ev.expected_output}"}
        ]
        bases = [evals_dir, evals_dir.parent]
        field_lines = [locate(f"{at}.files[{j}]") for j in range(len(ev.files))]
        files = _input_files(
            ev.files, bases, evals_dir, source, f"{at}.files", field_lines.__getitem__
        )
        rubric: dict[str, Any] = {"expected": ev.expected_output or None, "checks": checks}
        if ev.name or ev.eval_name:
            rubric["notes"] = f"skill-creator eval {ev.name or ev.eval_name}"
        cases.append(_NewCase(case_id, ev.prompt.rstrip() + "\n", rubric, line, files))
    config = {
        "description": f"imported from skill-creator evals of {evalset.skill_name or source}",
        "runs_per_case": runs,
        "pass_threshold": 1.0,
    }
    result = _write_benchmark(ws, bench, config, cases, source, aside)
    result.warnings = _aside_warnings(aside, source, bench, locate)
    result.judged_checks = sum(len(case.rubric["checks"]) for case in cases)
    return result


_CASE_COLUMNS = ("id", "input", "expected", "type", "critical", "split", "files", "folder")


def _csv_rows(source: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    """Rows keyed by the header, each with the line it starts on.

    The reader gets the whole text, not its lines: a quoted cell may hold line breaks.
    """
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    records: list[tuple[int, dict[str, Any]]] = []
    start = 1
    try:
        for row in reader:
            line, start = start, reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = [cell.strip() for cell in row]
                missing = [c for c in ("input", "expected") if c not in header]
                if missing:
                    raise FormatError(source, missing[0], "missing column in the header", line)
                doubled = next((c for c in header if header.count(c) > 1), None)
                if doubled is not None:
                    raise FormatError(source, doubled, "column named twice in the header", line)
                continue
            if len(row) > len(header):
                raise FormatError(source, None, "more cells than header columns", line)
            records.append((line, {k: v for k, v in zip(header, row, strict=False) if v != ""}))
    except csv.Error as exc:
        raise FormatError(source, None, f"malformed CSV ({exc})", reader.line_num) from None
    if header is None:
        raise FormatError(source, None, "empty file; expected a header with input,expected")
    return records


def _case_rows(source: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line, record) pairs from a JSONL or CSV test set."""
    text = _read_text(source)
    if source.suffix.lower() == ".csv":
        return _csv_rows(source, text)
    records: list[tuple[int, dict[str, Any]]] = []
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


def _case_files(record: dict[str, Any], source: Path, line: int) -> dict[str, bytes]:
    """A case's input files: ``files`` (paths kept as named) and ``folder`` (its contents
    become the statement), both relative to the case file's folder and confined to it."""
    base = source.parent
    names = record.get("files") or []
    if isinstance(names, str):
        names = [n for n in re.split(r"[;\n]", names) if n.strip()]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise FormatError(source, "files", "expected a list of paths", line)
    files = _input_files(names, [base], base, source, "files", lambda _: line)
    folder = record.get("folder")
    if folder is None:
        return files
    if not isinstance(folder, str):
        raise FormatError(source, "folder", "expected a folder path", line)
    top = (base / folder).resolve()
    if Path(folder).is_absolute() or not top.is_relative_to(base.resolve()):
        raise FormatError(source, "folder", f"{folder!r} lies outside {base.resolve()}", line)
    if not top.is_dir():
        raise FormatError(source, "folder", f"folder not found: {folder}", line)
    inner = sorted(p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file())
    for key, data in _input_files(inner, [top], base, source, "folder", lambda _: line).items():
        if key in files:
            raise FormatError(source, "folder", f"{key} is also listed in files", line)
        files[key] = data
    return files


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
    aside: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for number, record in _case_rows(source):
        for key in ("input", "expected"):
            if not str(record.get(key) or "").strip():
                raise FormatError(source, key, "expected a non-empty value", number)
        case_id = str(record.get("id") or f"case-{len(cases) + 1:03d}")
        if not _ID.match(case_id) or any(c.case_id == case_id for c in cases):
            raise FormatError(source, "id", f"expected a unique simple id, got {case_id!r}", number)
        for key in record:
            if key not in _CASE_COLUMNS:
                aside[f"{case_id}.{key}"] = record[key]
                lines.setdefault(f"{case_id}.{key}", number)
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
        files = _case_files(record, source, number)
        cases.append(_NewCase(case_id, prompt, rubric, number, files))
    if not cases:
        raise FormatError(source, None, "no cases in the file")
    config: dict[str, Any] = {
        "description": f"imported from {source.name}",
        "runs_per_case": runs,
        "seed": seed,
    }
    if labels:
        config["labels"] = labels
    result = _write_benchmark(ws, bench, config, cases, source, aside)
    result.warnings = _aside_warnings(aside, source, bench, lines.get)
    return result


__all__ = ["ImportResult", "import_cases", "import_evals", "import_run"]
