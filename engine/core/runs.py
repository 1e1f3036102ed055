"""The run folder of one evaluation: ``runs/<run-id>/``.

::

    manifest.json          what was evaluated: benchmark, agent, skills + hashes, seed, times
    results.jsonl          one row per finished unit (case × run × variant), appended as it ends
    sessions/<unit>.jsonl  each unit's transcript in the session format
    raw/                   the agent's raw stream (claude) and stderr tails
    outputs/<unit>/        the files each unit's agent left in its run folder, links as links
                           (engine.core.outputs; the row's ``outputs`` lists them and the caps)
    inputs/<variant>/<skill>/SKILL.md   the skill texts under test, so a resume runs the same text
                           (and a candidate's own files beside it, when its patch edits them)

Rows are appended one by one so an interrupted evaluation keeps every finished unit; a rerun of a
unit appends a newer row and readers take the last row per unit (``latest_rows``), which
``compact`` makes physical at the end of the evaluation.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.claims import exclusive_claim, is_claimed
from engine.core.errors import FormatError, SkillsmithError
from engine.core.fsutil import (
    StagedFile,
    append_jsonl,
    append_jsonl_many,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    fsync_dir,
    json_bytes,
    read_jsonl,
    stage_bytes,
)
from engine.core.outputs import Outputs, keep
from engine.core.skill_folder import Resource, Resources, copy_resources, read_resources
from engine.core.strict_json import dump_line

MANIFEST = "manifest.json"
RESULTS = "results.jsonl"
SESSIONS = "sessions"
RAW = "raw"
OUTPUTS = "outputs"
INPUTS = "inputs"
VARIANTS = ("skill", "baseline")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_LOCK = ".run.lock"


@dataclass(frozen=True, order=True)
class UnitKey:
    """One cell of the matrix: a case, a run index and a variant (skill or baseline)."""

    case_id: str
    run_index: int
    variant: str = "skill"

    @property
    def stem(self) -> str:
        suffix = "" if self.variant == "skill" else f".{self.variant}"
        return f"{self.case_id}.{self.run_index}{suffix}"

    @property
    def session_file(self) -> str:
        return f"{SESSIONS}/{self.stem}.jsonl"


def check_run_id(run_id: str) -> str:
    if not _RUN_ID.match(run_id):
        raise SkillsmithError(f"run id {run_id!r}: expected letters, digits, '.', '_' or '-'")
    return run_id


class RunFolder:
    """Reading and writing one ``runs/<run-id>/`` folder."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.run_id = self.path.name

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS

    def exists(self) -> bool:
        return self.manifest_path.is_file()

    # -- manifest --------------------------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any]:

        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FormatError(
                self.manifest_path, None, "file not found (not a run folder)"
            ) from None
        except json.JSONDecodeError as exc:
            raise FormatError(
                self.manifest_path, None, f"invalid JSON ({exc.msg})", line=exc.lineno
            ) from None
        if not isinstance(data, dict):
            raise FormatError(self.manifest_path, None, "expected a JSON object")
        return data

    def finished(self) -> bool:
        """Whether its manifest says it finished cleanly (nothing left to resume)."""
        try:
            return self.exists() and self.read_manifest().get("status") == "finished"
        except FormatError:
            return False

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        atomic_write_json(self.manifest_path, manifest)

    def stage_manifest(self, manifest: dict[str, Any]) -> StagedFile:
        """The manifest's bytes synced under a temp name; ``commit()`` puts them in place."""
        return stage_bytes(self.manifest_path, json_bytes(manifest))

    # -- inputs ----------------------------------------------------------------------------------
    def save_input(
        self, variant: str, name: str, text: str, resources: Resources | None = None
    ) -> None:
        """``resources``: a candidate's own files beside SKILL.md, kept beside it here."""
        atomic_write_text(self.path / INPUTS / variant / name / "SKILL.md", text)
        if resources is not None:
            copy_resources(resources, self.path / INPUTS / variant / name)

    def load_input_folders(self, variant: str) -> dict[str, dict[str, Resource]]:
        """The skills whose inputs hold files beside SKILL.md (saved with ``resources``)."""
        folder = self.path / INPUTS / variant
        found = {p.name: read_resources(p) for p in sorted(folder.glob("*/")) if p.is_dir()}
        return {name: files for name, files in found.items() if files}

    def load_inputs(self, variant: str) -> dict[str, str]:
        folder = self.path / INPUTS / variant
        if not folder.is_dir():
            return {}
        return {
            p.parent.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*/SKILL.md"))
        }

    # -- rows ------------------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """Every row in file order; a malformed row is a FormatError naming its line."""
        rows = read_jsonl(self.results_path, strict=True)
        for number, row in enumerate(rows, start=1):
            _check_row(row, self.results_path, number)
        return rows

    def latest_rows(self) -> dict[UnitKey, dict[str, Any]]:
        """The last row of each unit (a rerun supersedes an earlier invalid row)."""
        return latest_of(self.rows())

    def append_row(self, row: dict[str, Any]) -> None:
        append_jsonl(self.results_path, row)

    def append_rows(self, rows: list[dict[str, Any]]) -> None:
        """Several finished units' rows with one fsync; on return all of them are on disk."""
        append_jsonl_many(self.results_path, rows)

    def repair_torn_tail(self) -> None:
        """Drop a half-written last line (a crash mid-append) before appending after it."""
        path = self.results_path
        if not path.is_file():
            return
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            atomic_write_bytes(path, data[: data.rfind(b"\n") + 1])

    def compact(self, order: list[UnitKey], rows: list[dict[str, Any]]) -> None:
        """Rewrite results.jsonl with exactly the latest row per unit, in matrix order, when a
        unit has more than one; ``rows`` are the file's rows, in file order."""
        latest = latest_of(rows)
        if len(latest) == len(rows):
            return
        wanted = set(order)
        kept = [latest[key] for key in order if key in latest]
        kept += [row for key, row in latest.items() if key not in wanted]
        text = "".join(dump_line(r) + "\n" for r in kept)
        atomic_write_text(self.results_path, text)

    # -- unit files ------------------------------------------------------------------------------
    def write_session(
        self, key: UnitKey, lines: list[dict[str, Any]], *, sync_dir: bool = True
    ) -> None:

        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        atomic_write_text(self.path / key.session_file, text, sync_dir=sync_dir)

    def write_raw(self, key: UnitKey, suffix: str, text: str, *, sync_dir: bool = True) -> str:
        rel = f"{RAW}/{key.stem}.{suffix}"
        atomic_write_text(self.path / rel, text, sync_dir=sync_dir)
        return rel

    def keep_outputs(self, key: UnitKey, outputs: Outputs) -> None:
        """The unit's outputs under ``outputs/<unit>/``, replacing an earlier attempt's."""
        folder = self.path / OUTPUTS / key.stem
        if outputs.entries or folder.exists() or folder.is_symlink():
            keep(outputs, folder)

    def sync_unit_dirs(self) -> None:
        """Persist the names of session, raw and output folders written with ``sync_dir=False``."""
        for name in (SESSIONS, RAW, OUTPUTS):
            if (self.path / name).is_dir():
                fsync_dir(self.path / name)

    # -- ownership -------------------------------------------------------------------------------
    def claim(self) -> contextlib.AbstractContextManager[None]:
        """Hold this run exclusively: two processes must never fill the same run at once."""
        busy = f"{self.path}: this run is being filled by another process"
        return exclusive_claim(self.path / _LOCK, busy)

    def busy(self) -> bool:
        return is_claimed(self.path / _LOCK)


