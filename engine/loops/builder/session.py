"""The Builder session: draft → check → pilot iterations → freeze → Formal Baseline → cleanup.

PenguinHarness' benchmark-design, in order:

1. **Draft** the cases (the model writes them, or imports them from a pool) and, for a new
   benchmark, its fixed private decision standard.
2. Before each pilot, **check** every new or changed case (engine.loops.builder.checks) and record
the
   **predictions** of what the current strategy, the desired behaviour and a shortcut will score;
   a case where the shortcut scores like the desired behaviour is flagged.
3. Each **pilot** runs every case exactly once (the Builder's runs are fixed at 1). Units that
   could not run are repaired by rerunning only them; a pilot still incomplete is not valid and
   does not count. The prediction error is recorded per case.
4. A valid pilot at or below the **target score** freezes early; otherwise, after the configured
   number of valid pilots, the **lowest** valid pilot is frozen. Between pilots the model
   **calibrates** (engine.loops.builder.calibrate). Only the lowest valid version so far is kept,
   in the
   session's scratch folder, with a pointer to its complete results.
5. **Freeze**: the chosen version is put back, every case is checked once more, and that pilot's
   single run is recorded as the **Formal Baseline** — not rerun, not topped up with more runs.
6. The scratch copies and calibration scaffolding are removed. A Formal score above the target
   does not void the benchmark.

Everything the session decides is an event in its log (``sessions/<id>.jsonl``).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.core.benchmark import BENCHMARK_TOML, BENCHMARK_YAML, Benchmark, load_benchmark
from engine.core.errors import SkillsmithError, UsageError, check_counts
from engine.core.events import CancelToken, Reporter, SessionLog, null_reporter
from engine.core.fsutil import atomic_write_bytes, atomic_write_json, atomic_write_text
from engine.core.runs import RunFolder
from engine.core.scoreboard import (
    SCOREBOARD_NAME,
    append_record,
    count_records,
    record_from_rows,
)
from engine.core.sessions import ends_logged, hold, is_held, start_session, verify_record
from engine.core.standard import STANDARD_FILE, Standard, load_standard, write_standard
from engine.core.workspace import Workspace
from engine.core.yaml_log import is_log_file
from engine.evaluation.agents import make_agent
from engine.evaluation.judge import ProtocolJudge, session_judge
from engine.evaluation.llm import LLM, make_llm
from engine.evaluation.protocol import ask, data_message
from engine.evaluation.runner import (
    RunResult,
    agent_runtime,
    bench_fingerprint,
    derived_seed,
    run_evaluation,
)
from engine.loops.builder.baseline import (
    FORMAL_BASELINE,
    figures,
    has_formal_baseline,
    skills_of_run,
)
from engine.loops.builder.calibrate import (
    CALIBRATE_SYSTEM,
    CaseRevision,
    apply_changes,
    calibration_messages,
    parse_calibration,
)
from engine.loops.builder.cases import (
    DRAFT_SYSTEM,
    Pool,
    copy_tree,
    open_pool,
    parse_draft,
    remove_case,
    replace_dir,
    write_case,
)
from engine.loops.builder.checks import check_cases
from engine.loops.builder.offline import builder_offline
from engine.loops.builder.pilot import (
    PREDICT_SYSTEM,
    Prediction,
    observe,
    parse_predictions,
    prediction_errors,
    prediction_messages,
    type_means,
)

MAX_REPAIRS = 2  # reruns of a pilot's failed units before the pilot is judged invalid
_BENCH_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_STAGING = re.compile(r"^\..+\.(new|old)-[0-9a-f]{6}$")
SCRATCH_STATE = "build.json"


@dataclass
class Pilot:
    iteration: int
    run_id: str
    valid: bool
    score: float | None  # 0–100, the scoreboard's evaluation average
    predicted: float  # mean predicted score of the current strategy
    mean_abs_error: float | None
    flagged: list[str]
    repairs: int
    changes: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class BuildResult:
    session_id: str
    bench_id: str
    pilots: list[Pilot]
    frozen_iteration: int
    reason: str
    baseline_score: float
    baseline_run_id: str
    record_index: int
    flagged: list[str]

    @property
    def headline(self) -> str:
        """The build in one line: the frozen benchmark and its Formal Baseline."""
        return (
            f"{self.bench_id} frozen at pilot {self.frozen_iteration}: Formal Baseline "
            f"{self.baseline_score:.2f} (run {self.baseline_run_id})"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BuildOptions:
    """The settings of one Builder session (``model`` / ``judge`` replace the configured ones)."""

    bench: str
    goal: str | None = None
    source: str | None = None  # a benchmark id or folder whose cases are the import pool
    pick: tuple[str, ...] = ()
    cases: int = 8
    pilot_iterations: int = 3
    target_score: float | None = None
    jobs: int | None = None
    model: LLM | None = None
    judge: ProtocolJudge | None = None


# -- helpers -----------------------------------------------------------------------------------


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _staging_leftovers(bench_root: Path) -> list[Path]:
    if not bench_root.is_dir():
        return []
    return [p for p in bench_root.iterdir() if _STAGING.match(p.name)]


def _clean_leftovers(ws: Workspace, bench_id: str, session_id: str) -> None:
    """Remove what crashed builds of this benchmark left: staging folders and scratch."""
    for path in _staging_leftovers(ws.benchmarks_dir / bench_id):
        shutil.rmtree(path, ignore_errors=True)
    if not ws.experiments_dir.is_dir():
        return
    for folder in ws.experiments_dir.iterdir():
        state = folder / SCRATCH_STATE
        if folder.name == session_id or not state.is_file():
            continue
        try:
            owner = json.loads(state.read_text(encoding="utf-8")).get("benchmark")
        except (OSError, json.JSONDecodeError):
            continue
        if owner == bench_id:
            if is_held(folder):
                raise SkillsmithError(f"{folder}: another Builder session is building {bench_id}")
            shutil.rmtree(folder, ignore_errors=True)


def _pool_description(pool: Pool | None) -> str:
    """A benchmark drawn from a pool says so in its own words: the pool's description counts the
    pool's files ("80 files …"), which the smaller benchmark does not hold. No count of its own
    either: calibration adds and drops cases after this is written."""
    if pool is None:
        return ""
    first = re.split(r"(?<=[.?!])\s", pool.bench.description.strip(), maxsplit=1)[0]
    return f"{first} Cases drawn by the Builder from the {pool.bench.id} benchmark."


def _write_config(bench_root: Path, description: str, pool: Pool | None, labels: list[str]) -> None:
    config: dict[str, Any] = {
        "id": bench_root.name,
        "description": description,
        "labels": labels,
        "runs_per_case": 1,  # PenguinHarness: the Builder's runs are fixed at 1
        "seed": pool.bench.seed if pool else 7,
    }
    if pool is not None:
        config["label_pattern"] = pool.bench.label_pattern
        config["pass_threshold"] = pool.bench.pass_threshold
        config["splits"] = dict(pool.bench.splits)
    body = yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
    atomic_write_text(bench_root / BENCHMARK_YAML, body)


def _evaluation_score(rows: Sequence[dict[str, Any]]) -> float | None:
    """The evaluation score the scoreboard would record (None when no unit is valid)."""
    valid = [r for r in rows if r.get("pass_fail") != "invalid"]
    return figures(valid).score if valid else None


# -- the session -------------------------------------------------------------------------------


class _Build:
    def __init__(
        self,
        ws: Workspace,
        bench_id: str,
        log: SessionLog,
        model: LLM,
        judge: ProtocolJudge,
        pool: Pool | None,
        jobs: int | None,
        reporter: Reporter,
        cancel: CancelToken | None,
    ) -> None:
        self.ws = ws
        self.bench_id = bench_id
        self.root = ws.benchmarks_dir / bench_id
        self.log = log
        self.model = model
        self.judge = judge
        self.pool = pool
        self.jobs = jobs
        self.reporter = reporter
        self.cancel = cancel
        self.scratch = ws.experiments_dir / log.session_id
        self.by_type: dict[str, float] = {}

    # -- draft -----------------------------------------------------------------------------------
    def draft(self, goal: str | None, want: int) -> None:
        has_config = (self.root / BENCHMARK_YAML).is_file() or (
            self.root / BENCHMARK_TOML
        ).is_file()
        existing = (
            [c.id for c in load_benchmark(self.root, check=False).cases]
            if has_config and any((p / "statement").is_dir() for p in self.root.iterdir())
            else []
        )
        has_standard = (self.root / STANDARD_FILE).is_file()
        if existing and has_standard:
            self.log.emit("message", stage="draft", kept=existing, drafted=[])
            return
        labels = (
            load_benchmark(self.root, check=False).labels
            if existing
            else (list(self.pool.bench.labels) if self.pool else [])
        )
        description = goal
        goal = goal or (self.pool.bench.description if self.pool else "")
        if not goal.strip():
            raise UsageError(f"build {self.bench_id}: --goal is required to draft a benchmark")
        count = 0 if existing else want
        data = {
            "goal": goal,
            "labels": labels,
            "positive": labels[0] if labels else None,
            "want": count,
            "has_standard": has_standard,
            "taken": existing,
            "pool": self.pool.describe() if self.pool else [],
        }
        exchange = ask(
            self.model,
            DRAFT_SYSTEM,
            [data_message(f"Draft the benchmark {self.bench_id}.", data)],
            lambda text: parse_draft(
                text,
                want=count,
                pool=self.pool,
                labels=labels,
                has_standard=has_standard,
                taken=existing,
            ),
        )
        draft = exchange.value
        with self.ws.lock(f"build {self.bench_id}"):
            if not has_config:
                description = description or _pool_description(self.pool)
                _write_config(self.root, description, self.pool, labels or draft.labels or [])
            if draft.standard:
                write_standard(self.root, Standard(goal, tuple(draft.standard)))
            for spec in draft.cases:
                write_case(self.root, spec, self.pool)
        self.log.emit(
            "message",
            stage="draft",
            kept=existing,
            drafted=[spec.summary() for spec in draft.cases],
            standard=[r.id for r in draft.standard or []],
            requests=exchange.requests,
        )

    # -- one pilot -------------------------------------------------------------------------------
    def check(
        self, changed: list[str] | None, standard: Standard | None, fixed: str | None
    ) -> Benchmark:
        path = self.root / STANDARD_FILE
        if fixed is not None and (not path.is_file() or _sha(path) != fixed):
            raise SkillsmithError(
                f"{path}: the private standard changed during the build; it is fixed"
            )
        bench = load_benchmark(self.root, check=False)
        problems = check_cases(bench, standard, changed)
        if problems:
            raise problems[0]
        checked = changed if changed is not None else [c.id for c in bench.cases]
        self.log.emit("message", stage="check", cases=checked, problems=0)
        return bench

    def predict(
        self, bench: Benchmark, standard: Standard | None, observed: dict[str, Any], iteration: int
    ) -> list[Prediction]:
        ids = [c.id for c in bench.cases]
        exchange = ask(
            self.model,
            PREDICT_SYSTEM,
            prediction_messages(bench, standard, observed, self.by_type),
            lambda text: parse_predictions(text, ids),
        )
        predictions: list[Prediction] = exchange.value
        for prediction in predictions:
            self.log.emit(
                "message", stage="prediction", iteration=iteration, **prediction.to_dict()
            )
        return predictions

    def evaluate(self, iteration: int) -> tuple[RunResult, int]:
        """One run of every case; failed units are rerun (repairs), finished ones never.

        Each iteration's seed follows from the benchmark's, as evolve's and optimize's do: the
        same build on the same pool draws the same runs, so its Formal Baseline — which every
        optimize-agent session starts from — can be repeated."""
        seed = derived_seed(load_benchmark(self.root).seed, "build", iteration)
        result = self._run(None, seed)
        repairs = 0
        while result.status != "finished" and repairs < MAX_REPAIRS:
            repairs += 1
            invalid = [r["case_id"] for r in result.rows if r["pass_fail"] == "invalid"]
            self.log.emit(
                "message", stage="repair", iteration=iteration, run_id=result.run_id, cases=invalid
            )
            result = self._run(result.run_id, seed)
        return result, repairs

    def _run(self, run_id: str | None, seed: int) -> RunResult:
        return run_evaluation(
            self.ws,
            self.bench_id,
            runs=1,
            jobs=self.jobs,
            run_id=run_id,
            seed=seed,
            reporter=self.reporter,
            cancel=self.cancel,
            judge=self.judge,
            scoreboard=False,
        )

    def keep_best(self, pilot: Pilot) -> None:
        """The scratch copy of the lowest valid pilot so far (replacing the previous one)."""
        staged = self.scratch / f".best.new-{pilot.iteration:06x}"
        with self.ws.lock(f"build {self.bench_id}"):
            shutil.rmtree(staged, ignore_errors=True)
            for item in sorted(self.root.iterdir()):
                if is_log_file(item.name, SCOREBOARD_NAME) or _STAGING.match(item.name):
                    continue
                if item.is_dir():
                    copy_tree(item, staged / item.name)
                else:
                    atomic_write_bytes(staged / item.name, item.read_bytes())
            replace_dir(staged, self.scratch / "best")
            state = {
                "benchmark": self.bench_id,
                "session_id": self.log.session_id,
                "best": asdict(pilot),
            }
            atomic_write_json(self.scratch / SCRATCH_STATE, state)

    def calibrate(
        self,
        bench: Benchmark,
        standard: Standard | None,
        observed: dict[str, Any],
        predictions: list[Prediction],
    ) -> list[CaseRevision]:
        limit = max(1, len(bench.cases))
        exchange = ask(
            self.model,
            CALIBRATE_SYSTEM,
            calibration_messages(bench, standard, observed, predictions, self.pool, limit),
            lambda text: parse_calibration(
                text, bench=bench, standard=standard, pool=self.pool, max_changes=limit
            ),
        )
        changes: list[CaseRevision] = exchange.value
        return changes

    # -- the whole build -------------------------------------------------------------------------
    def run(
        self, goal: str | None, want: int, iterations: int, target: float | None
    ) -> BuildResult:
        self.draft(goal, want)
        standard = load_standard(self.root)
        path = self.root / STANDARD_FILE
        fixed = _sha(path) if path.is_file() else None
        changed: list[str] | None = None  # None: every case (the first dispatch)
        observed: dict[str, Any] = {}
        pilots: list[Pilot] = []
        best: Pilot | None = None
        valid = 0
        reason = "iterations"
        while valid < iterations and len(pilots) < 2 * iterations:
            if self.cancel is not None:
                self.cancel.check()
            iteration = len(pilots) + 1
            bench = self.check(changed, standard, fixed)
            predictions = self.predict(bench, standard, observed, iteration)
            result, repairs = self.evaluate(iteration)
            observed = dict(observe(result.run_dir, result.rows))
            self.by_type = type_means(bench, observed)
            errors = prediction_errors(predictions, observed)
            pilot = Pilot(
                iteration=iteration,
                run_id=result.run_id,
                valid=result.status == "finished",
                score=_evaluation_score(result.rows),
                predicted=round(sum(p.current for p in predictions) / len(predictions), 2),
                mean_abs_error=round(sum(abs(e) for e in errors.values()) / len(errors), 2)
                if errors
                else None,
                flagged=[p.case_id for p in predictions if p.flagged],
                repairs=repairs,
            )
            pilots.append(pilot)
            self.log.emit("progress", done=iteration, total=iterations, label=f"pilot {iteration}")
            self.log.emit(
                "message",
                stage="pilot",
                prediction_errors=errors,
                **{k: v for k, v in asdict(pilot).items() if k != "changes"},
            )
            if not pilot.valid or pilot.score is None:
                continue
            valid += 1
            if best is None or best.score is None or pilot.score < best.score:
                best = pilot
                self.keep_best(pilot)
            if target is not None and pilot.score <= target:
                reason = "target"
                break
            if valid == iterations:
                break
            changes = self.calibrate(bench, standard, observed, predictions)
            if not changes:
                reason = "calibrated out"
                break
            with self.ws.lock(f"build {self.bench_id}"):
                changed = apply_changes(self.root, bench, standard, changes, self.pool)
            pilot.changes = [c.to_dict() for c in changes]
            self.log.emit(
                "message", stage="calibration", iteration=iteration, changes=pilot.changes
            )
        if best is None:
            raise SkillsmithError(
                f"build {self.bench_id}: no valid pilot in {len(pilots)} attempts "
                "(every pilot had units that could not run); nothing to freeze"
            )
        return self.freeze(best, pilots, reason, standard)

    # -- freeze ----------------------------------------------------------------------------------
    def _restore_best(self) -> None:
        best = self.scratch / "best"
        keep = {p.name for p in best.iterdir() if p.is_dir()}
        for item in sorted(self.root.iterdir()):
            if item.is_dir() and (item / "statement").is_dir() and item.name not in keep:
                remove_case(self.root, item.name)
        for name in sorted(keep):
            staged = self.root / f".{name}.new-{secrets.token_hex(3)}"
            copy_tree(best / name, staged)
            replace_dir(staged, self.root / name)

    def freeze(
        self, best: Pilot, pilots: list[Pilot], reason: str, standard: Standard | None
    ) -> BuildResult:
        folder = RunFolder(self.ws.runs_dir / best.run_id)
        manifest = folder.read_manifest()
        wanted = (manifest.get("inputs") or {}).get("benchmark_sha256")
        cfg = self.ws.load_config()
        with self.ws.lock(f"freeze {self.bench_id}"):
            if bench_fingerprint(load_benchmark(self.root, check=False)) != wanted:
                self._restore_best()
            bench = load_benchmark(self.root)
            problems = check_cases(bench, standard)
            if problems:
                raise problems[0]
            if bench_fingerprint(bench) != wanted:
                raise SkillsmithError(
                    f"{self.root}: the frozen benchmark differs from the one pilot "
                    f"{best.iteration} ran (run {best.run_id}); not recording a baseline"
                )
            rows = [
                r for r in folder.latest_rows().values() if r.get("variant", "skill") == "skill"
            ]
            lowest = sorted(
                (r for r in rows if r.get("pass_fail") != "invalid"),
                key=lambda r: (float(r.get("score") or 0.0), str(r["case_id"])),
            )[:3]
            why = {
                "target": "it reached the target score",
                "iterations": "it is the lowest valid pilot",
                "calibrated out": "calibration had nothing left to change; it is the lowest valid",
            }[reason]
            summary = (
                f"Pilot {best.iteration} of {len(pilots)} frozen because {why}: score "
                f"{best.score:.2f} (predicted {best.predicted:.2f}). Flagged (shortcut scores "
                f"like the desired behaviour): {', '.join(best.flagged) or 'none'}. Next: a first "
                f"candidate aimed at {', '.join(str(r['case_id']) for r in lowest) or 'no case'}."
            )
            record = record_from_rows(
                rows,
                runtime=agent_runtime(make_agent(self.ws, cfg.agent)),
                summary_title=f"Formal Baseline: {self.bench_id} (pilot {best.iteration})",
                summary=summary,
                run_id=best.run_id,
                variant="skill",
                skills=skills_of_run(manifest),
                kind=FORMAL_BASELINE,
                session_id=self.log.session_id,
                version=self.ws.version(),
            )
            append_record(self.root, record)
        mismatches = verify_record(self.ws, record)
        if mismatches:
            raise SkillsmithError(
                f"{self.root / SCOREBOARD_NAME}: the Formal Baseline does not match run "
                f"{best.run_id}: {mismatches[0]}"
            )
        index = count_records(self.root) - 1
        self.log.emit(
            "message",
            stage="formal_baseline",
            run_id=best.run_id,
            score=record.score,
            record_index=index,
        )
        return BuildResult(
            session_id=self.log.session_id,
            bench_id=self.bench_id,
            pilots=pilots,
            frozen_iteration=best.iteration,
            reason=reason,
            baseline_score=record.score,
            baseline_run_id=best.run_id,
            record_index=index,
            flagged=best.flagged,
        )


def run(
    ws: Workspace,
    options: BuildOptions,
    *,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> BuildResult:
    """Design, calibrate and freeze benchmark ``options.bench``; record its Formal Baseline.

    ``source`` names a benchmark (id or folder) whose cases are the import pool, ``pick`` narrows
    it. ``model`` answers the draft / predict / calibrate protocols (default: the configured
    proposer model, offline: :func:`engine.loops.builder.offline.builder_offline`); ``judge``
    grades the llm_judge checks (default: the configured judge behind the strict protocol).
    """
    bench_id, goal, source, cases = options.bench, options.goal, options.source, options.cases
    pilot_iterations, target_score = options.pilot_iterations, options.target_score
    if not _BENCH_ID.match(bench_id):
        raise UsageError(f"build {bench_id!r}: expected a folder name [A-Za-z0-9._-]")
    check_counts(("--cases", cases), ("--pilot-iterations", pilot_iterations))
    if target_score is not None and not 0 <= target_score <= 100:
        raise UsageError(f"--target-score: expected a score from 0 to 100, got {target_score}")
    if (ws.benchmarks_dir / bench_id).is_dir() and has_formal_baseline(ws, bench_id):
        raise SkillsmithError(
            f"{ws.benchmarks_dir / bench_id / SCOREBOARD_NAME}: the benchmark is frozen (it has "
            "a Formal Baseline); build a new benchmark instead"
        )
    pool = open_pool(ws, source, options.pick) if source else None
    cfg = ws.load_config()
    llm = options.model or make_llm(cfg.models.proposer, ws, offline=builder_offline)
    log = start_session(ws, "build", forward=reporter)
    grader = options.judge or session_judge(ws, cfg.models.judge, log)
    build = _Build(ws, bench_id, log, llm, grader, pool, options.jobs, reporter, cancel)
    with hold(build.scratch):
        try:
            with ends_logged(log, benchmark=bench_id):
                atomic_write_json(
                    build.scratch / SCRATCH_STATE,
                    {"benchmark": bench_id, "session_id": log.session_id},
                )
                _clean_leftovers(ws, bench_id, log.session_id)
                log.emit(
                    "started",
                    benchmark=bench_id,
                    goal=goal,
                    source=source,
                    cases=cases,
                    pilot_iterations=pilot_iterations,
                    target_score=target_score,
                )
                result = build.run(goal, cases, pilot_iterations, target_score)
        finally:
            with ws.lock(f"build {bench_id}"):  # the scratch copies go, whatever happened
                for item in build.scratch.iterdir():
                    if item.name != ".session.lock":
                        shutil.rmtree(item) if item.is_dir() else item.unlink()
    with ws.lock(f"build {bench_id}"):
        shutil.rmtree(build.scratch, ignore_errors=True)
    log.emit(
        "finished",
        benchmark=bench_id,
        status="frozen",
        run_id=result.baseline_run_id,
        score=result.baseline_score,
        pilots=len(result.pilots),
        frozen_iteration=result.frozen_iteration,
        reason=result.reason,
        headline=result.headline,
    )
    return result


__all__ = ["BuildOptions", "BuildResult", "Pilot", "run"]
