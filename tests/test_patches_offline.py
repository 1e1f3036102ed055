"""The offline proposer on the bundled demo: real runs of the demo agent before and after."""

from __future__ import annotations

import builtins
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.core.benchmark import Benchmark, load_benchmark
from engine.core.skill import SkillDoc
from engine.core.taboo import TabooEntry, diff_hash
from engine.core.workspace import Workspace
from engine.evaluation.demo.agent import discard_rules, plan
from engine.evaluation.diagnosis.run import diagnose_run, load_run
from engine.evaluation.patches import OfflineProposer, ProposalContext, make_proposer, run_filters
from engine.evaluation.runner import run_evaluation
from tests.bench_helpers import write_case
from tests.patch_helpers import DEMO_BENCH, DEMO_SKILL, demo_workspace, diagnosis

FN_CASES = ["sqli-go-sprintf", "xss-java-title", "secret-go-token"]
FP_CASES = ["path-py-basename", "crypto-py-md5-etag", "cmdi-js-execfile"]
SSRF = "ssrf-php-curl"  # a source handed straight to curl_init(
UNLOADED = "path-py-report"  # "before we ship it": the description does not trigger
PASSING = [
    "crypto-go-bcrypt",
    "path-go-base",
    "cmdi-go-args",
    "sqli-js-placeholders",
    "secret-py-env",
    "xss-py-render-template",
    "deser-php-unserialize",
    "deser-py-pickle-cookie",
    "crypto-java-md5",
    "deser-js-json",
]
CASES = FN_CASES + FP_CASES + [SSRF, UNLOADED] + PASSING


