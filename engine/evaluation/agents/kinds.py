"""The built-in kinds of target agent and how one run of an agent is judged usable.

Every kind is "a command line run once per case run": ``demo`` (the bundled offline agent),
``command`` (any program printing session JSONL), ``claude-code`` (the real ``claude`` CLI in
print mode with stream-json) and ``codex`` (the OpenAI Codex CLI, ``codex exec --json``, see
codex.py). A kind decides the argv, the few extra environment variables it
needs, where skills go in the run directory, and how its stdout becomes a session. Whatever goes
wrong with the process — crash, timeout, flood, garbage — becomes an *invalid* outcome with a
reason, never an exception, so one broken unit cannot stop an evaluation.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import engine.evaluation.agents.codex as codex
from engine.core.config import AgentConfig, check_agent_command
from engine.core.errors import SkillsmithError
from engine.core.unfollowed import size_inside
from engine.core.vault import Credential, find_credential, redact, remember_vault
from engine.core.workspace import Workspace
from engine.evaluation.agents.isolation import ANSWER_FILE, HOME_DIR, room_env
from engine.evaluation.agents.limits import UnitLimits
from engine.evaluation.agents.network import url_host
from engine.evaluation.agents.process import ProcessResult, run_process
from engine.evaluation.agents.sandbox import NO_SANDBOX, Sandbox, make_sandbox
from engine.evaluation.agents.sessions import (
    OutputError,
    ParsedSession,
    claude_retry_note,
    parse_claude_stream,
    parse_session_jsonl,
)
from engine.evaluation.grading import answer_of

CLAUDE_BIN_ENV = "SKILLSMITH_CLAUDE_BIN"
CODEX_BIN_ENV = "SKILLSMITH_CODEX_BIN"


@dataclass(frozen=True)
class CliKind:
    """A kind that runs a model's own CLI, and what tells them apart."""

    program: str  # its name on PATH
    bin_env: str  # the variable naming its file
    skills_subdir: str  # where it loads a project's skills
    credentials: tuple[str, ...]  # the variables it takes; the first one found is passed
    base_url_env: str  # the variable of its endpoint
    default_url: str  # the endpoint without it


CLI_KINDS = {
    "claude-code": CliKind(
        "claude",
        CLAUDE_BIN_ENV,
        ".claude/skills",
        ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"),
        "ANTHROPIC_BASE_URL",
        "https://api.anthropic.com",
    ),
    "codex": CliKind(
        "codex",
        CODEX_BIN_ENV,
        ".agents/skills",
        ("OPENAI_API_KEY", "CODEX_API_KEY"),
        codex.BASE_URL_ENV,
        codex.DEFAULT_BASE_URL,
    ),
}
DEMO_MODULE = "engine.evaluation.demo.agent"


def kind_endpoint(kind: str, env: Mapping[str, str]) -> str | None:
    """The model API a CLI kind calls, from the environment it is given (else its default);
    None for kinds that call none (they reach only agent.allow_hosts)."""
    cli = CLI_KINDS.get(kind)
    return None if cli is None else env.get(cli.base_url_env) or cli.default_url


# ``-m`` puts the working directory first on sys.path, and the demo agent's working directory
# is the run folder, full of the case's files: a statement holding ``json.py`` would replace
# the agent's json module. -P keeps the folder off the path, -s the (room-local) user site.
DEMO_FLAGS = ("-P", "-s")
GRACE_S = 2.0
# Claude Code phones home for updates, telemetry and error reports unless told not to; a
# measurement run must talk to the configured Messages endpoint only.
_CLAUDE_QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


@dataclass
class AgentOutcome:
    """One agent run, ready to be graded and stored (secrets already masked)."""

    session: list[dict[str, Any]]
    answer: str
    tokens: dict[str, int]
    cost_usd: float | None
    duration_ms: int
    exit_code: int | None
    invalid_reason: str | None = None
    cancelled: bool = False
    raw_stream: str | None = None
    stderr_tail: str = ""
    agent_session_id: str | None = None


