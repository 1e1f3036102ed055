"""What a report is about: a run, a session or an experiment, read into the versions it compared.

A report compares *versions*, whatever produced them: a run with a baseline variant compares the
baseline with the skill; a session (an evolve, optimize … loop) compares the first skill text its
runs evaluated with the last one. A version (a :class:`Side`) is recognised by the skill texts
under test (their sha256 in each run's manifest), so the rows of every run that evaluated the
same text are pooled, each run's indices moved past the ones before (``verdict.reindex``) so that
no two runs of a case collide. An experiment folder (``experiments/<id>/``) belongs to the
session of the same id.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.errors import SkillsmithError
from engine.core.results import read_results
from engine.core.runs import INPUTS, MANIFEST, RESULTS, latest_of, run_folder
from engine.core.sessions import SessionInfo, read_events, session_info, session_path
from engine.core.workspace import Workspace
from engine.evaluation.runner import BASELINE, SKILL
from engine.evaluation.verdict import reindex

SHORT_SHA = 8


def sha256_text(data: bytes) -> str:
    """The hash a run's manifest gives a skill text (the key a version is recognised by)."""
    return hashlib.sha256(data).hexdigest()


@dataclass
class Side:
    """One version that was evaluated: its label, the runs and the rows (pooled, reindexed)."""

    key: tuple[str, ...]
    label: str
    run_ids: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    inputs: Path | None = None  # runs/<run>/inputs/<variant>/: the skill folders under test


@dataclass
class Subject:
    """A run or a session as the report reads it."""

    kind: str  # "run" | "session" | "runs"
    ref: str
    title: str
    benchmark: str | None
    sides: list[Side]
    events: list[dict[str, Any]]
    info: SessionInfo | None
    manifests: dict[str, dict[str, Any]]
    run_dirs: dict[str, Path]  # run id → its folder (a run reported by path may lie elsewhere)

    @property
    def before(self) -> Side | None:
        return self.sides[0] if len(self.sides) > 1 else None

    @property
    def after(self) -> Side:
        return self.sides[-1]