def run_folder(ref: str, runs_dir: Path | None) -> Path:
    """The folder of run ``ref``: a folder holding a results.jsonl, else ``runs_dir/ref``."""
    path = Path(ref)
    if (path / RESULTS).is_file():
        return path
    if runs_dir is not None and "/" not in ref and (runs_dir / ref / RESULTS).is_file():
        return runs_dir / ref
    where = f" or {runs_dir / ref}" if runs_dir is not None else ""
    raise SkillsmithError(f"{ref}: no run folder with a results.jsonl at {path}{where}")


def row_key(row: dict[str, Any]) -> UnitKey:
    return UnitKey(str(row["case_id"]), int(row["run_index"]), str(row.get("variant", "skill")))


def latest_of(rows: Iterable[dict[str, Any]]) -> dict[UnitKey, dict[str, Any]]:
    """The last of ``rows`` (in file order) for each unit: a rerun supersedes an invalid row."""
    return {row_key(row): row for row in rows}


def _check_row(row: dict[str, Any], path: Path, line: int) -> None:
    if not isinstance(row.get("case_id"), str):
        raise FormatError(path, "case_id", "expected a string", line=line)
    index = row.get("run_index")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise FormatError(path, "run_index", "expected an integer ≥ 0", line=line)
    if row.get("variant", "skill") not in VARIANTS:
        raise FormatError(path, "variant", "expected 'skill' or 'baseline'", line=line)
    if row.get("pass_fail") not in ("pass", "fail", "invalid"):
        raise FormatError(path, "pass_fail", "expected 'pass', 'fail' or 'invalid'", line=line)