@dataclass(frozen=True)
class Agent:
    """A launchable agent: argv prefix, environment and limits (no workspace paths in it)."""

    kind: str
    command: tuple[str, ...]
    skills_subdir: str
    timeout_s: float
    max_output_bytes: int
    env_allow: tuple[str, ...] = ()
    model: str | None = None
    max_turns: int = 20
    allowed_tools: tuple[str, ...] = ()
    grace_s: float = GRACE_S
    noise: float = 0.0  # the demo agent's slip level (agent.noise); other kinds ignore it
    secret_env: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    sandbox: Sandbox = NO_SANDBOX
    # the demo agent's bytecode cache (demo_bytecode), mounted read-only where it exists
    bytecode: str | None = None
    credential: str | None = None  # which credential the agent got, by name (never its value)

    def argv(self, prompt: str) -> list[str]:
        if self.kind == "codex":
            base_url = self.secret_env.get(codex.BASE_URL_ENV)
            return codex.codex_argv(self.command, prompt, model=self.model, base_url=base_url)
        if self.kind != "claude-code":
            return list(self.command)
        argv = [*self.command, "-p", "--output-format", "stream-json", "--verbose"]
        argv += ["--max-turns", str(self.max_turns)]
        if self.model:
            argv += ["--model", self.model]
        if self.allowed_tools:  # variadic: "--" below ends it, so it swallows nothing
            argv += ["--allowedTools", ",".join(self.allowed_tools)]
        # a free-text statement goes in as written, and may start with "-" (a Markdown list):
        # after "--" it can never be read as an option
        return [*argv, "--", prompt]

    @property
    def endpoint(self) -> str | None:
        """The model API a CLI kind calls (None for the others): what its network must reach."""
        return kind_endpoint(self.kind, self.secret_env)

    def describe(self) -> dict[str, Any]:
        """What the manifest records about the agent (never a secret)."""
        return {
            "kind": self.kind,
            "command": list(self.command),
            "model": self.model,
            "timeout_s": self.timeout_s,
            "max_turns": self.max_turns,  # every kind gets it (SKILLSMITH_MAX_TURNS)
            "noise": self.noise if self.kind == "demo" else None,
            "allowed_tools": list(self.allowed_tools) if self.kind == "claude-code" else None,
            "sandbox": self.sandbox.describe(),
            "credential": self.credential,
        }

    def run(
        self,
        room: Path,
        prompt: str,
        should_stop: Callable[[], bool],
        run_index: int = 0,
        seed: int = 0,
    ) -> AgentOutcome:
        """Run once in ``room`` (built by :func:`engine.evaluation.agents.build_room`) and judge
        the output.

        The run index, the unit's seed and the turn budget are passed on so the demo agent can
        vary across runs reproducibly and stop where ``--max-turns`` would stop Claude Code.
        """
        extra = {
            "SKILLSMITH_SKILLS_DIR": self.skills_subdir,
            "SKILLSMITH_RUN_INDEX": str(run_index),
            "SKILLSMITH_SEED": str(seed),
            "SKILLSMITH_MAX_TURNS": str(self.max_turns),
            **self.secret_env,
        }
        sandbox = self.sandbox
        if self.kind == "demo":
            extra["SKILLSMITH_NOISE"] = repr(self.noise)
            # looked up where the run happens (a Ray worker may have no such folder)
            if self.bytecode is not None and os.path.isdir(self.bytecode):
                extra["PYTHONPYCACHEPREFIX"] = self.bytecode
                sandbox = sandbox.reading(Path(self.bytecode))
        if self.kind == "claude-code":
            extra.update(_CLAUDE_QUIET)
        if self.kind == "codex":  # its config and state folder, which it will not create
            home = room / HOME_DIR / codex.CODEX_HOME
            home.mkdir(parents=True, exist_ok=True)
            extra["CODEX_HOME"] = str(home)
        env = room_env(room, allow=self.env_allow, extra=extra)
        try:
            proc = run_process(
                self.argv(prompt),
                cwd=room,
                env=env,
                timeout_s=self.timeout_s,
                max_output_bytes=self.max_output_bytes,
                grace_s=self.grace_s,
                should_stop=should_stop,
                sandbox=sandbox,
            )
        except OSError as exc:
            return _invalid(f"agent could not start: {exc.strerror or exc}", exit_code=None)
        return self._judge(proc, room, prompt)

    def _judge(self, proc: ProcessResult, room: Path, prompt: str) -> AgentOutcome:
        secrets = tuple(self.secret_env.values())
        stdout = redact(proc.stdout.decode("utf-8", errors="replace"), secrets)
        stderr = redact(proc.stderr_tail.decode("utf-8", errors="replace"), secrets)
        raw = stdout if self.kind in CLI_KINDS else None
        outcome = _invalid("", exit_code=proc.exit_code, duration_ms=proc.duration_ms)
        outcome.stderr_tail, outcome.raw_stream = stderr, raw
        if proc.cancelled:
            outcome.cancelled, outcome.invalid_reason = True, "cancelled"
            return outcome
        limit = proc.over_limit
        if limit is None and not proc.timed_out and self.sandbox.kind != "none":
            limit = self.sandbox.limits.after_exit(proc.exit_code, stderr)
        if limit is not None:
            outcome.invalid_reason = limit
            return outcome
        if proc.timed_out:
            outcome.invalid_reason = f"timeout after {self.timeout_s:g}s"
            note = claude_retry_note(proc.stdout) if self.kind == "claude-code" else None
            if note:
                outcome.invalid_reason += f" ({note})"
            return outcome
        if proc.over_cap or (size_inside(room, ANSWER_FILE) or 0) > self.max_output_bytes:
            outcome.invalid_reason = f"output over cap ({self.max_output_bytes} bytes)"
            return outcome
        try:
            parsed = self._parse(stdout.encode("utf-8"), prompt)
        except OutputError as exc:
            # with nothing on stdout the exit status says most; otherwise the output's problem
            failed = _exit_problem(proc.exit_code, stderr) if not stdout.strip() else None
            outcome.invalid_reason = failed or str(exc)
            return outcome
        limited = parsed.lines and parsed.lines[-1].get("subtype") in _LIMIT_SUBTYPES
        failed = _exit_problem(proc.exit_code, stderr)
        if failed and not limited:
            outcome.invalid_reason = failed
            outcome.session = parsed.lines
            return outcome
        answer = redact(answer_of(room, parsed.lines), secrets)
        if not answer.strip() and not limited:
            outcome.invalid_reason = "no answer (no answer.txt and no final assistant message)"
        else:
            outcome.invalid_reason = None
        if not any(line.get("type") == "result" for line in parsed.lines):
            parsed.lines.append(
                {
                    "type": "result",
                    "tokens": parsed.tokens,
                    "cost_usd": parsed.cost_usd,
                    "duration_ms": proc.duration_ms,
                    "is_error": outcome.invalid_reason is not None,
                }
            )
        outcome.session = parsed.lines
        outcome.answer = answer
        outcome.tokens = parsed.tokens
        outcome.cost_usd = parsed.cost_usd
        outcome.agent_session_id = parsed.agent_session_id
        return outcome

    def _parse(self, stdout: bytes, prompt: str) -> ParsedSession:
        if self.kind == "claude-code":
            return parse_claude_stream(stdout, prompt)
        if self.kind == "codex":
            return codex.parse_codex_stream(stdout, prompt)
        parsed = parse_session_jsonl(stdout)
        if not parsed.lines:
            raise OutputError("no output: the agent printed no session lines")
        return parsed


