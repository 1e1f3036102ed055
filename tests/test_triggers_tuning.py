"""Description tuning: real agent runs, load rate from their transcripts, held-out choice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.config import GatesConfig, ModelConfig
from engine.core.errors import FormatError
from engine.core.queue import CandidateQueue
from engine.core.skill import SkillDoc
from engine.core.workspace import Workspace
from engine.evaluation.runner import unit_seed
from engine.loops.triggers import (
    TriggerQuery,
    _segments,
    can_improve,
    load_queries,
    split_queries,
    tune_description,
)
from tests.candidate_helpers import add_skill, skill_text
from tests.llm_server import MessagesServer, last_user_text
from tests.online_helpers import DATA, add_weather_skill

# A command agent that decides loading from the description alone: it loads a skill when a word
# of five letters or more of the description occurs in the task, and logs the load as the
# brief's `Skill` tool call.
AGENT = DATA / "trigger_agent.sh"
ROOT = Path(__file__).resolve().parents[1]
POSITIVE = ("alpaca", "badger", "cheetah", "donkey", "falcon")
NEGATIVE = ("gazelle", "hamster", "iguana", "jaguar", "lemming")


def _queries() -> list[TriggerQuery]:
    return [TriggerQuery(f"Please look after the {w} today", True) for w in POSITIVE] + [
        TriggerQuery(f"Please look after the {w} today", False) for w in NEGATIVE
    ]


def _word(query: TriggerQuery) -> str:
    return query.query.split()[4]


def _command_workspace(ws: Workspace, *args: str) -> None:
    cfg = ws.load_config()
    cfg.agent.kind = "command"
    cfg.agent.command = ["sh", str(AGENT), *args]
    ws.save_config(cfg)
    add_skill(ws, "zoo-keeper", skill_text("zoo-keeper", description="Generic helper"))


def test_split_is_stratified_and_seeded() -> None:
    train, test = split_queries(_queries())
    assert (len(train), len(test)) == (6, 4)
    assert sum(q.should_trigger for q in test) == 2
    assert split_queries(_queries()) == (train, test)
    assert split_queries(_queries(), seed=7) != (train, test)
    with pytest.raises(Exception, match="holdout"):
        split_queries(_queries(), holdout=1.0)


def test_held_out_accuracy_picks_the_description(workspace: Workspace, tmp_path: Path) -> None:
    """A fits the training queries perfectly and fails every held-out one; B is the reverse."""
    _command_workspace(workspace)
    queries = _queries()
    train, test = split_queries(queries)
    train_pos = [_word(q) for q in train if q.should_trigger]
    test_pos = [_word(q) for q in test if q.should_trigger]
    test_neg = [_word(q) for q in test if not q.should_trigger]
    fits_training = " ".join(train_pos + test_neg)
    generalises = " ".join([*test_pos, train_pos[0]])

    # three runs a query: the agent is deterministic, so the two held-out queries B fixes give
    # six discordant run pairs, all its way: exact p = 1/64 is not enough at the first look of
    # five (gates.looks; it has seen 12 of the 12 + 96 planned pairs — tune-description's budget
    # is twice gates.max_extra_runs a try: 0.025·(12/108)² = 0.0003 of the 0.025 each try gets),
    # so the two queries rerun 12 times each (96 / 4 looks) on fresh seeds for both descriptions
    # (the other two held-out queries both got right on every run, so they cannot show a fix),
    # and 30 of 36 pairs all B's way decide it at the second look
    result = tune_description(
        workspace,
        "zoo-keeper",
        queries,
        candidates=[fits_training, generalises],
        iterations=0,
        runs_per_query=3,
    )

    assert [(s.origin, s.train_accuracy, s.test_accuracy) for s in result.scores] == [
        ("current", 0.5, 0.5),
        ("given", 1.0, 0.0),
        ("given", 0.6667, 1.0),
    ]
    assert (result.chosen, result.best, result.improved) == (2, generalises, True)
    assert result.reason == (
        "held-out trigger accuracy 0.50 → 1.00: +50.0 pts [+31.9, +50.0] p(better?)=<0.001 better "
        "(4 paired cases, 3 runs, +24 extra)"
    )  # Clopper–Pearson for 30 of 30 at the second look's 0.025·((36/108)² − (12/108)²) =
    # 0.00247: 0.00247^(1/30) = 0.8186, a change of (2·0.8186 − 1)·0.5 — each case weighs
    # alike, and two of the four have all their 15 pairs discordant (run-pooled, 30/36, the
    # reruns would make it +83.3: more than the accuracy moved)
    given_a, given_b = (result.scores[1].verdict or {}), (result.scores[2].verdict or {})
    assert given_a["decision"] == "worse" or given_a["decision"] == "inconclusive"
    assert (given_b["decision"], given_b["n_pairs"], given_b["alpha"]) == ("better", 36, 0.025)
    assert (given_b["extra_runs"], given_b["looks"]) == (24, 2)
    assert given_b["p_value"] == pytest.approx(2**-30, abs=1e-6)  # rounded to 6 places
    reruns = result.scores[2].reruns
    assert {r.query for r in reruns} == {q.query for q in test if q.should_trigger}
    assert all(r.runs == 12 and r.seeds[0] not in r2.seeds for r in reruns
               for r2 in result.scores[2].results if r2.query == r.query)  # fmt: skip
    loads = {r.query: r.loads for r in result.scores[2].results}
    assert all(loads[q.query] == 3 for q in test if q.should_trigger)
    cand = CandidateQueue(workspace).get(result.candidate["id"] if result.candidate else "")
    assert (cand.source, cand.operation, cand.status) == ("optimize", "update", "pending_approval")
    assert SkillDoc.parse(cand.skill_text()).description == generalises
    assert cand.delta_score == 0.5
    assert cand.evidence("metrics.json")["verdict"]["decision"] == "better"
    folder = Path(result.experiment_dir)
    assert json.loads((folder / "result.json").read_text())["chosen"] == 2
    session = folder / result.scores[2].results[0].sessions[0]
    assert session.is_file() and '"name": "Skill"' in session.read_text()
    setup = json.loads((folder / "experiment.json").read_text())
    assert [q["split"] for q in setup["queries"]].count("test") == 4


def test_ties_keep_the_current_description(workspace: Workspace, tmp_path: Path) -> None:
    _command_workspace(workspace)
    result = tune_description(
        workspace, "zoo-keeper", _queries(), candidates=["Another generic text"], iterations=0
    )
    assert [s.test_accuracy for s in result.scores] == [0.5, 0.5]
    assert (result.chosen, result.improved, result.candidate) == (0, False, None)
    assert CandidateQueue(workspace).list() == []


def test_one_run_of_a_held_out_gain_is_not_enough_and_reruns_settle_it(
    workspace: Workspace, tmp_path: Path
) -> None:
    """One more held-out query right on one run is what chance gives, so it decides nothing on
    its own; reruns of that query on fresh seeds tell a fix (it holds) from luck."""
    _command_workspace(workspace)
    queries = _queries()
    _train, test = split_queries(queries)
    one = next(_word(q) for q in test if q.should_trigger)
    cfg = workspace.load_config()
    cfg.gates.max_extra_runs = 0
    workspace.save_config(cfg)
    result = tune_description(workspace, "zoo-keeper", queries, candidates=[one], iterations=0)
    assert [s.test_accuracy for s in result.scores] == [0.5, 0.75]
    verdict = result.scores[1].verdict or {}
    assert (verdict["decision"], verdict["p_value"], verdict["extra_runs"]) == (
        "inconclusive",
        0.5,
        0,
    )
    assert (result.chosen, result.improved, result.candidate) == (0, False, None)
    assert result.reason.startswith(
        "no description was better than the current one on the held-out queries (best try, "
        "description 1: +25.0 pts"
    )
    # the default budget (twice the gate budget over four extra looks: 24 runs a look) reruns
    # the query that differs and the other should-trigger query, which both descriptions got
    # wrong (a fix could hide behind one slipped run), 12 times each: the agent is
    # deterministic, so the fix holds on every fresh seed and the other query stays wrong on
    # both — 13 discordant pairs of 13
    cfg.gates.max_extra_runs = GatesConfig().max_extra_runs
    workspace.save_config(cfg)
    result = tune_description(
        workspace, "zoo-keeper", queries, candidates=[one], iterations=0, submit=False
    )
    verdict = result.scores[1].verdict or {}
    assert (verdict["decision"], verdict["extra_runs"], verdict["n_pairs"]) == ("better", 24, 28)
    assert verdict["p_value"] == pytest.approx(2**-13, abs=1e-6)
    assert {r.query for r in result.scores[1].reruns} == {q.query for q in test if q.should_trigger}
    assert (result.chosen, result.improved) == (1, True)


def test_a_fix_that_slipped_on_its_one_run_is_rerun_and_the_current_reruns_are_shared(
    workspace: Workspace,
) -> None:
    """An agent that slips on odd seeds (``trigger_agent.sh slip`` loads nothing then) hides a
    fix behind its first run: both descriptions get the fixed queries wrong there, so only
    rerunning the queries both got wrong can find it. The current description's reruns serve
    every try."""
    _command_workspace(workspace, "slip")
    queries = _queries()

    def slipped_at_first(seed: int) -> bool:
        _train, test = split_queries(queries, seed=seed)
        return all(unit_seed(seed, q.query, 0) % 2 for q in test if q.should_trigger)

    seed = next(s for s in range(100) if slipped_at_first(s))  # both fixed queries slip at run 0
    _train, test = split_queries(queries, seed=seed)
    fixed = [q.query for q in test if q.should_trigger]
    fix = " ".join(_word(q) for q in test if q.should_trigger)
    result = tune_description(
        workspace,
        "zoo-keeper",
        queries,
        candidates=[fix, "Another generic text"],
        iterations=0,
        seed=seed,
        submit=False,
    )

    assert [s.test_accuracy for s in result.scores] == [0.5, 0.5, 0.5]  # the fix slipped
    verdict = result.scores[1].verdict or {}
    # default budget, twice gates.max_extra_runs: 96 a try over four extra looks, 24 a look,
    # 12 runs of each fixed query; the current never loads, so every run the fix loads on (an
    # even seed) is one discordant pair its way, and the exact p-value is 2^-loads
    loads = sum(unit_seed(seed, q, run) % 2 == 0 for q in fixed for run in range(1, 13))
    assert (verdict["decision"], verdict["extra_runs"], verdict["n_pairs"]) == ("better", 24, 28)
    assert verdict["p_value"] == pytest.approx(0.5**loads, abs=1e-6)
    assert {r.query for r in result.scores[1].reruns} == set(fixed)
    assert (result.chosen, result.improved) == (1, True)
    # the generic try reruns the same two queries (48 runs, then 48 more) and stays
    # inconclusive; the current description's runs 1–24 of them served both tries
    other = result.scores[2].verdict or {}
    assert (other["decision"], other["extra_runs"]) == ("inconclusive", 96)
    current = [(r.query, seed) for r in result.scores[0].reruns for seed in r.seeds]
    assert len(current) == len(set(current)) == 96
    setup = json.loads((Path(result.experiment_dir) / "experiment.json").read_text())
    assert setup["settings"]["max_extra_runs"] == 2 * GatesConfig().max_extra_runs


def test_offline_proposer_with_the_demo_agent(workspace: Workspace) -> None:
    """The bundled demo agent loads by description words; the offline proposer learns them."""
    add_weather_skill(workspace)
    cities = ("Oslo and Bergen", "Tokyo and Osaka", "Berlin and Munich", "Lima and Cusco")
    chores = ("Summarise this recipe", "Sort these invoices", "Rename the photos", "Tidy my inbox")
    queries = [TriggerQuery(f"Get the forecast for {c}", True) for c in cities]
    queries += [TriggerQuery(f"{c} for dinner", False) for c in chores]

    # held out: two forecast tasks and two chores; fixing the two misses on three runs each is
    # six discordant pairs, p = 1/64, under 0.05 shared by the two proposals
    result = tune_description(
        workspace, "weather-multi-city", queries, iterations=2, runs_per_query=3
    )

    assert result.scores[0].test_accuracy == 0.5  # the current description misses "forecast"
    best = result.scores[result.chosen]
    assert best.origin == "proposed" and best.test_accuracy == 1.0
    assert "forecast" in best.description
    assert result.improved and result.candidate is not None


def test_invalid_runs_are_left_out_of_the_verdict(workspace: Workspace) -> None:
    """A run the agent crashed on never loaded, but it is no right answer on a should-not
    query: it is out of the paired verdict (``trigger_agent.sh crash``: odd seeds crash, for
    both descriptions alike)."""
    _command_workspace(workspace, "crash")
    queries = _queries()
    _train, test = split_queries(queries)
    fix = " ".join(_word(q) for q in test if q.should_trigger)
    cfg = workspace.load_config()
    cfg.gates.max_extra_runs = 0  # the verdict on the measured runs alone
    workspace.save_config(cfg)

    result = tune_description(
        workspace, "zoo-keeper", queries, candidates=[fix], iterations=0, runs_per_query=3
    )

    seeds = {q.query: [unit_seed(42, q.query, run) for run in range(3)] for q in test}
    valid = {q: [s % 2 == 0 for s in runs] for q, runs in seeds.items()}
    fixed = sum(sum(valid[q.query]) for q in test if q.should_trigger)
    verdict = result.scores[1].verdict or {}
    assert verdict["n_pairs"] == sum(sum(v) for v in valid.values()) < 12
    assert verdict["delta"] == pytest.approx(fixed / verdict["n_pairs"], abs=1e-6)
    rows = result.scores[0].rows("test")
    assert sum(r["pass_fail"] == "invalid" for r in rows) == 12 - verdict["n_pairs"]
    assert all(r.valid == valid[r.query] for r in result.scores[1].results if r.split == "test")


def test_a_model_proposal_kept_at_the_defaults(
    workspace: Workspace, messages_server: MessagesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reflection model (the real SDK against the local Messages API) proposes from the
    training misses only; at every default — one run a query, one proposal's verdict with the
    reruns' budget — the demo agent's held-out runs settle that the proposal fixes the held-out
    forecasts."""
    add_weather_skill(workspace)
    cfg = workspace.load_config()
    cfg.models.reflection = ModelConfig(provider="anthropic", timeout_s=10.0, max_retries=0)
    workspace.save_config(cfg)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-for-the-local-server")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    proposal = "Collect the weather forecast for several cities into one report."
    messages_server.reply(f"<new_description>{proposal}</new_description>")
    cities = ("Oslo and Bergen", "Tokyo and Osaka", "Berlin and Munich", "Lima and Cusco")
    chores = ("Summarise this recipe", "Sort these invoices", "Rename the photos", "Tidy my inbox")
    queries = [TriggerQuery(f"Get the forecast for {c}", True) for c in cities]
    queries += [TriggerQuery(f"{c} for dinner", False) for c in chores]
    train, test = split_queries(queries)

    result = tune_description(workspace, "weather-multi-city", queries, iterations=1)

    asked = last_user_text(messages_server.message_requests[0].json)
    assert all(q.query in asked for q in train if q.should_trigger)
    assert not any(q.query in asked for q in test)  # the held-out queries stay unseen
    assert [(s.origin, s.test_accuracy) for s in result.scores] == [
        ("current", 0.5),
        ("proposed", 1.0),
    ]
    # the demo agent loads by description words, so each fixed held-out forecast is one
    # discordant pair per run: 2 of 2 (p = 1/4) cannot decide; both reruns 12 times (24 a
    # look, a quarter of twice gates.max_extra_runs), and 26 of 26 pairs decide at the second
    verdict = result.scores[1].verdict or {}
    assert (verdict["decision"], verdict["extra_runs"], verdict["looks"]) == ("better", 24, 2)
    assert verdict["n_pairs"] == 28  # 4 held-out queries once, then 2 of them 12 times
    assert verdict["p_value"] == pytest.approx(2**-26, abs=1e-6)
    assert result.improved and result.best == proposal and result.candidate is not None
    cand = CandidateQueue(workspace).get(result.candidate["id"])
    assert cand.evidence("metrics.json")["verdict"]["line"] == verdict["line"]