class Baseline:
    """One real evaluation of the demo skill on a few selection cases, shared by the tests."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.bench: Benchmark = load_benchmark(ws.benchmarks_dir / DEMO_BENCH)
        assert {self.bench.case(c).split for c in CASES} == {"selection"}
        self.result = run_evaluation(ws, DEMO_BENCH, runs=1, jobs=2, case_ids=CASES)
        self.rows = self.result.rows
        self.text = ws.skill_path(DEMO_SKILL).read_text(encoding="utf-8")
        run = load_run(self.result.run_id, ws)
        self.diagnosis = diagnose_run(run, skill=DEMO_SKILL, bench=self.bench)
        self.outcome = {r["case_id"]: r["pass_fail"] for r in self.rows}

    def context(self, **kwargs: Any) -> ProposalContext:
        defaults: dict[str, Any] = {
            "skill_name": DEMO_SKILL,
            "skill_text": self.text,
            "diagnosis": self.diagnosis,
            "feedback_rows": self.rows,
            "bench": self.bench,
        }
        return ProposalContext(**{**defaults, **kwargs})

    def rerun(self, text: str) -> dict[str, str]:
        result = run_evaluation(
            self.ws, DEMO_BENCH, runs=1, jobs=2, case_ids=CASES, skills={DEMO_SKILL: text}
        )
        return {r["case_id"]: r["pass_fail"] for r in result.rows}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Baseline:
    return Baseline(demo_workspace(tmp_path_factory.mktemp("offline")))


def _fixed_and_broken(before: dict[str, str], after: dict[str, str]) -> tuple[set[str], set[str]]:
    fixed = {c for c in after if before[c] != "pass" and after[c] == "pass"}
    broken = {c for c in after if before[c] == "pass" and after[c] != "pass"}
    return fixed, broken


def test_the_baseline_has_the_failures_the_tests_rely_on(baseline: Baseline) -> None:
    failing = [*FN_CASES, *FP_CASES, SSRF, UNLOADED]
    assert {c for c in failing if baseline.outcome[c] == "fail"} == set(failing)
    assert all(baseline.outcome[c] == "pass" for c in PASSING)
    assert baseline.diagnosis.actionable[0].id == "FN + progress_mismatch"


def test_missed_positives_get_a_flag_step_that_flips_them(baseline: Baseline) -> None:
    ctx = baseline.context()
    proposal = OfflineProposer(baseline.ws, seed=7).propose(ctx)

    assert proposal.ok, proposal.reason
    assert (proposal.rule_id, proposal.direction) == ("progress_mismatch", "FN")
    assert proposal.model == "offline" and proposal.cost_usd == 0.0
    assert proposal.skill_text is not None
    new_steps = plan(SkillDoc.parse(proposal.skill_text))
    added = [s for s in new_steps if s.command and s.command not in baseline.text]
    assert len(added) == 1 and added[0].flags
    assert added[0].command is not None and added[0].command.startswith("grep -nE ")
    assert run_filters(
        proposal.diff or "",
        baseline.text,
        taboo=[],
        rule_id="progress_mismatch",
        direction="FN",
        limits=baseline.ws.load_config().limits,
    ).passed

    fixed, broken = _fixed_and_broken(baseline.outcome, baseline.rerun(proposal.skill_text))

    assert fixed & set(proposal.case_ids), (fixed, proposal.case_ids)
    assert fixed <= set(FN_CASES)
    assert broken == set()


def test_false_alarms_get_pitfalls_the_demo_agent_honours(baseline: Baseline) -> None:
    cause = {"rule_id": "progress_mismatch", "direction": "FP", "case_ids": FP_CASES[:2]}
    ctx = baseline.context(diagnosis=diagnosis(cause))

    proposal = OfflineProposer(baseline.ws, seed=7).propose(ctx)

    assert proposal.ok, proposal.reason
    assert proposal.skill_text is not None
    rules = discard_rules(SkillDoc.parse(proposal.skill_text))
    assert len(rules) > len(discard_rules(SkillDoc.parse(baseline.text)))
    fixed, broken = _fixed_and_broken(baseline.outcome, baseline.rerun(proposal.skill_text))
    assert "path-py-basename" in fixed
    assert broken == set()


def test_concluding_at_the_first_hit_gets_every_step_run(baseline: Baseline) -> None:
    haste = [rc for rc in baseline.diagnosis.root_causes if rc.rule_id == "premature_conclusion"]
    assert haste and "cmdi-js-execfile" in haste[0].case_ids
    ctx = baseline.context(target=haste[0].id)

    proposal = OfflineProposer(baseline.ws, seed=7).propose(ctx)

    assert proposal.ok and proposal.skill_text is not None
    assert "run all steps before you conclude" in proposal.skill_text
    fixed, broken = _fixed_and_broken(baseline.outcome, baseline.rerun(proposal.skill_text))
    assert "cmdi-js-execfile" in fixed
    assert broken == set()


def test_a_looping_step_is_made_to_run_once(baseline: Baseline) -> None:
    cause = {"rule_id": "tool_loop", "direction": "FN", "case_ids": ["sqli-php-concat"]}
    proposal = OfflineProposer(baseline.ws, seed=7).propose(
        baseline.context(diagnosis=diagnosis(cause))
    )
    assert proposal.ok and proposal.skill_text is not None
    assert any(s.loops for s in plan(SkillDoc.parse(baseline.text)))
    assert not any(s.loops for s in plan(SkillDoc.parse(proposal.skill_text)))
    assert "repeat until" not in proposal.skill_text


def test_same_seed_same_patch(baseline: Baseline) -> None:
    first = OfflineProposer(baseline.ws, seed=11).propose(baseline.context())
    again = make_proposer("offline", baseline.ws, seed=11).propose(baseline.context())
    assert first.ok and first.diff == again.diff and first.reason == again.reason


def test_a_taboo_diff_is_never_repeated(baseline: Baseline) -> None:
    first = OfflineProposer(baseline.ws, seed=7).propose(baseline.context())
    assert first.diff is not None
    entry = TabooEntry(first.taboo_rule, diff_hash(first.diff), "guardrail", "2026-05-27")

    second = OfflineProposer(baseline.ws, seed=7).propose(baseline.context(taboo_entries=[entry]))

    assert second.ok and second.diff != first.diff
    # the next idea comes from another root cause, not the rejected one's next-best candidate
    assert (second.rule_id, second.direction) != (first.rule_id, first.direction)
    # told to stay on the rejected cause, it never repeats the rejected diff either
    cause = f"{first.direction} + {first.rule_id}"
    again = OfflineProposer(baseline.ws, seed=7).propose(
        baseline.context(taboo_entries=[entry], target=cause)
    )
    assert again.ok and again.diff != first.diff
    assert (again.rule_id, again.direction) == (first.rule_id, first.direction)


def test_gt_flagged_cases_are_passed_over_while_others_fail(baseline: Baseline) -> None:
    cause = {"rule_id": "progress_mismatch", "direction": "FN", "case_ids": FN_CASES}
    flagged = baseline.context(diagnosis=diagnosis(cause), gt_flags=[{"case_id": FN_CASES[0]}])
    proposal = OfflineProposer(baseline.ws, seed=7).propose(flagged)
    assert proposal.ok and proposal.case_ids
    assert FN_CASES[0] not in proposal.case_ids
    assert "GT-suspected" not in proposal.reason


def test_only_suspected_failures_left_are_used_and_said_so(baseline: Baseline) -> None:
    cause = {"rule_id": "progress_mismatch", "direction": "FN", "case_ids": FN_CASES}
    ctx = baseline.context(diagnosis=diagnosis(cause), gt_flags=[*FN_CASES, SSRF, UNLOADED])
    proposal = OfflineProposer(baseline.ws, seed=7).propose(ctx)
    assert proposal.ok
    assert "every such failure is a GT-suspected case" in proposal.reason


def test_a_task_that_never_loaded_the_skill_adds_its_words_to_the_description(
    baseline: Baseline,
) -> None:
    case = UNLOADED
    cause = {"rule_id": "skill_not_loaded", "direction": "FN", "case_ids": [case]}
    proposal = OfflineProposer(baseline.ws, seed=7).propose(
        baseline.context(diagnosis=diagnosis(cause))
    )
    assert proposal.ok and proposal.skill_text is not None
    before, after = SkillDoc.parse(baseline.text), SkillDoc.parse(proposal.skill_text)
    assert after.description is not None and before.description is not None
    assert after.description.startswith(before.description + " Also use it when a task mentions ")
    assert after.steps == before.steps
    added = after.description[len(before.description) :].lower()
    prompt = baseline.bench.case(case).prompt().lower()
    assert all(
        word in prompt for word in re.findall(r"mentions (\w+)(?: or (\w+))?", added)[0] if word
    )


def test_a_source_handed_to_a_call_is_flagged_across_languages_with_its_guards(
    baseline: Baseline,
) -> None:
    # guards are Pitfalls items, so they work for an agent that reads the Pitfalls: start from
    # the skill that already runs every step (what the loop accepts first on the demo)
    haste = {"rule_id": "premature_conclusion", "direction": "FP", "case_ids": ["cmdi-js-execfile"]}
    thorough = OfflineProposer(baseline.ws, seed=7).propose(
        baseline.context(diagnosis=diagnosis(haste))
    )
    assert thorough.skill_text is not None
    before = baseline.rerun(thorough.skill_text)
    cause = {"rule_id": "redundant_retry", "direction": "FN", "case_ids": [SSRF]}
    ctx = baseline.context(diagnosis=diagnosis(cause), skill_text=thorough.skill_text)

    proposal = OfflineProposer(baseline.ws, seed=7).propose(ctx)

    assert proposal.ok and proposal.skill_text is not None
    new = [
        s for s in plan(SkillDoc.parse(proposal.skill_text)) if s.command not in thorough.skill_text
    ]
    assert len(new) == 1 and new[0].command is not None
    assert r"\w\((" in new[0].command and r"req\.query" in new[0].command
    assert all(glob in new[0].command for glob in ("*.py", "*.js", "*.php", "*.go", "*.java"))
    # the negatives that hand a source to a harmless call are ruled out by a Pitfalls item
    rules = discard_rules(SkillDoc.parse(proposal.skill_text))
    assert len(rules) == len(discard_rules(SkillDoc.parse(thorough.skill_text))) + 1
    fixed, broken = _fixed_and_broken(before, baseline.rerun(proposal.skill_text))
    assert SSRF in fixed and broken == set()


def test_the_every_step_item_is_not_added_twice(baseline: Baseline) -> None:
    cause = {"rule_id": "premature_conclusion", "direction": "FP", "case_ids": ["cmdi-js-execfile"]}
    first = OfflineProposer(baseline.ws, seed=7).propose(
        baseline.context(diagnosis=diagnosis(cause))
    )
    assert first.ok and first.skill_text is not None
    again = OfflineProposer(baseline.ws, seed=7).propose(
        baseline.context(diagnosis=diagnosis(cause), skill_text=first.skill_text)
    )
    assert not (again.skill_text or "").count("run all steps before you conclude") > 1


def test_false_alarms_never_widen_a_steps_globs(baseline: Baseline) -> None:
    cause = {"rule_id": "progress_mismatch", "direction": "FP", "case_ids": ["deser-java-filter"]}
    proposal = OfflineProposer(baseline.ws, seed=7).propose(
        baseline.context(diagnosis=diagnosis(cause))
    )
    old = {s.number: s.command for s in plan(SkillDoc.parse(baseline.text))}
    new = {s.number: s.command for s in plan(SkillDoc.parse(proposal.skill_text or baseline.text))}
    assert new == old


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """Every file opened or folder walked while the test runs."""
    seen: list[Path] = []
    real_open, real_walk = builtins.open, os.walk
    real_bytes, real_text = Path.read_bytes, Path.read_text

    def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, Path)):
            seen.append(Path(file))
        return real_open(file, *args, **kwargs)

    def spy_walk(top: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(Path(top))
        return real_walk(top, *args, **kwargs)

    def spy_bytes(self: Path) -> bytes:
        seen.append(self)
        return real_bytes(self)

    def spy_text(self: Path, *args: Any, **kwargs: Any) -> str:
        seen.append(self)
        return real_text(self, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(os, "walk", spy_walk)
    monkeypatch.setattr(Path, "read_bytes", spy_bytes)
    monkeypatch.setattr(Path, "read_text", spy_text)
    yield seen


def test_only_statements_of_the_given_split_are_read(baseline: Baseline, reads: list[Path]) -> None:
    held_out = [c for c in baseline.bench.cases if c.split in ("holdout", "golden")]
    assert held_out
    leaked_rows = [
        {
            "case_id": c.id,
            "split": c.split,
            "variant": "skill",
            "pass_fail": "fail",
            "failure_kind": "FN",
            "ground_truth": "vulnerable",
        }
        for c in held_out
    ]
    ctx = baseline.context(feedback_rows=[*baseline.rows, *leaked_rows])

    proposal = OfflineProposer(baseline.ws, seed=7).propose(ctx)

    assert proposal.ok
    assert not set(proposal.case_ids) & {c.id for c in held_out}
    touched = {p.resolve() for p in reads}
    for case in baseline.bench.cases:
        assert not any(p.is_relative_to(case.rubric_dir.resolve()) for p in touched), case.id
        if case.split in ("holdout", "golden"):
            assert not any(p.is_relative_to(case.dir.resolve()) for p in touched), case.id
    assert any(
        p.is_relative_to(baseline.bench.case(FN_CASES[0]).statement_dir.resolve()) for p in touched
    )


def test_refusals_without_benchmark_or_cause(baseline: Baseline) -> None:
    proposer = OfflineProposer(baseline.ws, seed=7)
    no_bench = proposer.propose(baseline.context(bench=None))
    assert not no_bench.ok and "needs the benchmark" in no_bench.reason
    quiet = {"rule_id": "tool_loop", "direction": "FN", "case_ids": ["x"], "worth_patch": False}
    none = proposer.propose(baseline.context(diagnosis=diagnosis(quiet)))
    assert not none.ok and none.reason == "no root cause worth a patch"


# -- a step that skips the failing language gets its glob ----------------------------------------

GLOB_SKILL = """\
---
name: query-audit
description: Audit one source file for SQL injection. Use when asked whether a file is vulnerable.
---

