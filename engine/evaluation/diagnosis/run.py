"""Diagnosing a run folder: ``runs/<run-id>/`` or a folder exported by another platform.

The article's export (results.jsonl + sessions/<case_id>.jsonl + manifest.json) must drop
straight in, so rows need only ``case_id`` and ``pass_fail``; everything else has a default.
Step identities come from the skill text the run actually evaluated (``inputs/<variant>/``),
falling back to the workspace's active skill for folders that do not carry it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.benchmark import Benchmark, load_benchmark
from engine.core.config import DiagnosisConfig
from engine.core.errors import FormatError, SkillsmithError
from engine.core.fsutil import read_jsonl
from engine.core.skill import SkillDoc, Step
from engine.core.workspace import Workspace
from engine.evaluation.diagnosis.attribution import CaseInput, Diagnosis, diagnose
from engine.evaluation.diagnosis.registry import Registry
from engine.evaluation.traces import load_trace, summarise

MANIFEST = "manifest.json"
RESULTS = "results.jsonl"
SESSIONS = "sessions"
INPUTS = "inputs"
_BENCH_KEYS = ("benchmark", "bench", "bench_id", "dataset")


@dataclass
class LoadedRun:
    folder: Path
    run_id: str
    rows: list[dict[str, Any]]
    manifest: dict[str, Any]
    skills: dict[str, dict[str, str]] = field(default_factory=dict)  # variant → name → text
    skills_from_workspace: bool = False  # the folder had no inputs/: active skills stand in

    def version_of(self, variant: str) -> str:
        """Which skill version produced a variant's rows: a hash of the texts it ran with, so
        two runs of the same version count once in the ground-truth audit — whichever variant
        ran it (a ``baseline`` at v1 and a ``skill`` at v1 are one version, not two)."""
        texts = self.skills.get(variant)
        if not texts and variant == "baseline":
            return "no-skill"
        if not texts or self.skills_from_workspace:
            return f"{self.run_id}:{variant}"
        digest = hashlib.sha256()
        for name in sorted(texts):
            digest.update(f"{name}\0{texts[name]}\0".encode())
        return f"sha:{digest.hexdigest()[:12]}"

    @property
    def skill_under_test(self) -> str | None:
        """The one skill the manifest marks ``under_test`` (the runner's manifest), if any."""
        skills = self.manifest.get("skills")
        if not isinstance(skills, list):
            return None
        names = [
            s["name"]
            for s in skills
            if isinstance(s, dict) and s.get("under_test") and isinstance(s.get("name"), str)
        ]
        return names[0] if len(names) == 1 else None

    @property
    def benchmark_id(self) -> str | None:
        for key in _BENCH_KEYS:
            value = self.manifest.get(key)
            if isinstance(value, dict):
                value = value.get("id")
            if isinstance(value, str) and value:
                return value
        return None


def resolve_run_dir(ref: str | Path, ws: Workspace | None) -> Path:
    """A run id under ``runs/`` or a path to a run folder."""
    if ws is not None and isinstance(ref, str) and (ws.runs_dir / ref).is_dir():
        return ws.runs_dir / ref
    path = Path(ref).expanduser()
    if path.is_dir():
        return path.resolve()
    where = f" or {ws.runs_dir / str(ref)}" if ws is not None else ""
    raise SkillsmithError(f"{ref}: no such run (not a folder{where})")


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of results.jsonl, the last one per unit (a rerun supersedes an earlier row)."""
    if not path.is_file():
        raise FormatError(path, None, "file not found (not a run folder)")
    latest: dict[tuple[str, int, str], dict[str, Any]] = {}
    for number, row in enumerate(read_jsonl(path, strict=True), start=1):
        if not isinstance(row.get("case_id"), str) or not row["case_id"]:
            raise FormatError(path, "case_id", "expected a non-empty string", line=number)
        if row.get("pass_fail") not in ("pass", "fail", "invalid"):
            raise FormatError(
                path, "pass_fail", "expected 'pass', 'fail' or 'invalid'", line=number
            )
        index = row.get("run_index", 0)
        if not isinstance(index, int) or isinstance(index, bool):
            raise FormatError(path, "run_index", "expected an integer", line=number)
        score = row.get("score")
        if score is not None and (not isinstance(score, (int, float)) or isinstance(score, bool)):
            raise FormatError(path, "score", f"expected a number, got {score!r}", line=number)
        latest[(row["case_id"], index, str(row.get("variant") or "skill"))] = row
    return list(latest.values())


def _read_manifest(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise FormatError(path, None, "expected UTF-8 JSON, found binary data") from None
    except json.JSONDecodeError as exc:
        raise FormatError(path, None, f"invalid JSON ({exc.msg})", line=exc.lineno) from None
    if not isinstance(data, dict):
        raise FormatError(path, None, "expected a JSON object")
    return data


def _read_inputs(folder: Path) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    root = folder / INPUTS
    if root.is_dir():
        for file in sorted(root.glob("*/*/SKILL.md")):
            variant, name = file.parent.parent.name, file.parent.name
            found.setdefault(variant, {})[name] = file.read_text(encoding="utf-8")
    return found


def load_run(ref: str | Path, ws: Workspace | None = None) -> LoadedRun:
    folder = resolve_run_dir(ref, ws)
    run = LoadedRun(
        folder=folder,
        run_id=folder.name,
        rows=_read_rows(folder / RESULTS),
        manifest=_read_manifest(folder / MANIFEST),
        skills=_read_inputs(folder),
    )
    if "skill" not in run.skills and ws is not None:
        # An exported folder without the evaluated text: the active skills are the best guess.
        active = {n: ws.skill_path(n).read_text(encoding="utf-8") for n in ws.skill_names()}
        if active:
            run.skills["skill"] = active
            run.skills_from_workspace = True
    return run


def benchmark_of(run: LoadedRun, ws: Workspace | None) -> Benchmark | None:
    """The run's benchmark when the workspace holds it (labels, pattern, statements)."""
    bench_id = run.benchmark_id
    if ws is None or bench_id is None or not (ws.benchmarks_dir / bench_id).is_dir():
        return None
    return load_benchmark(ws.benchmarks_dir / bench_id, check=False)


def session_path(run: LoadedRun, row: Mapping[str, Any]) -> Path | None:
    """The row's transcript: its ``session_file``, else the article's sessions/<case_id>.jsonl."""
    candidates: list[Path] = []
    if isinstance(row.get("session_file"), str) and row["session_file"]:
        candidates.append(run.folder / row["session_file"])
    case_id = str(row["case_id"])
    candidates += [
        run.folder / SESSIONS / f"{case_id}.{row.get('run_index', 0)}.jsonl",
        run.folder / SESSIONS / f"{case_id}.jsonl",
    ]
    return next((p for p in candidates if p.is_file()), None)


def _steps_for(
    texts: Mapping[str, str], skill: str | None, docs: dict[str, SkillDoc]
) -> tuple[str | None, list[Step]]:
    """The evolved skill's name and steps among the skill texts one variant ran with."""
    if not texts:
        return skill, []
    name = skill if skill in texts else (next(iter(texts)) if len(texts) == 1 else None)
    if name is None:
        return skill, []
    if name not in docs:
        docs[name] = SkillDoc.parse(texts[name])
    return name, docs[name].steps


def diagnose_run(
    run: LoadedRun,
    *,
    config: DiagnosisConfig | None = None,
    registry: Registry | None = None,
    min_share: float = 0.30,
    skill: str | None = None,
    bench: Benchmark | None = None,
    splits: Collection[str] | None = None,
) -> Diagnosis:
    """Parse every row's session, summarise it against the evaluated skill, diagnose, attribute."""
    config = config or DiagnosisConfig()
    skill = skill or run.skill_under_test
    pattern = bench.label_pattern if bench is not None else config.label_pattern
    labels = bench.labels if bench is not None else []
    docs: dict[str, dict[str, SkillDoc]] = {}
    inputs: list[CaseInput] = []
    for row in run.rows:
        variant = str(row.get("variant") or "skill")
        name, steps = _steps_for(run.skills.get(variant, {}), skill, docs.setdefault(variant, {}))
        path = session_path(run, row)
        if path is None:
            inputs.append(CaseInput(row, None, None, note="session file missing"))
            continue
        rel = str(path.relative_to(run.folder)) if path.is_relative_to(run.folder) else str(path)
        trace = load_trace(path, source=rel)
        summary = summarise(trace, steps, config=config, label_pattern=pattern, labels=labels)
        inputs.append(
            CaseInput(
                row,
                trace,
                summary,
                steps=steps,
                skill_name=name,
                expects_skill=bool(run.skills.get(variant)) or variant != "baseline",
            )
        )
    return diagnose(
        inputs,
        registry=registry,
        config=config,
        min_share=min_share,
        run_id=run.run_id,
        splits=splits,
    )
