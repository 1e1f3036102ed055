"""Stop an evaluation that cannot measure anything: a broken agent, not a hard case.

Without this, a claude CLI with no network waits out every unit's timeout and the evaluation
"finishes" with zero valid units. Two checks, both cheap next to one unit:

- before the first unit, a claude-code agent's endpoint gets one free ``count_tokens`` request:
  a refused connection or a refused key is known in milliseconds, while the CLI itself would keep
  retrying for minutes;
- while units finish, :class:`FirstUnits` looks at the first few: when all of them are invalid
  for the same reason, and that reason belongs to the agent's surroundings (it cannot start,
  cannot reach its model, crashes identically on different cases), the evaluation stops.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.core.errors import SkillsmithError
from engine.evaluation.agents import Agent, codex

DEFAULT_API_URL = "https://api.anthropic.com"
# Claude Code marks a request made with an OAuth token (``claude setup-token``) with this beta
OAUTH_BETA = "oauth-2025-04-20"
PREFLIGHT_TIMEOUT_S = 10.0
# How many finished units decide; fewer when the evaluation has fewer units to run.
FIRST_UNITS = 3

# Agent kinds whose model is reached some other way than the Anthropic endpoint.
_OTHER_PROVIDERS = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")


# Endpoints (url, key digest) that answered in this process: an evolve loop evaluates dozens of
# times, and one check per endpoint is enough.
_REACHED: set[tuple[str, str]] = set()


class AgentBroken(SkillsmithError):
    """The agent cannot run any case; the message says why in one line."""


def api_url(agent: Agent) -> str:
    return agent.endpoint or DEFAULT_API_URL


def preflight(agent: Agent) -> None:
    """Refuse at once when a model CLI's API is unreachable or refuses its credential.

    claude-code gets a ``count_tokens`` request (with its API key, or its OAuth token as a
    bearer token, as the CLI sends it), codex a ``GET /models``. Any other answer (a 404 from a
    gateway without that route, a 400) proves the endpoint is there and the credential was not
    refused, which is all this check is for. The standard library speaks the one request:
    importing an SDK would cost seconds on every evaluation.
    """
    if agent.kind == "codex":
        key = agent.secret_env.get(codex.KEY_ENV)
        url = api_url(agent)
        if key:
            headers = {"authorization": f"Bearer {key}"}
            target = url.rstrip("/") + "/models"
            _probe(url, target, headers, None, "the OpenAI API", (key, "API key"), agent)
        return
    api_key = agent.secret_env.get("ANTHROPIC_API_KEY")
    token = agent.secret_env.get("CLAUDE_CODE_OAUTH_TOKEN")
    key = api_key or token
    if agent.kind != "claude-code" or not key:
        return
    if any(os.environ.get(name) and name in agent.env_allow for name in _OTHER_PROVIDERS):
        return
    url = api_url(agent)
    body = {
        "model": agent.model or "claude-sonnet-4-5",
        "messages": [{"role": "user", "content": "ping"}],
    }
    headers = {"anthropic-version": "2023-06-01", "content-type": "application/json"}
    if api_key:
        headers["x-api-key"] = api_key
    else:
        headers |= {"authorization": f"Bearer {key}", "anthropic-beta": OAUTH_BETA}
    target = url.rstrip("/") + "/v1/messages/count_tokens"
    said = "API key" if api_key else "OAuth token"
    _probe(url, target, headers, json.dumps(body).encode(), "the Messages API", (key, said), agent)


def _probe(
    url: str,
    target: str,
    headers: dict[str, str],
    body: bytes | None,
    what: str,
    credential: tuple[str, str],
    agent: Agent,
) -> None:
    """One request to ``target``; refuses on no connection, a 401 or a 403. ``credential`` is
    the value sent and what it is called in the refusal ("API key", "OAuth token")."""
    key, said = credential
    seen = (url, hashlib.sha256(key.encode()).hexdigest())
    if seen in _REACHED:
        return
    method = "POST" if body is not None else "GET"
    request = urllib.request.Request(target, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=PREFLIGHT_TIMEOUT_S):
            pass
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 401:
            raise AgentBroken(
                f"{what} at {url} refused the {said} (401); check {agent.credential}"
            ) from None
        if exc.code == 403:
            raise AgentBroken(f"{what} at {url} denied access (403) to this {said}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise AgentBroken(f"cannot reach {what} at {url}: {_connection_problem(exc)}") from None
    _REACHED.add(seen)


def _connection_problem(exc: BaseException) -> str:
    """The cause in words: "connection refused", not "<urlopen error [Errno 111] ...>"."""
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, TimeoutError) or isinstance(exc, TimeoutError):
        return f"no answer within {PREFLIGHT_TIMEOUT_S:g} s"
    text = str(reason).lower()
    for needle, said in (
        ("refused", "connection refused"),
        ("name or service not known", "host name not found"),
        ("nodename nor servname", "host name not found"),
        ("temporary failure in name resolution", "host name not found"),
        ("network is unreachable", "network unreachable"),
        ("certificate", "TLS certificate rejected"),
    ):
        if needle in text:
            return said
    return str(reason)[:160] or type(reason).__name__


# An invalid reason (engine.evaluation.agents' wording, or the claude CLI's own) → what it says
# about the
# agent's surroundings. Ordered: the first match names the fault.
_ENVIRONMENT = (
    (re.compile(r"^agent could not start: (?P<d>.*)"), "cannot start the agent {cmd}: {d}"),
    (
        re.compile(r"API status 401|authentication_error|invalid x-api-key|invalid api key", re.I),
        "the Messages API at {url} refused the API key (401)",
    ),
    (
        re.compile(r"API status 403|permission_error", re.I),
        "the Messages API at {url} denied access (403)",
    ),
    (
        re.compile(r"ECONNREFUSED|connection refused", re.I),
        "cannot reach the Messages API at {url}: connection refused",
    ),
    (
        re.compile(r"ENOTFOUND|EAI_AGAIN|getaddrinfo|could not resolve", re.I),
        "cannot reach the Messages API at {url}: host name not found",
    ),
    (
        re.compile(r"claude was retrying API status None|connection error|ETIMEDOUT", re.I),
        "cannot reach the Messages API at {url}: no connection",
    ),
)
# Identical crashes on different cases point at the agent or its config, not at a case.
_CRASH = re.compile(r"^agent (crashed|killed|did not exit)")


def environment_fault(reason: str | None, agent: Agent) -> str | None:
    """The one-line fault a unit's invalid reason shows, if it is not the case's own."""
    if not reason:
        return None
    for pattern, message in _ENVIRONMENT:
        found = pattern.search(reason)
        if found is None:
            continue
        if message.startswith("cannot start") or agent.kind == "claude-code":
            detail = found.groupdict().get("d") or ""
            return message.format(cmd=agent.command[0], url=api_url(agent), d=detail)
        return f"the agent cannot reach its model: {reason}"
    return None


@dataclass
class FirstUnits:
    """Watches the first finished units of one evaluation (see the module docstring)."""

    agent: Agent
    wanted: int
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    settled: bool = False

    def observe(self, case_id: str, invalid_reason: str | None) -> str | None:
        """The fault to stop on, once the first units have all shown the same one."""
        if self.settled:
            return None
        self.seen.append((case_id, invalid_reason))
        if invalid_reason is None:
            self.settled = True
            return None
        if len(self.seen) < self.wanted:
            return None
        self.settled = True
        return self._verdict(self.seen)

    def _verdict(self, seen: Sequence[tuple[str, str | None]]) -> str | None:
        faults = {environment_fault(reason, self.agent) for _, reason in seen}
        if len(faults) == 1 and None not in faults:
            return faults.pop()
        reasons = {reason for _, reason in seen}
        cases = {case for case, _ in seen}
        (reason, *_) = reasons
        if len(reasons) == 1 and reason and _CRASH.match(reason) and len(cases) > 1:
            return f"the agent fails the same way on every case: {reason}"
        return None


__all__ = [
    "FIRST_UNITS",
    "AgentBroken",
    "FirstUnits",
    "api_url",
    "environment_fault",
    "preflight",
]
