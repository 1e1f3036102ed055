"""The one secret scanner: what counts as a credential in text Skillsmith keeps or sends.

Lint, the Safety gate, the patch filters of every loop and the snapshot check all ask this module,
so a text the Safety gate lets through can never be refused later by a snapshot (the snapshot only
adds the literal vault values, which the gate is given too). The redaction of logs and prompts
(``engine.core.vault.redact``) masks the same key shapes.

Each rule pairs a pattern with a judge that tells a credential from its documented near miss: a
key is random-looking (``sk-ant-api03-XXXX…`` is a placeholder), an assigned value is a literal
(``token: ${GITHUB_TOKEN}`` reads one), a PEM header is a key only when key material follows it
(prose that names the header describes a key). A vault value counts only when it is at least
:data:`MIN_SECRET_LEN` characters and not a word, since "VERDICT" occurs in ordinary text.

Two ways out of a false stop, both documented in docs/gates.md: a line marked
``# skillsmith: allow-secret`` (or detect-secrets' ``pragma: allowlist secret``) is not scanned
for key shapes, and a placeholder password in a command example (``--password=secret123``) is
recognised as an example.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from engine.core.errors import SkillsmithError
from engine.core.findings import Finding, Rule, Severity, any_hint

MIN_SECRET_LEN = 8
VAULT_RULE = "secret.vault_value"

# ------------------------------------------------------------------------------------- judges

_PLACEHOLDERS = {
    "string",
    "str",
    "none",
    "null",
    "nil",
    "true",
    "false",
    "redacted",
    "changeme",
    "change-me",
    "password",
    "passwd",
    "pass",
    "secret",
    "token",
    "example",
    "placeholder",
    "dummy",
    "required",
    "optional",
}
# Parts that only documentation puts into a value: `vca_abc123`, `sk_live_xxxx…`, `AKIA…EXAMPLE`.
_PLACEHOLDER_PARTS = re.compile(
    r"(?i)abc123|xxxx|example|dummy|placeholder|changeme|redacted|fake|your[_-]"
)
_WORDS = re.compile(r"[A-Za-z]+(?:[-_ .][A-Za-z]+)*")


def is_secret_value(value: str) -> bool:
    """Whether a literal value is specific enough to look for everywhere (vault values, keys)."""
    value = value.strip()
    return len(value) >= MIN_SECRET_LEN and _WORDS.fullmatch(value) is None


def looks_random(value: str) -> bool:
    """Key material mixes letters and digits, is not one character repeated (``sk-xxxx…``) and
    is not a documented placeholder."""
    core = re.sub(r"[^A-Za-z0-9]", "", value)
    if len(core) < 12 or not re.search(r"\d", core) or not re.search(r"[A-Za-z]", core):
        return False
    if _PLACEHOLDER_PARTS.search(value):
        return False
    most = max(core.count(c) for c in set(core))
    return most / len(core) < 0.4


def _random_key(match: re.Match[str], _context: str) -> Severity | None:
    return "error" if looks_random(match.group("key")) else None


def _not_placeholder(match: re.Match[str], _context: str) -> Severity | None:
    return None if _PLACEHOLDER_PARTS.search(match.group(0)) else "error"


def literal_value(raw: str) -> bool:
    """True when an assigned value is a literal secret, not a reference or a placeholder."""
    if raw[:1] in "\"'":
        value = raw[1:-1] if len(raw) > 1 and raw[-1] == raw[0] else raw[1:]
        if len(value) < 4 or " " in value:
            return False
    else:
        value = raw
        if len(value) < 8 or re.search(r"[(\[.]", value):
            return False
        if not (re.search(r"\d", value) and re.search(r"[A-Za-z]", value)):
            return False
    lowered = value.lower()
    if lowered in _PLACEHOLDERS or lowered.startswith(("your", "my-", "my_", "example", "<")):
        return False
    if _PLACEHOLDER_PARTS.search(value):
        return False
    if value[:1] in "$%<{[(*" or "{{" in value or "${" in value or "..." in value or "…" in value:
        return False
    return len(set(value)) > 2


# A documentation password in a command example: a placeholder word with at most a few digits
# (``qpdf --password=secret123``, ``--password demo1``). Nobody's real password is "secret123"
# *and* written into a how-to; one with any other shape is still a finding.
_EXAMPLE_PASSWORD = re.compile(
    r"(?i)[\"']?(?:secret|passw(?:or)?d|pass|pwd|my-?pass(?:word)?|test|demo|sample|example"
    r"|changeme|letmein|hunter|qwerty|admin|user|owner|foo|bar)[-_]?\d{0,6}[!]?[\"']?"
)
# The inline allowlist: a line carrying one of these markers is not scanned for key shapes (the
# vault's own values are still refused: they are known secrets, not look-alikes).
ALLOW_MARKERS = ("skillsmith: allow-secret", "pragma: allowlist secret")


def _assignment(match: re.Match[str], _context: str) -> Severity | None:
    value = match.group("value")
    flag = match.group(0).startswith("-") or match.string[: match.start()].endswith("-")
    if flag and _EXAMPLE_PASSWORD.fullmatch(value):
        return None
    return "error" if literal_value(value) else None


def _url_password(match: re.Match[str], _context: str) -> Severity | None:
    value = match.group("value")
    if not literal_value(value) or _WORDS.fullmatch(value):
        return None
    return "error"


_KEY_BODY = re.compile(r"[A-Za-z0-9+/]{16,}")


def _pem_header(match: re.Match[str], context: str) -> Severity | None:
    """A header is a key when key material follows on its line (a JSON ``\\n``) or the next."""
    rest = context[match.end() :].replace("\\n", "\n").lstrip(" \t\n\"'")
    return "error" if _KEY_BODY.match(rest) else None


def _private_key(match: re.Match[str], context: str) -> Severity | None:
    """A key body on its own is a key; a header only when a body follows it."""
    return _pem_header(match, context) if match.group(0).startswith("-----") else "error"


# ------------------------------------------------------------------------------------- rules


# The name must END with one of these words (``GITHUB_TOKEN``, ``client_secret``), so ``max_tokens``
# and ``token_url`` are not credentials; what comes before the word does not matter.
_SECRET_NAME = (
    r"(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|auth[_-]?key|private[_-]?key"
    r"|credentials?)(?![\w-])"
)
_VALUE = r"(?P<value>\"[^\"\n]*\"?|'[^'\n]*'?|[^\s,;)}\]`]+)"
# The first line of a DER private key in base64: PKCS#1/#8 (MII…), SEC1 EC (MHc…), PKCS#8
# Ed25519 (MC4CAQ…) and OpenSSH's own format.
_PEM_BODY = r"(?:MII[A-Za-z0-9+/]{8}|MHcCAQEE|MC4CAQAw|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/]{40,}={0,2}"

SECRET_RULES: tuple[Rule, ...] = (
    Rule(
        "secret.anthropic_key",
        ("sk-ant-",),
        "secret",
        "Anthropic API key",
        (re.compile(r"\bsk-ant-(?P<key>[A-Za-z0-9_-]{20,})"),),
        _random_key,
    ),
    Rule(
        "secret.openai_key",
        ("sk-",),
        "secret",
        "OpenAI-style API key (sk-…)",
        (re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?(?P<key>[A-Za-z0-9_-]{20,})"),),
        _random_key,
    ),
    Rule(
        "secret.stripe_key",
        ("_live_",),
        "secret",
        "Stripe live key",
        (re.compile(r"(?<![A-Za-z0-9])(?:sk|rk)_live_(?P<key>[0-9A-Za-z]{16,})"),),
        _random_key,
    ),
    Rule(
        "secret.google_api_key",
        ("aiza",),
        "secret",
        "Google API key",
        (re.compile(r"(?<![A-Za-z0-9_-])AIza(?P<key>[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])"),),
        _random_key,
    ),
    Rule(
        "secret.aws_access_key",
        ("akia", "asia"),
        "secret",
        "AWS access key id",
        (re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"),),
        _not_placeholder,
    ),
    Rule(
        "secret.aws_secret_key",
        ("secret",),
        "secret",
        "AWS secret access key",
        (
            re.compile(
                r"(?i)aws_?secret_?access_?key[\"']?\s*[:=]\s*[\"']?(?P<key>[A-Za-z0-9/+=]{40})"
                r"(?![A-Za-z0-9/+=])"
            ),
        ),
        _random_key,
    ),
    Rule(
        "secret.github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        "secret",
        "GitHub token",
        (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b"),),
    ),
    Rule(
        "secret.slack_token",
        ("xox",),
        "secret",
        "Slack token",
        (re.compile(r"\bxox[abposr]-(?P<key>[A-Za-z0-9-]{10,})"),),
        _random_key,
    ),
    Rule(
        "secret.slack_webhook",
        ("hooks.slack.com",),
        "secret",
        "Slack webhook URL",
        (
            re.compile(
                r"https://hooks\.slack\.com/(?:services|workflows|triggers)/"
                r"(?P<key>T[A-Z0-9]{6,}/[AB][A-Z0-9]{6,}/[A-Za-z0-9]{16,})"
            ),
        ),
        _random_key,
    ),
    Rule(
        "secret.bearer_token",
        ("bearer",),
        "secret",
        "bearer token in an Authorization header",
        (re.compile(r"(?i)\bbearer\s+(?P<key>[A-Za-z0-9._~+/\-]{16,}=*)"),),
        _random_key,
    ),
    Rule(
        "secret.url_credentials",
        ("://",),
        "secret",
        "password inside a URL (scheme://user:password@host)",
        (re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:(?P<value>[^\s:/@]+)@[\w.-]+"),),
        _url_password,
    ),
    Rule(
        "secret.private_key",
        ("private key", "mii", "mhccaqee", "mc4caqaw", "b3blbnnzac1rzxktdje"),
        "secret",
        "private key",
        (
            re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
            re.compile(r"(?<![A-Za-z0-9+/])" + _PEM_BODY),
        ),
        _private_key,
        lookahead=True,
    ),
    Rule(
        "secret.jwt",
        ("eyj",),
        "secret",
        "JSON Web Token",
        (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),),
    ),
    Rule(
        "secret.assignment",
        ("pass", "secret", "token", "key", "credential"),
        "secret",
        "credential assigned a literal value",
        (
            re.compile(r"(?i)" + _SECRET_NAME + r"[\"']?\s*(?::=|=|:)\s*" + _VALUE),
            re.compile(
                r"(?i)--(?:password|passwd|token|api-key|secret|client-secret)(?:=|\s+)" + _VALUE
            ),
        ),
        _assignment,
    ),
)


_HINTS = any_hint(SECRET_RULES)


def find_secrets(lines: Iterable[str], known: Iterable[str] = ()) -> list[Finding]:
    """Every secret rule's first hit on every line (1-based), and every known vault value.

    ``known`` are the literal values that must never leave the vault (see
    :func:`engine.core.vault.secret_values`); values too short or too ordinary are ignored.
    """
    values = sorted({v for v in known if is_secret_value(v)}, key=len, reverse=True)
    rows = list(lines)
    found: list[Finding] = []
    for number, line in enumerate(rows, start=1):
        if any(v in line for v in values):
            found.append(Finding(VAULT_RULE, "error", number, "a value kept in vault/"))
        lowered = line.lower()
        if _HINTS.search(lowered) is None or any(m in lowered for m in ALLOW_MARKERS):
            continue
        following = rows[number] if number < len(rows) else ""
        for rule in SECRET_RULES:
            if not any(hint in lowered for hint in rule.hints):
                continue
            hit = rule.check(line, following)
            if hit is not None:
                found.append(Finding(rule.id, hit[0], number, rule.message))
    return found


# What redaction masks: the well-known key shapes (a whole PEM block at once). Contextual rules —
# an assigned literal, a URL password — are for the scan: masking them would garble code a run
# is about (a benchmark case that plants ``password = "…"`` for the agent to find).
KEY_SHAPES = re.compile(
    "|".join(
        (
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
            r"sk-ant-[A-Za-z0-9_\-]{8,}",
            r"\bsk-[A-Za-z0-9_\-]{20,}",
            r"(?<![A-Za-z0-9])(?:sk|rk)_live_[0-9A-Za-z]{16,}",
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])",
            r"\bgh[pousr]_[A-Za-z0-9]{30,}",
            r"\bgithub_pat_[A-Za-z0-9_]{30,}",
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
            r"(?<=hooks\.slack\.com/services/)[A-Za-z0-9/]{20,}",
            r"\bAIza[0-9A-Za-z_\-]{35}",
            r"(?<=[Bb]earer )[A-Za-z0-9._~+/\-]{16,}=*",
            r"(?<![A-Za-z0-9+/])" + _PEM_BODY,
        )
    )
)


# ------------------------------------------------------------------------------------ files

_ANTHROPIC_KEY = re.compile(rb"sk-ant-[a-z]+\d*-[A-Za-z0-9_-]{40,}")  # fast: literal prefix
_SHAPE_SCAN_BYTES = 64 * 1024  # skill-file sized (lint warns past 15 KB)


def refuse_secrets(
    path: Path, data: bytes, known: Iterable[str], then: str = "snapshot again"
) -> None:
    """Refuse a file a snapshot would carry (or a publish would make part of one) when it holds a
    secret: every rule and the literal vault values ``known`` on text the size of a skill file;
    the literal vault values and the Anthropic key shape on anything larger.

    The rules are slow on megabytes, and a key pasted by hand lands in SKILL.md, AGENTS.md or a
    small reference, so large files are searched for the literals only.
    """
    known = list(known)
    if len(data) <= _SHAPE_SCAN_BYTES:
        found = find_secrets(data.decode("utf-8", "replace").splitlines(), known)
        hit = (found[0].line, found[0].message) if found else None
    else:
        at = min((i for i in (data.find(v.encode("utf-8")) for v in known) if i >= 0), default=-1)
        key = _ANTHROPIC_KEY.search(data)
        if key is not None and (at < 0 or key.start() < at):
            at = key.start()
        hit = (data.count(b"\n", 0, at) + 1, "a secret") if at >= 0 else None
    if hit is not None:
        line, what = hit
        raise SkillsmithError(
            f"{path}:{line}: holds a secret ({what}); secrets never go into snapshots — move the "
            "value to vault/ and refer to it by name (an environment variable such as $API_KEY), "
            f"then {then}"
        )


__all__ = [
    "ALLOW_MARKERS",
    "KEY_SHAPES",
    "MIN_SECRET_LEN",
    "SECRET_RULES",
    "VAULT_RULE",
    "find_secrets",
    "is_secret_value",
    "literal_value",
    "looks_random",
    "refuse_secrets",
]