# Query audit

## Steps

1. Read the file under audit: `read <file>`.
2. Flag SQL built by concatenation: `grep -nE "Query\\(\\".*\\" \\+" *.py`

## Pitfalls

- A query with `?` placeholders — not a finding.
"""
VULN_GO = """package users

func Find(db *sql.DB, name string) {
\trows, _ := db.Query("SELECT id FROM users WHERE name = '" + name + "'")
\t_ = rows
}
"""
SAFE_GO = """package users

func Count(db *sql.DB, a string, b string) int {
\trows, _ := db.Query("SELECT id FROM users WHERE name = ?", a)
\t_ = rows
\treturn db.Query(a) + db.Query(b)
}
"""
PROMPT = "Audit `{name}` for SQL injection.\n\nEnd with `VERDICT: vulnerable` or `VERDICT: safe`.\n"


def test_a_step_whose_globs_miss_the_language_is_widened(workspace: Workspace) -> None:
    skill = workspace.skill_path("query-audit")
    skill.parent.mkdir(parents=True)
    skill.write_text(GLOB_SKILL, encoding="utf-8")
    root = workspace.benchmarks_dir / "sql"
    root.mkdir(parents=True)
    config = {"labels": ["vulnerable", "safe"], "runs_per_case": 1, "seed": 7}
    (root / "benchmark.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    for case_id, label, code in (("vuln-go", "vulnerable", VULN_GO), ("safe-go", "safe", SAFE_GO)):
        write_case(
            root,
            case_id,
            {"expected": label, "split": "selection"},
            prompt=PROMPT.format(name="find.go"),
            files={"find.go": code},
        )
    bench = load_benchmark(root)
    before = run_evaluation(workspace, "sql", runs=1, jobs=2)
    outcome = {r["case_id"]: r["pass_fail"] for r in before.rows}
    assert outcome == {"vuln-go": "fail", "safe-go": "pass"}
    diag = diagnose_run(load_run(before.run_id, workspace), skill="query-audit", bench=bench)
    assert "FN + progress_mismatch" in [rc.id for rc in diag.actionable]
    ctx = ProposalContext(
        "query-audit",
        GLOB_SKILL,
        diag,
        feedback_rows=before.rows,
        bench=bench,
        target="FN + progress_mismatch",
    )

    proposal = OfflineProposer(workspace, seed=7).propose(ctx)

    assert proposal.ok, proposal.reason
    assert proposal.skill_text == GLOB_SKILL.replace('\\+" *.py`', '\\+" *.py *.go`')
    after = run_evaluation(
        workspace, "sql", runs=1, jobs=2, skills={"query-audit": proposal.skill_text}
    )
    assert {r["case_id"]: r["pass_fail"] for r in after.rows} == {
        "vuln-go": "pass",
        "safe-go": "pass",
    }