def find_resumable(runs_dir: Path, key: str) -> RunFolder | None:
    """The newest run with manifest key ``key`` that did not finish cleanly and is not busy.

    Only the runs the index of unfinished runs names are read (see :func:`unfinished_runs`),
    so looking costs the same however many evaluations the workspace has finished.
    """
    candidates: list[tuple[str, RunFolder]] = []
    for folder in unfinished_runs(runs_dir):
        if not folder.exists():
            continue
        try:
            manifest = folder.read_manifest()
        except FormatError:
            continue
        if manifest.get("key") == key and manifest.get("status") != "finished":
            candidates.append((str(manifest.get("started_at", "")), folder))
    for _, folder in sorted(candidates, key=lambda c: (c[0], c[1].run_id), reverse=True):
        if not folder.busy():
            return folder
    return None


# -- the index of unfinished runs ------------------------------------------------------------------
#
# ``runs/.unfinished/<run-id>``: an empty file per run that may not have finished cleanly. The
# runner creates it (synced) under the workspace lock before it writes anything into the run
# folder, and removes it once the run's manifest says "finished". What looks for a run to
# resume, and for a killed writer's temp files to sweep, reads these few names instead of every
# run folder the workspace ever made. A marker left behind (a crash between the final manifest
# and its removal) only costs a look at that run's manifest.

UNFINISHED = ".unfinished"


def unfinished_runs(runs_dir: Path) -> list[RunFolder]:
    """The runs the index names; without an index (a workspace from before it), every run
    folder that has not finished cleanly, found by reading them all (:func:`build_index`
    writes the index the first time an evaluation runs)."""
    try:
        names = sorted(os.listdir(runs_dir / UNFINISHED))
    except FileNotFoundError:
        return _scan_unfinished(runs_dir)
    return [RunFolder(runs_dir / name) for name in names if _RUN_ID.match(name)]


def benchmarks_by_use(runs_dir: Path) -> list[str]:
    """Benchmark ids, the one run most recently first (a build's pilots count as runs): what a
    form offers by default is what the user worked on last, not the alphabetically first."""
    order: list[str] = []
    for folder in reversed(run_folders(runs_dir)):
        try:
            bench = RunFolder(folder).read_manifest().get("benchmark")
        except (FormatError, OSError):
            continue  # a broken run says nothing about what was used
        if isinstance(bench, str) and bench not in order:
            order.append(bench)
    return order


def run_folders(runs_dir: Path) -> list[Path]:
    """The run folders in ``runs/``, by name: not its hidden entries (the index of unfinished
    runs, an import being staged)."""
    if not runs_dir.is_dir():
        return []
    return sorted(
        p
        for p in runs_dir.iterdir()
        if not p.name.startswith(".") and p.is_dir() and not p.is_symlink()
    )


def _scan_unfinished(runs_dir: Path) -> list[RunFolder]:
    found = []
    for child in run_folders(runs_dir):
        folder = RunFolder(child)
        if not folder.finished():
            found.append(folder)
    return found


def build_index(runs_dir: Path) -> None:
    """Write the index of unfinished runs when there is none yet, from one scan of every run
    folder (once per workspace); it appears whole, by a rename. Call with the workspace lock."""
    if (runs_dir / UNFINISHED).is_dir():
        return
    runs_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{UNFINISHED}.", dir=runs_dir))
    try:
        staging.chmod(0o755)  # as the folders beside it (mkdtemp makes it private)
        for folder in _scan_unfinished(runs_dir):
            (staging / folder.run_id).touch()
        fsync_dir(staging)
        os.rename(staging, runs_dir / UNFINISHED)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    fsync_dir(runs_dir)


def mark_unfinished(folder: RunFolder) -> None:
    """Name the run in the index before anything is written into its folder (synced, so a
    crash that leaves temp files in the folder also leaves the name that leads to them)."""
    marker = folder.path.parent / UNFINISHED / folder.run_id
    if marker.exists():
        return
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    fsync_dir(marker.parent)


def mark_finished(folder: RunFolder) -> None:
    """Take the run out of the index once its manifest says "finished" (not synced: a marker
    that comes back after a crash names a finished run, which costs a look and no more)."""
    with contextlib.suppress(FileNotFoundError):
        (folder.path.parent / UNFINISHED / folder.run_id).unlink()
