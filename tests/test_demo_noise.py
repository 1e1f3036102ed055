"""The noisy demo agent: slips like a sampling model, fixed by the evaluation seed.

Real evaluations through the real runner on the bundled demo (the agent runs as a subprocess),
plus the slip model itself: a clearer skill and an easier case slip less, level 0 never slips.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.core.errors import FormatError
from engine.core.results import read_results
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_BENCHMARK, copy_demo
from engine.evaluation.demo.noise import Slips, clarity, difficulty
from engine.evaluation.runner import run_evaluation, unit_seed

# a few demo cases whose shipped-skill verdict rests on hits the agent may slip on
CASES = "cmdi-js-exec,cmdi-py-quoted,deser-py-pickle,crypto-py-md5-etag,cmdi-php-escaped"


def demo(tmp_path: Path, noise: float | None = None) -> Workspace:
    ws = Workspace.at(copy_demo(tmp_path / "demo"))
    if noise is not None:
        cfg = ws.load_config()
        cfg.agent.noise = noise
        ws.save_config(cfg)
    return ws


def outcomes(run_dir: Path) -> dict[tuple[str, int, str], str]:
    rows = read_results(run_dir / "results.jsonl")
    return {(r["case_id"], r["run_index"], r["variant"]): r["pass_fail"] for r in rows}


def eval_json(ws: Workspace, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code = main(["eval", DEMO_BENCHMARK, "-w", str(ws.root), "-j", "2", "--json", *extra])
    assert code == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


# -- the slip model -------------------------------------------------------------------------------


def test_level_zero_never_slips() -> None:
    for seed in range(200):
        slips = Slips.of(0.0, seed, "skill", f"case {seed}", 0.0)
        assert slips.rate == 0.0
        assert not (slips.skips("grep x") or slips.misreads("a.py", 3) or slips.hasty())
        assert not slips.forgets("a.py", 3)


def test_a_clearer_skill_and_an_easier_case_slip_less() -> None:
    vague = clarity(thorough=False, confirms=False, pitfall_rules=0)
    clear = clarity(thorough=True, confirms=True, pitfall_rules=12)
    assert (vague, clear) == (0.0, 1.0)
    assert clarity(thorough=False, confirms=True, pitfall_rules=4) == pytest.approx(1.4 / 3)
    cases = sorted((f"case {n}" for n in range(50)), key=difficulty)
    easy, hard = cases[0], cases[-1]
    assert difficulty(easy) < 0.05 < 0.8 < difficulty(hard)
    assert Slips.of(0.3, 1, "s", hard, clear).rate < Slips.of(0.3, 1, "s", hard, vague).rate
    assert Slips.of(0.3, 1, "s", easy, vague).rate < Slips.of(0.3, 1, "s", hard, vague).rate
    # over many seeds a draw comes up about as often as its rate says
    rate = Slips.of(0.3, 0, "s", hard, vague).rate
    share = sum(Slips.of(0.3, seed, "s", hard, vague).hasty() for seed in range(2000)) / 2000
    assert share == pytest.approx(min(0.9, rate * 0.8), abs=0.04)


def test_a_draw_is_fixed_by_seed_skill_and_what_it_decides() -> None:
    draws = [Slips.of(0.5, seed, "skill A", "case", 0.2).misreads("a.py", 4) for seed in range(64)]
    assert draws == [
        Slips.of(0.5, seed, "skill A", "case", 0.2).misreads("a.py", 4) for seed in range(64)
    ]
    assert len(set(draws)) == 2  # it does vary with the seed
    other = [Slips.of(0.5, seed, "skill B", "case", 0.2).misreads("a.py", 4) for seed in range(64)]
    assert other != draws  # another skill text does not share its luck


# -- the setting ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1.5", "expected a number in [0, 1], got 1.5"), ("loud", "expected a number, got 'loud'")],
)
def test_a_bad_noise_level_is_a_one_line_error_naming_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, expected: str
) -> None:
    ws = demo(tmp_path)
    text = ws.config_path.read_text(encoding="utf-8")
    ws.config_path.write_text(text.replace("noise: 0.4", f"noise: {value}"), encoding="utf-8")
    with pytest.raises(FormatError):
        ws.load_config()
    assert main(["eval", DEMO_BENCHMARK, "-w", str(ws.root)]) == 1
    err = capsys.readouterr().err
    assert err == f"skillsmith: error: {ws.config_path}: field 'agent.noise': {expected}\n"
    assert not any(ws.runs_dir.iterdir())


def test_the_bundled_demo_ships_noisy(tmp_path: Path) -> None:
    assert demo(tmp_path).load_config().agent.noise > 0


# -- the seed through the runner ------------------------------------------------------------------


def test_the_seed_is_recorded_and_repeats_the_evaluation_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = demo(tmp_path, noise=1.0)  # the loudest level, so a few cases are enough to vary
    first = eval_json(ws, capsys, "--cases", CASES, "--runs", "3", "--seed", "4242")
    # --fresh: the demo agent is deterministic by its seed, so the same seed would be answered by
    # the finished run (docs/evaluate.md); running it again is what shows the seed repeats it
    again = eval_json(ws, capsys, "--cases", CASES, "--runs", "3", "--seed", "4242", "--fresh")
    assert first["seed"] == again["seed"] == 4242 and first["run_id"] != again["run_id"]
    manifest = json.loads((Path(first["run_dir"]) / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["seed"] == 4242 and manifest["agent"]["noise"] == 1.0
    assert outcomes(Path(first["run_dir"])) == outcomes(Path(again["run_dir"]))
    for row in read_results(Path(first["run_dir"]) / "results.jsonl"):
        assert row["seed"] == unit_seed(4242, row["case_id"], row["run_index"])
    others = [
        outcomes(Path(eval_json(ws, capsys, "--cases", CASES, "--runs", "3")["run_dir"]))
        for _ in range(2)
    ]
    assert any(o != outcomes(Path(first["run_dir"])) for o in others)


def test_resuming_keeps_the_runs_own_seed(tmp_path: Path) -> None:
    ws = demo(tmp_path)
    cases = CASES.split(",")[:2]
    done = run_evaluation(ws, DEMO_BENCHMARK, case_ids=cases, runs=1, seed=99, scoreboard=False)
    again = run_evaluation(ws, DEMO_BENCHMARK, run_id=done.run_id)
    assert (again.seed, again.launched) == (99, 0)
    with pytest.raises(Exception, match="was made with seed 99, not 5"):
        run_evaluation(ws, DEMO_BENCHMARK, run_id=done.run_id, seed=5)


def test_noise_zero_is_the_deterministic_agent(tmp_path: Path) -> None:
    ws = demo(tmp_path, noise=0.0)
    cases = CASES.split(",")
    runs = [
        run_evaluation(ws, DEMO_BENCHMARK, case_ids=cases, runs=2, seed=s, scoreboard=False)
        for s in (1, 2)
    ]
    assert runs[0].seed != runs[1].seed
    assert outcomes(runs[0].run_dir) == outcomes(runs[1].run_dir)


@pytest.mark.slow
def test_re_evaluating_the_bundled_demo_changes_a_tenth_of_the_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = demo(tmp_path)  # as shipped: noise on, a fresh seed per evaluation
    one, two, three = (eval_json(ws, capsys) for _ in range(3))
    assert len({one["seed"], two["seed"], three["seed"]}) == 3
    a, b, c = (outcomes(Path(e["run_dir"])) for e in (one, two, three))
    assert a.keys() == b.keys() == c.keys()
    # Which runs change is a binomial draw over the 216 case runs, so one pair's rate spreads about
    # 2 points around its mean. At noise 0.3 that mean was 12 % and about one pair in six fell
    # under 10 % (this test failed now and then); the shipped 0.4 changes about 14 % (66 pairs of
    # in-process evaluations: one pair in 60 under 10 %). The mean over the three pairs is the
    # rate a user meets, measured closely enough that one unlucky pair does not decide the test.
    pairs = ((a, b), (a, c), (b, c))
    changed = sum(sum(x[k] != y[k] for k in x) / len(x) for x, y in pairs) / len(pairs)
    assert changed >= 0.10
    repeat = eval_json(ws, capsys, "--seed", str(one["seed"]), "--fresh")  # run, not reused
    assert outcomes(Path(repeat["run_dir"])) == a
