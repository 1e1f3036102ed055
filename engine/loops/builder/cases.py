"""Drafting benchmark cases: the draft protocol, the import pool, and writing case folders.

The Builder's model either writes a case outright (statement, material, expected label) or
imports one from a *pool* — another benchmark whose cases are the raw material — by naming it.
Both arrive in one protocol reply, so the same validation covers a model that invents cases and
the offline stand-in that selects them. Every case folder is written beside its final place and
renamed into it, so a benchmark never holds half a case.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from engine.core.benchmark import (
    PROMPT_FILE,
    RUBRIC_YAML,
    Benchmark,
    Case,
    label_text,
    load_benchmark,
    normalise_label,
)
from engine.core.errors import SkillsmithError
from engine.core.fsutil import atomic_write_bytes, atomic_write_text, fsync_dir, iter_files
from engine.core.schema import load_yaml
from engine.core.standard import StandardRule
from engine.core.workspace import Workspace
from engine.evaluation.protocol import (
    ProtocolError,
    check_keys,
    load_reply,
    text_field,
)

DRAFT_PROTOCOL = "skillsmith-draft/1"
DRAFT_SYSTEM = f"""You design a benchmark that measures one capability of an agent \
(PenguinHarness benchmark-design). Each case has a public statement (prompt.md and the material \
files the agent sees) and a private rubric (the expected label). Most of the score must fall on \
decisions where the desired behaviour and a reasonable shortcut give different results.

Reply with exactly one YAML mapping and nothing else:
protocol: {DRAFT_PROTOCOL}
labels: [<positive label>, <negative label>]   # only when the request has none
standard:          # only when the request has none: the fixed private decision standard
  - {{id: <lowercase-id>, text: <one sentence>}}
cases:             # exactly the number of cases requested
  - {{id: <case-id>, from: <pool case id>}}          # import a pool case as it is, or
  - {{id: <case-id>, type: <tag>, expected: <label>, prompt: <task text>, \
files: {{<name>: <content>}}}}
"""
_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_RULE_ID = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class CaseSpec:
    """One drafted case: imported from the pool (``source``) or written inline."""

    id: str
    source: str | None = None
    type: str | None = None
    expected: str | None = None
    prompt: str | None = None
    files: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        if self.source is not None:
            return {"id": self.id, "from": self.source}
        return {"id": self.id, "type": self.type, "expected": self.expected, "drafted": True}


@dataclass(frozen=True)
class Draft:
    labels: list[str] | None
    standard: list[StandardRule] | None
    cases: list[CaseSpec]


# -- the pool ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """Cases to import from: another benchmark, optionally narrowed to some ids."""

    bench: Benchmark
    ids: tuple[str, ...]

    def case(self, case_id: str) -> Case:
        return self.bench.case(case_id)

    def describe(self, used: Sequence[str] = ()) -> list[dict[str, Any]]:
        """What a drafting model may pick from: ids, type, label, the task's first line."""
        out = []
        for case_id in self.ids:
            if case_id in used:
                continue
            case = self.case(case_id)
            task = case.prompt().strip().splitlines()
            out.append(
                {
                    "id": case.id,
                    "type": case.rubric.type,
                    "expected": case.rubric.expected,
                    "task": task[0][:200] if task else "",
                    "files": sorted(
                        p.name for p in case.statement_dir.iterdir() if p.name != PROMPT_FILE
                    ),
                }
            )
        return out


def open_pool(ws: Workspace, source: str, pick: Sequence[str] = ()) -> Pool:
    """The pool ``source`` names: a benchmark id of the workspace, or a benchmark folder."""
    path = ws.benchmarks_dir / source
    if not path.is_dir():
        path = Path(source).expanduser()
    if not path.is_dir():
        raise SkillsmithError(f"--from {source}: no benchmark {ws.benchmarks_dir / source}")
    bench = load_benchmark(path)
    known = [c.id for c in bench.cases]
    for case_id in pick:
        if case_id not in known:
            raise SkillsmithError(f"{bench.source}: --pick {case_id}: no such case in the pool")
    return Pool(bench, tuple(pick) if pick else tuple(known))


