"""Benchmark folders: public statements, private rubrics, and the splits the loops rely on.

A benchmark is the measuring instrument every later loop trusts (DESIGN "benchmarks/<id>/"), so it
is loaded strictly: every malformed file is a one-line :class:`FormatError`, splits are a pure
function of the seed and the ratios (the same seed always gives the same splits), and a case whose
private rubric leaks into what the agent sees is refused — a leaked answer measures nothing.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import re
import threading
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from engine.core.errors import FormatError, UsageError
from engine.core.fsutil import Stamp, settled, stamp_of, walk_files
from engine.core.schema import from_mapping, load_yaml

if TYPE_CHECKING:
    from engine.core.workspace import Workspace

BENCHMARK_YAML = "benchmark.yaml"
BENCHMARK_TOML = "benchmark_config.toml"
RUBRIC_YAML = "rubric.yaml"
PROMPT_FILE = "prompt.md"

# The two split families of the source designs: the outcome-driven/PenguinHarness gates
# (selection/holdout/golden) and tRPC-Agent-Go's GEPA optimizer (feedback/validation/holdout).
SPLIT_FAMILIES: tuple[tuple[str, ...], ...] = (
    ("selection", "holdout", "golden"),
    ("feedback", "validation", "holdout"),
)
DEFAULT_SPLITS = {"selection": 0.60, "holdout": 0.25, "golden": 0.15}
DEFAULT_LABEL_PATTERN = r"VERDICT:\s*(\S+)"
MAX_RUNS_PER_CASE = 1000  # per case and variant; more is a typo (1e9 once sat silent), not a plan

CheckKind = Literal[
    "label", "exact", "regex", "contains", "json_field", "script", "llm_judge", "file"
]
# What a ``file`` check asks of the named output; ``exists`` needs no value.
FILE_MATCHES = ("exists", "equals", "contains", "regex", "json_field")
# What an llm_judge check may show the judge (rubric ``judge_sees``); all of it by default.
JUDGE_PARTS = ("task", "answer", "transcript", "outputs")
_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Shorter rubric values ("12", "yes") occur everywhere by chance; flagging them would refuse
# honest cases, so the leak check only looks at values at least this long.
MIN_LEAK_CHARS = 4
# Free-text rubric prose (notes, judge criteria) leaks only when a whole sentence is copied.
MIN_LEAK_SENTENCE_CHARS = 20

# Every evaluation loads its benchmark, and a loop evaluates many times in one process: what
# loading reads from a case's files is kept here by the files' stamps (engine.core.fsutil
# .stamp_of), so an unchanged case costs a stat, not a YAML parse and a read of its statement.
_cache_lock = threading.Lock()
_rubrics: dict[str, tuple[Stamp, Rubric]] = {}  # rubric.yaml -> its parse, before validation
# statement folder -> (its files' stamps, the secrets looked for, (secret index, file) found)
_Found = tuple[int, str] | None
_leaks: dict[str, tuple[tuple[tuple[str, Stamp], ...], tuple[tuple[str, str], ...], _Found]] = {}


@dataclass
class Check:
    """One weighted check of a rubric; which fields matter depends on ``kind``."""

    kind: CheckKind = "label"
    weight: float = 1.0
    value: str | bool | int | float | None = None
    path: str | None = None
    criteria: str | None = None
    text: str | None = None
    case_sensitive: bool = False
    timeout_s: float = 30.0
    match: str = "exists"  # a file check's test of its output (FILE_MATCHES)
    field: str | None = None  # a file check's JSON path, for match json_field

    def describe(self, expected: str | None) -> str:
        """The human line shown in grading evidence (skill-creator's ``text``)."""
        if self.text:
            return self.text
        if self.kind == "label":
            return f"verdict is {expected!r}"
        if self.kind == "exact":
            return f"answer is exactly {self.value if self.value is not None else expected!r}"
        if self.kind == "regex":
            return f"answer matches /{self.value}/"
        if self.kind == "contains":
            return f"answer contains {self.value!r}"
        if self.kind == "json_field":
            return f"JSON field {self.path} equals {self.value!r}"
        if self.kind == "script":
            return f"script {self.path} exits 0"
        if self.kind == "file":
            tests = {
                "exists": "exists",
                "equals": f"equals {self.value!r}",
                "contains": f"contains {self.value!r}",
                "regex": f"matches /{self.value}/",
                "json_field": f"has JSON field {self.field} equal to {self.value!r}",
            }
            return f"output {self.path} {tests.get(self.match, self.match)}"
        return f"judge: {self.criteria}"


@dataclass
class Rubric:
    """The private half of a case: never copied into a run directory."""

    expected: str | None = None
    type: str | None = None
    critical: bool = False
    split: str | None = None
    notes: str | None = None
    checks: list[Check] = field(default_factory=lambda: [Check()])
    # the answer protocol (label line, STEPS DONE) for a case of a benchmark without labels
    answer_protocol: bool = False
    judge_sees: list[str] = field(default_factory=lambda: list(JUDGE_PARTS))


@dataclass
class BenchmarkConfig:
    """The shape of benchmark.yaml (benchmark_config.toml uses the same keys)."""

    id: str | None = None
    description: str = ""
    labels: list[str] = field(default_factory=list)
    runs_per_case: int = 1
    seed: int = 7
    label_pattern: str = DEFAULT_LABEL_PATTERN
    pass_threshold: float = 1.0
    splits: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_SPLITS))
    cases: list[str] | None = None
    smoke: list[str] | None = None  # the few cases `skillsmith check` runs by default


