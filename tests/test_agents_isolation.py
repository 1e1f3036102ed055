"""The sealed run directory: what an agent can and cannot see (real subprocesses, real files)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import tempfile
import uuid
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.errors import SkillsmithError
from engine.core.vault import write_secret
from engine.core.workspace import Workspace
from engine.evaluation.agents import (
    RoomSpec,
    SkillFiles,
    build_room,
    remove_room,
    room_env,
    sandbox,
    scratch_root,
)
from engine.evaluation.runner import run_evaluation
from tests.bench_helpers import write_benchmark, write_case
from tests.runner_helpers import (
    ADVERSARIAL,
    AGENTS,
    LABELS,
    add_skill,
    command_workspace,
    require_bwrap,
    running,
)

RUBRIC_SECRET = "the injection sits in handler dot py near the cursor call"
VAULT_SECRET = "vault-value-5b7e1c9d2a"
API_KEY = "sk-ant-api03-adversarial-test-key-0123456789"
# what the manifest records of a unit's limits when skillsmith.yaml leaves them at their defaults
LIMITS = {"limits": {"memory_mb": 4096, "max_processes": 512, "disk_mb": 4096}}


def _report(session_file: Path) -> dict[str, object]:
    lines = [json.loads(line) for line in session_file.read_text().splitlines()]
    answer = next(ln["content"] for ln in reversed(lines) if ln["type"] == "assistant")
    encoded = answer.split("REPORT ", 1)[1].split()[0]
    report: dict[str, object] = json.loads(bytes.fromhex(encoded))
    return report


def test_adversarial_agent_finds_no_rubric_vault_workspace_or_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("SKILLSMITH_WORKSPACE", str(tmp_path / "ws"))
    ws = command_workspace(tmp_path / "ws", ADVERSARIAL, env_allow=())
    write_secret(ws, "anthropic_api_key", VAULT_SECRET)
    (ws.agents_md).write_text("Be careful.\n")
    add_skill(ws, "audit", "1. Read the code.\n", {"references/notes.md": "reference text\n"})
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    for case_id in ("one", "two"):
        write_case(
            root,
            case_id,
            {"expected": "vulnerable", "notes": RUBRIC_SECRET},
            files={"handler.py": "cursor.execute(q)\n"},
        )

    result = run_evaluation(ws, "b", jobs=2)

    assert [r["pass_fail"] for r in result.rows] == ["fail", "fail"]  # valid units, wrong label
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    for row in result.rows:
        report = _report(result.run_dir / row["session_file"])
        dump = json.dumps(report)
        for secret in (RUBRIC_SECRET, VAULT_SECRET, API_KEY, str(ws.root), "rubric.yaml"):
            assert secret not in dump, f"leaked {secret!r}"
        assert "skillsmith.yaml" not in dump
        assert report["api_key"] is None
        env = report["env"]
        assert isinstance(env, dict)
        allowed = {"PATH", "LANG", "TERM", "TZ", "HOME", "TMPDIR", "PWD"}
        allowed |= {"SKILLSMITH_PROMPT_FILE", "SKILLSMITH_SKILLS_DIR"}
        allowed |= {"SKILLSMITH_RUN_INDEX", "SKILLSMITH_MAX_TURNS", "SKILLSMITH_SEED"}
        assert {k for k in env if not k.startswith("LC_")} <= allowed
        # the manifest records the turn budget the agent was really given
        assert env["SKILLSMITH_MAX_TURNS"] == str(manifest["agent"]["max_turns"]) == "20"
        cwd = Path(str(report["cwd"]))
        assert ws.root not in cwd.parents
        assert env["HOME"] == str(cwd / ".home")
        assert report["guesses"] == {}
        # what it was meant to see is there: the statement, the prompt, AGENTS.md, the skill
        siblings = report["sibling_files"]
        assert isinstance(siblings, dict)
        mine = {
            Path(p).relative_to(cwd).as_posix() for p in siblings if Path(p).is_relative_to(cwd)
        }
        assert {"handler.py", "PROMPT.md", "AGENTS.md", "prompt.md"} <= mine
        assert {"skills/audit/SKILL.md", "skills/audit/references/notes.md"} <= mine
    # and the run folder holds no secret either (redaction as well as isolation)
    for path in result.run_dir.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert VAULT_SECRET not in text and API_KEY not in text
    key_digest = hashlib.sha256(API_KEY.encode()).hexdigest()
    assert key_digest not in (result.run_dir / "results.jsonl").read_text()


def test_probe_agent_at_four_jobs_reaches_nothing_outside_its_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_bwrap()
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("SKILLSMITH_WORKSPACE", str(tmp_path / "ws"))
    token = f"probe-{uuid.uuid4().hex}"
    ws = command_workspace(tmp_path / "ws", AGENTS / "probe_agent.py", env_allow=())
    write_secret(ws, "anthropic_api_key", VAULT_SECRET)
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    # files planted inside and outside the workspace, their paths handed to the agent outright
    planted = [ws.root / "planted.txt", tmp_path / "outside" / "planted.txt"]
    planted[1].parent.mkdir()
    for path in planted:
        path.write_text(f"planted {token}\n")
    planted.append(ws.vault_dir / "anthropic_api_key")
    targets = "".join(f"{p}\n" for p in planted)
    for case_id in ("one", "two", "three", "four"):
        write_case(
            root,
            case_id,
            {"expected": "vulnerable", "notes": RUBRIC_SECRET},
            files={"handler.py": "cursor.execute(q)\n", "token.txt": token + "\n"}
            | {"targets.txt": targets},
        )
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # run folders of its own
    guarded = {p: p.read_bytes() for p in planted}

    result = run_evaluation(ws, "b", jobs=4)

    # the sleeping, setsid-ed grandchildren ended with their units, not some time later
    assert running(token) == []
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["agent"]["sandbox"] == {"kind": "bwrap", "network": False} | LIMITS
    # no answer was flipped by a sibling: every unit kept its own (wrong) label
    assert [r["pass_fail"] for r in result.rows] == ["fail"] * 4
    for row in result.rows:
        report = _report(result.run_dir / row["session_file"])
        dump = json.dumps(report)
        for secret in (RUBRIC_SECRET, VAULT_SECRET, API_KEY, str(ws.root), "SKILLSMITH_WORKSPACE"):
            assert secret not in dump, f"leaked {secret!r}"
        assert report["found"] == {}
        assert report["siblings"] == [] and report["overwritten"] == []
        assert report["guesses"] == dict.fromkeys(report["guesses"])  # all None: nothing there
        views = report["views"]
        assert isinstance(views, dict)
        # its /proc shows its own namespace only: itself and its grandchild, no parent (ppid 0)
        assert report["sleeper_running"] is True  # the grandchild was alive when it reported
        assert report["ppid"] == 0 and views["0"]["cmdline"] is None
        others = [v["cmdline"] for pid, v in views.items() if pid != "0"]
        assert len(others) == 2 and all("probe_agent.py" in c or token in c for c in others)
        writes = report["writes"]
        assert isinstance(writes, dict) and writes
        for target in writes:
            assert not Path(target).exists(), f"wrote {target} outside its run folder"
        # knowing the paths is no way in: nothing read, changed, removed or written beside them
        assert report["targets"] == [
            {"read": None, "overwrote": False, "beside": False, "removed": False}
        ] * len(planted)
    assert {p: p.read_bytes() for p in planted} == guarded
    assert [p for p in tmp_path.rglob(f"{token}-beside-target")] == []
    # nothing with the token was left anywhere the harness can see, but for what the agents wrote
    # into their own run folders (kept with the run as its outputs)
    kept = result.run_dir / "outputs"
    leftovers = [p for p in (*tmp_path.rglob("*"), *Path("/tmp").iterdir()) if token in p.name]
    assert [p for p in leftovers if not p.is_relative_to(kept)] == []
    assert list(scratch_root(ws.root).iterdir()) == []  # every unit folder was removed


def test_a_workspace_inside_a_system_folder_stays_unseen(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    require_bwrap()
    # a workspace kept under a folder the sandbox shows read-only, as /opt or /usr/local would
    # be; the folder lies outside /tmp (the sandbox's own /tmp would cover it) and is removed
    system = Path(tempfile.mkdtemp(prefix="skillsmith-system-", dir="/var/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(system))
    monkeypatch.setattr(sandbox, "SYSTEM_DIRS", (*sandbox.SYSTEM_DIRS, str(system)))
    token = f"probe-{uuid.uuid4().hex}"
    ws = command_workspace(system / "team" / "ws", AGENTS / "probe_agent.py", env_allow=())
    write_secret(ws, "anthropic_api_key", VAULT_SECRET)
    tool = system / "team" / "tool.txt"  # the rest of the system folder is still there to read
    tool.write_text("a shared tool\n")
    planted = [ws.root / "planted.txt", ws.vault_dir / "anthropic_api_key", tool]
    planted[0].write_text(f"planted {token}\n")
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    targets = "".join(f"{p}\n" for p in planted)
    write_case(
        root,
        "one",
        {"expected": "vulnerable", "notes": RUBRIC_SECRET},
        files={"token.txt": token + "\n", "targets.txt": targets},
    )
    guarded = {p: p.read_bytes() for p in planted}

    result = run_evaluation(ws, "b")

    report = _report(result.run_dir / result.rows[0]["session_file"])
    dump = json.dumps(report)
    for secret in (RUBRIC_SECRET, VAULT_SECRET, str(ws.root)):
        assert secret not in dump, f"leaked {secret!r}"
    assert report["found"] == {}
    nothing = {"read": None, "overwrote": False, "beside": False, "removed": False}
    assert report["targets"][:2] == [nothing, nothing]
    # the shared folder reads, and stays as it was (a write beside it lands in the namespace's
    # own scratch root, gone with the unit)
    assert report["targets"][2] | {"beside": False} == nothing | {"read": "a shared tool\n"}
    assert {p: p.read_bytes() for p in planted} == guarded
    kept = result.run_dir / "outputs"  # what it wrote into its own folder is kept with the run
    assert [p for p in system.rglob(f"{token}*") if not p.is_relative_to(kept)] == []


@pytest.mark.parametrize("network", [None, True])
def test_the_network_is_cut_unless_the_config_turns_it_on(
    tmp_path: Path, network: bool | None
) -> None:
    require_bwrap()
    ws = command_workspace(tmp_path / "ws", AGENTS / "probe_agent.py", env_allow=())
    cfg = ws.load_config()
    cfg.agent.network = network  # None: the kind's default, off for a command agent
    ws.save_config(cfg)
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    with socket.create_server(("127.0.0.1", 0)) as listener:  # the harness's own loopback
        host, port = listener.getsockname()[:2]
        files = {"token.txt": f"probe-{uuid.uuid4().hex}\n", "address.txt": f"{host}:{port}\n"}
        write_case(root, "one", {"expected": "vulnerable"}, files=files)

        result = run_evaluation(ws, "b")

    report = _report(result.run_dir / result.rows[0]["session_file"])
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["agent"]["sandbox"] == {"kind": "bwrap", "network": bool(network)} | LIMITS
    assert report["reached"] is bool(network)


def test_room_holds_exactly_the_statement_prompt_agents_md_and_skills(tmp_path: Path) -> None:
    statement = tmp_path / "statement"
    (statement / "src").mkdir(parents=True)
    (statement / "prompt.md").write_text("Audit.\n")
    (statement / "src" / "a.py").write_text("x = 1\n")
    secret_dir = tmp_path / "private"
    secret_dir.mkdir()
    (secret_dir / "key").write_text("do not copy\n")
    (statement / "escape").symlink_to(secret_dir)  # a link out of the statement is not followed
    skill_dir = tmp_path / "skill"
    (skill_dir / "scripts").mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("old text\n")
    (skill_dir / "scripts" / "run.sh").write_text("echo hi\n")
    spec = RoomSpec(
        statement_dir=statement,
        prompt="# Task\n\nAudit.\n",
        skills=(SkillFiles("audit", "new text\r\n", skill_dir),),
        skills_subdir=".claude/skills",
        agents_md="Rules.\n",
    )
    room = build_room(spec, tmp_path / "scratch")
    try:
        files = sorted(p.relative_to(room).as_posix() for p in room.rglob("*") if p.is_file())
        assert files == [
            ".claude/skills/audit/SKILL.md",
            ".claude/skills/audit/scripts/run.sh",
            "AGENTS.md",
            "PROMPT.md",
            "prompt.md",
            "src/a.py",
        ]
        assert (room / ".claude/skills/audit/SKILL.md").read_bytes() == b"new text\r\n"
        assert (room / ".home").is_dir() and (room / ".tmp").is_dir()
    finally:
        remove_room(room)
    assert not room.exists()


def test_statement_file_with_a_reserved_name_is_refused(tmp_path: Path) -> None:
    statement = tmp_path / "statement"
    statement.mkdir()
    (statement / "PROMPT.md").write_text("mine\n")
    spec = RoomSpec(statement, "# Task\n", (), "skills")
    with pytest.raises(SkillsmithError, match=r"PROMPT\.md"):
        build_room(spec, tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["statement"]  # nothing half-built left


def test_environment_is_built_from_the_allow_list(tmp_path: Path) -> None:
    source = {
        "PATH": "/bin",
        "LC_ALL": "C",
        "ANTHROPIC_API_KEY": "sk-x",
        "SKILLSMITH_WORKSPACE": "/ws",
        "MY_FLAG": "1",
        "HOME": "/root",
    }
    env = room_env(tmp_path, allow=["MY_FLAG"], extra={"X": "y"}, source=source)
    assert env == {
        "PATH": "/bin",
        "LC_ALL": "C",
        "MY_FLAG": "1",
        "HOME": str(tmp_path / ".home"),
        "TMPDIR": str(tmp_path / ".tmp"),
        "PWD": str(tmp_path),
        "SKILLSMITH_PROMPT_FILE": "PROMPT.md",
        "X": "y",
    }


def test_scratch_root_inside_the_workspace_is_refused(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setattr(tempfile, "tempdir", str(workspace.root / "tmp"))
    with pytest.raises(SkillsmithError, match="inside the workspace"):
        scratch_root(workspace.root)


def test_room_removal_survives_an_agent_that_locked_its_files(tmp_path: Path) -> None:
    statement = tmp_path / "statement"
    statement.mkdir()
    (statement / "prompt.md").write_text("x\n")
    room = build_room(RoomSpec(statement, "# Task\n", (), "skills"), tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(outside, 0o755)
    (room / "locked" / "deep").mkdir(parents=True)
    (room / "locked" / "deep" / "f").write_text("x")
    (room / "link").symlink_to(outside)
    os.chmod(room / "locked", 0)
    remove_room(room)
    assert not room.exists()
    assert outside.is_dir() and (outside.stat().st_mode & 0o777) == 0o755


def test_without_bubblewrap_evaluation_refuses_unless_sandbox_none_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = command_workspace(tmp_path / "ws", ADVERSARIAL, env_allow=())
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    write_case(root, "one", {"expected": "safe"}, files={"handler.py": "x = 1\n"})
    bare = tmp_path / "bin"  # a PATH on which there is no bwrap
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))

    assert main(["eval", "b", "-w", str(ws.root)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "bubblewrap" in err and "agent.sandbox: none" in err
    assert not ws.runs_dir.exists() or list(ws.runs_dir.iterdir()) == []

    cfg = ws.load_config()
    cfg.agent.sandbox = "none"  # an explicit choice to run unconfined
    ws.save_config(cfg)
    result = run_evaluation(ws, "b")
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["agent"]["sandbox"] == {"kind": "none", "network": True}
    assert [r["pass_fail"] for r in result.rows] == ["pass"]


def test_a_statement_named_prompt_md_is_refused_before_any_run_folder_or_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = command_workspace(tmp_path / "ws", ADVERSARIAL, env_allow=())
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    write_case(root, "one", {"expected": "safe"}, files={"PROMPT.md": "mine\n"})
    before = sorted(p.relative_to(ws.root) for p in ws.root.rglob("*"))

    with pytest.raises(SkillsmithError, match=r"PROMPT\.md.*may not be named"):
        run_evaluation(ws, "b")
    assert sorted(p.relative_to(ws.root) for p in ws.root.rglob("*")) == before
    # the command says so in one line and leaves no run folder or session log either
    assert main(["eval", "b", "-w", str(ws.root)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "PROMPT.md" in err and "Traceback" not in err, err
    assert sorted(p.relative_to(ws.root) for p in ws.root.rglob("*")) == before


def test_a_case_file_named_like_a_module_does_not_replace_the_demo_agents_own(
    tmp_path: Path,
) -> None:
    """The demo agent runs with ``-m`` in the run folder; a statement's ``json.py`` or ``re.py``
    must stay a file to audit, not become the agent's json module (-P keeps the folder off
    sys.path)."""
    from engine.evaluation.agents import make_agent
    from engine.evaluation.demo import copy_demo

    ws = Workspace.at(copy_demo(tmp_path / "demo"))
    statement = tmp_path / "statement"
    statement.mkdir()
    (statement / "prompt.md").write_text("Audit the files here.\n")
    for name in ("json.py", "re.py"):
        (statement / name).write_text('raise SystemExit("hijacked")\n')
    agent = make_agent(ws)
    skill = ws.skills_dir / "security-audit" / "SKILL.md"
    spec = RoomSpec(
        statement,
        "# Task\n\nAudit json.py. End with `VERDICT: vulnerable` or `VERDICT: safe`.\n",
        (SkillFiles("security-audit", skill.read_text()),),
        agent.skills_subdir,
    )
    room = build_room(spec, scratch_root(ws.root))
    try:
        outcome = agent.run(room, "audit", lambda: False)
    finally:
        remove_room(room)
    assert "hijacked" not in outcome.stderr_tail
    assert outcome.invalid_reason is None and outcome.exit_code == 0
    assert "VERDICT:" in outcome.answer


def test_the_demo_agent_imports_from_a_bytecode_cache_that_no_run_can_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandboxed interpreter cannot write ``__pycache__``, so every demo run would compile
    its sources again; the harness fills a cache the runs import from. It must change no
    outcome (the same seed, the same rows as without it) and stay read-only to the runs: one
    that could write it could plant code for every later run."""
    require_bwrap()
    import importlib.util
    import sys

    from engine.evaluation.agents import make_agent
    from engine.evaluation.agents.kinds import DEMO_MODULE, demo_bytecode
    from engine.evaluation.agents.process import run_process
    from engine.evaluation.demo import DEMO_BENCHMARK, copy_demo

    def rows(run_dir: Path) -> list[tuple[object, ...]]:
        lines = (run_dir / "results.jsonl").read_text().splitlines()
        keys = ("case_id", "run_index", "pass_fail", "judge_verdict", "score")
        return sorted(tuple(json.loads(line)[k] for k in keys) for line in lines)

    ws = Workspace.at(copy_demo(tmp_path / "demo"))
    cases = sorted(p.name for p in (ws.benchmarks_dir / DEMO_BENCHMARK).iterdir() if p.is_dir())
    # a noisy agent: the seed fixes its slips, so both evaluations must agree row for row
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder"))  # no cache possible
    demo_bytecode.cache_clear()
    assert make_agent(ws).bytecode is None
    plain = run_evaluation(ws, DEMO_BENCHMARK, jobs=2, seed=11, case_ids=cases[:4])

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    demo_bytecode.cache_clear()
    try:
        agent = make_agent(ws)
    finally:
        demo_bytecode.cache_clear()  # later tests find the default cache again
    cache = tmp_path / "cache" / "skillsmith" / "pycache"
    assert agent.bytecode == str(cache)
    spec = importlib.util.find_spec(DEMO_MODULE)
    assert spec is not None and spec.origin is not None
    source = Path(os.path.abspath(spec.origin))
    tag = sys.implementation.cache_tag
    compiled = cache / source.parent.relative_to("/") / f"agent.{tag}.pyc"
    assert compiled.is_file()
    before = {p: p.stat().st_mtime_ns for p in cache.rglob("*")}

    cached = run_evaluation(
        ws, DEMO_BENCHMARK, jobs=2, seed=11, case_ids=cases[:4], scoreboard=False
    )

    assert rows(cached.run_dir) == rows(plain.run_dir) and cached.run_id != plain.run_id
    assert {p: p.stat().st_mtime_ns for p in cache.rglob("*")} == before

    statement = ws.benchmarks_dir / DEMO_BENCHMARK / cases[0] / "statement"
    room = build_room(RoomSpec(statement, "p", (), agent.skills_subdir), scratch_root(ws.root))
    try:
        planted = cache / "planted.pyc"
        done = run_process(
            # the cache is there to read (exit 7 if not), not to write
            ["/bin/sh", "-c", f'test -s "{compiled}" || exit 7; echo code > "{planted}"'],
            cwd=room,
            env={"PATH": "/usr/bin:/bin"},
            timeout_s=30,
            max_output_bytes=10_000,
            sandbox=agent.sandbox.reading(cache),
        )
    finally:
        remove_room(room)
    assert done.exit_code not in (0, 7) and not planted.exists()
