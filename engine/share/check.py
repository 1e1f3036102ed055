"""``skillsmith check``: does this change to a skill make it worse on our benchmark?

For every skill whose folder differs from a git ref (by default the merge base with the main
branch), the version at the ref and the version in the working tree are evaluated on the same
cases with the same seed, so each case run of one is paired with the same draw of the other
(``verdict.pair``), and the paired verdict decides. A budget of agent runs caps what that costs:
the first look runs every case once per version at most, what is left is spent by adaptive
reruns of the cases that can still change the verdict (``verdict.decide``, at the stated error
rate). "Worse" needs confidence; an inconclusive verdict is not a regression unless asked.
"""

from __future__ import annotations

import contextlib
import io
import secrets
import subprocess
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.benchmark import Benchmark, load_benchmark
from engine.core.errors import SkillsmithError, UsageError
from engine.core.events import Reporter, null_reporter
from engine.core.skill_folder import Resource, read_resources
from engine.core.workspace import Workspace
from engine.evaluation.runner import SEED_BITS, SKILL, run_evaluation
from engine.evaluation.verdict import Rows, Verdict, compare_paired, decide

SKILL_FILE = "SKILL.md"
MAIN_BRANCHES = ("main", "master", "origin/main", "origin/master")


@dataclass(frozen=True)
class Version:
    """A skill folder as text and files, wherever it came from (the ref or the working tree)."""

    text: str
    resources: dict[str, Resource]

    def same_as(self, other: Version) -> bool:
        return self.text == other.text and self.resources == other.resources


@dataclass(frozen=True)
class SkillCheck:
    skill: str
    status: str  # worse | better | inconclusive | added | removed
    verdict: Verdict | None
    runs: tuple[str, ...]  # the evaluations: the ref's version first, then the working tree's
    agent_runs: int  # agent runs spent, both versions
    texts: tuple[str, str] | None = None  # the SKILL.md texts compared: at the ref, working tree

    def line(self) -> str:
        if self.verdict is None:
            what = "new in the working tree" if self.status == "added" else "deleted"
            return f"{self.skill}: {what}; no earlier and later version to compare"
        return f"{self.skill}: {self.status} — {self.verdict.line()}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "status": self.status,
            "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "runs": list(self.runs),
            "agent_runs": self.agent_runs,
        }


@dataclass(frozen=True)
class CheckOptions:
    bench: str
    against: str | None = None
    cases: tuple[str, ...] = ()
    budget_runs: int | None = None
    runs: int | None = None
    seed: int | None = None
    jobs: int | None = None
    alpha: float = 0.05


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120
    )
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise SkillsmithError(f"git {' '.join(args)}: {message}")
    return done.stdout


def _git_bytes(cwd: Path, *args: str) -> bytes:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, timeout=120)
    if done.returncode != 0:
        message = (done.stderr.decode(errors="replace").strip().splitlines() or ["failed"])[-1]
        raise SkillsmithError(f"git {' '.join(args)}: {message}")
    return done.stdout


def resolve_ref(top: Path, against: str | None) -> str:
    """The commit to compare with: ``against``, else the merge base of HEAD with the main
    branch (the first of main, master, origin/main, origin/master that exists)."""
    if against:
        try:
            return _git(top, "rev-parse", "--verify", "--quiet", f"{against}^{{commit}}").strip()
        except SkillsmithError:
            raise UsageError(f"--against {against}: not a commit of the repository {top}") from None
    for branch in MAIN_BRANCHES:
        with contextlib.suppress(SkillsmithError):
            _git(top, "rev-parse", "--verify", "--quiet", f"{branch}^{{commit}}")
            return _git(top, "merge-base", "HEAD", branch).strip()
    raise UsageError(
        f"{top}: no main or master branch to take the merge base with; name one with --against"
    )


