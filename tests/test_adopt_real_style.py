"""Acceptance (issue 25), as a new user meets it: a git project holding skill folders in the
styles real skills use (tests/data/corpus: prose with no numbered steps, "This skill should be
used when …", a reference whose command example carries a password, a git range in prose) is
adopted with ``skillsmith init`` and one skill is evolved with a ``command`` agent (a real
subprocess, tests/agents/form_agent.py) whose success depends on one line of the skill, and the
Anthropic proposer (the real SDK) on the local Messages-API server, which returns the diff
adding that line. The candidate is measured better, passes every gate, is approved (exit 0)
into ``.claude/skills/pdf-workbench/`` with its other files byte for byte, and ``snapshot``
succeeds. Every command is a separate process started in the project folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.core.store import unified_diff
from engine.core.workspace import Workspace
from tests.bench_helpers import write_benchmark, write_case
from tests.conftest import REAL_STYLE
from tests.llm_server import MessagesServer, Reply
from tests.store_helpers import files_with_modes, project_cli

AGENT = Path(__file__).parent / "agents" / "form_agent.py"
SKILLS = ("pdf-workbench", "page-checks", "visual-direction", "team-updates", "mcp-server-kit")
ANCHOR = "guessing names from the labels printed on the page.\n"
LINE = (
    "Before filling, run `qpdf --show-encryption form.pdf`: an encrypted form must be "
    "decrypted first (see reference.md).\n"
)
PROMPT = (
    "Fill in the form in form.pdf with the values in values.json. First say whether the form "
    "is encrypted.\n"
)
# (case, encrypted?, split): the shipped skill misses every encrypted form
CASES = [
    *((f"enc-{i}", True, "selection") for i in range(4)),
    *((f"plain-{i}", False, "selection") for i in range(2)),
    ("enc-h", True, "holdout"),
    ("plain-h", False, "holdout"),
    ("enc-g", True, "golden"),
    ("plain-g", False, "golden"),
]


def _project(root: Path) -> Path:
    project = root / "proj"
    for name in SKILLS:
        shutil.copytree(REAL_STYLE / name, project / ".claude" / "skills" / name)
    (project / "CLAUDE.md").write_text("Use the pdf-workbench skill for PDF forms.\n")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(project)], check=True)
    subprocess.run([*git, "-C", str(project), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(project), "commit", "-qm", "project"], check=True)
    return project


def _benchmark(ws: Workspace, cases: list[tuple[str, bool, str]]) -> None:
    root = write_benchmark(
        ws.benchmarks_dir / "forms",
        {},
        config={"labels": ["encrypted", "plain"], "runs_per_case": 2, "seed": 7},
    )
    for case, encrypted, split in cases:
        body = "%PDF-1.7\n" + ("/Encrypt 12 0 R\n" if encrypted else "") + "%%EOF\n"
        write_case(
            root,
            case,
            {"expected": "encrypted" if encrypted else "plain", "split": split},
            prompt=PROMPT,
            files={"form.pdf": body, "values.json": '{"name": "Ada"}\n'},
        )


def proposer(original: str, patched: str) -> Any:
    patch = unified_diff(original, patched)

    def respond(req: dict[str, Any]) -> Reply:
        assert "You improve one SKILL.md" in json.dumps(req.get("system"))
        return Reply(text=patch)

    return respond


Cli = Callable[..., subprocess.CompletedProcess[str]]


def _adopted(tmp_path: Path, server: MessagesServer) -> tuple[Path, Cli, Workspace, str, str]:
    """The project adopted with init, the command agent set, and the proposer's diff served:
    the project, its CLI, its workspace, the shipped SKILL.md and the one the diff makes."""
    project = _project(tmp_path)
    text = (project / ".claude/skills/pdf-workbench/SKILL.md").read_text(encoding="utf-8")
    assert text.count(ANCHOR) == 1 and "1. " not in text  # prose, no numbered steps
    assert "<a7>..<b7>" in (project / ".claude/skills/team-updates/SKILL.md").read_text()
    patched = text.replace(ANCHOR, ANCHOR + LINE)
    server.respond_with(proposer(text, patched))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SKILLSMITH_"))},
        "PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin",
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "sk-ant-api03-real-style-test-key-not-real-0000",
    }

    skillsmith = project_cli(project, env)

    done = skillsmith("init")
    for name in SKILLS:
        assert f"adopted {name} as v0" in done.stdout
    ws = Workspace.at(project / ".skillsmith")
    cfg = ws.load_config()
    cfg.agent.kind = "command"
    cfg.agent.command = [sys.executable, str(AGENT)]
    ws.save_config(cfg)  # the gates keep their defaults: the house-style floor is advice
    return project, skillsmith, ws, text, patched


def test_a_real_style_project_evolves_one_skill_through_every_gate(
    tmp_path: Path, messages_server: MessagesServer
) -> None:
    project, skillsmith, ws, text, patched = _adopted(tmp_path, messages_server)
    live = project / ".claude" / "skills" / "pdf-workbench"
    original = files_with_modes(live)
    _benchmark(ws, CASES)
    lint = skillsmith("skill", "lint", str(project / ".claude" / "skills"))
    assert " error " not in lint.stdout

    done = skillsmith(
        "evolve", "pdf-workbench", "--bench", "forms", "--rounds", "1", "--proposer",
        "anthropic", "-j", "2", "--json",
    )  # fmt: skip
    [call] = [r for r in messages_server.message_requests if "SKILL.md" in str(r.json)]
    assert "This skill should be used when" in str(call.json)
    queue = json.loads(skillsmith("queue", "--json").stdout)
    [cand] = [c for c in queue if c["status"] == "pending_approval"]
    shown = json.loads(skillsmith("queue", "show", cand["id"], "--json").stdout)
    gates = {g["gate"]: g for g in shown["gates"]}
    verdicts = {g: v["verdict"] for g, v in gates.items()}
    assert [g for g, v in verdicts.items() if v == "fail"] == [], gates
    assert {"target", "guardrail", "holdout", "verify", "spec", "safety"} <= set(verdicts)
    target = gates["target"]["figures"]
    assert (target["decision"], target["before"], target["after"]) == ("better", 0.0, 1.0)
    assert target["p_value"] < target["alpha"]  # measured better, at the stated error rate
    assert gates["spec"]["figures"]["advice"] == ["needs at least 2 steps, got 0 (the parent too)"]
    assert gates["verify"]["figures"]["below_min"] is True  # house style: advice only
    assert (live / "SKILL.md").read_text() == text  # nothing lands before approval

    done = skillsmith("queue", "approve", cand["id"], "--why", "checks encryption first")
    assert done.stderr == ""  # the reference's example password stops nothing
    now = files_with_modes(live)
    assert now["SKILL.md"][0].decode("utf-8") == patched
    assert {k: v for k, v in now.items() if k != "SKILL.md"} == {
        k: v for k, v in original.items() if k != "SKILL.md"
    }
    assert b"--password=secret123" in now["reference.md"][0]
    done = skillsmith("snapshot", "--note", "after the approval", "--json")
    assert json.loads(done.stdout)["path"].endswith(".tar.gz")


def test_a_benchmark_too_small_for_every_split_evolves_and_says_what_it_could_not_run(
    tmp_path: Path, messages_server: MessagesServer
) -> None:
    """Issue 25: six cases, all of them selection cases. Evolve runs the round with what it has
    and names the gates it could not run, in its result and on the candidate's Holdout gate."""
    _project_dir, skillsmith, ws, _text, _patched = _adopted(tmp_path, messages_server)
    _benchmark(ws, [c for c in CASES if c[2] == "selection"])
    done = skillsmith(
        "evolve", "pdf-workbench", "--bench", "forms", "--rounds", "1", "--proposer",
        "anthropic", "-j", "2", "--json",
    )  # fmt: skip
    result = json.loads(done.stdout)
    assert result["not_run"] == [
        "the Holdout gate and the rollback to the best holdout version cannot run: the "
        "benchmark has no holdout case (6 cases in all)",
        "the Verify calibration against golden cases cannot run: the benchmark has no golden "
        "case (6 cases in all)",
    ]
    [cand] = json.loads(skillsmith("queue", "--json").stdout)
    assert cand["status"] == "pending_approval"
    shown = json.loads(skillsmith("queue", "show", cand["id"], "--json").stdout)
    holdout = next(g for g in shown["gates"] if g["gate"] == "holdout")
    assert holdout["verdict"] == "held" and holdout["figures"] == {"ran": False}
    assert holdout["reasons"] == [result["not_run"][0]]
