"""Description (trigger) tuning: skill-creator's loop over the one field that decides loading.

An agent sees only a skill's name and description until it decides to load it, so a skill that
works but does not trigger is worth nothing, and one that triggers on the wrong tasks costs
context and can mislead. The loop (Anthropic's skill-creator ``run_loop``):

1. a query set — should-trigger tasks and near-miss should-not-trigger ones — is split 60/40,
   stratified, with a fixed seed;
2. each candidate description is put into the SKILL.md and the real agent is run on every query
   in a sealed room; a run *triggered* when its transcript holds a ``Skill`` call naming the
   skill, and a query's load rate over its runs decides (≥ threshold = triggered);
3. new descriptions are proposed from the *training* failures only (a model, or offline a
   deterministic word-level rewrite);
4. a description replaces the current one only when it is better on the *held-out* queries —
   never seen by the proposer — by the paired verdict (engine.evaluation.verdict): every
   (query, run) is judged right or wrong, paired with the current description's run of the same
   query and seed, and the exact run-level test must say "better" at ``gates.alpha`` split over
   the descriptions compared (Bonferroni), so trying more descriptions does not raise the chance
   of keeping one that only got lucky. An inconclusive comparison reruns the held-out queries
   that can still decide it (:func:`can_improve`: those whose runs disagree and those both
   descriptions always got wrong), both descriptions on the same fresh seeds, within twice
   ``gates.max_extra_runs`` a try (:func:`tuning_sampling`; ``engine.evaluation.verdict.decide``):
   one run a query is rarely enough to tell a fix from a lucky run. The current description's
   reruns are shared by the tries (:class:`HeldOutReruns`). Among the better ones, the highest
   held-out accuracy wins.

An improvement is queued as a candidate (source ``optimize``) that waits for a person, with the
per-query evidence under ``experiments/<id>/`` (transcripts included). A tuning that stopped
unfinished is resumed by the same command without making any run it has on record again
(:mod:`engine.loops.tuning_record`).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from engine.core.budget import Budget, BudgetMeter, Spent, session_budget
from engine.core.config import Config, GatesConfig
from engine.core.errors import FormatError, SkillsmithError
from engine.core.events import Cancelled, CancelToken, Reporter, SessionLog, null_reporter
from engine.core.fsutil import atomic_write_text
from engine.core.journal import is_leftover, remove_leftovers
from engine.core.sessions import hold, loop_session
from engine.core.skill import SkillDoc
from engine.core.stamps import new_id, utc_now
from engine.core.store import SkillStore, read_text
from engine.core.vault import redact
from engine.core.workspace import Workspace
from engine.evaluation.agents import (
    Agent,
    RoomSpec,
    SkillFiles,
    build_room,
    make_agent,
    remove_room,
)
from engine.evaluation.agents.isolation import scratch_root
from engine.evaluation.costplan import JobPlan, per_run
from engine.evaluation.gates.candidate import TaskOutcome
from engine.evaluation.gates.outcome import Sampling
from engine.evaluation.gates.submission import submit_candidate
from engine.evaluation.llm import LLM, make_llm
from engine.evaluation.runner import unit_seed
from engine.evaluation.traces import load_trace
from engine.evaluation.verdict import (
    Rerun,
    Rows,
    Verdict,
    can_improve,
    compare_paired,
)
from engine.loops.gepa.experiment import Experiment
from engine.loops.online.library import is_skill_load
from engine.loops.tuning_record import (
    KIND,
    RecordedRun,
    TuningRecord,
    identity,
    kept_budget,
    resumable,
)

Split = Literal["train", "test"]
Origin = Literal["current", "given", "proposed"]
MAX_DESCRIPTION = 1024
APPROVAL = "a description tuned offline waits for a person"
_TAG = re.compile(r"<new_description>(.*?)</new_description>", re.DOTALL)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
_STOP = frozenset(
    re.findall(
        r"\w+",
        """about also asked could does each file files from have here into like must only other
        should some such than that their them then there these they this those used using what
        when which whether will with would your please want need make sure""",
    )
)


@dataclass(frozen=True)
class TriggerQuery:
    query: str
    should_trigger: bool


def load_queries(path: Path) -> list[TriggerQuery]:
    """A JSON list of ``{"query": str, "should_trigger": bool}`` (skill-creator's eval set)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(path, None, "file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(path, None, f"a JSON list of queries ({exc})") from None
    if not isinstance(data, list) or not data:
        raise FormatError(path, None, "a non-empty JSON list of {query, should_trigger}")
    queries: list[TriggerQuery] = []
    for index, item in enumerate(data):
        if not isinstance(item, dict) or set(item) != {"query", "should_trigger"}:
            raise FormatError(path, f"[{index}]", "a mapping with exactly query, should_trigger")
        if not isinstance(item["query"], str) or not item["query"].strip():
            raise FormatError(path, f"[{index}].query", "a non-empty string")
        if not isinstance(item["should_trigger"], bool):
            raise FormatError(path, f"[{index}].should_trigger", "true or false")
        queries.append(TriggerQuery(item["query"].strip(), item["should_trigger"]))
    kinds = {q.should_trigger for q in queries}
    if kinds != {True, False}:
        raise FormatError(path, None, "both should-trigger and should-not-trigger queries")
    return queries


def split_queries(
    queries: Sequence[TriggerQuery], holdout: float = 0.4, seed: int = 42
) -> tuple[list[TriggerQuery], list[TriggerQuery]]:
    """(train, test): each class shuffled with ``seed`` and ``holdout`` of it held out.

    Stratified, so both parts keep should- and should-not-trigger queries; a class of two or
    more always leaves at least one query on each side.
    """
    if not 0 < holdout < 1:
        raise SkillsmithError(f"holdout: expected a share between 0 and 1, got {holdout}")
    rng = random.Random(seed)
    train: list[TriggerQuery] = []
    test: list[TriggerQuery] = []
    for wanted in (True, False):
        group = [q for q in queries if q.should_trigger is wanted]
        rng.shuffle(group)
        n_test = round(len(group) * holdout)
        if len(group) >= 2:
            n_test = min(max(n_test, 1), len(group) - 1)
        test += group[:n_test]
        train += group[n_test:]
    return train, test


# -- measuring ---------------------------------------------------------------------------------


@dataclass
class QueryResult:
    query: str
    should_trigger: bool
    split: Split
    runs: int
    loads: int
    rate: float
    triggered: bool
    correct: bool
    sessions: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    loaded: list[bool] = field(default_factory=list)  # per run, in run order
    seeds: list[int] = field(default_factory=list)  # per run: the same for every description
    valid: list[bool] = field(default_factory=list)  # per run: False when the run was invalid


@dataclass
class DescriptionScore:
    index: int
    description: str
    origin: Origin
    train_accuracy: float
    test_accuracy: float
    results: list[QueryResult]
    verdict: dict[str, Any] | None = None  # held-out, against the current description
    reruns: list[QueryResult] = field(default_factory=list)  # extra held-out runs of a verdict

    def failures(self, split: Split) -> list[QueryResult]:
        return [r for r in self.results if r.split == split and not r.correct]

    def rows(self, split: Split) -> list[dict[str, Any]]:
        """Each run as a result row (pass = it loaded exactly when it should), for the verdict."""
        return result_rows([r for r in self.results if r.split == split])


def result_rows(results: Sequence[QueryResult]) -> list[dict[str, Any]]:
    return [
        {
            "case_id": r.query,
            "run_index": run,
            "seed": r.seeds[run] if run < len(r.seeds) else None,
            "pass_fail": _run_outcome(r, run, loaded),
        }
        for r in results
        for run, loaded in enumerate(r.loaded)
    ]


def _run_outcome(result: QueryResult, run: int, loaded: bool) -> str:
    """An invalid run (the agent crashed, timed out, left no transcript) is ``invalid``, so the
    verdict leaves it out instead of counting a run that never loaded as right on a
    should-not-trigger query."""
    if run < len(result.valid) and not result.valid[run]:
        return "invalid"
    return "pass" if loaded == result.should_trigger else "fail"


def with_description(text: str, description: str) -> str:
    return SkillDoc.parse(text).with_section("description", description).render()


def check_description(description: str) -> str | None:
    """Why ``description`` cannot be a skill description (Agent Skills rules), or None."""
    if not description.strip():
        return "empty"
    if len(description) > MAX_DESCRIPTION:
        return f"longer than {MAX_DESCRIPTION} characters"
    if "<" in description or ">" in description:
        return "contains '<' or '>'"
    return None


class TriggerBench:
    """Runs the agent on the queries with one description at a time; keeps every transcript."""

    def __init__(
        self,
        ws: Workspace,
        skill: str,
        folder: Path,
        *,
        agent: Agent | None = None,
        runs_per_query: int = 1,
        threshold: float = 0.5,
        jobs: int = 2,
        seed: int = 0,
        cancel: CancelToken | None = None,
        meter: BudgetMeter | None = None,
        record: TuningRecord | None = None,
    ) -> None:
        if runs_per_query < 1:
            raise SkillsmithError("runs per query: expected at least 1")
        self.ws = ws
        self.skill = skill
        self.text = read_text(ws.skill_path(skill))
        self.names = {skill, SkillDoc.parse_lenient(self.text)[0].name or skill}
        self.folder = folder
        self.agent = agent or make_agent(ws)
        self.runs = runs_per_query
        self.threshold = threshold
        self.jobs = max(1, jobs)
        self.seed = seed
        self.cancel = cancel or CancelToken()
        self.meter = meter or BudgetMeter(Budget(), Spent())
        self.record = record or TuningRecord(folder)

    def measure(
        self,
        index: int,
        description: str,
        queries: Sequence[tuple[TriggerQuery, Split]],
        *,
        runs: int | None = None,
        first_run: int = 0,
        positions: Sequence[int] | None = None,
    ) -> list[QueryResult]:
        """Runs ``first_run`` … of each query (``runs``, default the bench's): run n draws the
        same seed for every description, so two descriptions' runs pair on it. ``positions``
        number the queries in the experiment's list (for the transcripts' names)."""
        count = self.runs if runs is None else runs
        numbers = range(first_run, first_run + count)
        labels = list(range(len(queries)) if positions is None else positions)
        text = with_description(self.text, description)
        units = [(q, n, run) for n, (q, _s) in enumerate(queries) for run in numbers]
        statement = Path(tempfile.mkdtemp(prefix="triggers-", dir=scratch_root(self.ws.root)))

        def one(unit: tuple[TriggerQuery, int, int]) -> tuple[bool, str | None, str | None]:
            query, n, run = unit
            return self._run(index, text, statement, query, labels[n], run)

        try:
            with ThreadPoolExecutor(self.jobs) as pool:
                found = list(pool.map(one, units))
        finally:
            shutil.rmtree(statement, ignore_errors=True)
        results: list[QueryResult] = []
        for n, (query, split) in enumerate(queries):
            mine = [f for (_q, m, _r), f in zip(units, found, strict=True) if m == n]
            loads = sum(1 for loaded, _path, _bad in mine if loaded)
            seeds = [unit_seed(self.seed, query.query, run) for run in numbers]
            rate = loads / count
            triggered = rate >= self.threshold
            results.append(
                QueryResult(
                    query=query.query,
                    should_trigger=query.should_trigger,
                    split=split,
                    runs=count,
                    loads=loads,
                    rate=round(rate, 3),
                    triggered=triggered,
                    correct=triggered == query.should_trigger,
                    sessions=[path for _l, path, _bad in mine if path],
                    invalid=[bad for _l, _p, bad in mine if bad],
                    valid=[not bad for _l, _p, bad in mine],
                    loaded=[loaded for loaded, _path, _bad in mine],
                    seeds=seeds,
                )
            )
        return results

    def _run(
        self, index: int, text: str, statement: Path, query: TriggerQuery, n: int, run: int
    ) -> tuple[bool, str | None, str | None]:
        """(loaded, transcript path relative to the experiment, invalid reason): made, or read
        back from the record when an earlier attempt of this tuning made it."""
        self.cancel.check()
        done = self.record.unit(text, query.query, run)
        if done is not None:
            return done.loaded, done.session, done.invalid
        if self.meter.exhausted is not None:  # past the budget no run starts; those running end
            raise Cancelled()
        spec = RoomSpec(
            statement_dir=statement,
            prompt=query.query,
            skills=(SkillFiles(self.skill, text, self.ws.skill_path(self.skill).parent),),
            skills_subdir=self.agent.skills_subdir,
        )
        room = build_room(spec, scratch_root(self.ws.root))
        seed = unit_seed(self.seed, query.query, run)  # every description's run n draws alike
        try:
            outcome = self.agent.run(room, query.query, lambda: self.cancel.cancelled, run, seed)
        finally:
            remove_room(room)
        self.meter.count({"tokens": outcome.tokens, "cost_usd": outcome.cost_usd})
        tokens, cost = sum(outcome.tokens.values()), outcome.cost_usd or 0.0
        if not outcome.session:
            made = RecordedRun(False, None, outcome.invalid_reason or "no transcript", tokens, cost)
        else:
            rel = f"sessions/d{index}-q{n}-r{run}.jsonl"
            lines = "".join(json.dumps(ln, ensure_ascii=False) + "\n" for ln in outcome.session)
            with self.ws.lock(f"trigger tuning {self.folder.name}"):
                atomic_write_text(self.folder / rel, redact(lines))
            trace = load_trace(self.folder / rel)
            loaded = any(is_skill_load(c.name, c.args, self.names) for c in trace.calls)
            made = RecordedRun(loaded, rel, outcome.invalid_reason, tokens, cost)
        self.record.add_unit(text, query.query, run, made)
        return made.loaded, made.session, made.invalid


def _accuracy(results: Sequence[QueryResult], split: Split) -> float:
    mine = [r for r in results if r.split == split]
    return round(sum(r.correct for r in mine) / len(mine), 4) if mine else 0.0


# -- proposing ---------------------------------------------------------------------------------


class DescriptionProposer(Protocol):
    name: str

    def propose(self, skill: str, current: str, failures: Sequence[QueryResult]) -> str | None:
        """A new description fixing the training ``failures``, or None."""
        ...


PROPOSER_SYSTEM = """\
You write the description of an agent skill. The description is all the agent sees when it \
decides whether to load the skill, so it must make the skill load for the tasks it serves and \
stay unloaded for tasks it does not. Describe the kind of task and its telling words, not the \
example tasks themselves. At most 1024 characters, one paragraph, no angle brackets. Answer \
with <new_description>the description</new_description> and nothing else."""


class ModelDescriptionProposer:
    """A model (``models.reflection``) rewrites the description from the training failures."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.name = f"model:{llm.model}"

    def propose(self, skill: str, current: str, failures: Sequence[QueryResult]) -> str | None:
        missed = [f"- {f.query}" for f in failures if f.should_trigger]
        wrong = [f"- {f.query}" for f in failures if not f.should_trigger]
        prompt = "\n".join(
            [
                f"Skill: {skill}",
                f"Current description: {current}",
                "",
                "Tasks that should have loaded the skill but did not:",
                *(missed or ["- (none)"]),
                "",
                "Tasks that loaded the skill but should not have:",
                *(wrong or ["- (none)"]),
            ]
        )
        reply = self.llm.complete(PROPOSER_SYSTEM, [{"role": "user", "content": redact(prompt)}])
        match = _TAG.search(reply.text)
        return " ".join(match.group(1).split()) if match else None


class OfflineDescriptionProposer:
    """Deterministic: add the telling words of missed tasks, drop those of false triggers."""

    name = "offline"

    def propose(self, skill: str, current: str, failures: Sequence[QueryResult]) -> str | None:
        have = {w.lower() for w in _WORD.findall(current)}
        missed = [f.query for f in failures if f.should_trigger]
        wrong = [f.query for f in failures if not f.should_trigger]
        wanted = {w.lower() for q in missed for w in _WORD.findall(q)}
        counts = Counter(w.lower() for q in missed for w in dict.fromkeys(_WORD.findall(q)))
        # words shared by several missed tasks first: they name the kind of task
        ranked = sorted(counts, key=lambda w: -counts[w])
        add = [w for w in ranked if w not in have and w not in _STOP][:8]
        drop = {w.lower() for q in wrong for w in _WORD.findall(q) if w.lower() in have} - wanted
        text = current
        for word in sorted(drop):
            text = re.sub(rf"\b{re.escape(word)}\b", "", text, flags=re.IGNORECASE)
        text = " ".join(text.split()).replace(" ,", ",").replace(" .", ".")
        if add:
            text = text.rstrip(" .") + ". Also for tasks about " + ", ".join(add) + "."
        return text if text != current else None


def make_description_proposer(ws: Workspace, cfg: Config | None = None) -> DescriptionProposer:
    cfg = cfg or ws.load_config()
    if cfg.models.reflection.provider == "offline":
        return OfflineDescriptionProposer()
    return ModelDescriptionProposer(make_llm(cfg.models.reflection, ws))


# -- the loop ----------------------------------------------------------------------------------


@dataclass
class TuningResult:
    experiment_id: str
    experiment_dir: str
    skill: str
    current: str
    best: str
    chosen: int
    improved: bool
    reason: str
    train_size: int
    test_size: int
    scores: list[DescriptionScore]
    notes: list[str] = field(default_factory=list)
    candidate: dict[str, Any] | None = None
    stop_reason: str | None = None  # "budget": stopped past its budget, nothing submitted
    resumed: bool = False  # went on from a tuning that had not finished
    reused_runs: int = 0  # agent runs read back from the record instead of made again
    spent: dict[str, Any] | None = None  # agent runs, tokens and dollars the tuning spent
    budget: dict[str, Any] | None = None

    @property
    def headline(self) -> str:
        """The tuning in one line: the held-out result, the candidate it queued, and what it
        reused when it went on from a stopped tuning."""
        queued = f"; queued {self.candidate['id']}" if self.candidate else ""
        resumed = f"; resumed, {self.reused_runs} agent runs reused" if self.resumed else ""
        return f"{self.skill}: {self.reason}{queued}{resumed}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TuneOptions:
    """One tuning of ``skill``'s description on the should / should-not queries in ``queries``."""

    skill: str
    queries: Path
    candidates: tuple[str, ...] = ()  # descriptions to try besides the proposer's
    iterations: int = 3
    runs_per_query: int = 1
    threshold: float = 0.5
    holdout: float = 0.4
    seed: int = 42
    jobs: int = 2
    submit: bool = True
    max_extra_runs: int | None = None  # held-out reruns per try; None: see tuning_sampling
    budget: Budget = field(default_factory=Budget)  # outranks skillsmith.yaml's where it sets one
    fresh: bool = False  # a new tuning even when one with these settings stopped unfinished


def plan(ws: Workspace, options: TuneOptions) -> JobPlan:
    """The most agent runs a tuning may make, and their estimated cost, without running any.

    Every description — the current one, each given one and one proposal per iteration — is
    measured on every query ``runs_per_query`` times; each tried description's held-out
    verdict may add up to its ``max_extra_runs`` reruns and as many of the current
    description's (shared by the tries, so this is the most). Trigger runs are recorded under
    the experiment, not as benchmark runs, so the estimate per run is the agent kind's default.
    """
    if not ws.skill_path(options.skill).is_file():
        raise SkillsmithError(f"{ws.skill_path(options.skill)}: no such skill")
    queries = load_queries(options.queries)
    cfg = ws.load_config()
    sampling = tuning_sampling(cfg.gates, options.max_extra_runs)
    agent = make_agent(ws, cfg.agent)
    descriptions = 1 + len(options.candidates) + options.iterations
    base = descriptions * len(queries) * options.runs_per_query
    extra = (descriptions - 1) * 2 * sampling.max_extra_runs
    detail = (
        f"at most, {descriptions} descriptions × {len(queries)} queries × "
        f"{options.runs_per_query} run(s)"
    )
    tagged = _tagged(queries, options.holdout, options.seed)
    given = [" ".join(text.split()) for text in options.candidates]
    text = read_text(ws.skill_path(options.skill))
    wanted = _identity(
        options.skill, text, tagged, options.runs_per_query, options.threshold, options.seed,
        given, agent,
    )  # fmt: skip
    earlier = None if options.fresh else resumable(ws, wanted)
    if earlier is not None:  # what the stopped tuning made is not made again
        measured, reruns = TuningRecord(earlier).runs_on_record(options.runs_per_query)
        base, extra = max(0, base - measured), max(0, extra - reruns)
        detail += f"; resumes {earlier.name}: {measured + reruns} runs on record not run again"
    return JobPlan(
        job=f"tune-description {options.skill}",
        base=base,
        extra=extra,
        workers=options.jobs,
        per_run=per_run(ws, None, agent.describe()),
        detail=detail,
    )


def tune_description(
    ws: Workspace,
    skill: str,
    queries: Sequence[TriggerQuery],
    *,
    candidates: Sequence[str] = (),
    iterations: int = 3,
    runs_per_query: int = 1,
    threshold: float = 0.5,
    holdout: float = 0.4,
    seed: int = 42,
    jobs: int = 2,
    max_extra_runs: int | None = None,
    proposer: DescriptionProposer | None = None,
    agent: Agent | None = None,
    submit: bool = True,
    log: SessionLog | None = None,
    cancel: CancelToken | None = None,
    budget: Budget | None = None,
    fresh: bool = False,
) -> TuningResult:
    """Measure the current description and the given ones, propose more, keep the held-out best.

    See the module docstring for the loop; ``candidates`` are descriptions to try besides the
    proposer's. Raises SkillsmithError for an unknown skill or bad settings. Past ``budget``
    (over skillsmith.yaml's) no agent run starts: the tuning stops with ``stop_reason``
    "budget", keeps the current description and submits nothing.

    A tuning of the same skill text, queries, settings and agent that did not finish (stopped
    at its budget, cancelled, killed) is resumed unless ``fresh``: its runs on record are read
    back, not made again (:mod:`engine.loops.tuning_record`), and it keeps its budget unless
    given a new one.
    """
    if not ws.skill_path(skill).is_file():
        raise SkillsmithError(f"{ws.skill_path(skill)}: no such skill")
    skill_text = read_text(ws.skill_path(skill))
    current = SkillDoc.parse(skill_text).description or ""
    cfg = ws.load_config()
    sampling = tuning_sampling(cfg.gates, max_extra_runs)
    tagged = _tagged(queries, holdout, seed)
    agent = agent or make_agent(ws, cfg.agent)
    given = [" ".join(text.split()) for text in candidates]
    wanted = _identity(skill, skill_text, tagged, runs_per_query, threshold, seed, given, agent)
    earlier = None if fresh else resumable(ws, wanted)
    experiment = Experiment(ws, earlier.name if earlier else new_id("triggers"))
    folder = experiment.dir
    record = TuningRecord(folder)
    kept = kept_budget(folder) if earlier else Budget()
    meter = BudgetMeter(session_budget(cfg.budget, kept, budget or Budget()), record.spent())
    proposer = proposer or make_description_proposer(ws)
    bench = TriggerBench(
        ws,
        skill,
        folder,
        agent=agent,
        runs_per_query=runs_per_query,
        threshold=threshold,
        jobs=jobs,
        seed=seed,
        cancel=cancel,
        meter=meter,
        record=record,
    )
    settings = {
        "iterations": iterations,
        "runs_per_query": runs_per_query,
        "threshold": threshold,
        "holdout": holdout,
        "seed": seed,
        "max_extra_runs": sampling.max_extra_runs,
        "proposer": proposer.name,
        "agent": bench.agent.describe(),
    }
    if earlier is None:
        experiment.write(
            "experiment.json",
            {
                "id": experiment.id,
                "kind": KIND,
                "skill": skill,
                "identity": wanted,
                "started_at": utc_now(),
                "settings": settings,
                "queries": [
                    {"query": q.query, "should_trigger": q.should_trigger, "split": s}
                    for q, s in tagged
                ],
            },
        )
    scores: list[DescriptionScore] = []
    notes: list[str] = []

    def evaluate(description: str, origin: Origin) -> None:
        if any(s.description == description for s in scores):
            notes.append(f"{origin} description already measured: {description[:60]!r}")
            return
        problem = check_description(description)
        if problem is not None:
            notes.append(f"{origin} description refused ({problem}): {description[:60]!r}")
            return
        index = len(scores)
        results = bench.measure(index, description, tagged)
        score = DescriptionScore(
            index,
            description,
            origin,
            _accuracy(results, "train"),
            _accuracy(results, "test"),
            results,
        )
        scores.append(score)
        if log is not None:
            log.emit(
                "message",
                text=f"description {index} ({origin}): train {score.train_accuracy:.2f}, "
                f"held-out {score.test_accuracy:.2f}",
                description=index,
                origin=origin,
                train=score.train_accuracy,
            )
            log.emit(
                "progress",
                done=len(scores),
                total=max(len(scores), 1 + len(given) + iterations),
                label=meter.label(f"description {index} ({origin})"),
            )

    with hold(folder):  # a tuning still running is never resumed by another
        if earlier is not None:
            _resuming(experiment, record, meter, settings, log)
        chosen: DescriptionScore | None
        try:
            evaluate(current, "current")
            for text in given:
                evaluate(text, "given")
            for round_ in range(iterations):
                parent = max(scores, key=lambda s: (s.train_accuracy, -s.index))
                failures = parent.failures("train")
                if not failures:
                    notes.append(f"description {parent.index} gets every training query right")
                    break
                known, proposed = record.proposal(round_, parent.description)
                if not known:  # a resumed tuning asks again only for rounds it had not reached
                    proposed = proposer.propose(skill, parent.description, failures)
                    record.add_proposal(round_, parent.description, proposed)
                if proposed is None:
                    notes.append(f"the proposer had nothing for description {parent.index}")
                    break
                evaluate(proposed, "proposed")
            reruns = HeldOutReruns(bench, scores[0], tagged, runs_per_query)
            chosen, verdict = held_out_choice(scores, sampling, reruns.for_try)
            reason = _choice_reason(scores, chosen, verdict)
        except Cancelled:
            if meter.exhausted is None or (cancel is not None and cancel.cancelled):
                raise
            chosen = None  # stopped before the choice: the current description stays
            reason = f"budget reached: {meter.exhausted}; {meter.line()}; nothing was submitted"
            if log is not None:
                log.emit("message", text=f"stopped: budget ({reason})")
        result = TuningResult(
            experiment_id=experiment.id,
            experiment_dir=str(folder),
            skill=skill,
            current=current,
            best=current if chosen is None else chosen.description,
            chosen=0 if chosen is None else chosen.index,
            improved=chosen is not None and chosen.index != 0,
            reason=reason,
            train_size=sum(split == "train" for _q, split in tagged),
            test_size=sum(split == "test" for _q, split in tagged),
            scores=scores,
            notes=notes,
            stop_reason="budget" if chosen is None else None,
            resumed=earlier is not None,
            reused_runs=record.reused,
        )
        if earlier is not None:
            notes.append(f"resumed {experiment.id}: {record.reused} agent runs on record reused")
        if chosen is not None and result.improved and submit:
            result.candidate = _submit(ws, skill, chosen, scores[0], experiment.id)
        return _recorded(experiment, result, meter)


def _tagged(
    queries: Sequence[TriggerQuery], holdout: float, seed: int
) -> list[tuple[TriggerQuery, Split]]:
    """Every query with its split, the training ones first (the order runs are made in)."""
    train, test = split_queries(queries, holdout, seed)
    tagged: list[tuple[TriggerQuery, Split]] = [(q, "train") for q in train]
    return tagged + [(q, "test") for q in test]


def _identity(
    skill: str,
    text: str,
    tagged: Sequence[tuple[TriggerQuery, Split]],
    runs: int,
    threshold: float,
    seed: int,
    given: Sequence[str],
    agent: Agent,
) -> str:
    """What a tuning's runs and the order of its loop depend on: two tunings of one identity
    make the same runs, so one can go on from the other's record."""
    return identity(
        skill=skill,
        text=text,
        queries=[(q.query, q.should_trigger, split) for q, split in tagged],
        runs=runs,
        threshold=threshold,
        seed=seed,
        given=list(given),
        agent=agent.describe(),
    )


def _resuming(
    experiment: Experiment,
    record: TuningRecord,
    meter: BudgetMeter,
    settings: Mapping[str, Any],
    log: SessionLog | None,
) -> None:
    """Remove what a killed attempt's writes left half done, set a stopped attempt's result
    aside (``result.stopped-<n>.json``) and say what this attempt goes on from."""
    with experiment.ws.lock(f"trigger tuning {experiment.id}"):
        remove_leftovers(
            path
            for folder in (experiment.dir, experiment.dir / "sessions")
            if folder.is_dir()
            for path in folder.iterdir()
            if is_leftover(path.name)
        )
    stopped = experiment.dir / "result.json"
    if stopped.exists():
        n = 1 + len(list(experiment.dir.glob("result.stopped-*.json")))
        stopped.replace(experiment.dir / f"result.stopped-{n}.json")
    text = (
        f"resuming {experiment.id}: {record.on_record} agent runs on record are not run again; "
        f"{meter.line()}"
    )
    experiment.event("resumed", runs_on_record=record.on_record, settings=dict(settings))
    if log is not None:
        log.emit("message", text=text)


def _choice_reason(
    scores: Sequence[DescriptionScore], best: DescriptionScore, verdict: Verdict | None
) -> str:
    """Why the held-out choice kept ``best``: its gain and verdict, or the best try's verdict."""
    base = scores[0]
    if best.index != 0:
        return (
            f"held-out trigger accuracy {base.test_accuracy:.2f} → {best.test_accuracy:.2f}: "
            f"{verdict.line() if verdict else ''}"
        )
    top = max(scores[1:], key=lambda s: (s.test_accuracy, -s.index), default=None)
    shown = (
        f" (best try, description {top.index}: {Verdict.from_dict(top.verdict).line()})"
        if top is not None and top.verdict
        else ""
    )
    return f"no description was better than the current one on the held-out queries{shown}"


def _recorded(experiment: Experiment, result: TuningResult, meter: BudgetMeter) -> TuningResult:
    """The result with what the tuning spent, written to the experiment's result.json."""
    result.spent = meter.spent.to_dict()
    result.budget = meter.budget.to_dict() if meter.budget.limited else None
    experiment.write("result.json", result.to_dict())
    return result


TUNING_BUDGET = 2  # each try's held-out reruns, in multiples of ``gates.max_extra_runs``


def tuning_sampling(gates: GatesConfig, max_extra_runs: int | None = None) -> Sampling:
    """How the held-out choice may look again: ``gates.alpha`` and ``gates.looks``, and a rerun
    budget per try of ``max_extra_runs`` (default twice ``gates.max_extra_runs``).

    Twice, because the tuner's comparisons rest on few queries with one run each: a try that
    fixes 2 of 8 held-out queries by 50 points is +12.5 points, and at ``alpha`` shared by 3
    tries the gate budget alone finds it about 7 times in 10 on the noisy demo, twice the
    budget 9 times in 10 (``benchmarks/bench_verdicts.py``).
    """
    budget = TUNING_BUDGET * gates.max_extra_runs if max_extra_runs is None else max_extra_runs
    if budget < 0:
        raise SkillsmithError(f"max extra runs: expected 0 or more, got {budget}")
    return Sampling(alpha=gates.alpha, max_extra_runs=budget, looks=gates.looks)


class HeldOutReruns:
    """Fresh held-out runs for the verdicts, the current description's shared by every try.

    Each try draws run numbers (so seeds) from its own count, starting after the measured
    runs, so the k-th rerun of a query has the same seed in every try; the current
    description's run of a query and run number is measured once and paired with every try's
    run of it. Where the tries rerun the same queries that saves (k − 1) / 2k of the reruns'
    agent runs (a third with 3 tries), and it changes no verdict's error rate: the alpha shared
    among the tries holds however their comparisons depend on each other (the union bound).
    """

    def __init__(
        self,
        bench: TriggerBench,
        base: DescriptionScore,
        tagged: Sequence[tuple[TriggerQuery, Split]],
        first_run: int,
    ) -> None:
        self.bench = bench
        self.base = base
        self.tagged = list(tagged)
        self.first_run = first_run
        self.current: dict[tuple[str, int], dict[str, Any]] = {}  # (query, run) → result row

    def for_try(self, score: DescriptionScore) -> Rerun:
        next_run = [self.first_run]

        def rerun(ids: Sequence[str], runs: int) -> tuple[Rows, Rows]:
            first, next_run[0] = next_run[0], next_run[0] + runs
            numbers = range(first, first + runs)
            mine = result_rows(self._measure(score, ids, first, runs))
            missing = {q: [n for n in numbers if (q, n) not in self.current] for q in ids}
            for group, start, count in _segments(missing):
                for row in result_rows(self._measure(self.base, group, start, count)):
                    self.current[(row["case_id"], start + row["run_index"])] = row
            # numbered within this rerun, as ``decide`` expects; they pair on their seeds
            theirs = [
                {**self.current[(q, n)], "run_index": n - first} for q in ids for n in numbers
            ]
            return theirs, mine

        return rerun

    def _measure(
        self, score: DescriptionScore, ids: Sequence[str], first: int, runs: int
    ) -> list[QueryResult]:
        wanted = set(ids)
        positions = [n for n, (q, _s) in enumerate(self.tagged) if q.query in wanted]
        found = self.bench.measure(
            score.index,
            score.description,
            [self.tagged[n] for n in positions],
            runs=runs,
            first_run=first,
            positions=positions,
        )
        score.reruns += found
        return found


def _segments(missing: Mapping[str, Sequence[int]]) -> list[tuple[list[str], int, int]]:
    """(queries, first run, runs) measurements covering every query's missing run numbers:
    queries missing the same runs go together, one measurement per unbroken stretch."""
    groups: dict[tuple[int, ...], list[str]] = {}
    for query, numbers in missing.items():
        if numbers:
            groups.setdefault(tuple(numbers), []).append(query)
    found: list[tuple[list[str], int, int]] = []
    for numbers, queries in sorted(groups.items()):
        start = previous = numbers[0]
        for number in numbers[1:]:
            if number != previous + 1:
                found.append((sorted(queries), start, previous - start + 1))
                start = number
            previous = number
        found.append((sorted(queries), start, previous - start + 1))
    return found


def held_out_choice(
    scores: Sequence[DescriptionScore],
    sampling: Sampling,
    rerun_for: Callable[[DescriptionScore], Rerun] | None = None,
) -> tuple[DescriptionScore, Verdict | None]:
    """The description to keep: the current one unless another is better on the held-out
    queries by the paired verdict at ``sampling.alpha`` shared among all tried (each gets
    alpha / k), rerunning the queries that can still decide an inconclusive comparison
    (:func:`can_improve`) within ``sampling.max_extra_runs`` a try."""
    base, tried = scores[0], list(scores[1:])
    share = replace(sampling, alpha=sampling.alpha / max(1, len(tried)))
    better: list[tuple[DescriptionScore, Verdict]] = []

    def judge(before: Rows, after: Rows, alpha: float) -> Verdict:
        return compare_paired(before, after, alpha=alpha, test="runs", alternative="greater")

    for score in tried:
        verdict, _, _ = share.decide(
            base.rows("test"),
            score.rows("test"),
            judge,
            lambda v: not v.better,
            None if rerun_for is None else rerun_for(score),
            pick=can_improve,
        )
        score.verdict = {**verdict.to_dict(), "alpha_family": sampling.alpha}
        if verdict.better:
            better.append((score, verdict))
    if not better:
        return base, None
    return max(better, key=lambda found: (found[0].test_accuracy, -found[0].index))


def _submit(
    ws: Workspace, skill: str, best: DescriptionScore, base: DescriptionScore, experiment: str
) -> dict[str, Any]:
    store = SkillStore(ws, skill)
    parent = store.ensure_adopted()
    if parent is None:
        raise SkillsmithError(f"{ws.skill_path(skill)}: no such skill")
    text = with_description(store.read(parent), best.description)
    delta = round(best.test_accuracy - base.test_accuracy, 4)
    cand, decision = submit_candidate(
        ws,
        skill,
        text,
        source="optimize",
        operation="update",
        parent_version=parent,
        summary=(
            f"tune-description: held-out trigger accuracy {base.test_accuracy:.2f} → "
            f"{best.test_accuracy:.2f}"
        ),
        outcome=TaskOutcome(status="success", score=best.test_accuracy, evaluator="trigger-tuning"),
        approval_required=APPROVAL,
        delta_score=delta,
        metrics={
            "experiment": experiment,
            "train_accuracy": best.train_accuracy,
            "test_accuracy": best.test_accuracy,
            "baseline_test_accuracy": base.test_accuracy,
            "verdict": best.verdict,
        },
        provenance={"experiment": experiment, "kind": "trigger-tuning"},
    )
    return {"id": cand.id, "status": cand.status, "reason": decision.reason}


def run(
    ws: Workspace,
    options: TuneOptions,
    *,
    reporter: Reporter = null_reporter,
    cancel: CancelToken | None = None,
) -> TuningResult:
    """The tune-description loop in the shape of every loop: one session around
    :func:`tune_description`."""
    ws.load_config()
    queries = load_queries(options.queries)
    with loop_session(
        ws, "triggers", reporter=reporter, skill=options.skill, queries=len(queries)
    ) as log:
        result = tune_description(
            ws,
            options.skill,
            queries,
            candidates=options.candidates,
            iterations=options.iterations,
            runs_per_query=options.runs_per_query,
            threshold=options.threshold,
            holdout=options.holdout,
            seed=options.seed,
            jobs=options.jobs,
            max_extra_runs=options.max_extra_runs,
            submit=options.submit,
            log=log,
            cancel=cancel,
            budget=options.budget,
            fresh=options.fresh,
        )
        log.emit(
            "finished",
            improved=result.improved,
            candidate=result.candidate,
            headline=result.headline,
        )
    return result
