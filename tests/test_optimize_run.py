"""Optimization runs end to end: a real command agent, the real anthropic SDK against the local
Messages-API server as the reflection model, real run folders, the real queue.

The keyword agent answers "vulnerable" for every case once a skill says ``flag all``: the
scripted model adds that step, which fixes every positive case and breaks every negative one —
so whether the pick may be submitted depends only on the holdout rules under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.core.errors import UsageError
from engine.core.fsutil import read_jsonl
from engine.core.queue import CandidateQueue
from engine.core.sessions import list_sessions
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from engine.loops.gepa import OptimizeFailed, OptimizeOptions, optimize
from tests.candidate_helpers import add_skill, skill_text
from tests.llm_server import MessagesServer, Reply
from tests.optimize_helpers import (
    BENCH,
    SEED_STEPS,
    SKILL,
    keyword_workspace,
    rewriting,
    selected_section,
    standard_cases,
    use_server,
)

SEED = 3
# Three Feedback cases a round (GEPA's paper's minibatch): every figure below — metric calls,
# which look decides — was worked out on it; the default's eight only change those figures.
BATCH = 3
ONE_ROUND = OptimizeOptions(reflection_batch=BATCH, iterations=1, jobs=2)


def _events(ws: Workspace, experiment_id: str) -> list[dict]:  # type: ignore[type-arg]
    return read_jsonl(ws.experiments_dir / experiment_id / "events.jsonl")


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, messages_server: MessagesServer) -> MessagesServer:
    use_server(monkeypatch, messages_server)
    return messages_server


def test_an_improving_candidate_is_queued_for_approval_with_its_evidence(
    tmp_path: Path, served: MessagesServer
) -> None:
    ws = keyword_workspace(tmp_path / "ws", standard_cases(critical_safe_holdout=False))
    served.respond_with(rewriting("Flag every call site: flag all"))
    result = optimize(ws, SKILL, BENCH, ONE_ROUND)

    assert result.status == "submitted", result.reason
    assert result.stop_reason == "max_iterations" and result.iterations == 1
    # seed on validation 10, parent and child on the minibatch 3 + 3, child on validation 10,
    # seed and pick on holdout 10 + 10: every metric call is one agent run.
    assert result.metric_calls == 46
    assert [p["validation_mean"] for p in result.pool] == [0.2, 0.8]
    assert result.holdout is not None
    assert (result.holdout["seed_mean"], result.holdout["candidate_mean"]) == (0.2, 0.8)
    assert sorted(result.holdout["worsened"]) == ["hol-neg-00", "hol-neg-01"]

    cand = CandidateQueue(ws).get(result.candidate or "")
    assert cand.status == "pending_approval" and cand.source == "optimize"
    assert cand.operation == "update" and cand.parent_version == "v0"
    assert [h.status for h in cand.history] == ["proposed", "pending_approval"]
    assert "flag all" in cand.skill_text()
    assert "+3. Flag every call site: flag all" in cand.patch_text()
    assert cand.delta_score == pytest.approx(0.6)
    gates = {g["gate"]: g for g in cand.gates()}
    assert list(gates) == ["holdout_promotion", "spec", "safety", "effectiveness", "human"]
    assert gates["holdout_promotion"]["figures"]["candidate_mean"] == 0.8
    assert gates["human"]["verdict"] == "held"
    assert SkillStore(ws, SKILL).current() == "v0"  # queued, never published

    # The model saw only Feedback cases (their tokens are their ids), under anonymous labels.
    prompt = served.message_requests[0].json["messages"][0]["content"]
    assert "Selected section: steps" in prompt
    assert "val-" not in prompt and "hol-" not in prompt
    assert '"case": "case-1"' in prompt and '"case": "fb-' not in prompt

    folder = ws.experiments_dir / result.experiment_id
    record = json.loads((folder / "experiment.json").read_text())
    assert record["splits"]["feedback"] == [f"fb-{i:02d}" for i in range(10)]
    assert json.loads((folder / "result.json").read_text())["status"] == "submitted"
    phases = sorted(
        p.name.split("-", 1)[1].rsplit("-", 1)[0] for p in (folder / "evaluations").iterdir()
    )
    assert phases == sorted(
        [
            *("validation", "feedback-parent", "feedback-child", "validation"),
            *("holdout-baseline", "holdout-candidate"),
        ]
    )
    evaluations = [json.loads(p.read_text()) for p in sorted((folder / "evaluations").iterdir())]
    # The Optimizer session names every run it started, so each figure leads back to its run.
    sessions = list_sessions(ws, "gepa")
    assert [(s.session_id, s.status) for s in sessions] == [(result.experiment_id, "submitted")]
    assert list(sessions[0].run_ids) == [e["run_id"] for e in evaluations]
    kinds = [e["kind"] for e in _events(ws, result.experiment_id)]
    for kind in ("parent_selected", "minibatch", "reflection", "candidate_accepted", "selected"):
        assert kind in kinds
    assert kinds[-2:] == ["promotion", "finished"]


def test_a_candidate_regressing_a_critical_case_is_never_submitted(
    tmp_path: Path, served: MessagesServer
) -> None:
    ws = keyword_workspace(tmp_path / "ws", standard_cases(critical_safe_holdout=True))
    served.respond_with(rewriting("Flag every call site: flag all"))
    result = optimize(ws, SKILL, BENCH, ONE_ROUND)

    assert result.status == "not_submitted"
    assert result.reason == "critical holdout case regressed: hol-neg-00"
    assert result.pool[1]["why"].endswith("; holdout: critical holdout case regressed: hol-neg-00")
    assert result.holdout is not None and result.holdout["candidate_mean"] == 0.8
    assert result.candidate is None
    assert CandidateQueue(ws).list() == []
    promotion = [e for e in _events(ws, result.experiment_id) if e["kind"] == "promotion"]
    assert promotion[0]["eligible"] is False


def test_a_time_limit_fails_the_run_and_submits_nothing(
    tmp_path: Path, served: MessagesServer
) -> None:
    ws = keyword_workspace(tmp_path / "ws", standard_cases(critical_safe_holdout=False))
    served.respond_with(rewriting("Flag every call site: flag all"))
    with pytest.raises(OptimizeFailed, match=r"time limit of 0\.2s") as caught:
        optimize(
            ws,
            SKILL,
            BENCH,
            OptimizeOptions(reflection_batch=BATCH, iterations=3, jobs=1, time_limit_s=0.2),
        )
    result = caught.value.result
    assert result.status == "failed" and result.candidate is None
    assert CandidateQueue(ws).list() == []
    stored = json.loads((ws.experiments_dir / result.experiment_id / "result.json").read_text())
    assert stored["status"] == "failed" and "nothing was submitted" in stored["reason"]


def test_the_budget_is_never_exceeded(tmp_path: Path, served: MessagesServer) -> None:
    ws = keyword_workspace(tmp_path / "ws", standard_cases(critical_safe_holdout=False))
    served.respond_with(rewriting("Flag every call site: flag all"))
    # The seed's validation (10) plus one round (3 + 3 + 10) plus the holdout reserve (20) is 46:
    # with 45 the search stops before the first round.
    result = optimize(
        ws, SKILL, BENCH, OptimizeOptions(reflection_batch=BATCH, iterations=5, max_metric_calls=45)
    )
    assert result.stop_reason == "metric_budget"
    assert result.metric_calls == 10 <= 45
    assert result.reason == "no candidate has a higher validation mean than the seed"
    assert served.message_requests == []
    with pytest.raises(UsageError, match="cannot cover"):
        optimize(ws, SKILL, BENCH, OptimizeOptions(reflection_batch=BATCH, max_metric_calls=29))


def test_a_malformed_reflection_is_rejected_and_the_search_goes_on(
    tmp_path: Path, served: MessagesServer
) -> None:
    ws = keyword_workspace(tmp_path / "ws", standard_cases(critical_safe_holdout=False))
    served.respond_with(lambda req: Reply(text="I think the skill is fine as it is."))
    result = optimize(
        ws, SKILL, BENCH, OptimizeOptions(reflection_batch=BATCH, iterations=2, jobs=2)
    )
    assert result.status == "not_submitted"
    assert result.reason == "no candidate has a higher validation mean than the seed"
    rejected = [e for e in _events(ws, result.experiment_id) if e["kind"] == "reflection_rejected"]
    assert len(rejected) == 8
    assert {r["error"] for r in rejected} == {"the answer holds no JSON object"}
    # Each round asks for every section in turn: one unusable answer does not end the round.
    assert [(r["iteration"], r["section"]) for r in rejected] == [
        (i, s) for i in (1, 2) for s in ("steps", "pitfalls", "when_to_use", "description")
    ]
    assert result.metric_calls == 10 + 3 + 3  # two parent minibatches, no child evaluated


def test_one_round_rewrites_every_section_the_records_call_for(
    tmp_path: Path, served: MessagesServer
) -> None:
    ws = keyword_workspace(tmp_path / "ws", standard_cases(critical_safe_holdout=False))
    add_step = rewriting("Flag every call site: flag all")

    def respond(req: dict[str, Any]) -> Reply:
        section, sections = selected_section(req)
        if section != "pitfalls":
            return add_step(req)
        text = sections["pitfalls"] + "\n- A `noqa` comment proves nothing — not a finding."
        return Reply(text=json.dumps({"section": section, "text": text, "rationale": "scripted"}))

    served.respond_with(respond)
    result = optimize(
        ws,
        SKILL,
        BENCH,
        OptimizeOptions(reflection_batch=BATCH, iterations=1, jobs=2, submit=False),
    )
    asked = [selected_section(r.json) for r in served.message_requests]
    assert [section for section, _ in asked] == ["steps", "pitfalls", "when_to_use", "description"]
    # the pitfalls are rewritten on the steps as already rewritten this round
    assert "flag all" in asked[1][1]["steps"]
    folder = ws.experiments_dir / result.experiment_id / "candidates"
    child = json.loads((folder / f"{result.pool[1]['id']}.json").read_text())
    assert child["section"] == "steps, pitfalls"
    assert "flag all" in child["skill_md"] and "`noqa` comment" in child["skill_md"]


def test_a_model_client_failure_fails_the_run(tmp_path: Path, served: MessagesServer) -> None:
    ws = keyword_workspace(tmp_path / "ws", standard_cases(critical_safe_holdout=False))
    # No script: the server answers 400 invalid_request_error, which the client does not retry.
    with pytest.raises(OptimizeFailed, match="reflection failed") as caught:
        optimize(ws, SKILL, BENCH, ONE_ROUND)
    assert caught.value.result.status == "failed"
    assert CandidateQueue(ws).list() == []


def test_nothing_reaches_stdout_and_secrets_stay_out_of_the_record(
    tmp_path: Path, served: MessagesServer, capfd: pytest.CaptureFixture[str]
) -> None:
    cases = standard_cases(critical_safe_holdout=False)
    ws = keyword_workspace(tmp_path / "ws", cases)
    key = "sk-ant-api03-" + "Qm3ZpX7vB1nR4tY6uW0eS5cH2gFa8Kd92jdL"
    for case_id in cases:
        prompt = ws.benchmarks_dir / BENCH / case_id / "statement" / "prompt.md"
        prompt.write_text(prompt.read_text() + f"\nThe deploy key is {key}.\n")
    served.respond_with(rewriting("Flag every call site: flag all"))
    capfd.readouterr()
    result = optimize(ws, SKILL, BENCH, ONE_ROUND)
    assert capfd.readouterr().out == ""  # gepa's logger would print every iteration
    assert result.status == "submitted"
    assert served.message_requests
    assert all(key not in json.dumps(r.json) for r in served.message_requests)
    stored = [p.read_text() for p in (ws.experiments_dir / result.experiment_id).rglob("*.json*")]
    assert stored and all(key not in text for text in stored)
    assert any("[REDACTED]" in text for text in stored)


def test_small_splits_refuse_to_submit_unless_asked_not_to(
    tmp_path: Path, served: MessagesServer
) -> None:
    cases = {
        **{f"fb-{i}": ("feedback", "vulnerable", False) for i in range(4)},
        **{f"val-{i}": ("validation", "vulnerable", False) for i in range(4)},
        **{f"hol-{i}": ("holdout", "vulnerable", False) for i in range(4)},
    }
    ws = keyword_workspace(tmp_path / "ws", cases)
    with pytest.raises(UsageError, match="at least 10 cases per split"):
        optimize(ws, SKILL, BENCH, ONE_ROUND)
    served.respond_with(rewriting("Flag every call site: flag all"))
    result = optimize(
        ws, SKILL, BENCH, OptimizeOptions(reflection_batch=BATCH, iterations=1, submit=False)
    )
    assert result.status == "not_submitted"
    # All four holdout cases fixed is p = 1/16 by the exact test: on splits this small no gain
    # can be told from noise, so nothing may be submitted (the validation figure, the same
    # p = 1/16 over its four cases, is only recorded: the pick was chosen by it).
    assert result.reason.startswith("holdout gain not shown: "), result.reason
    assert result.holdout is not None and result.holdout["verdict"]["p_value"] == 0.0625
    assert result.validation is not None and result.validation["p_value"] == 0.0625
    assert CandidateQueue(ws).list() == []


def test_when_nothing_beats_the_seed_the_record_says_why_per_candidate(
    tmp_path: Path, served: MessagesServer
) -> None:
    # The rewrite flags exactly the Feedback cases: it wins its minibatch and so joins the
    # pool, and changes nothing on Validation, where the seed is already as good as it gets.
    ws = keyword_workspace(tmp_path / "ws", standard_cases(critical_safe_holdout=False))
    tokens = " ".join(f"flag fb-{i:02d}" for i in range(10))
    served.respond_with(rewriting(f"Flag the cases seen: {tokens}"))
    result = optimize(ws, SKILL, BENCH, ONE_ROUND)

    assert result.status == "not_submitted"
    assert result.reason == "no candidate has a higher validation mean than the seed"
    assert [p["validation_mean"] for p in result.pool] == [0.2, 0.2]
    seed, child = result.pool
    assert seed["why"] == "the seed, kept: no candidate has a higher validation mean"
    assert child["why"] == "validation mean 0.2000 does not beat the seed's 0.2000"
    assert seed["wins"] == child["wins"] == []  # they tie on every validation case
    recorded = json.loads((ws.experiments_dir / result.experiment_id / "result.json").read_text())
    assert [p["why"] for p in recorded["pool"]] == [seed["why"], child["why"]]
    assert CandidateQueue(ws).list() == []


def test_a_planted_seed_that_is_already_best_is_kept_and_each_candidate_says_why(
    tmp_path: Path, served: MessagesServer
) -> None:
    # The planted seed flags everything but the validation and holdout negatives, so it is
    # right on every case there; on Feedback it is wrong on the two negatives. Each round's
    # rewrite clears one of them: it wins its minibatch and joins the pool — and cannot beat a
    # seed that is already perfect where candidates are compared.
    cases = standard_cases(critical_safe_holdout=False)
    cases |= {f"fb-neg-{i:02d}": ("feedback", "safe", False) for i in range(2)}
    ws = keyword_workspace(tmp_path / "ws", cases)
    spared = " ".join(f"ignore {c}" for c in cases if "-neg-" in c and not c.startswith("fb"))
    planted = (*SEED_STEPS, "Flag every call site: flag all", f"Known safe: {spared}")
    add_skill(ws, SKILL, skill_text(SKILL, steps=planted))
    lines = iter(f"Known safe too: ignore fb-neg-{i:02d}" for i in range(2))

    def respond(req: dict[str, Any]) -> Reply:
        section, sections = selected_section(req)
        text = sections[section]
        if section == "steps":
            text = f"{text}\n{text.count(chr(10)) + 2}. {next(lines)}"
        return Reply(text=json.dumps({"section": section, "text": text, "rationale": "scripted"}))

    served.respond_with(respond)
    options = OptimizeOptions(iterations=2, reflection_batch=12, jobs=2)
    result = optimize(ws, SKILL, BENCH, options)

    assert result.status == "not_submitted"
    assert result.reason == "no candidate has a higher validation mean than the seed"
    seed, *children = result.pool
    assert seed["validation_mean"] == 1.0
    assert seed["why"] == "the seed, kept: no candidate has a higher validation mean"
    assert children and all(c["validation_mean"] == 1.0 for c in children)
    assert [c["why"] for c in children] == [
        "validation mean 1.0000 does not beat the seed's 1.0000"
    ] * len(children)
    assert result.holdout is None  # the seed was kept: nothing to promote, no holdout spent
    recorded = json.loads((ws.experiments_dir / result.experiment_id / "result.json").read_text())
    assert [p["why"] for p in recorded["pool"]] == [p["why"] for p in result.pool]
    assert CandidateQueue(ws).list() == []


def test_an_inconclusive_holdout_is_decided_by_rerunning_its_deciding_cases(
    tmp_path: Path, served: MessagesServer
) -> None:
    # A noisy agent (every answer flips at 0.3, seeded per run) with the run's seed fixed, so the
    # draws — and hence which look decides — are the same on every machine.
    ws = keyword_workspace(tmp_path / "ws", standard_cases(critical_safe_holdout=False), noise=0.3)
    served.respond_with(rewriting("Flag every call site: flag all"))
    result = optimize(
        ws, SKILL, BENCH, OptimizeOptions(reflection_batch=BATCH, iterations=1, jobs=2, seed=3)
    )

    # On Validation the pick is +40 pts at p=0.11 (this seed, measured): no evidence, but the
    # best mean, so it is the pick; that figure is recorded, never rerun (Validation chose it).
    validation = result.validation
    assert validation is not None and validation["decision"] == "inconclusive"
    assert validation["extra_runs"] == 0 and validation["p_value"] == pytest.approx(0.111, abs=1e-3)
    assert result.pool[1]["why"].startswith("picked: the best validation mean")
    # On Holdout the first look is inconclusive; rerunning only the cases whose runs disagree
    # decides it.
    assert result.holdout is not None
    holdout = result.holdout["verdict"]
    assert holdout["decision"] == "better" and holdout["extra_runs"] == 20
    assert holdout["line"].endswith("(10 paired cases, 1 run, +20 extra)")
    assert result.status == "submitted", result.reason
    assert "+20 extra" in result.reason
    # Every rerun is a metric call: 46 for the search and the first looks, plus both variants'
    # extra runs.
    assert result.metric_calls == 46 + 2 * holdout["extra_runs"]

    folder = ws.experiments_dir / result.experiment_id
    stored = json.loads((folder / "result.json").read_text())
    assert stored["holdout"]["verdict"]["extra_runs"] == 20
    reruns = [json.loads(p.read_text()) for p in sorted((folder / "evaluations").iterdir())]
    reruns = [e for e in reruns if "rerun" in e["phase"]]
    assert {e["phase"] for e in reruns} == {"holdout-rerun-baseline", "holdout-rerun-candidate"}
    # Both variants reran the same cases on the same seed, so their runs pair.
    base = [e for e in reruns if e["phase"] == "holdout-rerun-baseline"]
    pick = [e for e in reruns if e["phase"] == "holdout-rerun-candidate"]
    assert len(base) == len(pick) >= 1  # one rerun a look
    for b, a in zip(base, pick, strict=True):
        assert [r["case_id"] for r in b["results"]] == [r["case_id"] for r in a["results"]]
    assert sum(len(b["results"]) for b in base) == 20
    cand = CandidateQueue(ws).get(result.candidate or "")
    figures = {g["gate"]: g for g in cand.gates()}["holdout_promotion"]["figures"]
    assert figures["extra_runs"] == holdout["extra_runs"]