@dataclass
class Case:
    id: str
    dir: Path
    statement_dir: Path
    rubric: Rubric
    split: str
    rubric_path: Path

    @property
    def rubric_dir(self) -> Path:
        return self.rubric_path.parent

    @property
    def prompt_path(self) -> Path:
        return self.statement_dir / PROMPT_FILE

    def prompt(self) -> str:
        return self.prompt_path.read_text(encoding="utf-8")

    @property
    def expected_label(self) -> str | None:
        return None if self.rubric.expected is None else normalise_label(self.rubric.expected)


@dataclass
class Benchmark:
    id: str
    root: Path
    source: Path
    description: str
    labels: list[str]
    runs_per_case: int
    seed: int
    label_pattern: str
    pass_threshold: float
    splits: dict[str, float]
    cases: list[Case]
    smoke: list[str] = field(default_factory=list)

    @property
    def positive_label(self) -> str | None:
        """The first declared label is the positive class of precision/recall/F1."""
        return self.labels[0] if self.labels else None

    @property
    def binary(self) -> bool:
        return len(self.labels) == 2

    def case(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)

    def cases_in(self, *splits: str) -> list[Case]:
        return [c for c in self.cases if c.split in splits]

    @property
    def scoreboard_path(self) -> Path:
        return self.root / "scoreboard.yaml"


def normalise_label(text: str) -> str:
    """Compare labels the way a reader would: case, surrounding markup and separators ignored.

    ``**Vulnerable**.``, ``vulnerable`` and ``VULNERABLE`` are one label; ``not_vulnerable`` and
    ``not vulnerable`` too, so an agent is not failed for typography.
    """
    core = text.strip().strip("*_`'\".,;:!?()[]{}<>").strip()
    return re.sub(r"[\s_-]+", "-", core.casefold())