# -- the draft protocol ------------------------------------------------------------------------


def _labels(data: Mapping[str, Any], have: list[str] | None) -> list[str] | None:
    if "labels" not in data:
        return None
    if have:
        raise ProtocolError("reply.labels: the benchmark already declares its labels")
    labels = data["labels"]
    if not isinstance(labels, list) or len(labels) < 2:
        raise ProtocolError("reply.labels: expected a list of at least two labels")
    return [str(label_text(v)) for v in labels]


def _standard(data: Mapping[str, Any], has_standard: bool) -> list[StandardRule] | None:
    if "standard" not in data:
        if not has_standard:
            raise ProtocolError("reply: missing key 'standard' (the benchmark has none yet)")
        return None
    if has_standard:
        raise ProtocolError("reply.standard: the benchmark's standard is fixed; leave it out")
    items = data["standard"]
    if not isinstance(items, list) or not items:
        raise ProtocolError("reply.standard: expected a list of rules")
    rules: list[StandardRule] = []
    for i, item in enumerate(items):
        where = f"reply.standard[{i}]"
        if not isinstance(item, dict):
            raise ProtocolError(f"{where}: expected a mapping with id and text")
        check_keys(item, where, ("id", "text"))
        rule_id = str(item["id"])
        if not _RULE_ID.match(rule_id) or any(r.id == rule_id for r in rules):
            raise ProtocolError(f"{where}.id: expected a new lowercase id, got {rule_id!r}")
        rules.append(StandardRule(rule_id, text_field(item, "text", where, one_line=True)))
    return rules


def _file_name(name: str, where: str) -> str:
    rel = PurePosixPath(name)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts or name == PROMPT_FILE:
        raise ProtocolError(f"{where}: {name!r} is not a plain relative material file name")
    return rel.as_posix()


def parse_case(item: Any, where: str, *, pool: Pool | None, labels: Sequence[str]) -> CaseSpec:
    """One case of a draft or calibration reply: a pool import or an inline case."""
    if not isinstance(item, dict):
        raise ProtocolError(f"{where}: expected a mapping")
    case_id = str(item.get("id") or "")
    if not _CASE_ID.match(case_id):
        raise ProtocolError(f"{where}.id: expected a case folder name, got {case_id!r}")
    if "from" in item:
        check_keys(item, where, ("id", "from"))
        source = str(item["from"])
        if pool is None or source not in pool.ids:
            raise ProtocolError(f"{where}.from: {source!r} is not a case of the pool")
        return CaseSpec(case_id, source=source)
    check_keys(item, where, ("id", "expected", "prompt", "files"), ("type",))
    expected = str(label_text(item["expected"]))
    if labels and normalise_label(expected) not in {normalise_label(lb) for lb in labels}:
        raise ProtocolError(f"{where}.expected: expected one of {list(labels)}, got {expected!r}")
    files = item["files"]
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise ProtocolError(f"{where}.files: expected a mapping of file name to text")
    return CaseSpec(
        case_id,
        type=str(item["type"]) if item.get("type") else None,
        expected=expected,
        prompt=text_field(item, "prompt", where),
        files={_file_name(str(k), f"{where}.files"): v for k, v in files.items()},
    )


