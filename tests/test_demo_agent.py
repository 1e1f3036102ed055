"""The demo agent, run as a real subprocess in crafted run directories.

Each failure mode is checked twice: by the shape of the trace, and by the real diagnosis rule
that must fire on it (engine.evaluation.diagnosis), since making every rule fire is the agent's
purpose.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.core.config import DiagnosisConfig
from engine.core.skill import SkillDoc
from engine.evaluation.demo import DEMO_SKILL, demo_source
from engine.evaluation.diagnosis import CaseContext, Registry
from engine.evaluation.traces import load_trace, summarise

SHIPPED_SKILL = (demo_source() / "skills" / DEMO_SKILL / "SKILL.md").read_text(encoding="utf-8")
ANSWER = "End your answer with one line: `VERDICT: vulnerable` or `VERDICT: safe`."
FRONT = (
    "---\nname: security-audit\ndescription: Audit source code for security vulnerabilities.\n---\n"
)

PY_SYSTEM = """import os


def ping(host):
    return os.system("ping -c 1 " + host)
"""
PY_QUOTED = """import os
import shlex


def ping(host):
    return os.system("ping -c 1 " + shlex.quote(host))
"""
JAVA_SERVLET = """package demo;

public class Hello extends HttpServlet {
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String agent = req.getHeader("User-Agent");
        String sql = "SELECT * FROM t WHERE id = '" + req.getParameter("id") + "'";
        resp.getWriter().print(db.executeQuery(sql) + agent);
    }
}
"""
PY_SSRF = """import requests
from flask import request


def preview():
    return requests.get(request.args["url"], timeout=5).text