def label_text(value: Any) -> Any:
    """YAML reads ``true``/``12`` as bool/int; a label or expected answer is always text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value


# -- loading -----------------------------------------------------------------------------------


def _load_toml(path: Path) -> Any:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+)", str(exc))
        # Errors "at end of document" carry no line; the last line is where it went wrong.
        line = int(match.group(1)) if match else len(path.read_bytes().splitlines()) or None
        problem = re.sub(r"\s*\(at [^)]*\)", "", str(exc))
        raise FormatError(path, None, f"invalid TOML: {problem}", line=line) from None
    except UnicodeDecodeError:
        raise FormatError(path, None, "file is not UTF-8 text") from None


def _load_config(root: Path) -> tuple[BenchmarkConfig, Path]:
    yaml_path, toml_path = root / BENCHMARK_YAML, root / BENCHMARK_TOML
    if yaml_path.is_file() and toml_path.is_file():
        raise FormatError(
            root, None, f"both {BENCHMARK_YAML} and {BENCHMARK_TOML} exist; keep exactly one"
        )
    if yaml_path.is_file():
        source, data = yaml_path, load_yaml(yaml_path)
    elif toml_path.is_file():
        source, data = toml_path, _load_toml(toml_path)
        # PenguinHarness calls the run count ``runs`` ("Builder 的 runs 固定为 1").
        if isinstance(data, dict) and "runs" in data and "runs_per_case" not in data:
            data = {("runs_per_case" if k == "runs" else k): v for k, v in data.items()}
    else:
        raise FormatError(root, None, f"not a benchmark folder (no {BENCHMARK_YAML})")
    if isinstance(data, dict) and isinstance(data.get("labels"), list):
        data = {**data, "labels": [label_text(v) for v in data["labels"]]}
    config = from_mapping(BenchmarkConfig, data, source)
    _validate_config(config, source, root)
    return config, source


def _validate_config(config: BenchmarkConfig, source: Path, root: Path) -> None:
    if config.id is not None and config.id != root.name:
        raise FormatError(
            source, "id", f"expected the folder name {root.name!r}, got {config.id!r}"
        )
    if not 1 <= config.runs_per_case <= MAX_RUNS_PER_CASE:
        raise FormatError(
            source,
            "runs_per_case",
            f"expected a number in [1, {MAX_RUNS_PER_CASE}], got {config.runs_per_case}",
        )
    if not 0.0 <= config.pass_threshold <= 1.0:
        raise FormatError(
            source, "pass_threshold", f"expected a number in [0, 1], got {config.pass_threshold}"
        )
    try:
        pattern = re.compile(config.label_pattern)
    except re.error as exc:
        raise FormatError(source, "label_pattern", f"invalid regex: {exc}") from None
    if pattern.groups < 1:
        raise FormatError(source, "label_pattern", "expected a regex with a capture group")
    seen: set[str] = set()
    for i, label in enumerate(config.labels):
        key = normalise_label(label)
        if not key:
            raise FormatError(source, f"labels[{i}]", "expected a non-empty label")
        if key in seen:
            raise FormatError(source, f"labels[{i}]", f"duplicate label {label!r}")
        seen.add(key)
    family = next((f for f in SPLIT_FAMILIES if set(config.splits) == set(f)), None)
    if family is None:
        wanted = " or ".join("/".join(f) for f in SPLIT_FAMILIES)
        raise FormatError(source, "splits", f"expected the keys {wanted}")
    for name, ratio in config.splits.items():
        if ratio < 0:
            raise FormatError(source, f"splits.{name}", f"expected a ratio ≥ 0, got {ratio}")
    if not math.isclose(sum(config.splits.values()), 1.0, abs_tol=1e-6):
        raise FormatError(source, "splits", "expected ratios summing to 1")
    for i, case_id in enumerate(config.cases or []):
        if not _CASE_ID.match(case_id):
            raise FormatError(
                source, f"cases[{i}]", f"expected a case folder name, got {case_id!r}"
            )


def _parse_rubric(path: Path) -> Rubric:
    """The rubric as the file says, from the cache while the file's stamp holds; a copy, so a
    caller's edit never reaches the cache."""
    key = os.fspath(path)
    try:
        stamp = stamp_of(os.stat(path))
    except FileNotFoundError:  # gone since the case was listed: as a read would say
        raise FormatError(path, None, "file not found") from None
    with _cache_lock:
        cached = _rubrics.get(key)
    if cached is not None and cached[0] == stamp:
        rubric = cached[1]
    else:
        data = load_yaml(path)
        if isinstance(data, dict) and "expected" in data:
            data = {**data, "expected": label_text(data["expected"])}
        rubric = from_mapping(Rubric, data, path)
        if settled([stamp]):
            with _cache_lock:
                _rubrics[key] = (stamp, rubric)
    return dataclasses.replace(rubric, checks=[dataclasses.replace(c) for c in rubric.checks])