_LIMIT_SUBTYPES = ("error_max_turns", "error_max_budget_usd")


def _invalid(reason: str, *, exit_code: int | None, duration_ms: int = 0) -> AgentOutcome:
    return AgentOutcome(
        session=[],
        answer="",
        tokens={"input": 0, "output": 0},
        cost_usd=None,
        duration_ms=duration_ms,
        exit_code=exit_code,
        invalid_reason=reason,
    )


def _exit_problem(exit_code: int | None, stderr: str) -> str | None:
    """Why a non-zero exit makes the unit unusable, in one line (None for a clean exit)."""
    if exit_code == 0:
        return None
    last = next((ln.strip() for ln in reversed(stderr.splitlines()) if ln.strip()), "")
    tail = f": {last[:160]}" if last else ""
    if exit_code is None:
        return "agent did not exit" + tail
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        return f"agent killed by {name}" + tail
    return f"agent crashed (exit status {exit_code})" + tail


def make_agent(ws: Workspace, cfg: AgentConfig | None = None) -> Agent:
    """The agent ``skillsmith.yaml`` configures, with what its kind needs resolved.

    Refuses (one line) when the sandbox it asks for cannot run here.
    """
    cfg = cfg or ws.load_config().agent
    remember_vault(ws)  # whatever an agent echoes from a vault value gets masked before storing
    common: dict[str, Any] = {
        "timeout_s": cfg.timeout_s,
        "max_output_bytes": cfg.max_output_bytes,
        "env_allow": tuple(cfg.env_allow),
        "model": cfg.model,
        "max_turns": cfg.max_turns,  # every kind stops at it (the demo too: a tool-call budget)
    }
    if cfg.kind == "demo":
        command: tuple[str, ...] = (sys.executable, *DEMO_FLAGS, "-m", DEMO_MODULE)
        extra: dict[str, Any] = {"skills_subdir": "skills", "noise": cfg.noise}
        cache = demo_bytecode()
        if cache is not None and not _overlaps(cache, ws.root):
            extra["bytecode"] = str(cache)
    elif cfg.kind == "command":
        if not cfg.command:
            raise SkillsmithError(
                f"{ws.config_path}: field 'agent.command': expected the agent's command line "
                "(a non-empty list) for agent kind 'command'"
            )
        check_agent_command(cfg, ws.config_path)
        command, extra = tuple(cfg.command), {"skills_subdir": "skills"}
    else:
        command = _cli_command(ws, cfg)
        found = _credential(ws, cfg.kind)
        extra = {
            "skills_subdir": CLI_KINDS[cfg.kind].skills_subdir,
            "allowed_tools": tuple(cfg.allowed_tools),
            "secret_env": _cli_env(cfg.kind, found),
            "credential": found.shown,
        }
    # by default a kind reaches the hosts it needs and those listed, through the proxy
    endpoint = kind_endpoint(cfg.kind, extra.get("secret_env", {}))
    allow = [*([url_host(endpoint)] if endpoint else []), *cfg.allow_hosts]
    sandbox = make_sandbox(
        cfg.sandbox,
        network=bool(cfg.network),
        allow=allow if cfg.network is None else (),
        command=command,
        workspace=ws.root,
        read_only=cfg.read_only_paths,
        writable=cfg.writable_paths,
        limits=UnitLimits(cfg.memory_mb, cfg.max_processes, cfg.disk_mb),
    )
    return Agent(kind=cfg.kind, command=command, sandbox=sandbox, **extra, **common)


