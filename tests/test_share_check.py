"""``skillsmith check``: a paired verdict per skill changed since a git ref, as a CI exit code.

A git repository holds the demo workspace (two families of cases) with the shipped skill
committed. The worse version is the shipped skill without its flag steps (3–7 and 10): it can
no longer find what those steps search for. The runs use a fixed seed because the tests assert
exact outcomes — "worse with confidence" on the noisy demo agent — and a seed repeats every
draw of its noise; the CI recipe's test sets the agent's noise to 0 instead, since it runs the
docs' command as written (no seed).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine.core.benchmark import load_benchmark
from engine.core.errors import FormatError
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL
from engine.share.check import plan_runs
from tests.evolve_helpers import demo, env
from tests.share_helpers import ROOT

pytestmark = pytest.mark.slow

# vulnerable cases whose finding the flag steps make (and a safe one each way)
CASES = (
    "deser-py-pickle,deser-py-yaml-load,deser-php-unserialize,deser-java-ois,"
    "path-js-readfile,path-py-concat,path-php-readfile,deser-py-safe-load,path-js-root"
)
SEED = "5"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def worse(text: str) -> str:
    return re.sub(r"\n(?:[3-7]|10)\. Flag[^\n]*", "", text)


@pytest.fixture
def repo(tmp_path: Path) -> Workspace:
    ws = demo(tmp_path / "project", ("deser", "path"))
    git(ws.root, "init", "-q", "-b", "main")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-qm", "skills and benchmark")
    return ws


def check(ws: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", "check", "--bench", DEMO_BENCHMARK, *args],
        capture_output=True,
        text=True,
        env=env(),
        cwd=ws.root,
        timeout=600,
    )


def skill_md(ws: Workspace) -> Path:
    return ws.skills_dir / DEMO_SKILL / "SKILL.md"


def test_a_worse_skill_in_the_working_tree_fails_the_check_and_is_named(repo: Workspace) -> None:
    shipped = skill_md(repo).read_text(encoding="utf-8")
    skill_md(repo).write_text(worse(shipped), encoding="utf-8")
    done = check(repo, "--cases", CASES, "--runs", "2", "--seed", SEED, "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["worse"] == [DEMO_SKILL]
    (skill,) = result["skills"]
    assert skill["status"] == "worse" and skill["verdict"]["ci_high"] < 0
    assert skill["agent_runs"] == 2 * 9 * 2
    assert f"worse with confidence: {DEMO_SKILL}" in done.stderr
    report = Path(result["report"]).read_text(encoding="utf-8")
    assert f"- {DEMO_SKILL}: worse — " in report
    assert "in the working tree" in report and "**newly broken**" in report
    # the two evaluations paired case runs on the same seeds
    before, after = (
        [json.loads(line) for line in (repo.runs_dir / run / "results.jsonl").open()]
        for run in skill["runs"]
    )
    assert sorted((r["case_id"], r["seed"]) for r in before) == sorted(
        (r["case_id"], r["seed"]) for r in after
    )


def test_an_unchanged_tree_evaluates_nothing_and_passes(repo: Workspace) -> None:
    runs = sorted(repo.runs_dir.iterdir())
    done = check(repo, "--cases", CASES)
    assert done.returncode == 0, done.stderr
    assert "no skill changed since" in done.stdout and "nothing evaluated" in done.stdout
    assert sorted(repo.runs_dir.iterdir()) == runs


def test_a_better_skill_passes_and_prints_its_verdict(repo: Workspace) -> None:
    shipped = skill_md(repo).read_text(encoding="utf-8")
    skill_md(repo).write_text(worse(shipped), encoding="utf-8")
    git(repo.root, "commit", "-qam", "a weaker skill on main")
    git(repo.root, "checkout", "-qb", "fix")
    skill_md(repo).write_text(shipped, encoding="utf-8")  # the pull request restores the steps
    done = check(repo, "--cases", CASES, "--runs", "2", "--seed", SEED)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith(f"{DEMO_SKILL}: "))
    shape = rf"{DEMO_SKILL}: better — \+\d+\.\d pts \[.*\] p\(changed\?\)=.* better"
    assert re.match(shape, line), line


def test_inconclusive_is_a_warning_unless_strict(repo: Workspace) -> None:
    text = skill_md(repo).read_text(encoding="utf-8")
    skill_md(repo).write_text(text + "\nA note for people that changes nothing.\n")
    done = check(repo, "--cases", "deser-py-pickle,path-js-root", "--runs", "1", "--seed", SEED)
    assert done.returncode == 0, done.stderr
    assert "warning: inconclusive" in done.stderr
    strict = check(repo, "--cases", "deser-py-pickle", "--runs", "1", "--seed", SEED, "--strict")
    assert strict.returncode == 1 and "error: inconclusive" in strict.stderr


def test_a_budget_below_one_run_per_case_is_bad_usage(repo: Workspace) -> None:
    skill_md(repo).write_text(worse(skill_md(repo).read_text(encoding="utf-8")))
    done = check(repo, "--cases", CASES, "--budget-runs", "10")
    assert done.returncode == 2
    assert done.stderr.startswith("skillsmith: error: --budget-runs 10: below one run")


def test_no_repository_or_an_unknown_ref_is_one_line(repo: Workspace, tmp_path: Path) -> None:
    bad = check(repo, "--against", "no-such-branch")
    assert bad.returncode == 2
    assert bad.stderr.startswith("skillsmith: error: --against no-such-branch: not a commit")
    loose = demo(tmp_path / "loose", ("path",))
    done = check(loose)
    assert done.returncode == 1 and "not in a git repository" in done.stderr
    assert "Traceback" not in done.stderr + bad.stderr


def test_a_smoke_list_naming_no_case_is_refused_with_its_field(repo: Workspace) -> None:
    bench = repo.benchmarks_dir / DEMO_BENCHMARK / "benchmark.yaml"
    config = yaml.safe_load(bench.read_text(encoding="utf-8"))
    bench.write_text(yaml.safe_dump({**config, "smoke": ["path-js-root", "nope"]}))
    with pytest.raises(FormatError, match=r"field 'smoke\[1\]': no case 'nope'"):
        load_benchmark(bench.parent)
    bench.write_text(yaml.safe_dump({**config, "smoke": ["path-js-root"]}))
    assert load_benchmark(bench.parent).smoke == ["path-js-root"]


def test_a_budget_fixes_the_first_look_and_leaves_the_rest_to_reruns() -> None:
    assert plan_runs(9, 2, None) == (2, 0)  # no budget: the benchmark's runs, no reruns
    assert plan_runs(9, 2, 100) == (2, 32)  # 36 runs first, 64 left: 32 per version
    assert plan_runs(9, 2, 30) == (1, 6)  # too few for two runs each: one, and 12 left
    assert plan_runs(9, 2, 18) == (1, 0)


def test_the_ci_recipe_in_the_docs_runs_and_fails_on_a_worse_skill(repo: Workspace) -> None:
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```yaml\n(.*?)```", page, re.S)
    workflow = yaml.safe_load(block)
    steps = workflow["jobs"]["check"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    assert steps[0]["with"]["fetch-depth"] == 0
    command = next(s["run"] for s in steps if "skillsmith check" in str(s.get("run")))
    # the docs' command as written: its cases are the benchmark's smoke list, and the agent's
    # noise is 0 here so that no seed is needed for an exact outcome
    bench = repo.benchmarks_dir / DEMO_BENCHMARK / "benchmark.yaml"
    config = yaml.safe_load(bench.read_text(encoding="utf-8"))
    config["smoke"] = CASES.split(",")
    bench.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    cfg = repo.load_config()
    cfg.agent.noise = 0.0
    repo.save_config(cfg)
    git(repo.root, "commit", "-qam", "smoke cases; a deterministic agent")
    skill_md(repo).write_text(worse(skill_md(repo).read_text(encoding="utf-8")))
    bin_dir = Path(sys.executable).parent
    summary = repo.root.parent / "summary.md"
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        capture_output=True,
        text=True,
        cwd=repo.root,
        timeout=600,
        env={**env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
             "GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert f"{DEMO_SKILL}: worse" in done.stdout
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## skillsmith check against ")
    assert f"- {DEMO_SKILL}: worse — " in text