def _versions_at(top: Path, ref: str, rel: str) -> dict[str, Version]:
    """The skill folders under ``rel`` as commit ``ref`` has them (none if it has no ``rel``)."""
    if not _git(top, "ls-tree", ref, "--", rel).strip():
        return {}
    archive = _git_bytes(top, "archive", "--format=tar", ref, "--", rel)
    with tempfile.TemporaryDirectory(prefix="skillsmith-check-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        return _versions_in(Path(tmp) / rel)


def _versions_in(skills_dir: Path) -> dict[str, Version]:
    found: dict[str, Version] = {}
    if not skills_dir.is_dir():
        return found
    for folder in sorted(skills_dir.iterdir()):
        path = folder / SKILL_FILE
        if folder.is_dir() and path.is_file():
            text = path.read_bytes().decode("utf-8", errors="replace")
            found[folder.name] = Version(text, read_resources(folder))
    return found


@dataclass(frozen=True)
class Changes:
    ref: str
    changed: dict[str, tuple[Version | None, Version | None]]  # skill → (at ref, working tree)


def changed_skills(ws: Workspace, against: str | None) -> Changes:
    """Every skill whose folder in the working tree differs from its folder at the ref."""
    skills_dir = ws.skills_dir.resolve()
    if not skills_dir.is_dir():
        raise SkillsmithError(f"{skills_dir}: no skills folder")
    try:
        top = Path(_git(skills_dir, "rev-parse", "--show-toplevel").strip())
    except SkillsmithError:
        raise SkillsmithError(
            f"{skills_dir}: not in a git repository; check compares skills with a git ref"
        ) from None
    ref = resolve_ref(top, against)
    rel = skills_dir.relative_to(top.resolve()).as_posix()
    old, new = _versions_at(top, ref, rel), _versions_in(skills_dir)
    changed: dict[str, tuple[Version | None, Version | None]] = {}
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a is None or b is None or not a.same_as(b):
            changed[name] = (a, b)
    return Changes(ref, changed)


def check_cases(bench: Benchmark, wanted: Sequence[str]) -> list[str]:
    """``--cases``, else the benchmark's smoke cases, else every case."""
    known = {c.id for c in bench.cases}
    if wanted:
        unknown = [c for c in wanted if c not in known]
        if unknown:
            raise UsageError(f"--cases: no case {unknown[0]!r} in benchmark {bench.id}")
        return list(wanted)
    return list(bench.smoke) or [c.id for c in bench.cases]


def plan_runs(cases: int, runs: int, budget: int | None) -> tuple[int, int]:
    """Runs per case of the first look and the extra runs per version left for reruns."""
    if budget is None:
        return runs, 0
    if budget < 2 * cases:
        raise UsageError(
            f"--budget-runs {budget}: below one run of each of the {cases} cases for both "
            f"versions ({2 * cases}); raise it or pass fewer --cases"
        )
    first = min(runs, budget // (2 * cases))
    return first, (budget - 2 * cases * first) // 2


def _evaluate(
    ws: Workspace,
    options: CheckOptions,
    skill: str,
    version: Version,
    cases: Sequence[str],
    runs: int,
    seed: int,
    reporter: Reporter,
) -> tuple[str, list[dict[str, Any]]]:
    result = run_evaluation(
        ws,
        options.bench,
        runs=runs,
        jobs=options.jobs,
        skills={skill: version.text},
        folders={skill: version.resources},
        case_ids=list(cases),
        seed=seed,
        scoreboard=False,
        reporter=reporter,
    )
    return result.run_id, [r for r in result.rows if r["variant"] == SKILL]


def _compare(
    ws: Workspace,
    options: CheckOptions,
    skill: str,
    old: Version,
    new: Version,
    cases: list[str],
    reporter: Reporter,
) -> SkillCheck:
    bench = load_benchmark(ws.benchmarks_dir / options.bench)
    first, extra = plan_runs(len(cases), options.runs or bench.runs_per_case, options.budget_runs)
    seed = options.seed if options.seed is not None else secrets.randbits(SEED_BITS)
    run_ids: list[str] = []
    spent = 0

    def both(chosen: Sequence[str], runs: int, look_seed: int) -> tuple[Rows, Rows]:
        nonlocal spent
        before_id, before = _evaluate(ws, options, skill, old, chosen, runs, look_seed, reporter)
        after_id, after = _evaluate(ws, options, skill, new, chosen, runs, look_seed, reporter)
        run_ids.extend((before_id, after_id))
        spent += len(before) + len(after)
        return before, after

    def rerun(chosen: Sequence[str], runs_each: int) -> tuple[Rows, Rows]:
        # each look's seed follows from the first: new draws, the same ones for both versions
        look_seed = (seed + len(run_ids) // 2) % (1 << SEED_BITS)
        return both(chosen, runs_each, look_seed)

    before, after = both(cases, first, seed)
    verdict, _, _ = decide(
        before,
        after,
        judge=lambda b, a, alpha: compare_paired(b, a, alpha=alpha),
        wants_more=lambda v: v.decision == "inconclusive",
        rerun=rerun if extra > 0 else None,
        alpha=options.alpha,
        max_extra_runs=extra,
    )
    return SkillCheck(skill, verdict.decision, verdict, tuple(run_ids), spent, (old.text, new.text))


def run_check(
    ws: Workspace,
    options: CheckOptions,
    changes: Changes,
    *,
    reporter: Reporter = null_reporter,
) -> list[SkillCheck]:
    """The verdict of every changed skill (added and removed skills are named, not judged)."""
    if not (ws.benchmarks_dir / options.bench).is_dir():
        raise UsageError(
            f"--bench {options.bench}: no benchmark {ws.benchmarks_dir / options.bench}"
        )
    bench = load_benchmark(ws.benchmarks_dir / options.bench)
    cases = check_cases(bench, options.cases)
    results: list[SkillCheck] = []
    for skill, (old, new) in changes.changed.items():
        if old is None or new is None:
            results.append(SkillCheck(skill, "added" if old is None else "removed", None, (), 0))
            continue
        results.append(_compare(ws, options, skill, old, new, cases, reporter))
    return results