"""


def skill_text(steps: str, pitfalls: str = "- Nothing yet.") -> str:
    return f"{FRONT}\n# Audit\n\n## Steps\n\n{steps.strip()}\n\n## Pitfalls\n\n{pitfalls.strip()}\n"


def make_room(
    tmp_path: Path, files: dict[str, str], prompt: str, skill: str | None = SHIPPED_SKILL
) -> Path:
    room = tmp_path / "room"
    room.mkdir(parents=True)
    for name, text in files.items():
        (room / name).write_text(text, encoding="utf-8")
    (room / "PROMPT.md").write_text(prompt, encoding="utf-8")
    if skill is not None:
        (room / "skills" / DEMO_SKILL).mkdir(parents=True)
        (room / "skills" / DEMO_SKILL / "SKILL.md").write_text(skill, encoding="utf-8")
    return room


def audit(name: str) -> str:
    return f"Audit `{name}` for security vulnerabilities.\n\n{ANSWER}\n"


def run_agent(room: Path, **env: str) -> list[dict[str, Any]]:
    # The agent runs outside the sandbox here and imports the engine from the checkout: without
    # PYTHONDONTWRITEBYTECODE it would write __pycache__ folders there (tests write in tmp_path).
    environ = {"PATH": os.environ["PATH"], "HOME": str(room), "PYTHONDONTWRITEBYTECODE": "1"}
    environ.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "engine.evaluation.demo.agent"],
        cwd=room,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (room.parent / "session.jsonl").write_text(proc.stdout, encoding="utf-8")
    return [json.loads(line) for line in proc.stdout.splitlines()]


def calls(lines: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(c["name"], c["args"]) for ln in lines for c in ln.get("tool_calls", [])]


def results(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [ln for ln in lines if ln["type"] == "tool"]


def answer(lines: list[dict[str, Any]]) -> str:
    return next(ln["content"] for ln in reversed(lines) if ln["type"] == "assistant")


def verdict(lines: list[dict[str, Any]]) -> str:
    return answer(lines).rsplit("VERDICT:", 1)[1].strip()


def rules_fired(room: Path, skill: str = SHIPPED_SKILL) -> set[str]:
    """The diagnosis rules the real rule engine finds in the session just written."""
    trace = load_trace(room.parent / "session.jsonl")
    steps = SkillDoc.parse(skill).steps
    config = DiagnosisConfig()
    summary = summarise(trace, steps, config=config, labels=["vulnerable", "safe"])
    ctx = CaseContext(
        case_id="case",
        row={},
        trace=trace,
        summary=summary,
        config=config,
        steps=steps,
        skill_name=DEMO_SKILL,
    )
    return {hit.rule_id for hit in Registry.builtin().run(ctx)}


def _bytecode_folders() -> set[Path]:
    return set(Path(__file__).resolve().parents[1].joinpath("engine").rglob("__pycache__"))


def test_running_the_agent_writes_nothing_into_the_checkout(tmp_path: Path) -> None:
    before = _bytecode_folders()
    room = make_room(tmp_path, {"net.py": PY_SYSTEM}, audit("net.py"))
    assert verdict(run_agent(room)) in ("vulnerable", "safe")
    assert _bytecode_folders() == before


# -- following the skill ----------------------------------------------------------------------


def test_grep_step_runs_for_real_and_logs_the_exact_command(tmp_path: Path) -> None:
    command = 'grep -nE "os\\.system" *.py'
    skill = skill_text(f"1. Flag shell commands: `{command}`")
    room = make_room(tmp_path, {"net.py": PY_SYSTEM}, audit("net.py"), skill)
    lines = run_agent(room)
    assert lines[0] == {"type": "user", "content": audit("net.py")}
    assert calls(lines) == [("Skill", DEMO_SKILL), ("grep", command)]
    expected = subprocess.run(
        ["grep", "-H", "-n", "-e", "os\\.system", "--", "net.py"],
        cwd=room,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    grep_result = results(lines)[1]
    assert grep_result["result"] == expected == 'net.py:5:    return os.system("ping -c 1 " + host)'
    assert grep_result["is_error"] is False
    assert "STEPS DONE: 1" in answer(lines)
    assert verdict(lines) == "vulnerable"
    result = lines[-1]
    assert result["type"] == "result" and result["is_error"] is False
    assert result["cost_usd"] == 0.0 and result["tokens"]["input"] > result["tokens"]["output"] > 0


def test_pitfall_rules_out_a_near_miss(tmp_path: Path) -> None:
    steps = '1. Flag shell commands: `grep -nE "os\\.system" *.py`'
    without = make_room(tmp_path / "a", {"net.py": PY_QUOTED}, audit("net.py"), skill_text(steps))
    assert verdict(run_agent(without)) == "vulnerable"
    pitfall = "- A host passed through `shlex.quote(` is quoted — not a finding."
    room = make_room(
        tmp_path / "b", {"net.py": PY_QUOTED}, audit("net.py"), skill_text(steps, pitfall)
    )
    lines = run_agent(room)
    assert verdict(lines) == "safe"
    assert "Ruled out by the Pitfalls:\n- net.py:6 (step 1)" in answer(lines)


def test_agents_md_rules_out_a_near_miss_like_a_pitfall(tmp_path: Path) -> None:
    steps = '1. Flag shell commands: `grep -nE "os\\.system" *.py`'
    shipped = (demo_source() / "AGENTS.md").read_text(encoding="utf-8")
    rooms = {}
    for name, agents in (
        ("shipped", shipped),
        (
            "standing",
            shipped + "- A host passed through `shlex.quote(` is quoted — not a finding.\n",
        ),
    ):
        rooms[name] = make_room(
            tmp_path / name, {"net.py": PY_QUOTED}, audit("net.py"), skill_text(steps)
        )
        (rooms[name] / "AGENTS.md").write_text(agents, encoding="utf-8")
    # the shipped AGENTS.md names the answer format only: it clears nothing
    assert verdict(run_agent(rooms["shipped"])) == "vulnerable"
    lines = run_agent(rooms["standing"])
    assert verdict(lines) == "safe"
    assert "Ruled out by the Pitfalls:\n- net.py:6 (step 1)" in answer(lines)


@pytest.mark.parametrize(
    ("pitfall", "expected"),
    [
        ("- `os.system` with a `shlex.quote(` argument is quoted — not a finding.", "safe"),
        ("- `os.system` with a `subprocess.run(` argument is fine — not a finding.", "vulnerable"),
        ("- `subprocess.run(` or `shlex.quote(` make it safe — not a finding.", "safe"),
        ("- Remember to check `shlex.quote(` usage.", "vulnerable"),  # no "not a finding"
    ],
)
def test_pitfall_patterns_combine_with_and_or(tmp_path: Path, pitfall: str, expected: str) -> None:
    steps = '1. Flag shell commands: `grep -nE "os\\.system" *.py`'
    room = make_room(tmp_path, {"net.py": PY_QUOTED}, audit("net.py"), skill_text(steps, pitfall))
    assert verdict(run_agent(room)) == expected


def test_better_skill_text_changes_the_verdict(tmp_path: Path) -> None:
    shipped = make_room(tmp_path / "a", {"preview.py": PY_SSRF}, audit("preview.py"))
    assert verdict(run_agent(shipped)) == "safe"  # the shipped skill has no SSRF step
    doc = SkillDoc.parse(SHIPPED_SKILL)
    steps = doc.section("steps") or ""
    ssrf = '12. Flag requests to a URL taken from input: `grep -nE "requests\\.get\\(request" *.py`'
    better = doc.with_section("steps", steps + "\n" + ssrf).render()
    room = make_room(tmp_path / "b", {"preview.py": PY_SSRF}, audit("preview.py"), better)
    lines = run_agent(room)
    assert verdict(lines) == "vulnerable"
    assert ("grep", 'grep -nE "requests\\.get\\(request" *.py') in calls(lines)


# -- the designed failure modes ---------------------------------------------------------------


def test_task_outside_the_description_never_loads_the_skill(tmp_path: Path) -> None:
    prompt = f"We are about to merge `net.py`. Is it good to go?\n\n{ANSWER}\n"
    room = make_room(tmp_path, {"net.py": PY_SYSTEM}, prompt)
    lines = run_agent(room)
    assert calls(lines) == [("read", "read net.py")]
    assert "STEPS DONE: none" in answer(lines)
    assert verdict(lines) == "vulnerable"  # the shallow guess knows os.system( by heart
    assert "skill_not_loaded" in rules_fired(room)


def test_without_any_skill_the_agent_guesses_from_one_read(tmp_path: Path) -> None:
    room = make_room(tmp_path, {"preview.py": PY_SSRF}, audit("preview.py"), skill=None)
    lines = run_agent(room)
    assert calls(lines) == [("read", "read preview.py")]
    assert results(lines)[0]["result"] == PY_SSRF
    assert "STEPS DONE: none" in answer(lines) and verdict(lines) == "safe"


def test_a_short_quoted_snippet_is_eyeballed_without_tools(tmp_path: Path) -> None:
    prompt = f"Here is `net.py`:\n\n```python\n{PY_SSRF}```\n\nIs this vulnerable?\n\n{ANSWER}\n"
    room = make_room(tmp_path, {"net.py": PY_SSRF}, prompt)
    lines = run_agent(room)
    assert calls(lines) == [("Skill", DEMO_SKILL)]
    assert verdict(lines) == "safe"
    fired = rules_fired(room)
    assert "no_tool_calls" in fired and "skill_not_loaded" not in fired


def test_a_step_for_other_languages_is_claimed_but_not_run(tmp_path: Path) -> None:
    room = make_room(tmp_path, {"Hello.java": JAVA_SERVLET}, audit("Hello.java"))
    lines = run_agent(room)
    step3 = SkillDoc.parse(SHIPPED_SKILL).steps[2].text
    command = step3.split("`")[1]
    assert "*.java" not in command
    assert all(command not in args for _, args in calls(lines))
    claimed = answer(lines).split("STEPS DONE:")[1].split("\n")[0]
    assert " 3," in claimed
    assert "progress_mismatch" in rules_fired(room)


def test_a_bad_regex_fails_and_is_retried_unchanged(tmp_path: Path) -> None:
    room = make_room(tmp_path, {"Hello.java": JAVA_SERVLET}, audit("Hello.java"))
    lines = run_agent(room)
    made = calls(lines)
    failed = [i for i, r in enumerate(results(lines)) if r["is_error"]]
    assert len(failed) == 4  # getParameter( and getHeader(, each tried twice
    assert all("Unmatched ( or \\(" in results(lines)[i]["result"] for i in failed)
    assert made[failed[0]] == made[failed[1]] and made[failed[2]] == made[failed[3]]
    assert failed[1] == failed[0] + 1 and failed[3] == failed[2] + 1
    assert made[failed[0]][1] == 'grep -nE "<source>" <file> -> grep -nE "getParameter(" Hello.java'
    assert {"tool_error_burst", "redundant_retry"} <= rules_fired(room)


def test_repeat_until_no_new_matches_loops(tmp_path: Path) -> None:
    code = "from .db import connect\n\n\ndef rows():\n    return connect().rows()\n"
    room = make_room(tmp_path, {"repo.py": code}, audit("repo.py"))
    lines = run_agent(room)
    loop = [c for c in calls(lines) if "^(from" in c[1]]
    assert len(loop) == 8 and len(set(loop)) == 1
    assert "tool_loop" in rules_fired(room)


def test_the_call_budget_stops_the_run(tmp_path: Path) -> None:
    room = make_room(tmp_path, {"net.py": PY_QUOTED}, audit("net.py"))
    lines = run_agent(room, SKILLSMITH_MAX_TURNS="4")
    assert len(calls(lines)) == 4  # Skill, list, read, step 3; the shell step is never reached
    assert "budget of 4 tool calls ran out" in answer(lines)
    assert "STEPS DONE: 1, 2, 3\n" in answer(lines)
    assert lines[-1]["is_error"] is True and lines[-1]["reason"] == "max_turns"
    assert "budget_exhaustion" in rules_fired(room)


def test_some_runs_conclude_at_the_first_finding_unless_the_skill_forbids_it(
    tmp_path: Path,
) -> None:
    pitfalls = "- `os.system` with a `shlex.quote(` argument is quoted — not a finding."
    steps = "\n".join(
        [
            '1. Flag shell commands: `grep -nE "os\\.system" *.py`',
            '2. Flag pickles: `grep -nE "pickle" *.py`',
            '3. Flag evals: `grep -nE "eval\\(" *.py`',
        ]
    )
    hasty: list[int] = []
    for index in range(9):
        room = make_room(
            tmp_path / f"r{index}",
            {"net.py": PY_QUOTED},
            audit("net.py"),
            skill_text(steps, pitfalls),
        )
        lines = run_agent(room, SKILLSMITH_RUN_INDEX=str(index))
        if "concluding now" in answer(lines):
            hasty.append(index)
            assert len(calls(lines)) == 2 and verdict(lines) == "vulnerable"
            assert "STEPS DONE: 1\n" in answer(lines)
            assert "premature_conclusion" in rules_fired(room, skill_text(steps, pitfalls))
        else:
            assert len(calls(lines)) == 4 and verdict(lines) == "safe"
    assert 0 < len(hasty) < 9
    careful = skill_text(steps, pitfalls + "\n- Run every step before concluding.")
    room = make_room(tmp_path / "careful", {"net.py": PY_QUOTED}, audit("net.py"), careful)
    lines = run_agent(room, SKILLSMITH_RUN_INDEX=str(hasty[0]))
    assert "concluding now" not in answer(lines) and verdict(lines) == "safe"
    # the same instruction in the run directory's AGENTS.md holds for every skill it follows
    room = make_room(
        tmp_path / "standing", {"net.py": PY_QUOTED}, audit("net.py"), skill_text(steps, pitfalls)
    )
    (room / "AGENTS.md").write_text("# Agent\n\n- Run every step before concluding.\n")
    lines = run_agent(room, SKILLSMITH_RUN_INDEX=str(hasty[0]))
    assert "concluding now" not in answer(lines) and verdict(lines) == "safe"


# -- the tools stay inside the run directory --------------------------------------------------


def test_tools_refuse_paths_outside_and_unknown_options(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("do not read me\n")
    steps = "\n".join(
        [
            "1. Read the neighbour: `read ../secret.txt`",
            '2. Search recursively: `grep -rn "secret" .`',
            "3. Search outside: `grep -n secret /etc/hostname`",
        ]
    )
    room = make_room(tmp_path, {"net.py": PY_SYSTEM}, audit("net.py"), skill_text(steps))
    lines = run_agent(room)
    outputs = [r["result"] for r in results(lines)[1:]]
    assert all(r["is_error"] for r in results(lines)[1:])
    assert "read: ../secret.txt: outside the working directory" in outputs
    assert "grep: unsupported option -- r" in outputs
    assert not any("do not read me" in ln.get("result", "") for ln in lines)
