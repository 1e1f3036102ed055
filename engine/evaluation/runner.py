"""The Case × runs (× variant) evaluation matrix.

Every later loop trusts these numbers, so the runner is built to lose nothing and to measure only
the agent: each unit runs in its own sealed directory (engine.evaluation.agents), units run on N
worker
threads in a stable seeded order, and each finished unit is stored at once — its session file
atomically, then its results row appended — so Ctrl-C, a cancel or a crash keeps all finished
work. Running the same evaluation again (same run id, or automatically the newest unfinished run
with the same inputs) fills only the missing and invalid units. A crashed, hung, flooding or
babbling agent yields an *invalid* unit with its reason; it never counts as a failure and never
stops the other units.

Agents vary from run to run, so every evaluation has a seed: drawn fresh unless the caller names
one, recorded in the manifest, and turned into one seed per (case, run) that the agent gets as
``SKILLSMITH_SEED`` and the results row keeps. The same seed reproduces a noisy demo evaluation
exactly; two variants of one evaluation share their unit seeds, so a paired comparison can pair
on them. The seed is not part of the resume key: resuming keeps the run's own seed. A caller that
says what it uses the rows for may get a finished run of the same evaluation and seed instead of
a new one (engine.evaluation.reuse): no run is paid for twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import random
import secrets
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.benchmark import DEFAULT_LABEL_PATTERN, Benchmark, Case, load_benchmark
from engine.core.config import AgentConfig, Config
from engine.core.errors import SkillsmithError, UsageError, check_counts
from engine.core.events import (
    Cancelled,
    CancelToken,
    EventKind,
    Reporter,
    SessionLog,
    null_reporter,
)
from engine.core.fsutil import Stamp, settled, stamp_of, sweep_temp_files, walk_files
from engine.core.outputs import Outputs, collect
from engine.core.runs import (
    OUTPUTS,
    RAW,
    SESSIONS,
    RunFolder,
    UnitKey,
    build_index,
    check_run_id,
    find_resumable,
    latest_of,
    mark_finished,
    mark_unfinished,
    unfinished_runs,
)
from engine.core.scoreboard import (
    PreparedRecord,
    Runtime,
    append_record,
    prepare_record,
    record_from_rows,
)
from engine.core.sessions import start_session
from engine.core.skill_folder import Resources
from engine.core.stamps import new_id, utc_now
from engine.core.workspace import Workspace
from engine.core.yaml_log import is_log_file
from engine.evaluation.agents import (
    HARNESS_NAMES,
    Agent,
    AgentOutcome,
    RoomSpec,
    SkillFiles,
    build_room,
    check_statement,
    compose_prompt,
    make_agent,
    remove_room,
    scratch_root,
    sweep_rooms,
)
from engine.evaluation.agents.project import ProjectTree, project_snapshot
from engine.evaluation.executors import Executor, configured_executor
from engine.evaluation.failfast import FIRST_UNITS, AgentBroken, FirstUnits, preflight
from engine.evaluation.grading import JudgeModel, grade
from engine.evaluation.metrics import Metrics, metrics
from engine.evaluation.reuse import Reuse, allowed, file_run, identity, lookup, reused_line

SKILL, BASELINE = "skill", "baseline"
SEED_BITS = 31


def fresh_seed() -> int:
    """A new evaluation seed (small enough to type back as ``--seed``)."""
    return secrets.randbits(SEED_BITS)


def derived_seed(seed: int, *parts: object) -> int:
    """A seed fixed by ``seed`` and ``parts`` (a session's seed and a round, say): the same
    again whenever it is asked, unrelated to every other part's."""
    digest = hashlib.sha256(":".join(str(p) for p in (seed, *parts)).encode()).digest()
    return int.from_bytes(digest[:4], "big") >> (32 - SEED_BITS)


def unit_seed(seed: int, case_id: str, run_index: int) -> int:
    """The seed of one (case, run) of an evaluation; the same for every variant, so they pair."""
    return derived_seed(seed, case_id, run_index)


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    rows: list[dict[str, Any]]  # the latest row of every unit, in matrix order
    metrics: Metrics  # the skill variant
    baseline_metrics: Metrics | None
    status: str  # finished | incomplete (some units invalid)
    launched: int  # units this call ran to the end (0 when everything was already done)
    seed: int = 0  # the evaluation's seed (``--seed`` reproduces it)
    reused: str | None = None  # what stood in for running it (engine.evaluation.reuse)

    @property
    def headline(self) -> str:
        """The run in one line: the figure a person looks at first."""
        m = self.metrics
        rate = "–" if m.pass_rate is None else f"{m.pass_rate:.0%}"
        f1 = "" if m.f1 is None else f", F1 {m.f1:.2f}"
        return f"run {self.run_id}: pass rate {rate}{f1} ({self.status})"


@dataclass(frozen=True)
class Plan:
    """What one evaluation measures; its ``key`` identifies "the same evaluation" for resuming."""

    bench: Benchmark
    cases: tuple[Case, ...]
    runs: int
    agent: Agent
    variants: dict[str, tuple[SkillFiles, ...]]
    under_test: tuple[str, ...]
    baseline: str | None
    agents_md: str | None
    # hashed once by make_plan (every file of the benchmark is read for it), kept by replace()
    bench_sha256: str
    versions: dict[str, dict[str, str | None]] = field(default_factory=dict)
    seed: int = 0  # the evaluation seed; deliberately not in ``material`` (see the module doc)
    project: ProjectTree | None = None  # the project each room holds (adopted workspaces)
    reuse_id: str | None = None  # filed under it once finished (engine.evaluation.reuse)

    def units(self) -> list[UnitKey]:
        """All units, shuffled by the benchmark seed: the same seed, the same order."""
        units = [
            UnitKey(case.id, run, variant)
            for case in self.cases
            for run in range(self.runs)
            for variant in self.variants
        ]
        random.Random(self.bench.seed).shuffle(units)
        return units

    def material(self) -> dict[str, Any]:
        """Everything that decides the outcome of a unit (timeouts and worker count do not)."""
        return {
            "benchmark": self.bench.id,
            "benchmark_sha256": self.bench_sha256,
            "agent": {k: self.agent.describe()[k] for k in ("kind", "command", "model", "noise")},
            "skills": {
                v: {s.name: _skill_sha(s) for s in files} for v, files in self.variants.items()
            },
            "agents_md_sha256": None if self.agents_md is None else _sha(self.agents_md),
            "runs": self.runs,
            "case_ids": [c.id for c in self.cases],
            "seed": self.bench.seed,
        } | ({} if self.project is None else {"project_sha256": self.project.digest})

    def key(self) -> str:
        return _sha(json.dumps(self.material(), sort_keys=True))

    def answer_protocol(self, case: Case) -> bool:
        """Whether the case's prompt asks for the answer protocol (label line, steps done):
        only a labelled benchmark, a label check or a rubric that says ``answer_protocol``."""
        return (
            bool(self.bench.labels)
            or case.rubric.answer_protocol
            or any(check.kind == "label" for check in case.rubric.checks)
        )

    def prompt(self, case: Case) -> str:
        """PROMPT.md: a free-text case's statement as written, byte for byte; otherwise the
        statement with the answer protocol."""
        statement = _read(case.prompt_path)
        if not self.answer_protocol(case):
            return statement
        return compose_prompt(
            statement, self.bench.labels, self.bench.label_pattern, DEFAULT_LABEL_PATTERN
        )

    def skills_record(self, variant: str) -> list[dict[str, Any]]:
        return [
            {
                "name": s.name,
                "version": self.versions.get(variant, {}).get(s.name),
                "sha256": _sha(s.text),
                "under_test": s.name in self.under_test,
            }
            for s in self.variants[variant]
        ]


@dataclass
class _Done:
    """A finished unit on its way from a worker to the run folder; ``written`` completes once
    its session (and raw files) are on disk, and only then may its row be appended."""

    unit: UnitKey
    row: dict[str, Any]
    written: Future[None]


class _Notes:
    """The evaluation's event log, written in order by a thread of its own.

    Every append is fsynced. On the main thread that sync would hold back storing the next
    finished units and, after the last one, the scoreboard record and final manifest: here it
    overlaps them. :meth:`last` waits for what was handed over (raising what writing it raised)
    and then writes the closing event itself, so the log reads in order and is complete when
    the evaluation returns.
    """

    def __init__(self, log: SessionLog, writer: ThreadPoolExecutor) -> None:
        self._log, self._writer = log, writer
        self._pending: list[Future[object]] = []

    def emit(self, kind: EventKind, **data: Any) -> None:
        self.emit_many([(kind, data)])

    def emit_many(self, events: list[tuple[EventKind, dict[str, Any]]]) -> None:
        self._pending.append(self._writer.submit(self._log.emit_many, events))

    def last(self, kind: EventKind, **data: Any) -> None:
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()
        self._log.emit(kind, **data)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _skill_sha(skill: SkillFiles) -> str:
    """The SKILL.md's hash; with a candidate's own files, of those too (an edit to a reference
    alone is another evaluation), so plain runs keep the keys they always had."""
    if skill.resources is None:
        return _sha(skill.text)
    digest = hashlib.sha256(skill.text.encode("utf-8"))
    for rel, res in sorted(skill.resources.items()):
        digest.update(b"\0" + rel.encode() + b"\0" + f"{res.mode:o}".encode() + b"\0" + res.data)
    return digest.hexdigest()


_fingerprints: dict[str, tuple[tuple[tuple[str, Stamp], ...], str]] = {}
_fingerprints_lock = threading.Lock()


def bench_fingerprint(bench: Benchmark) -> str:
    """A change to any statement or rubric makes old results incomparable; the scoreboard not.

    A loop evaluates one benchmark many times in a process, so the digest is kept by the
    stamps of the files it read (engine.core.fsutil.stamp_of): an unchanged benchmark costs a
    stat per file; any changed, added or removed file hashes every file again.
    """
    log = bench.scoreboard_path.name
    files = [
        (path, rel)
        for path, rel in walk_files(bench.root)
        if "/" in rel or not is_log_file(rel, log)
    ]
    try:
        stamps = tuple((rel, stamp_of(os.stat(path))) for path, rel in files)
    except OSError:
        stamps = ()  # a file went or a link dangles: hash (and fail) as before, keep nothing
    key = os.fspath(bench.root)
    with _fingerprints_lock:
        cached = _fingerprints.get(key)
    if stamps and cached is not None and cached[0] == stamps:
        return cached[1]
    digest = hashlib.sha256()
    for path, rel in files:
        with open(path, "rb") as fh:
            digest.update(rel.encode() + b"\0" + fh.read() + b"\0")
    found = digest.hexdigest()
    if stamps and settled(s for _, s in stamps):
        with _fingerprints_lock:
            _fingerprints[key] = (stamps, found)
    return found


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # exactly as stored (CRLF survives)


# -- planning ----------------------------------------------------------------------------------


def _skill_files(
    ws: Workspace,
    overrides: Mapping[str, str],
    drop: set[str],
    folders: Mapping[str, Resources] | None = None,
) -> list[SkillFiles]:
    files: dict[str, SkillFiles] = {}
    for name in ws.skill_names():
        files[name] = SkillFiles(name, _read(ws.skill_path(name)), ws.skills_dir / name)
    for name, text in overrides.items():
        if folders and name in folders:  # a candidate's folder: parent files with its edits
            files[name] = SkillFiles(name, text, resources=folders[name])
            continue
        folder = _version_folder(ws, name, text) or ws.skills_dir / name
        files[name] = SkillFiles(name, text, folder if folder.is_dir() else None)
    return [files[name] for name in sorted(files) if name not in drop]


def _version_folder(ws: Workspace, name: str, text: str) -> Path | None:
    """An older stored version runs with its own folder's files (references, scripts), not
    the live ones; the current version and unpublished texts use the live folder."""
    label = _version_of(ws, name, text)
    if label is None:
        return None
    from engine.core.store import SkillStore, split_version

    branch, version = split_version(label)
    store = SkillStore(ws, name, branch)
    live = branch is None and version == store.current()
    return None if live else store.resources_dir(version)


def _store_text(ws: Workspace, name: str, version: str) -> str:
    """A stored version's text: ``vK`` on the main line, ``exp1/vK`` on branch exp1."""
    from engine.core.store import SkillStore, split_version

    branch, number = split_version(version)
    return SkillStore(ws, name, branch).read(number)


def _version_of(ws: Workspace, name: str, text: str) -> str | None:
    """The published version whose text this is (None for an unpublished text): the main
    line's first, then a branch's, named ``exp1/v1`` (a branch's v1 is not main's v1)."""
    if not (ws.history_dir / name).is_dir():
        return None
    from engine.core.store import SkillStore, version_label

    main = SkillStore(ws, name)
    wanted = _sha(text)
    for store in (main, *(SkillStore(ws, name, b) for b in main.branches())):
        current = store.current()
        names = [v.version for v in reversed(store.versions())]
        if current in names:
            names.insert(0, names.pop(names.index(current)))
        found = next((v for v in names if _sha(store.read(v)) == wanted), None)
        if found is not None:
            return version_label(store.branch, found)
    return None


def make_plan(
    ws: Workspace,
    bench: Benchmark,
    agent: Agent,
    *,
    runs: int | None,
    skills: Mapping[str, str] | None,
    baseline: str | None,
    case_ids: list[str] | None,
    folders: Mapping[str, Resources] | None = None,
    project: ProjectTree | None = None,
) -> Plan:
    """Resolve the matrix: which cases, how many runs, which skill texts per variant."""
    check_counts(("--runs", runs))
    cases = list(bench.cases)
    if case_ids:
        known = {c.id for c in bench.cases}
        for case_id in case_ids:
            if case_id not in known:
                raise UsageError(f"{bench.source}: benchmark {bench.id!r} has no case {case_id!r}")
        cases = [c for c in bench.cases if c.id in set(case_ids)]
    for case in cases:
        check_statement(case.statement_dir)
    overrides = dict(skills or {})
    under_test = tuple(sorted(overrides)) if overrides else tuple(ws.skill_names())
    variants = {SKILL: tuple(_skill_files(ws, overrides, set(), folders))}
    if baseline == "none":
        variants[BASELINE] = tuple(_skill_files(ws, overrides, set(under_test)))
    elif baseline is not None:
        if not under_test:
            raise UsageError(f"--baseline {baseline}: there is no skill under test")
        old = {name: _store_text(ws, name, baseline) for name in under_test}
        variants[BASELINE] = tuple(_skill_files(ws, {**overrides, **old}, set()))
    versions = {
        variant: {s.name: _version_of(ws, s.name, s.text) for s in files}
        for variant, files in variants.items()
    }
    agents_md = _read(ws.agents_md) if ws.agents_md.is_file() else None
    return Plan(
        bench=bench,
        cases=tuple(cases),
        runs=runs or bench.runs_per_case,
        agent=agent,
        variants=variants,
        under_test=under_test,
        baseline=baseline,
        agents_md=agents_md,
        bench_sha256=bench_fingerprint(bench),
        versions=versions,
        project=project,
    )


# -- one unit (runs on a worker thread) --------------------------------------------------------


def _run_unit(
    plan: Plan,
    unit: UnitKey,
    folder: RunFolder,
    root: Path,
    judge: JudgeModel | None,
    should_stop: Callable[[], bool],
    executor: Executor,
    io: ThreadPoolExecutor,
    opened: Future[None],
) -> _Done | None:
    """Run and grade one unit; None when it was cancelled before it could finish.

    What follows the grading — writing and fsyncing the session, deleting the room — goes to
    ``io``, a pool with a thread per worker: the worker starts its next unit at once, and the
    syncs of units that finish together overlap instead of queueing on one thread. The files
    wait for ``opened`` (the run folder made safe to write into), which the first agents do
    not.
    """
    if should_stop():
        return None
    case = next(c for c in plan.cases if c.id == unit.case_id)
    prompt = plan.prompt(case)
    spec = RoomSpec(
        statement_dir=case.statement_dir,
        prompt=prompt,
        skills=plan.variants[unit.variant],
        skills_subdir=plan.agent.skills_subdir,
        agents_md=plan.agents_md,
        project=None if plan.project is None else plan.project.snapshot,
        agents_md_name=(plan.project and plan.project.agents_md) or "AGENTS.md",
    )
    room = build_room(spec, root)
    try:
        seed = unit_seed(plan.seed, unit.case_id, unit.run_index)
        outcome = executor.run(plan.agent, room, prompt, should_stop, unit.run_index, seed)
        if outcome.cancelled:
            return None
        row = _row(plan, case, unit, folder.run_id, outcome) | {"seed": seed}
        skip = HARNESS_NAMES | {plan.agent.skills_subdir.split("/")[0], spec.agents_md_name}
        secrets = plan.agent.secret_env.values()
        outputs = collect(
            room, case.statement_dir, skip=skip, secrets=secrets, project=spec.project
        )
        row["outputs"] = outputs.record(f"{OUTPUTS}/{unit.stem}")
        if outcome.invalid_reason is None:
            graded = grade(
                plan.bench,
                case,
                outcome.answer,
                llm=judge,
                run_dir=room,
                outputs=outputs,
                session=outcome.session,
            )
            row.update(graded.row_fields())
    finally:
        io.submit(remove_room, room)
    session = outcome.session or [
        {"type": "user", "content": prompt},
        {
            "type": "result",
            "tokens": outcome.tokens,
            "cost_usd": outcome.cost_usd,
            "duration_ms": outcome.duration_ms,
            "is_error": True,
            "invalid_reason": outcome.invalid_reason,
        },
    ]
    written = io.submit(_write_unit_files, folder, unit, row, session, outcome, outputs, opened)
    return _Done(unit, row, written)


def _write_unit_files(
    folder: RunFolder,
    unit: UnitKey,
    row: dict[str, Any],
    session: list[dict[str, Any]],
    outcome: AgentOutcome,
    outputs: Outputs,
    opened: Future[None],
) -> None:
    """The unit's session, raw files and outputs, the files fsynced (their folders are synced
    per batch); the row learns where its raw stream is before anyone reads it (after
    ``written``)."""
    opened.result()  # raises when the run folder could not be made ready: nothing is written
    folder.write_session(unit, session, sync_dir=False)
    folder.keep_outputs(unit, outputs)
    if outcome.raw_stream is not None:
        row["raw_file"] = folder.write_raw(unit, "stream.jsonl", outcome.raw_stream, sync_dir=False)
    if outcome.stderr_tail.strip():
        folder.write_raw(unit, "stderr.txt", outcome.stderr_tail, sync_dir=False)


def _row(
    plan: Plan, case: Case, unit: UnitKey, run_id: str, outcome: AgentOutcome
) -> dict[str, Any]:
    return {
        "case_id": unit.case_id,
        "run_index": unit.run_index,
        "variant": unit.variant,
        "ground_truth": case.rubric.expected,
        "judge_verdict": None,
        "pass_fail": "invalid",
        "failure_kind": None,
        "score": 0.0,
        "checks": [],
        "tokens": outcome.tokens,
        "cost_usd": outcome.cost_usd,
        "duration_ms": outcome.duration_ms,
        "session_id": f"{run_id}/{unit.stem}",
        "session_file": unit.session_file,
        "answer_protocol": plan.answer_protocol(case),
        "invalid_reason": outcome.invalid_reason,
        "split": case.split or None,
        "case_type": case.rubric.type,
        "critical": case.rubric.critical,
        "exit_code": outcome.exit_code,
        "agent_session_id": outcome.agent_session_id,
        "finished_at": utc_now(),
    }


def _judge(ws: Workspace, cfg: Config, plan: Plan) -> JudgeModel | None:
    """A judge only when a rubric asks for one: the strict-protocol judge of the configured
    provider (engine.evaluation.judge), so every judge reply is validated before a score is
    read."""
    wants = any(check.kind == "llm_judge" for c in plan.cases for check in c.rubric.checks)
    if not wants:
        return None
    from engine.evaluation.judge import make_judge

    return make_judge(ws, cfg.models.judge)


# -- the evaluation ----------------------------------------------------------------------------


def run_evaluation(
    ws: Workspace,
    bench_id: str,
    *,
    runs: int | None = None,
    jobs: int | None = None,
    skills: dict[str, str] | None = None,
    baseline: str | None = None,
    case_ids: list[str] | None = None,
    run_id: str | None = None,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
    judge: JudgeModel | None = None,
    scoreboard: bool = True,
    seed: int | None = None,
    executor: Executor | None = None,
    folders: Mapping[str, Resources] | None = None,
    agent_config: AgentConfig | None = None,
    reuse: Reuse | None = None,
) -> RunResult:
    """Evaluate the skills on benchmark ``bench_id``; resume instead of redoing finished units.

    ``skills`` maps a skill name to a SKILL.md text under test (default: the workspace's active
    skills); ``baseline`` adds a variant without them (``"none"``) or at another version
    (``"vK"``). An existing ``run_id`` is resumed with its own inputs; without one, the newest
    unfinished run with identical inputs is resumed, else a new run starts. Raises ``Cancelled``
    (or lets ``KeyboardInterrupt`` through) after recording what finished.

    ``judge`` grades llm_judge checks instead of the configured judge; ``scoreboard=False``
    leaves the scoreboard record to the caller (a Builder or Optimizer session writes its own).
    ``seed`` fixes the evaluation's seed (default: a fresh one, or the resumed run's own).
    ``executor`` runs the agents (default: the command line's ``--executor``, else the one
    ``executor:`` in skillsmith.yaml names). ``folders`` gives a skill under test its own files
    beside SKILL.md (a candidate whose patch edits a reference) instead of its live folder's;
    they are kept in the run's ``inputs/`` with the text. ``agent_config`` runs another agent
    than skillsmith.yaml's (``eval --agents``). ``reuse``: a finished run of the same
    evaluation (and seed) may stand in for a new one, and this one is filed for later reuse
    (engine.evaluation.reuse); ``RunResult.reused`` says when it did.
    """
    if cancel is not None:
        cancel.check()
    if baseline is not None and baseline != "none":
        from engine.core.store import split_version, version_number

        version_number(split_version(baseline)[1])
    cfg = ws.load_config()
    bench = load_benchmark(ws.benchmarks_dir / bench_id)
    if agent_config is not None:  # eval --agents: this evaluation's agent, everywhere below
        cfg = dataclasses.replace(cfg, agent=agent_config)
    agent_config = cfg.agent
    agent = make_agent(ws, agent_config)
    folder: RunFolder | None = None
    if run_id is not None:
        folder = RunFolder(ws.runs_dir / check_run_id(run_id))
        if folder.exists():
            manifest = folder.read_manifest()
            if manifest.get("benchmark") != bench.id:
                raise SkillsmithError(
                    f"{folder.manifest_path}: run {run_id} evaluated benchmark "
                    f"{manifest.get('benchmark')!r}, not {bench.id!r}"
                )
            runs = runs or manifest.get("runs")
            case_ids = case_ids or manifest.get("case_ids")
            baseline = baseline or (manifest.get("baseline") or {}).get("spec")
            skills = skills or folder.load_inputs(SKILL) or None
            folders = folders or folder.load_input_folders(SKILL) or None
    root = scratch_root(ws.root)
    with project_snapshot(ws, agent_config.project, root, agent.skills_subdir) as project:
        plan = make_plan(
            ws,
            bench,
            agent,
            runs=runs,
            skills=skills,
            baseline=baseline,
            case_ids=case_ids,
            folders=folders,
            project=project,
        )
        return _run_plan(
            ws, cfg, plan, folder, seed, jobs, judge, reporter, cancel, scoreboard, executor, reuse
        )


def _run_plan(
    ws: Workspace,
    cfg: Config,
    plan: Plan,
    folder: RunFolder | None,
    seed: int | None,
    jobs: int | None,
    judge: JudgeModel | None,
    reporter: Reporter,
    cancel: CancelToken | None,
    scoreboard: bool,
    executor: Executor | None,
    reuse: Reuse | None,
) -> RunResult:
    """Find or name the run folder of ``plan`` (or a recorded run that stands in for it), check
    the agent can run, and evaluate."""
    agent = plan.agent
    if folder is not None and folder.exists():
        _refuse_other_inputs(folder, plan)
    if reuse is not None and seed is not None and (folder is None or not folder.exists()):
        recorded = _reused(ws, cfg, dataclasses.replace(plan, seed=seed), judge, reuse)
        if recorded is not None:
            return recorded
    if folder is None:
        found = find_resumable(ws.runs_dir, plan.key())
        if found is not None and seed in (None, _seed_of(found)):
            folder = found
        else:
            folder = RunFolder(ws.runs_dir / new_id("run"))
    if folder.exists():
        had = _seed_of(folder)
        if seed is not None and seed != had:
            raise SkillsmithError(
                f"{folder.manifest_path}: run {folder.run_id} was made with seed {had}, "
                f"not {seed}; run without --resume to start a new evaluation"
            )
        seed = had
    plan = dataclasses.replace(plan, seed=fresh_seed() if seed is None else seed)
    if reuse is not None:
        plan = dataclasses.replace(plan, reuse_id=_reuse_id(cfg, plan, judge, reuse))
    judge = judge if judge is not None else _judge(ws, cfg, plan)
    preflight(agent)  # an unreachable model is refused before any run folder exists
    executor = executor if executor is not None else configured_executor(cfg)
    with folder.claim():
        return _evaluate(ws, cfg, plan, folder, jobs, judge, reporter, cancel, scoreboard, executor)


def _preflight_line(plan: Plan) -> str | None:
    """The credential the agent was given (by name, never its value) and the project its room
    holds, as the units start; None when it got neither."""
    parts = (
        []
        if plan.agent.credential is None
        else [f"agent {plan.agent.kind}: {plan.agent.credential}"]
    )
    if plan.project is not None:
        parts.append(plan.project.line())
    return "; ".join(parts) or None


def _reuse_id(cfg: Config, plan: Plan, judge: JudgeModel | None, reuse: Reuse) -> str | None:
    """The plan's reuse identity; None when a rubric asks for a judge the caller brought (its
    grading cannot be told apart from another's)."""
    wants = any(check.kind == "llm_judge" for c in plan.cases for check in c.rubric.checks)
    if wants and judge is not None:
        return None
    grading = {"provider": cfg.models.judge.provider, "model": cfg.models.judge.model}
    return identity(plan.key(), plan.seed, plan.agent, grading if wants else None, reuse.purpose)


def _reused(
    ws: Workspace, cfg: Config, plan: Plan, judge: JudgeModel | None, reuse: Reuse
) -> RunResult | None:
    """The recorded finished run of this very evaluation, read (never written), if one may
    stand in for it and still holds a valid row for every unit."""
    ident = _reuse_id(cfg, plan, judge, reuse)
    folder = None if ident is None or not allowed(cfg, reuse) else lookup(ws.runs_dir, ident)
    if folder is None:
        return None
    units = plan.units()
    try:
        tally = _tally(plan, folder.run_id, units, folder.rows(), record=False)
    except SkillsmithError:  # a row edited since: run it again
        return None
    if tally.status != "finished" or len(tally.rows) != len(units):
        return None
    line = reused_line(folder.run_id, plan.skills_record(SKILL), len(units), plan.seed)
    return tally.result(folder, plan.seed, launched=0, reused=line)


def _seed_of(folder: RunFolder) -> int:
    value = folder.read_manifest().get("seed")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _refuse_other_inputs(folder: RunFolder, plan: Plan) -> None:
    manifest = folder.read_manifest()
    if manifest.get("key") == plan.key():
        return
    before: dict[str, Any] = manifest.get("inputs") or {}
    changed = [k for k, v in plan.material().items() if before.get(k) != v] or ["inputs"]
    raise SkillsmithError(
        f"{folder.manifest_path}: run {folder.run_id} was made with different "
        f"{', '.join(changed)}; run without --resume to start a new evaluation"
    )


def _evaluate(
    ws: Workspace,
    cfg: Config,
    plan: Plan,
    folder: RunFolder,
    jobs: int | None,
    judge: JudgeModel | None,
    reporter: Reporter,
    cancel: CancelToken | None,
    scoreboard: bool,
    executor: Executor,
) -> RunResult:
    units = plan.units()
    resumed = folder.exists()
    manifest = _manifest(plan, folder, jobs or cfg.limits.workers or os.cpu_count() or 1)
    manifest["executor"] = executor.describe()  # where the agents of this (re)start ran
    if plan.project is not None:
        manifest["project"] = plan.project.describe()
    # the rows on disk in file order, kept in step with every append (the run is claimed: only
    # this call writes it), so finishing reads none of them back
    stored: list[dict[str, Any]] = []
    # resolved once the run is named in the index of unfinished runs: no unit file is written
    # into its folder before that (see _prepare)
    opened: Future[None] = Future()
    if resumed:  # which units are left is known only from its rows
        stored = _prepare(ws, plan, folder, manifest)
        opened.set_result(None)
    latest = latest_of(stored)
    todo = [u for u in units if latest.get(u, {}).get("pass_fail") in (None, "invalid")]
    workers = max(1, min(manifest["jobs"], len(todo) or 1))
    log = start_session(ws, "eval", forward=reporter, session_id=folder.run_id)
    stop = threading.Event()

    def should_stop() -> bool:
        return stop.is_set() or (cancel is not None and cancel.cancelled)

    root = scratch_root(ws.root)
    done = len(units) - len(todo)
    launched = 0
    first_units = FirstUnits(plan.agent, min(FIRST_UNITS, len(todo)))
    record = scoreboard and not manifest.get("scoreboard_recorded")
    tally: Future[_Tally] | None = None
    # a new run is prepared while its first agents start, under the workspace lock taken
    # before them: no agent runs for a run that then cannot be opened
    held = contextlib.ExitStack()
    # the event log has a writer of its own (see _Notes); it is drained before returning
    with held, ThreadPoolExecutor(max_workers=1, thread_name_prefix="eval-log") as writer:
        if not opened.done():
            held.enter_context(ws.lock(f"eval {plan.bench.id}"))
        notes = _Notes(log, writer)
        try:
            # the io pool outlives the workers: every room is gone when the evaluation returns
            with (
                ThreadPoolExecutor(max_workers=workers, thread_name_prefix="unit-io") as io,
                ThreadPoolExecutor(max_workers=workers, thread_name_prefix="unit") as pool,
            ):
                futures: list[Future[_Done | None]] = []
                try:
                    for unit in todo:
                        futures.append(
                            pool.submit(
                                _run_unit,
                                plan,
                                unit,
                                folder,
                                root,
                                judge,
                                should_stop,
                                executor,
                                io,
                                opened,
                            )
                        )
                    # a new run has no rows: its first agents start while it is prepared, and
                    # no row is appended before its inputs and manifest are on disk
                    if not opened.done():
                        stored = _prepare(ws, plan, folder, manifest)
                        opened.set_result(None)
                    _open_run(ws, plan, folder, manifest, resumed)
                    held.close()
                    notes.emit(
                        "started",
                        run_id=folder.run_id,
                        benchmark=plan.bench.id,
                        total=len(units),
                        todo=len(todo),
                        resumed=resumed,
                        jobs=workers,
                        seed=plan.seed,
                    )
                    said = _preflight_line(plan)
                    if said is not None:
                        notes.emit("message", stage="pre-flight", text=said)
                    order = {future: index for index, future in enumerate(futures)}
                    pending: set[Future[_Done | None]] = set(futures)
                    while pending:
                        ready, pending = wait(pending, return_when=FIRST_COMPLETED)
                        batch, error = _collect(sorted(ready, key=order.__getitem__))
                        rows = [finished.row for finished in batch]
                        if not pending and error is None:  # scored while the last rows sync
                            final = [*stored, *rows]
                            tally = io.submit(_tally, plan, folder.run_id, units, final, record)
                        _store_batch(folder, rows)
                        stored += rows
                        events: list[tuple[EventKind, dict[str, Any]]] = []
                        for finished in batch:
                            done += 1
                            events.append(("case_finished", _summary(finished.row)))
                            events.append(("progress", {"done": done, "total": len(units)}))
                        notes.emit_many(events)
                        launched += len(batch)
                        if error is not None:
                            raise error
                        for finished in batch:
                            fault = first_units.observe(
                                finished.unit.case_id, finished.row["invalid_reason"]
                            )
                            if fault is not None:
                                raise AgentBroken(fault)
                except BaseException as exc:
                    stop.set()
                    for future in futures:
                        future.cancel()
                    if not opened.done():  # unit files waiting for it are never written
                        opened.set_exception(exc)
                    raise
            if cancel is not None and cancel.cancelled:
                raise Cancelled()
        except BaseException as exc:
            if not opened.done() or opened.exception() is not None:
                raise  # the run was never made ready to write into: nothing of it is written
            # every finished unit is on disk already; the status says why the rest is missing
            status = "interrupted" if isinstance(exc, (Cancelled, KeyboardInterrupt)) else "failed"
            if isinstance(exc, AgentBroken):
                manifest["error"] = str(exc)
            _finish(ws, folder, manifest, units, status)
            notes.last("finished", run_id=folder.run_id, status=status, counts=manifest["counts"])
            raise
        if tally is None:  # nothing was left to run
            scored = _tally(plan, folder.run_id, units, stored, record)
        else:
            scored = tally.result()
        return _complete(ws, plan, folder, manifest, units, notes, launched, stored, scored)


def _prepare(
    ws: Workspace, plan: Plan, folder: RunFolder, manifest: dict[str, Any]
) -> list[dict[str, Any]]:
    """Make the run folder safe to write into and return its rows (in file order).

    Under the workspace lock: what killed commands left is swept, the run is named in the index
    of unfinished runs before the first write into its folder, a torn last row is dropped, and
    a malformed row refuses the run before anything is written. A resumed run keeps its start,
    its earlier restarts and whether its scoreboard record was written.
    """
    with ws.lock(f"eval {plan.bench.id}"):
        _sweep_leftovers(ws, plan.bench, folder)
        mark_unfinished(folder)
        folder.repair_torn_tail()
        rows = folder.rows()
        if folder.exists():
            old = folder.read_manifest()
            manifest["started_at"] = old.get("started_at", manifest["started_at"])
            manifest["resumed_at"] = [*old.get("resumed_at", []), utc_now()]
            manifest["scoreboard_recorded"] = bool(old.get("scoreboard_recorded"))
    return rows


def _open_run(
    ws: Workspace, plan: Plan, folder: RunFolder, manifest: dict[str, Any], resumed: bool
) -> None:
    """The run's inputs (a new run) and its manifest, which every later row relies on."""
    with ws.lock(f"eval {plan.bench.id}"):
        if not resumed:
            for name in plan.under_test:
                skill = next(s for s in plan.variants[SKILL] if s.name == name)
                folder.save_input(SKILL, name, skill.text, skill.resources)
        folder.write_manifest(manifest)


def _sweep_leftovers(ws: Workspace, bench: Benchmark, folder: RunFolder) -> None:
    """What killed commands left behind: temp files of interrupted writes (the scoreboard, run
    manifests, sessions) and unit folders in the scratch root. Only abandoned ones go: a
    writer still at work holds a lock on its file (engine.core.fsutil.stale_hold).

    Only the runner writes into a run folder, and only while the run is in the index of
    unfinished runs (engine.core.runs.mark_unfinished), so the folders of the runs the index
    names are all that can hold such files: the sweep costs the same at any length of history.
    """
    sweep_rooms(scratch_root(ws.root))
    build_index(ws.runs_dir)
    folders = [bench.root, ws.runs_dir, folder.path, folder.path / SESSIONS, folder.path / RAW]
    for run in unfinished_runs(ws.runs_dir):
        if run.path == folder.path:
            continue
        folders += [run.path, run.path / SESSIONS, run.path / RAW]
        if not run.path.is_dir() or (not run.busy() and run.finished()):
            mark_finished(run)  # a marker a crash left after the final manifest, or a run gone
    for path in folders:
        sweep_temp_files(path)


def _collect(ready: list[Future[_Done | None]]) -> tuple[list[_Done], BaseException | None]:
    """The units that finished together with their files on disk, and the first error among
    them (raised after the others are stored, so no finished unit is lost to a sibling's
    failure)."""
    batch: list[_Done] = []
    error: BaseException | None = None
    for future in ready:
        try:
            finished = future.result()
            if finished is not None:
                finished.written.result()
        except BaseException as exc:  # re-raised by the caller once the batch is stored
            error = error or exc
            continue
        if finished is not None:
            batch.append(finished)
    return batch, error


def _store_batch(folder: RunFolder, rows: list[dict[str, Any]]) -> None:
    """The rows of units whose files are on disk: a row never points at a missing session.

    Units that finished together share the syncs — the session folders once, the rows with one
    append — so a batch is as durable as storing them one by one.
    """
    if not rows:
        return
    folder.sync_unit_dirs()
    folder.append_rows(rows)


def _summary(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("case_id", "run_index", "variant", "pass_fail", "score", "judge_verdict")
    return {k: row[k] for k in keys} | {
        "invalid_reason": row["invalid_reason"],
        "duration_ms": row["duration_ms"],
        "tokens": row.get("tokens"),  # what a session's budget meter counts
        "cost_usd": row.get("cost_usd"),
    }


def _manifest(plan: Plan, folder: RunFolder, jobs: int) -> dict[str, Any]:
    baseline = None
    if plan.baseline is not None:
        baseline = {"spec": plan.baseline, "skills": plan.skills_record(BASELINE)}
    return {
        "run_id": folder.run_id,
        "benchmark": plan.bench.id,
        "agent": plan.agent.describe(),
        "skills": plan.skills_record(SKILL),
        "baseline": baseline,
        "seed": plan.seed,
        "order_seed": plan.bench.seed,
        "runs": plan.runs,
        "case_ids": [c.id for c in plan.cases],
        "units_total": len(plan.cases) * plan.runs * len(plan.variants),
        "jobs": jobs,
        "key": plan.key(),
        "reuse": plan.reuse_id,
        "inputs": plan.material(),
        "started_at": utc_now(),
        "finished_at": None,
        "status": "running",
        "counts": {},
    }


def _counts(rows: dict[UnitKey, dict[str, Any]], units: list[UnitKey]) -> dict[str, int]:
    counts = {"pass": 0, "fail": 0, "invalid": 0, "missing": 0}
    for unit in units:
        counts[rows[unit]["pass_fail"] if unit in rows else "missing"] += 1
    return counts


def _finish(
    ws: Workspace,
    folder: RunFolder,
    manifest: dict[str, Any],
    units: list[UnitKey],
    status: str,
    stored: list[dict[str, Any]] | None = None,
    first: Callable[[], None] | None = None,
) -> None:
    """Record the final status and counts, and keep only the latest row per unit.

    ``stored`` is every row on disk in file order (None: read them). ``first`` (the scoreboard
    record) must be on disk before the manifest: it runs while the manifest's bytes are synced
    under a temp name, and only its return puts them in place — when it raises, the manifest on
    disk stays as it was.
    """
    stored = folder.rows() if stored is None else stored
    latest = latest_of(stored)
    manifest.update(status=status, finished_at=utc_now(), counts=_counts(latest, units))
    if first is None:
        staged = folder.stage_manifest(manifest)
    else:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="eval-manifest") as side:
            pending = side.submit(folder.stage_manifest, manifest)
            try:
                first()
            except BaseException:
                with contextlib.suppress(Exception):
                    pending.result().abort()
                raise
            staged = pending.result()
    with ws.lock(f"eval {manifest['benchmark']}"):
        staged.commit()
        folder.compact(sorted(units), stored)
        if status == "finished":
            mark_finished(folder)  # nothing more to resume, nothing more it writes


@dataclass
class _Tally:
    """A finished run's figures, from the latest row of each unit, and its scoreboard records
    ready to append (None: this call does not record the run)."""

    status: str
    rows: list[dict[str, Any]]  # in matrix order
    metrics: Metrics  # the skill variant
    baseline_metrics: Metrics | None
    records: list[PreparedRecord] | None

    def result(
        self, folder: RunFolder, seed: int, *, launched: int, reused: str | None = None
    ) -> RunResult:
        """What the caller gets, alike for a run just finished and a recorded one reused."""
        return RunResult(
            run_id=folder.run_id,
            run_dir=folder.path,
            rows=self.rows,
            metrics=self.metrics,
            baseline_metrics=self.baseline_metrics,
            status=self.status,
            launched=launched,
            seed=seed,
            reused=reused,
        )


def _tally(
    plan: Plan, run_id: str, units: list[UnitKey], stored: list[dict[str, Any]], record: bool
) -> _Tally:
    """Score the run from ``stored`` (its rows in file order); with ``record``, prepare one
    scoreboard record per variant with valid units (an all-invalid run scores nothing)."""
    latest = latest_of(stored)
    status = "finished" if _counts(latest, units)["invalid"] == 0 else "incomplete"
    rows = [latest[u] for u in sorted(units) if u in latest]
    by_variant = {v: [r for r in rows if r["variant"] == v] for v in plan.variants}
    figures = {v: metrics(r, plan.bench.positive_label) for v, r in by_variant.items()}
    records = _scores(plan, run_id, by_variant, figures) if record else None
    return _Tally(status, rows, figures[SKILL], figures.get(BASELINE), records)


def _complete(
    ws: Workspace,
    plan: Plan,
    folder: RunFolder,
    manifest: dict[str, Any],
    units: list[UnitKey],
    notes: _Notes,
    launched: int,
    stored: list[dict[str, Any]],
    tally: _Tally,
) -> RunResult:
    """Record the scored run (``stored``: its rows on disk, in file order), then write its
    final manifest once.

    The scoreboard record goes first: a crash before the manifest leaves the run unfinished,
    so the next resume records it (a manifest saying "finished" would hide it from resuming).
    """
    record: Callable[[], None] | None = None
    if tally.records is not None:
        manifest["scoreboard_recorded"] = True
        record = functools.partial(_append_records, plan.bench.root, tally.records)
    _finish(ws, folder, manifest, units, tally.status, stored, record)
    if tally.status == "finished" and plan.reuse_id is not None:
        file_run(folder, plan.reuse_id)
    result = tally.result(folder, plan.seed, launched=launched)
    notes.last(
        "finished",
        run_id=folder.run_id,
        status=tally.status,
        counts=manifest["counts"],
        pass_rate=tally.metrics.pass_rate,
        f1=tally.metrics.f1,
        headline=result.headline,
    )
    return result


def agent_runtime(agent: Agent) -> Runtime:
    """PenguinHarness' (provider, model) pair for the agent that produced the scores."""
    if agent.kind == "claude-code":
        return Runtime("anthropic", agent.model or "claude-code default")
    if agent.kind == "codex":
        return Runtime("openai", agent.model or "codex default")
    if agent.kind == "demo":
        return Runtime("skillsmith", agent.model or "demo-agent")
    return Runtime("command", agent.model or Path(agent.command[0]).name)


def _scores(
    plan: Plan,
    run_id: str,
    by_variant: dict[str, list[dict[str, Any]]],
    figures: dict[str, Metrics],
) -> list[PreparedRecord]:
    """The run's scoreboard records, one per variant with valid units, validated and dumped."""
    records = []
    for variant, variant_rows in by_variant.items():
        measured = figures[variant]
        if not measured.valid:
            continue
        skills = {
            s["name"]: s["version"] or f"sha256:{s['sha256'][:12]}"
            for s in plan.skills_record(variant)
        }
        shown = ", ".join(f"{k}@{v}" for k, v in skills.items()) or "no skills"
        title = f"{plan.bench.id} [{variant}] pass {measured.pass_rate:.0%}"
        summary = (
            f"run {run_id}: {measured.valid}/{measured.units} valid units, pass rate "
            f"{measured.pass_rate:.2f}"
            + (f", F1 {measured.f1:.2f}" if measured.f1 is not None else "")
            + f"; {shown}"
        )
        record = record_from_rows(
            variant_rows,
            runtime=agent_runtime(plan.agent),
            summary_title=title,
            summary=summary,
            run_id=run_id,
            variant=variant,
            skills=skills,
        )
        records.append(prepare_record(plan.bench.root, record))
    return records


def _append_records(bench_root: Path, records: list[PreparedRecord]) -> None:
    for record in records:
        append_record(bench_root, record)