def test_query_file_errors(tmp_path: Path) -> None:
    path = tmp_path / "q.json"
    path.write_text(json.dumps([{"query": "x", "should_trigger": "yes"}]), encoding="utf-8")
    with pytest.raises(FormatError, match=r"q\.json: field '\[0\]\.should_trigger'"):
        load_queries(path)
    path.write_text(json.dumps([{"query": "x", "should_trigger": True}]), encoding="utf-8")
    with pytest.raises(FormatError, match="both should-trigger and should-not-trigger"):
        load_queries(path)
    path.write_text("[", encoding="utf-8")
    with pytest.raises(FormatError, match=r"q\.json: a JSON list"):
        load_queries(path)


def test_tune_description_command(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _command_workspace(workspace)
    path = tmp_path / "queries.json"
    path.write_text(
        json.dumps([{"query": q.query, "should_trigger": q.should_trigger} for q in _queries()]),
        encoding="utf-8",
    )
    every = " ".join(POSITIVE)
    root = str(workspace.root)
    args = ["tune-description", "zoo-keeper", "--queries", str(path), "--iterations", "0"]
    args += ["--runs-per-query", "3"]  # enough pairs for the held-out verdict to decide

    assert main(["-w", root, *args, "--candidate", every, "--no-submit", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["best"] == every and report["improved"] and report["candidate"] is None
    assert CandidateQueue(workspace).list() == []
    assert main(["-w", root, "tune-description", "nope", "--queries", str(path)]) == 1
    assert "no such skill" in capsys.readouterr().err
    assert main(["-w", root, *args, "--max-extra-runs", "-1"]) == 1
    assert "max extra runs: expected 0 or more, got -1" in capsys.readouterr().err
    # no reruns allowed: one run a query gives the fix two discordant pairs (p = 1/4), which
    # the single look cannot take for better, so nothing is kept
    once = [*args[:-2], "--candidate", every, "--max-extra-runs", "0", "--no-submit", "--json"]
    assert main(["-w", root, *once]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not report["improved"] and report["scores"][1]["verdict"]["extra_runs"] == 0
    setup = json.loads((Path(report["experiment_dir"]) / "experiment.json").read_text())
    assert setup["settings"]["max_extra_runs"] == 0


def _held_out_setting(ws: Workspace, tmp_path: Path) -> list[str]:
    """The CLI arguments of test_held_out_accuracy_picks_the_description's setting, which
    queues B after 90 measured runs and 48 held-out reruns (138 agent runs)."""
    queries = _queries()
    train, test = split_queries(queries)
    train_pos = [_word(q) for q in train if q.should_trigger]
    fits_training = " ".join(train_pos + [_word(q) for q in test if not q.should_trigger])
    generalises = " ".join([*(_word(q) for q in test if q.should_trigger), train_pos[0]])
    path = tmp_path / "queries.json"
    path.write_text(
        json.dumps([{"query": q.query, "should_trigger": q.should_trigger} for q in queries]),
        encoding="utf-8",
    )
    args = ["-w", str(ws.root), "tune-description", "zoo-keeper", "--queries", str(path)]
    args += ["--iterations", "0", "--runs-per-query", "3"]
    return [*args, "--candidate", fits_training, "--candidate", generalises, "--json"]


def _transcripts(report: dict[str, object]) -> int:
    return len(list((Path(str(report["experiment_dir"])) / "sessions").iterdir()))


def test_a_budget_stops_the_tuning_in_its_held_out_reruns_and_queues_nothing(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The held-out setting with --budget-runs 100: the budget runs out in the reruns, before
    the verdict, so the tuning stops with "budget", keeps the current description and queues
    nothing. The agent is deterministic and the seed fixed (the default 42), so the split and
    the reruns are the same every time; every run leaves one transcript, so the transcripts on
    disk count the runs."""
    _command_workspace(workspace)
    args = [*_held_out_setting(workspace, tmp_path), "--budget-runs", "100"]

    assert main(args) == 1  # stopped, like optimize's budget
    report = json.loads(capsys.readouterr().out)
    assert (report["stop_reason"], report["improved"], report["chosen"]) == ("budget", False, 0)
    assert report["reason"].startswith("budget reached: 100 of 100 agent runs; spent ")
    assert report["reason"].endswith("nothing was submitted")
    assert len(report["scores"]) == 3  # all three measured; the stop came in the reruns
    runs = _transcripts(report)
    assert report["spent"]["runs"] == runs and 100 <= runs <= 100 + 2  # + one batch of -j 2
    assert report["budget"] == {"runs": 100, "usd": None, "tokens": None}
    assert report["candidate"] is None and CandidateQueue(workspace).list() == []
    stored = json.loads((Path(report["experiment_dir"]) / "result.json").read_text())
    assert stored["stop_reason"] == "budget" and stored["spent"] == report["spent"]
    # the job bar's label showed spent / budget as the tuning went
    events = [json.loads(line) for p in workspace.sessions_dir.glob("*.jsonl")
              for line in p.read_text(encoding="utf-8").splitlines()]  # fmt: skip
    labels = [str(e.get("label")) for e in events if e.get("kind") == "progress"]
    assert "description 0 (current) · spent 30/100 agent runs, 0 tokens, $0.00" in labels


def test_a_tuning_stopped_by_its_budget_resumes_and_pays_for_no_run_twice(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stopped tuning, run again with a larger budget, goes on in the same experiment: the
    runs on record are read back, so the whole tuning spends the 138 runs of one unbroken
    tuning, leaves 138 transcripts and reaches the same choice (B queued). Once it finished,
    the same command starts a new tuning; ``--fresh`` would have, too."""
    _command_workspace(workspace)
    args = _held_out_setting(workspace, tmp_path)
    assert main([*args, "--budget-runs", "100"]) == 1
    stopped = json.loads(capsys.readouterr().out)
    # the plan of the same command counts only what the stopped tuning has not made: of the
    # 90 measuring runs it made them all, of the reruns (at most 2 tries × 2 × 96) the rest
    assert main([*args, "--budget-runs", "200", "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    made_reruns = stopped["spent"]["runs"] - 90
    assert (plan["agent_runs"], plan["max_extra_runs"]) == (0, 2 * 2 * 96 - made_reruns)
    resumes = f"resumes {stopped['experiment_id']}: {stopped['spent']['runs']} runs on record"
    assert resumes in plan["line"]

    # what a kill mid-write leaves: an atomic write's temporary, swept when the tuning resumes
    leftover = Path(stopped["experiment_dir"]) / "sessions" / ".d2-q0-r9.jsonl.k3j9x0qa.tmp"
    leftover.write_text("{}\n", encoding="utf-8")

    assert main([*args, "--budget-runs", "200"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not leftover.exists()
    assert report["experiment_id"] == stopped["experiment_id"] and report["resumed"]
    assert report["reused_runs"] == stopped["spent"]["runs"]
    assert report["spent"]["runs"] == 138 == _transcripts(report)
    assert report["budget"] == {"runs": 200, "usd": None, "tokens": None}
    assert (report["chosen"], report["improved"]) == (2, True)
    assert report["reason"].startswith("held-out trigger accuracy 0.50 → 1.00: +50.0 pts")
    assert f"resumed {report['experiment_id']}: {report['reused_runs']} agent runs on record " \
        "reused" in report["notes"]  # fmt: skip
    folder = Path(report["experiment_dir"])
    assert json.loads((folder / "result.stopped-1.json").read_text())["stop_reason"] == "budget"
    assert len((folder / "units.jsonl").read_text().splitlines()) == 138
    said = [json.loads(line)["text"] for p in workspace.sessions_dir.glob("*.jsonl")
            for line in p.read_text(encoding="utf-8").splitlines()
            if '"resuming ' in line]  # fmt: skip
    assert said == [
        f"resuming {report['experiment_id']}: {stopped['spent']['runs']} agent runs on record "
        f"are not run again; spent {stopped['spent']['runs']}/200 agent runs, 0 tokens, $0.00"
    ]
    assert len(CandidateQueue(workspace).list()) == 1

    assert main([*args, "--no-submit"]) == 0  # finished: a new tuning, every run made again
    again = json.loads(capsys.readouterr().out)
    assert again["experiment_id"] != report["experiment_id"] and not again["resumed"]
    assert again["spent"]["runs"] == 138 and again["reused_runs"] == 0


def test_fresh_starts_a_new_tuning_beside_a_stopped_one(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _command_workspace(workspace)
    args = _held_out_setting(workspace, tmp_path)
    assert main([*args, "--budget-runs", "40"]) == 1
    stopped = json.loads(capsys.readouterr().out)
    assert main([*args, "--budget-runs", "40", "--fresh"]) == 1
    fresh = json.loads(capsys.readouterr().out)
    assert fresh["experiment_id"] != stopped["experiment_id"] and not fresh["resumed"]
    assert fresh["spent"]["runs"] >= 40 and fresh["reused_runs"] == 0
    # the newest stopped tuning is the one a plain run resumes
    assert main([*args, "--budget-runs", "80"]) == 1
    assert json.loads(capsys.readouterr().out)["experiment_id"] == fresh["experiment_id"]


def test_a_killed_tuning_resumes_from_the_runs_it_recorded(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGKILL in the middle of the measuring: every run that finished has its line in
    units.jsonl, so the same command goes on from them; a run cut off in flight has none and is
    made again. The whole tuning counts 138 runs, as if never killed, and queues B; a
    transcript the kill left half written (an atomic write's temporary) is swept, so the
    transcripts on disk are the 138 runs."""
    _command_workspace(workspace)
    args = _held_out_setting(workspace, tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    recorded: list[Path] = []
    while time.monotonic() < deadline and proc.poll() is None:
        recorded = list(workspace.experiments_dir.glob("triggers-*/units.jsonl"))
        if recorded and len(recorded[0].read_text().splitlines()) >= 20:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert recorded, "the tuning recorded no run before the deadline"
    on_record = len(recorded[0].read_text().splitlines())
    assert 20 <= on_record < 138  # killed mid-way

    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["resumed"] and report["experiment_dir"] == str(recorded[0].parent)
    assert report["reused_runs"] == on_record
    assert report["spent"]["runs"] == 138 == _transcripts(report)
    assert (report["chosen"], report["improved"]) == (2, True)
    assert not (recorded[0].parent / "result.stopped-1.json").exists()  # none was written


def test_reruns_go_where_a_fix_can_show() -> None:
    """Disagreeing queries first, then those both got wrong; never those both always got right,
    and the choice is the same whichever side of a pair won."""

    def rows(outcomes: dict[str, list[int]]) -> list[dict[str, object]]:
        return [
            {"case_id": q, "run_index": i, "pass_fail": "pass" if v else "fail"}
            for q, values in outcomes.items()
            for i, v in enumerate(values)
        ]

    before = {"right": [1, 1], "wrong": [0, 0], "mixed": [1, 0], "flip": [0, 0]}
    after = {"right": [1, 1], "wrong": [0, 0], "mixed": [1, 1], "flip": [1, 0]}
    assert can_improve(rows(before), rows(after)) == ["flip", "mixed", "wrong"]
    assert can_improve(rows(after), rows(before)) == ["flip", "mixed", "wrong"]
    assert can_improve(rows(before), rows(after), ["right", "wrong"]) == ["wrong"]


def test_the_current_descriptions_missing_reruns_are_measured_in_unbroken_stretches() -> None:
    missing = {"a": [3, 4, 5], "b": [3, 4, 5], "c": [1, 2, 7], "d": []}
    assert _segments(missing) == [(["c"], 1, 2), (["c"], 7, 1), (["a", "b"], 3, 3)]