def _manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SkillsmithError(f"{path}: no manifest (is {run_dir.name} a run folder?)") from None
    except json.JSONDecodeError as exc:
        raise SkillsmithError(f"{path}: invalid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise SkillsmithError(f"{path}: expected a JSON object")
    return data


def _skills(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in manifest.get("skills") or [] if isinstance(s, dict) and s.get("under_test")]


def _version_label(skill: dict[str, Any], candidates: dict[str, str]) -> str:
    sha = str(skill.get("sha256") or "")
    version = skill.get("version")
    if version:
        return f"{skill.get('name')} {version}"
    if sha in candidates:
        return f"{skill.get('name')} {candidates[sha]}"
    return f"{skill.get('name')} unpublished {sha[:SHORT_SHA]}"


def _variant_key(manifest: dict[str, Any], variant: str) -> tuple[str, ...]:
    if variant == SKILL:
        return tuple(sorted(f"{s.get('name')}@{s.get('sha256')}" for s in _skills(manifest)))
    spec = (manifest.get("baseline") or {}).get("spec") or "none"
    names = ",".join(sorted(str(s.get("name")) for s in _skills(manifest)))
    return (f"baseline:{names}@{spec}",)


def _variant_label(manifest: dict[str, Any], variant: str, candidates: dict[str, str]) -> str:
    if variant == SKILL:
        return ", ".join(_version_label(s, candidates) for s in _skills(manifest)) or "no skill"
    spec = (manifest.get("baseline") or {}).get("spec") or "none"
    names = ", ".join(str(s.get("name")) for s in _skills(manifest))
    return f"without {names}" if spec == "none" else f"{names} {spec}"


def _add_run(
    sides: dict[tuple[str, ...], Side],
    run_dir: Path,
    manifest: dict[str, Any],
    candidates: dict[str, str],
) -> None:
    rows = list(latest_of(read_results(run_dir / RESULTS)).values())
    for variant in (BASELINE, SKILL):
        mine = [{**r, "run_id": run_dir.name} for r in rows if r.get("variant") == variant]
        if not mine:
            continue
        key = _variant_key(manifest, variant)
        side = sides.get(key)
        if side is None:
            label = _variant_label(manifest, variant, candidates)
            inputs = run_dir / INPUTS / variant
            side = sides[key] = Side(key, label, inputs=inputs if inputs.is_dir() else None)
        side.run_ids.append(run_dir.name)
        side.rows.extend(reindex(side.rows, mine))


def _candidate_names(ws: Workspace, events: list[dict[str, Any]]) -> dict[str, str]:
    """sha256 of a queued candidate's SKILL.md → "candidate <id>" (runs name no version for it)."""
    names: dict[str, str] = {}
    for event in events:
        cand = event.get("candidate") if event.get("kind") == "candidate_queued" else None
        if not isinstance(cand, str):
            continue
        path = ws.candidates_dir / cand / "SKILL.md"
        if path.is_file():
            names[sha256_text(path.read_bytes())] = f"candidate {cand}"
    return names


def load_subject(ws: Workspace | None, ref: str) -> Subject:
    """RUN (an id under runs/ or a run folder), SESSION (an id under sessions/) or EXPERIMENT
    (an id under experiments/, read through its session)."""
    runs_dir = ws.runs_dir if ws is not None else None
    try:
        run_dir: Path | None = run_folder(ref, runs_dir)
    except SkillsmithError:
        run_dir = None  # not a run: a session or an experiment
    if run_dir is not None:
        manifest = _manifest(run_dir)
        sides: dict[tuple[str, ...], Side] = {}
        _add_run(sides, run_dir, manifest, {})
        return Subject(
            kind="run",
            ref=run_dir.name,
            title=f"run {run_dir.name}",
            benchmark=manifest.get("benchmark"),
            sides=list(sides.values()),
            events=[],
            info=None,
            manifests={run_dir.name: manifest},
            run_dirs={run_dir.name: run_dir},
        )
    if ws is None:
        raise SkillsmithError(f"{ref}: no run folder with a results.jsonl, and no workspace")
    session_id = Path(ref).name if (ws.experiments_dir / Path(ref).name).is_dir() else ref
    if "/" in session_id or not session_path(ws, session_id).is_file():
        raise SkillsmithError(
            f"{ref}: not a run (runs/{ref}/results.jsonl), a session (sessions/{ref}.jsonl) "
            f"or an experiment with a session in {ws.root}"
        )
    return _session_subject(ws, session_id)


def runs_subject(
    ws: Workspace, run_ids: list[str], title: str, labels: dict[str, str] | None = None
) -> Subject:
    """The versions a set of runs evaluated (``skillsmith check``'s evaluations); ``labels``
    names the version of a run by its skill's sha256, where no version number does."""
    sides: dict[tuple[str, ...], Side] = {}
    manifests = {run_id: _manifest(ws.runs_dir / run_id) for run_id in run_ids}
    for run_id, manifest in manifests.items():
        _add_run(sides, ws.runs_dir / run_id, manifest, labels or {})
    return Subject(
        kind="runs",
        ref=" ".join(run_ids),
        title=title,
        benchmark=next((m["benchmark"] for m in manifests.values() if m.get("benchmark")), None),
        sides=list(sides.values()),
        events=[],
        info=None,
        manifests=manifests,
        run_dirs={run_id: ws.runs_dir / run_id for run_id in run_ids},
    )


def _session_subject(ws: Workspace, session_id: str) -> Subject:
    events = read_events(ws, session_id)
    info = session_info(ws, session_id)
    candidates = _candidate_names(ws, events)
    sides: dict[tuple[str, ...], Side] = {}
    manifests: dict[str, dict[str, Any]] = {}
    run_dirs: dict[str, Path] = {}
    for run_id in info.run_ids:
        run_dir = ws.runs_dir / run_id
        if not (run_dir / RESULTS).is_file():
            continue  # a run the session named but never wrote (cancelled before a unit)
        manifests[run_id] = _manifest(run_dir)
        run_dirs[run_id] = run_dir
        _add_run(sides, run_dir, manifests[run_id], candidates)
    return Subject(
        kind="session",
        ref=session_id,
        title=f"{info.label} session {session_id}",
        benchmark=info.benchmark
        or next((m["benchmark"] for m in manifests.values() if m.get("benchmark")), None),
        sides=list(sides.values()),
        events=events,
        info=info,
        manifests=manifests,
        run_dirs=run_dirs,
    )


def _folder_texts(folder: Path | None) -> dict[str, str]:
    """Every text file of the skill folders under ``folder`` (``<skill>/<path>``); links are
    listed, never followed."""
    texts: dict[str, str] = {}
    if folder is None:
        return texts
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            texts[rel] = f"(link to {path.readlink()})\n"
        elif path.is_file():
            try:
                texts[rel] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                texts[rel] = f"(binary, {path.stat().st_size} bytes)\n"
    return texts


def version_diff(before: Side | None, after: Side) -> str:
    """The unified diff of the skill folders from ``before`` to ``after`` ("" when equal)."""
    if before is None:
        return ""
    old, new = _folder_texts(before.inputs), _folder_texts(after.inputs)
    chunks: list[str] = []
    for rel in sorted(set(old) | set(new), key=lambda r: (not r.endswith("SKILL.md"), r)):
        a, b = old.get(rel, ""), new.get(rel, "")
        if a == b:
            continue
        chunks.extend(
            difflib.unified_diff(
                a.splitlines(keepends=True),
                b.splitlines(keepends=True),
                fromfile=f"a/{rel}" if rel in old else "/dev/null",
                tofile=f"b/{rel}" if rel in new else "/dev/null",
            )
        )
    return "".join(c if c.endswith("\n") else c + "\n" for c in chunks)