def parse_draft(
    text: str,
    *,
    want: int,
    pool: Pool | None,
    labels: list[str],
    has_standard: bool,
    taken: Sequence[str] = (),
) -> Draft:
    """Validate a draft reply: ``want`` new cases with unique ids, sources from the pool."""
    data = load_reply(text, DRAFT_PROTOCOL)
    check_keys(data, "reply", ("protocol", "cases"), ("labels", "standard"))
    new_labels = _labels(data, labels)
    rules = _standard(data, has_standard)
    items = data["cases"]
    if not isinstance(items, list) or len(items) != want:
        raise ProtocolError(f"reply.cases: expected a list of exactly {want} cases")
    cases = [
        parse_case(item, f"reply.cases[{i}]", pool=pool, labels=new_labels or labels)
        for i, item in enumerate(items)
    ]
    ids = [c.id for c in cases]
    dupes = [i for i in ids if ids.count(i) > 1 or i in taken]
    if dupes:
        raise ProtocolError(f"reply.cases: case id {dupes[0]!r} is used twice")
    sources = [c.source for c in cases if c.source is not None]
    if len(set(sources)) != len(sources):
        raise ProtocolError("reply.cases: a pool case is imported twice")
    return Draft(new_labels, rules, cases)


# -- writing case folders ----------------------------------------------------------------------


def replace_dir(staged: Path, dest: Path) -> None:
    """Put the complete folder ``staged`` at ``dest`` (replacing it) with renames only."""
    old = dest.parent / f".{dest.name}.old-{secrets.token_hex(3)}"
    if dest.exists():
        os.rename(dest, old)
    os.rename(staged, dest)
    fsync_dir(dest.parent)
    shutil.rmtree(old, ignore_errors=True)


def copy_tree(source: Path, dest: Path) -> None:
    """Copy a folder file by file through the atomic writers (modes kept: rubric scripts)."""
    for path in iter_files(source):
        mode = path.stat().st_mode & 0o777
        atomic_write_bytes(dest / path.relative_to(source), path.read_bytes(), mode)
    dest.mkdir(parents=True, exist_ok=True)


def _stage(bench_root: Path, case_id: str) -> Path:
    return bench_root / f".{case_id}.new-{secrets.token_hex(3)}"


def write_case(bench_root: Path, spec: CaseSpec, pool: Pool | None) -> Path:
    """Write one drafted case as ``<bench>/<id>/`` (statement + rubric), replacing any old one."""
    stage = _stage(bench_root, spec.id)
    try:
        if spec.source is not None:
            assert pool is not None  # parse_case checked it
            source = pool.case(spec.source)
            copy_tree(source.statement_dir, stage / "statement")
            copy_tree(source.rubric_dir, stage / "rubric")
        else:
            atomic_write_text(stage / "statement" / PROMPT_FILE, str(spec.prompt).strip() + "\n")
            for name, text in spec.files.items():
                atomic_write_text(stage / "statement" / name, text)
            rubric: dict[str, Any] = {"expected": spec.expected}
            if spec.type:
                rubric["type"] = spec.type
            atomic_write_text(stage / "rubric" / RUBRIC_YAML, yaml.safe_dump(rubric))
        replace_dir(stage, bench_root / spec.id)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return bench_root / spec.id


def remove_case(bench_root: Path, case_id: str) -> None:
    target = bench_root / case_id
    if target.is_dir():
        gone = bench_root / f".{case_id}.old-{secrets.token_hex(3)}"
        os.rename(target, gone)
        shutil.rmtree(gone)


def add_rule_check(case: Case, rule: StandardRule, weight: float) -> None:
    """Grade ``rule`` in a case's rubric (an ``llm_judge`` check quoting the rule)."""
    data = load_yaml(case.rubric_path) or {}
    checks = list(data.get("checks") or [{"kind": "label", "weight": 1}])
    if any(c.get("criteria") == rule.criteria for c in checks if isinstance(c, dict)):
        return
    checks.append({"kind": "llm_judge", "criteria": rule.criteria, "weight": weight})
    body = yaml.safe_dump({**data, "checks": checks}, sort_keys=False, allow_unicode=True)
    atomic_write_text(case.rubric_path, body)


__all__ = [
    "DRAFT_PROTOCOL",
    "DRAFT_SYSTEM",
    "CaseSpec",
    "Draft",
    "Pool",
    "add_rule_check",
    "copy_tree",
    "open_pool",
    "parse_case",
    "parse_draft",
    "remove_case",
    "replace_dir",
    "write_case",
]
