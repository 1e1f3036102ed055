"""Demo-like workspaces for the workbench tests.

``build_workspace`` goes through the engine APIs (store, queue) with a two-case slice of the
bundled demo benchmark, so the TUI tests act on exactly what users get. ``build_fixed_workspace``
writes the same kind of workspace straight in the documented file formats, with fixed ids and
times, for the SVG snapshots, which must not change from one run to the next.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import engine.evaluation.demo
from engine.core.fsutil import atomic_write_json, atomic_write_text, atomic_write_yaml
from engine.core.queue import Candidate, CandidateQueue, content_hash
from engine.core.store import SkillStore, unified_diff
from engine.core.workspace import Workspace

DEMO = Path(engine.evaluation.demo.__file__).parent / "workspace"
SKILL = "security-audit"
BENCH = "vuln-detect"
CASES = ("cmdi-js-exec", "cmdi-php-escaped")


def demo_cases(count: int) -> tuple[str, ...]:
    """The first ``count`` demo cases: enough for every split of an evolution round."""
    source = DEMO / "benchmarks" / BENCH
    return tuple(sorted(p.name for p in source.iterdir() if (p / "rubric").is_dir())[:count])


GATES_PASS = [
    {
        "gate": "target",
        "verdict": "pass",
        "figures": {"fixed": 2, "targeted": 3},
        "reasons": ["2 of 3 targeted failing cases now pass"],
        "case_ids": ["cmdi-js-exec", "sqli-py-format", "path-js-root"],
        "fixed": ["cmdi-js-exec", "sqli-py-format"],
        "newly_broken": [],
    },
    {
        "gate": "guardrail",
        "verdict": "pass",
        "figures": {"selection_passing": 31, "regressions": 0},
        "reasons": ["no previously passing selection case fails"],
        "case_ids": [],
        "fixed": [],
        "newly_broken": [],
    },
    {
        "gate": "verify",
        "verdict": "held",
        "figures": {"score": 81.5, "previous": 84.0},
        "reasons": ["score dropped 2.5 points (limit 5)"],
        "case_ids": [],
        "fixed": [],
        "newly_broken": [],
    },
]
GATES_FAIL = [
    {
        "gate": "guardrail",
        "verdict": "fail",
        "figures": {"regressions": 2},
        "reasons": ["2 previously passing cases fail"],
        "case_ids": ["xss-php-escaped", "secret-py-env"],
        "fixed": [],
        "newly_broken": ["xss-php-escaped", "secret-py-env"],
    }
]


def skill_text() -> str:
    return (DEMO / "skills" / SKILL / "SKILL.md").read_text(encoding="utf-8")


def edited(text: str, marker: str) -> str:
    """A small, realistic edit: one more pitfall line naming a command."""
    line = f"- {marker}: a `grep -n` hit inside a comment is not a finding.\n"
    return text.rstrip("\n") + "\n" + line


def _copy_benchmark(ws: Workspace, cases: tuple[str, ...]) -> None:
    source = DEMO / "benchmarks" / BENCH
    target = ws.benchmarks_dir / BENCH
    target.mkdir(parents=True)
    config = (source / "benchmark.yaml").read_text(encoding="utf-8")
    atomic_write_text(
        target / "benchmark.yaml", config.replace("runs_per_case: 2", "runs_per_case: 1")
    )
    for case in cases:
        shutil.copytree(source / case, target / case)


def build_workspace(
    root: Path, *, candidates: int = 2, cases: tuple[str, ...] = CASES
) -> Workspace:
    """Skill at v1 (v0 adopted), a 2-case benchmark, ``candidates`` pending approval + 1 held."""
    ws = Workspace.init(root)
    atomic_write_text(ws.skill_path(SKILL), skill_text())
    store = SkillStore(ws, SKILL)
    store.ensure_adopted()
    v1_text = edited(skill_text(), "Pitfall v1")
    store.publish(v1_text, why="tighten the pitfalls")
    _copy_benchmark(ws, cases)
    queue = CandidateQueue(ws)
    for n in range(candidates):
        submit_candidate(queue, v1_text, f"Candidate {n + 1}", "v1")
    new = edited(v1_text, "Unproven idea")
    queue.submit(
        SKILL,
        new,
        unified_diff(v1_text, new),
        source="optimize",
        operation="update",
        status="pending_eval",
        parent_version="v1",
        summary="unproven: waits for evidence",
        gates=GATES_FAIL,
        unproven=True,
    )
    return ws


def submit_candidate(queue: CandidateQueue, base: str, marker: str, parent: str) -> Candidate:
    new = edited(base, marker)
    return queue.submit(
        SKILL,
        new,
        unified_diff(base, new),
        source="evolve",
        operation="update",
        status="pending_approval",
        parent_version=parent,
        summary=f"{marker}: drop grep hits in comments",
        gates=GATES_PASS,
        delta_score=0.05,
        rule_id="progress_mismatch",
        root_causes=["progress_mismatch"],
    )


# -- fixed-content workspace for snapshots ------------------------------------------------------
FIXED_TIME = "2026-03-01T09:00:00Z"


def _write_candidate(ws: Workspace, record: dict[str, Any], text: str, patch: str) -> None:
    folder = ws.candidates_dir / record["id"]
    atomic_write_text(folder / "SKILL.md", text)
    atomic_write_text(folder / "patch.diff", patch)
    atomic_write_json(folder / "gates.json", record.pop("gates"))
    record["content_hash"] = content_hash(
        text.encode("utf-8"), patch.encode("utf-8"), record["operation"]
    )
    atomic_write_yaml(folder / "candidate.yaml", record)


def _fixed_snapshot(ws: Workspace, version: int, note: str) -> None:
    """A snapshot archive with fixed bytes: manifest first, then the active SKILL.md."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        manifest = {"format": 1, "version": version, "created_at": FIXED_TIME, "note": note}
        members = [
            ("manifest.json", json.dumps(manifest).encode()),
            (f"skills/{SKILL}/SKILL.md", skill_text().encode()),
        ]
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    ws.snapshots_dir.mkdir(exist_ok=True)
    (ws.snapshots_dir / f"v{version}.tar.gz").write_bytes(buffer.getvalue())