def _load_rubric(path: Path) -> Rubric:
    """Parse and validate (validation runs every time: a script check's file may have gone)."""
    rubric = _parse_rubric(path)
    if not rubric.checks:
        raise FormatError(path, "checks", "expected at least one check (or omit the key)")
    for i, check in enumerate(rubric.checks):
        _validate_check(check, f"checks[{i}]", path, rubric)
    if sum(c.weight for c in rubric.checks) <= 0:
        raise FormatError(path, "checks", "expected a positive total weight")
    unknown = [p for p in rubric.judge_sees if p not in JUDGE_PARTS]
    if unknown:
        raise FormatError(
            path, "judge_sees", f"unknown part {unknown[0]!r} (expected {', '.join(JUDGE_PARTS)})"
        )
    return rubric


def _validate_check(check: Check, name: str, path: Path, rubric: Rubric) -> None:
    if check.weight < 0:
        raise FormatError(path, f"{name}.weight", f"expected a weight ≥ 0, got {check.weight}")
    if check.timeout_s <= 0:
        raise FormatError(path, f"{name}.timeout_s", "expected a positive number of seconds")
    kind = check.kind
    if kind in ("label", "exact") and rubric.expected is None and check.value is None:
        raise FormatError(path, "expected", f"is required by the {kind} check {name}")
    if kind in ("regex", "contains") and not isinstance(check.value, str):
        raise FormatError(path, f"{name}.value", f"expected a string for a {kind} check")
    if kind == "regex" or (kind == "file" and check.match == "regex"):
        try:
            re.compile(str(check.value))
        except re.error as exc:
            raise FormatError(path, f"{name}.value", f"invalid regex: {exc}") from None
    if kind == "file":
        _validate_file_check(check, name, path)
    if kind == "json_field" and (not check.path or check.value is None):
        raise FormatError(path, name, "a json_field check needs 'path' and 'value'")
    if kind == "llm_judge" and not (check.criteria or "").strip():
        raise FormatError(path, f"{name}.criteria", "expected the judge's criteria text")
    if kind == "script":
        if not check.path:
            raise FormatError(path, f"{name}.path", "expected a script path inside rubric/")
        script = (path.parent / check.path).resolve()
        if not script.is_relative_to(path.parent.resolve()):
            raise FormatError(path, f"{name}.path", "expected a path inside rubric/")
        if not script.is_file():
            raise FormatError(path, f"{name}.path", f"script not found: {check.path}")
        if script.suffix != ".py" and not os.access(script, os.X_OK):
            raise FormatError(path, f"{name}.path", "expected a .py file or an executable")


def _validate_file_check(check: Check, name: str, path: Path) -> None:
    """A file check names an output inside the run folder and a test it knows."""
    rel = check.path or ""
    if not rel or rel.startswith("/") or ".." in Path(rel).parts:
        raise FormatError(path, f"{name}.path", "expected an output path inside the run folder")
    if check.match not in FILE_MATCHES:
        raise FormatError(
            path, f"{name}.match", f"expected one of {', '.join(FILE_MATCHES)}, got {check.match!r}"
        )
    if check.match != "exists" and check.value is None:
        raise FormatError(path, f"{name}.value", f"is required by match {check.match}")
    if check.match == "json_field" and not check.field:
        raise FormatError(path, f"{name}.field", "expected the JSON field to compare")


def _case_dirs(root: Path, config: BenchmarkConfig, source: Path) -> list[Path]:
    if config.cases is not None:
        dirs = []
        for i, case_id in enumerate(config.cases):
            if not (root / case_id / "statement").is_dir():
                raise FormatError(source, f"cases[{i}]", f"no folder {case_id}/statement/")
            dirs.append(root / case_id)
        if len(set(config.cases)) != len(config.cases):
            raise FormatError(source, "cases", "expected each case listed once")
        return dirs
    dirs = []
    with os.scandir(root) as entries:  # one listing, plain strings: this runs every evaluation
        names = sorted(e.name for e in entries if not e.name.startswith(".") and e.is_dir())
    for name in names:
        folder = os.path.join(root, name)
        has_statement = os.path.isdir(os.path.join(folder, "statement"))
        if not has_statement and os.path.isdir(os.path.join(folder, "rubric")):
            raise FormatError(root / name, None, "case folder has rubric/ but no statement/")
        if has_statement:
            if not _CASE_ID.match(name):
                raise FormatError(root / name, None, "expected a case folder name [A-Za-z0-9._-]")
            dirs.append(root / name)
    return dirs