def bytecode_cache_dir() -> Path:
    """Where the demo agent's compiled modules are kept: ``$XDG_CACHE_HOME/skillsmith/pycache``
    (default ``~/.cache``), outside every workspace and run folder."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "skillsmith" / "pycache"


# Modules whose compiled form is checked before the first demo run of a process: the agent's own
# (it changes with the engine), PyYAML's and the standard library's (they change with an
# upgrade); the rest of the closure is compiled along with them.
_BYTECODE_PROBES = ("engine.evaluation.demo.agent", "yaml", "runpy")


@functools.cache
def demo_bytecode() -> Path | None:
    """The bytecode cache the demo agent imports from (``PYTHONPYCACHEPREFIX``), filled once.

    Every demo run is a fresh interpreter under a read-only sandbox, so without compiled
    modules it compiles the engine's and PyYAML's sources (its own imports) again on every
    start — about as long as the rest of the run — wherever no ``__pycache__`` was written
    (``PYTHONDONTWRITEBYTECODE``, an install without bytecode). One import of the agent with
    the cache as prefix, outside the sandbox, compiles the whole closure (the standard
    library's modules too: a prefix replaces every ``__pycache__``); it runs when a probed
    module's compiled form is missing or stale, at most once per process. The cache only
    saves time: a missing or stale entry is compiled as before, so a cache that cannot be
    created (None) leaves the agent as it was. Runs see it read-only (under the sandbox), so
    no run can plant code for the next.
    """
    cache = bytecode_cache_dir()
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not all(_compiled(cache, name) for name in _BYTECODE_PROBES):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(cache)
        # ``-m`` starts the agent through runpy: its imports are the agent's at run time too
        argv = [sys.executable, *DEMO_FLAGS, "-c", f"import runpy, {DEMO_MODULE}"]
        try:
            subprocess.run(argv, env=env, capture_output=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
    return cache


def _overlaps(cache: Path, workspace: Path) -> bool:
    """A cache inside the workspace (or holding it) would show the agent the workspace."""
    a, b = cache.resolve(), workspace.resolve()
    return a == b or a in b.parents or b in a.parents


def _compiled(cache: Path, module: str) -> bool:
    """Whether ``module``'s source has a current compiled form under the prefix ``cache``
    (the timestamp header Python itself checks: magic number, source mtime and size)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return True  # nothing to compile
    source = Path(os.path.abspath(spec.origin))  # as the agent's import system names it
    tag = sys.implementation.cache_tag
    pyc = cache / source.parent.relative_to(source.anchor) / f"{source.stem}.{tag}.pyc"
    try:
        with pyc.open("rb") as fh:
            header = fh.read(16)
        st = source.stat()
    except OSError:
        return False
    stamp = (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
    size = (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    return header == importlib.util.MAGIC_NUMBER + bytes(4) + stamp + size


def _cli_command(ws: Workspace, cfg: AgentConfig) -> tuple[str, ...]:
    """The kind's ``$SKILLSMITH_…_BIN``, else ``agent.command``, else its program on PATH."""
    program, variable = CLI_KINDS[cfg.kind].program, CLI_KINDS[cfg.kind].bin_env
    chosen = os.environ.get(variable)
    if chosen:
        if not Path(chosen).is_file():
            raise SkillsmithError(f"${variable}={chosen}: no such file (the {program} CLI)")
        return (chosen,)
    if cfg.command:
        check_agent_command(cfg, ws.config_path)
        return tuple(cfg.command)
    found = shutil.which(program)
    if found is None:
        raise SkillsmithError(
            f"{ws.config_path}: field 'agent.kind': {cfg.kind} needs the {program} CLI; "
            f"put it on PATH or set ${variable}"
        )
    return (found,)


def _credential(ws: Workspace, kind: str) -> Credential:
    """The kind's first credential found in the environment or the vault; refused without one."""
    names = CLI_KINDS[kind].credentials
    found = find_credential(ws, names)
    if found is None:
        where = " or ".join(f"${n} or vault/{n.lower()}" for n in names)
        raise SkillsmithError(f"{ws.vault_dir}: no credential for {kind} (set {where})")
    return found


def _cli_env(kind: str, found: Credential) -> dict[str, str]:
    """Only what the CLI needs to reach its model: the credential and (optionally) the endpoint.

    Codex reads its key from the variable its provider table names (codex.KEY_ENV), whichever
    of its credentials was found.
    """
    env = {codex.KEY_ENV if kind == "codex" else found.name: found.value}
    base_variable = CLI_KINDS[kind].base_url_env
    base_url = os.environ.get(base_variable)
    if base_url:
        env[base_variable] = base_url
    return env