def build_fixed_workspace(root: Path) -> Workspace:
    """Workspace version 2, three candidates (two pending approval, one held, newest first in
    that order) and a snapshot of version 1, all with fixed ids, times and bytes."""
    ws = Workspace.init(root)
    ws.set_version(2)
    base = skill_text()
    atomic_write_text(ws.skill_path(SKILL), base)
    _copy_benchmark(ws, CASES)
    specs = [
        ("aaa001", "09:02", "evolve", "pending_approval", GATES_PASS, 0.05, "A"),
        ("bbb002", "09:01", "review", "pending_approval", GATES_PASS, 0.0125, "B"),
        ("ccc003", "09:00", "optimize", "pending_eval", GATES_FAIL, None, "C"),
    ]
    for suffix, clock, source, status, gates, delta, marker in specs:
        text = edited(base, f"Pitfall {marker}")
        record: dict[str, Any] = {
            "id": f"cand-20260301-{clock.replace(':', '')}00-{suffix}",
            "skill": SKILL,
            "source": source,
            "operation": "update",
            "status": status,
            "parent_version": "v0",
            "summary": f"pitfall {marker}: drop grep hits in comments",
            "delta_score": delta,
            "unproven": delta is None,
            "reason": None,
            "root_causes": ["progress_mismatch"],
            "rule_id": "progress_mismatch",
            "created_at": f"2026-03-01T{clock}:00Z",
            "history": [{"status": status, "at": FIXED_TIME, "why": "queued"}],
            "gates": gates,
        }
        _write_candidate(ws, record, text, unified_diff(base, text))
    _fixed_snapshot(ws, 1, "before the first round")
    return ws