def _load_case(case_dir: Path, config: BenchmarkConfig) -> Case:
    statement = case_dir / "statement"
    if not (statement / PROMPT_FILE).is_file():
        raise FormatError(statement / PROMPT_FILE, None, "file not found (the task text)")
    rubric_path = case_dir / "rubric" / RUBRIC_YAML
    if not rubric_path.is_file():
        raise FormatError(rubric_path, None, "file not found (every case needs a rubric)")
    rubric = _load_rubric(rubric_path)
    if rubric.split is not None and rubric.split not in config.splits:
        raise FormatError(
            rubric_path,
            "split",
            f"expected one of {', '.join(config.splits)}, got {rubric.split!r}",
        )
    return Case(
        id=case_dir.name,
        dir=case_dir,
        statement_dir=statement,
        rubric=rubric,
        split="",
        rubric_path=rubric_path,
    )


def benchmark_ids(ws: Workspace) -> list[str]:
    """Benchmarks of the workspace: folders holding a benchmark.yaml (or benchmark_config.toml)."""
    try:
        entries = sorted(os.scandir(ws.benchmarks_dir), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    return [
        entry.name
        for entry in entries
        if entry.is_dir()
        and (
            os.path.isfile(os.path.join(entry.path, BENCHMARK_YAML))
            or os.path.isfile(os.path.join(entry.path, BENCHMARK_TOML))
        )
    ]


def pick_benchmark(ws: Workspace, bench: str | None, label: str = "BENCH") -> str:
    """``bench`` if the workspace has it, else (when None) its only benchmark; a usage error
    naming ``label`` (the argument or option it came from) otherwise."""
    known = benchmark_ids(ws)
    if bench is None:
        if len(known) != 1:
            raise UsageError(f"{label}: name one of {', '.join(known) or '(no benchmarks)'}")
        return known[0]
    if bench not in known:
        given = f"{label} {bench}" if label.startswith("-") else bench
        have = ", ".join(known) or "none"
        raise UsageError(f"{given}: no benchmark {ws.benchmarks_dir / bench} (have: {have})")
    return bench


def load_benchmark(path: Path | str, *, check: bool = True) -> Benchmark:
    """Load a benchmark folder; with ``check`` (the default) refuse inconsistent cases."""
    root = Path(path).resolve()
    if not root.is_dir():
        raise FormatError(root, None, "benchmark folder not found")
    config, source = _load_config(root)
    cases = [_load_case(d, config) for d in _case_dirs(root, config, source)]
    if not cases:
        raise FormatError(root, None, "benchmark has no cases (folders with statement/)")
    assignment = assign_splits(
        [(c.id, stratum_of(c, labelled=bool(config.labels)), c.rubric.split) for c in cases],
        config.splits,
        config.seed,
    )
    for case in cases:
        case.split = assignment[case.id]
    bench = Benchmark(
        id=root.name,
        root=root,
        source=source,
        description=config.description,
        labels=list(config.labels),
        runs_per_case=config.runs_per_case,
        seed=config.seed,
        label_pattern=config.label_pattern,
        pass_threshold=config.pass_threshold,
        splits=dict(config.splits),
        cases=cases,
        smoke=list(config.smoke or []),
    )
    known = {c.id for c in cases}
    for i, case_id in enumerate(bench.smoke):
        if case_id not in known:
            raise FormatError(source, f"smoke[{i}]", f"no case {case_id!r} in {root}")
    if check:
        problems = check_benchmark(bench)
        if problems:
            raise problems[0]
    return bench


# -- splits ------------------------------------------------------------------------------------


def _apportion(n: int, ratios: dict[str, float]) -> dict[str, int]:
    """Largest-remainder counts; ties go to the split listed first, so results are stable."""
    exact = {name: n * r for name, r in ratios.items()}
    counts = {name: math.floor(v) for name, v in exact.items()}
    order = list(ratios)
    rest = sorted(order, key=lambda s: (-(exact[s] - counts[s]), -ratios[s], order.index(s)))
    for name in rest[: n - sum(counts.values())]:
        counts[name] += 1
    return counts


Stratum = str | tuple[str, ...] | None


def stratum_of(case: Case, *, labelled: bool) -> tuple[str, ...]:
    """A case's stratum, coarsest part first: its expected label, then its type if it has one.

    Label first because a stratum too small to split falls back to its label's stratum: the
    class balance matters to every F1, the family mix only where there are enough cases.
    """
    label = (case.expected_label or "") if labelled else ""
    return (label,) if case.rubric.type is None else (label, case.rubric.type)


def _key(stratum: Stratum) -> tuple[str, ...]:
    if stratum is None:
        return ("",)
    return (stratum,) if isinstance(stratum, str) else stratum


def _splittable(n: int, ratios: dict[str, float]) -> bool:
    """Whether ``n`` cases give every split with a positive ratio at least one case."""
    counts = _apportion(n, ratios)
    return all(counts[name] > 0 for name, ratio in ratios.items() if ratio > 0)


def _merge_small(strata: dict[tuple[str, ...], list[str]], ratios: dict[str, float]) -> None:
    """Fold every stratum too small to split into its parent (its key minus the finest part),
    finest level first, so e.g. a lone (safe, ssrf) case joins the other safe cases. The
    top-level strata stay as they are, however small: there is nothing coarser to fall back to.
    """
    depth = max((len(k) for k in strata), default=0)
    for level in range(depth, 1, -1):
        for key in sorted(k for k in strata if len(k) == level):
            if not _splittable(len(strata[key]), ratios):
                strata.setdefault(key[:-1], []).extend(strata.pop(key))


def assign_splits(
    cases: Sequence[tuple[str, Stratum, str | None]], ratios: dict[str, float], seed: int
) -> dict[str, str]:
    """Map case ids to splits from (case_id, stratum, override) triples.

    Cases with an override keep it. The others are grouped by stratum — a label, or a tuple
    coarsest part first such as (label, case type) — so that every split sees the same class
    balance and every family: a holdout holding a family evolution never saw measures nothing.
    A stratum too small to give each split a case is merged into its parent stratum. Each
    stratum is shuffled by a RNG seeded from ``seed`` and the stratum, and cut by the ratios.
    Inputs are sorted first, so the listing order never matters.
    """
    result: dict[str, str] = {}
    strata: dict[tuple[str, ...], list[str]] = {}
    for case_id, stratum, override in sorted(cases, key=lambda c: c[0]):
        if override is not None:
            result[case_id] = override
        else:
            strata.setdefault(_key(stratum), []).append(case_id)
    _merge_small(strata, ratios)
    for key, ids in sorted(strata.items()):
        ids.sort()
        random.Random(f"{seed}:{'/'.join(key)}").shuffle(ids)
        start = 0
        for name, count in _apportion(len(ids), ratios).items():
            for case_id in ids[start : start + count]:
                result[case_id] = name
            start += count
    return result


# -- consistency -------------------------------------------------------------------------------


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def token_regex(value: str) -> str:
    """A regex for ``value`` as whole tokens with flexible whitespace.

    "line 12" occurs in "see line 12." and in "line\n12" but not in "line 120" — used both by
    the leak check and by ``contains`` checks, so the two agree on what "appears" means.
    """
    value = value.strip()
    pattern = r"\s+".join(re.escape(token) for token in value.split())
    if value[:1].isalnum():
        pattern = r"(?<![0-9A-Za-z])" + pattern
    if value[-1:].isalnum():
        pattern += r"(?![0-9A-Za-z])"
    return pattern


def _occurs(needle: str, haystack: str) -> bool:
    return bool(needle) and re.search(token_regex(needle), haystack, re.IGNORECASE) is not None


def _secrets_of(rubric: Rubric, public: set[str]) -> list[tuple[str, str]]:
    """The (field, text) pairs of a rubric whose appearance in the statement gives it away.

    Declared labels (``public``, normalised) are the public answer vocabulary (the prompt must
    name them), so they are never secrets; neither are regexes (patterns, not text) nor scripts.
    """
    found: list[tuple[str, str]] = []

    def add(name: str, value: object) -> None:
        if isinstance(value, bool) or value is None:
            return
        text = _squash(str(value))
        if len(text) >= MIN_LEAK_CHARS and normalise_label(text) not in public:
            found.append((name, text))

    add("expected", rubric.expected)
    for i, check in enumerate(rubric.checks):
        if check.kind in ("exact", "contains", "json_field") or (
            check.kind == "file" and check.match != "regex"
        ):
            add(f"checks[{i}].value", check.value)
    prose = [("notes", rubric.notes)] + [
        (f"checks[{i}].criteria", c.criteria) for i, c in enumerate(rubric.checks)
    ]
    for name, text in prose:
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", text or ""):
            squashed = _squash(sentence)
            if len(squashed) >= MIN_LEAK_SENTENCE_CHARS:
                found.append((name, squashed))
    return found


def _statement_texts(statement: Path) -> list[tuple[str, str]]:
    """Each statement file's path with its name and its text, squashed (a file that is not
    text, its name only). Every file, a temp-named one too: the room gets a copy of each."""
    texts: list[tuple[str, str]] = []
    for path, rel in walk_files(statement, temp_files=True):
        texts.append((path, _squash(rel)))
        try:
            with open(path, encoding="utf-8") as fh:
                texts.append((path, _squash(fh.read())))
        except (UnicodeDecodeError, OSError):
            continue
    return texts


def check_benchmark(bench: Benchmark) -> list[FormatError]:
    """Every consistency problem of a loaded benchmark, one FormatError per case at most."""
    problems: list[FormatError] = []
    declared = {normalise_label(lb) for lb in bench.labels}
    for case in bench.cases:
        if declared and case.expected_label is not None and case.expected_label not in declared:
            problems.append(
                FormatError(
                    case.rubric_path,
                    "expected",
                    f"expected one of the declared labels {bench.labels}, "
                    f"got {case.rubric.expected!r}",
                )
            )
            continue
        leak = _leak(case.statement_dir, tuple(_secrets_of(case.rubric, declared)))
        if leak is not None:
            name, secret, hit = leak
            shown = secret if len(secret) <= 60 else secret[:57] + "..."
            problems.append(
                FormatError(
                    case.rubric_path,
                    name,
                    f"private rubric text {shown!r} appears in "
                    f"{Path(hit).relative_to(case.dir)}; the agent would see the answer",
                )
            )
    return problems


def _leak(statement: Path, secrets: tuple[tuple[str, str], ...]) -> tuple[str, str, str] | None:
    """The first secret found in a statement file, with that file: (field, secret, path).

    Kept by the statement files' stamps and the secrets, so a case whose statement and rubric
    did not change is not read again; any change to either looks again.
    """
    key = os.fspath(statement)
    try:
        stamps = tuple(
            (path, stamp_of(os.stat(path))) for path, _ in walk_files(statement, temp_files=True)
        )
    except OSError:  # a dangling link: no stamp to keep the answer by, so look every time
        stamps = ()
    with _cache_lock:
        cached = _leaks.get(key)
    found: _Found
    if stamps and cached is not None and cached[:2] == (stamps, secrets):
        found = cached[2]
    else:
        texts = _statement_texts(statement)
        found = None
        for index, (_, secret) in enumerate(secrets):
            hit = next((f for f, text in texts if _occurs(secret, text)), None)
            if hit is not None:
                found = (index, hit)
                break
        if stamps and settled(s for _, s in stamps):
            with _cache_lock:
                _leaks[key] = (stamps, secrets, found)
    if found is None:
        return None
    name, secret = secrets[found[0]]
    return name, secret, found[1]


__all__ = [
    "BENCHMARK_TOML",
    "BENCHMARK_YAML",
    "DEFAULT_LABEL_PATTERN",
    "DEFAULT_SPLITS",
    "SPLIT_FAMILIES",
    "Benchmark",
    "BenchmarkConfig",
    "Case",
    "Check",
    "Rubric",
    "Stratum",
    "assign_splits",
    "check_benchmark",
    "label_text",
    "load_benchmark",
    "normalise_label",
    "stratum_of",
    "token_regex",
]
