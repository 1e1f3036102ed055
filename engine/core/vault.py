"""Secrets: reading ``vault/`` and keeping its values out of everything Skillsmith writes.

The vault is one file per secret (``vault/<name>``, mode 0600), never snapshotted, copied into a
run, logged or put into a prompt. Reading a secret also remembers its value, so :func:`redact`
— which every writer of logs, prompts, experiments and diffs runs its text through — masks it
wherever it turns up, together with the API keys in the environment and any string shaped like a
well-known credential.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.errors import FormatError, SkillsmithError
from engine.core.fsutil import atomic_write_bytes
from engine.core.secret_scan import KEY_SHAPES, is_secret_value
from engine.core.workspace import Workspace

ANTHROPIC_KEY_NAME = "anthropic_api_key"
# every credential an agent kind may be given (engine.evaluation.agents.kinds): masked wherever
# its value turns up, even when it came from the environment
ENV_SECRETS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
)
MASK = "[REDACTED]"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

_known: set[str] = set()
_known_guard = threading.Lock()


def _secret_path(ws: Workspace, name: str) -> Path:
    if not _NAME.fullmatch(name):
        raise SkillsmithError(
            f"{ws.vault_dir}: invalid secret name {name!r} "
            "(expected letters, digits, '_', '.', '-')"
        )
    return ws.vault_dir / name


def read_secret(ws: Workspace, name: str) -> str | None:
    """The value of ``vault/<name>`` (surrounding whitespace stripped), or None if absent."""
    path = _secret_path(ws, name)
    try:
        value = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillsmithError(f"{path}: cannot read secret ({type(exc).__name__})") from None
    if not value:
        raise FormatError(path, None, "a non-empty secret value (the file is empty)")
    register_secret(value)
    return value


def write_secret(ws: Workspace, name: str, value: str) -> Path:
    """Store a secret readable by its owner only."""
    path = _secret_path(ws, name)
    if not value.strip():
        raise SkillsmithError(f"{path}: refusing to store an empty secret")
    with ws.lock(f"vault write {name}"):
        atomic_write_bytes(path, value.strip().encode("utf-8") + b"\n", mode=0o600)
    register_secret(value.strip())
    return path


def secret_names(ws: Workspace) -> list[str]:
    if not ws.vault_dir.is_dir():
        return []
    return sorted(p.name for p in ws.vault_dir.iterdir() if p.is_file() and _NAME.fullmatch(p.name))


def remember_vault(ws: Workspace) -> None:
    """Register every vault value with :func:`redact` (call before writing workspace text)."""
    for name in secret_names(ws):
        read_secret(ws, name)


def anthropic_api_key(ws: Workspace | None = None) -> str | None:
    """``$ANTHROPIC_API_KEY`` if set, else ``vault/anthropic_api_key`` of ``ws``."""
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    if key:
        register_secret(key)
        return key
    return read_secret(ws, ANTHROPIC_KEY_NAME) if ws is not None else None


@dataclass(frozen=True)
class Credential:
    """A credential found for an agent: the variable it is passed as, and where it came from.

    ``shown`` names it for the pre-flight and the manifest; the value itself is never shown.
    """

    name: str
    value: str = field(repr=False)
    source: str  # "environment" | "vault"

    @property
    def shown(self) -> str:
        where = "$" + self.name if self.source == "environment" else f"vault/{self.name.lower()}"
        return f"{self.name} (from {where})"


def find_credential(ws: Workspace | None, names: Iterable[str]) -> Credential | None:
    """The first of ``names`` set in the environment, else the first held in the vault (as
    ``vault/<name in lower case>``), registered with :func:`redact`; None when none is."""
    wanted = list(names)
    for name in wanted:
        value = os.environ.get(name, "").strip()
        if value:
            register_secret(value)
            return Credential(name, value, "environment")
    if ws is None:
        return None
    for name in wanted:
        stored = read_secret(ws, name.lower())
        if stored:
            return Credential(name, stored, "vault")
    return None


def register_secret(value: str) -> None:
    """Make :func:`redact` mask ``value`` from now on; a value too short or too ordinary to be
    told from text (``VERDICT``) is ignored (``engine.core.secret_scan.is_secret_value``)."""
    if is_secret_value(value):
        with _known_guard:
            _known.add(value)


def secret_values(ws: Workspace) -> list[str]:
    """Every literal that must never leave the vault: the API keys in the environment and each
    vault value, those too ordinary to search for left out. An unreadable secret is skipped:
    it is not ours to judge here, and reading it again reports it."""
    values = [os.environ.get(name, "").strip() for name in ENV_SECRETS]
    for name in secret_names(ws):
        with contextlib.suppress(SkillsmithError):
            values.append(read_secret(ws, name) or "")
    return [v for v in values if is_secret_value(v)]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every known secret value and every key-shaped string replaced by a mask."""
    with _known_guard:
        values = set(_known)
    values.update(s for s in secrets if is_secret_value(s))
    values.update(v for v in (os.environ.get(n, "") for n in ENV_SECRETS) if is_secret_value(v))
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, MASK)
    return KEY_SHAPES.sub(MASK, text)


def redact_tree(value: Any, text: Callable[[str], str] = redact) -> Any:
    """A copy of a JSON-like structure with every string passed through ``text`` (default
    :func:`redact`), mappings and sequences rebuilt: how a prompt's message list, a session-log
    event or an experiment record is cleaned as a whole, whatever a caller put into it."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Mapping):
        return {str(k): redact_tree(v, text) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_tree(v, text) for v in value]
    return value


def has_secret(text: str) -> bool:
    """Whether ``text`` holds anything :func:`redact` would mask."""
    return redact(text) != text
