"""Safety rules for skill text: leaked credentials, destructive commands, path traversal.

A skill is instructions an agent will follow with real tools, and every candidate an LLM proposes
passes through here before a human sees it (the Safety gate), as do the files `skill lint` checks.
The rules follow the intent of tRPC-Agent-Go's safety gate (secret, dangerous-shell and
path-traversal patterns) with our own, tighter patterns: each rule pairs a regex that finds a
candidate with a check that tells the dangerous form from its harmless near miss (``rm -rf ./build``
is housekeeping, ``rm -rf ~`` is not; ``password = os.environ["X"]`` reads a secret, it does not
leak one). A finding about a credential never quotes the credential.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from engine.skill import split_lines

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One problem at one line of a file (shared by the safety scan, lint and the gates)."""

    rule_id: str
    severity: Severity
    line: int
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "severity": self.severity,
            "line": self.line,
            "message": self.message,
        }

    def format(self, path: object) -> str:
        return f"{path}:{self.line}: {self.severity} {self.rule_id} {self.message}"


# A judge looks at one regex match and returns the severity it deserves, or None for a near miss.
Judge = Callable[[re.Match[str], str], Severity | None]


@dataclass(frozen=True)
class Rule:
    """A named pattern; ``hints`` are lowercase substrings one of which a line must contain
    before the regexes run (Python's ``re`` has no literal prefilter, and most lines are prose).
    """

    id: str
    hints: tuple[str, ...]
    category: Literal["secret", "destructive", "path"]
    message: str
    patterns: tuple[re.Pattern[str], ...]
    judge: Judge | None = None
    severity: Severity = "error"

    def check(self, line: str) -> tuple[Severity, str] | None:
        """The severity and the offending text of this rule's first real hit on ``line``."""
        for pattern in self.patterns:
            for match in pattern.finditer(line):
                severity = self.judge(match, line) if self.judge else self.severity
                if severity is not None:
                    return severity, match.group(0)
        return None


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
    "secret",
    "token",
    "example",
    "placeholder",
    "dummy",
    "required",
    "optional",
}


def _looks_random(value: str) -> bool:
    """Key material mixes letters and digits and is not one character repeated (``sk-xxxx…``)."""
    core = re.sub(r"[^A-Za-z0-9]", "", value)
    if len(core) < 12 or not re.search(r"\d", core) or not re.search(r"[A-Za-z]", core):
        return False
    most = max(core.count(c) for c in set(core))
    return most / len(core) < 0.4


def _random_key(match: re.Match[str], _line: str) -> Severity | None:
    return "error" if _looks_random(match.group("key")) else None


def _literal_value(raw: str) -> bool:
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
    if value[:1] in "$%<{[(*" or "{{" in value or "${" in value or "..." in value or "…" in value:
        return False
    return len(set(value)) > 2


def _assignment(match: re.Match[str], _line: str) -> Severity | None:
    return "error" if _literal_value(match.group("value")) else None


_TOP_DIRS = (
    "bin|boot|dev|etc|home|lib|lib64|opt|proc|root|sbin|srv|sys|usr|var|mnt|media"
    "|Users|System|Library|Applications"
)
_DANGEROUS_TARGET = re.compile(
    r"/\*?|~/?\*?|\$\{?HOME\}?/?\*?|\*|/(?:" + _TOP_DIRS + r")/?\*?",
)


def _tokens(args: str) -> list[str]:
    return [t.strip("\"'") for t in args.split()]


def _dangerous(tokens: list[str]) -> str | None:
    """The first argument that names the root, a home folder, a system folder or everything."""
    return next((t for t in tokens if _DANGEROUS_TARGET.fullmatch(t)), None)


def _rm(match: re.Match[str], _line: str) -> Severity | None:
    tokens = _tokens(match.group("args"))
    if "--" in tokens:
        split = tokens.index("--")
        flags, targets = tokens[:split], tokens[split + 1 :]
    else:
        flags = [t for t in tokens if t.startswith("-")]
        targets = [t for t in tokens if not t.startswith("-")]
    if "--no-preserve-root" in flags:
        return "error"
    recursive = "--recursive" in flags or any(
        not f.startswith("--") and ("r" in f or "R" in f) for f in flags
    )
    return "error" if recursive and _dangerous(targets) else None


def _chmod(match: re.Match[str], _line: str) -> Severity | None:
    tokens = _tokens(match.group("args"))
    wide_open = any(t in ("777", "0777", "a+rwx", "ugo+rwx") for t in tokens)
    targets = [t for t in tokens if not t.startswith("-") and t not in ("777", "0777")]
    return "error" if wide_open and _dangerous(targets) else None


_PROTECTED_BRANCH = re.compile(r"\+?(?:(?:[\w./-]*:)?(?:refs/heads/)?)(?:main|master)")


def _force_push(match: re.Match[str], _line: str) -> Severity | None:
    tokens = _tokens(match.group("args"))
    forced = any(
        t in ("--force", "--force-with-lease")
        or t.startswith("--force-with-lease=")
        or (re.fullmatch(r"-[a-zA-Z]+", t) is not None and "f" in t)
        or (t.startswith("+") and len(t) > 1)
        for t in tokens
    )
    protected = any(_PROTECTED_BRANCH.fullmatch(t) for t in tokens if not t.startswith("-"))
    return "error" if forced and protected else None


_WRITE_VERB = re.compile(
    r"(?i)\b(?:cp|mv|rm|tee|write|save|copy|move|overwrite|unzip|extract|rsync)\b|>"
)


def _traversal(match: re.Match[str], line: str) -> Severity | None:
    """Walk the path from the skill folder; escaping it by two levels, or to write, is an error."""
    path = match.group(0)
    if path.startswith(("/", "~", "$")):
        return None
    depth = lowest = 0
    for part in path.split("/"):
        if part == "..":
            depth -= 1
            lowest = min(lowest, depth)
        elif part not in ("", "."):
            depth += 1
    if lowest >= 0:
        return None
    if lowest <= -2 or _WRITE_VERB.search(line):
        return "error"
    return "warning"


# ------------------------------------------------------------------------------------- rules


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# The name must END with one of these words (``GITHUB_TOKEN``, ``client_secret``), so ``max_tokens``
# and ``token_url`` are not credentials; what comes before the word does not matter.
_SECRET_NAME = (
    r"(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|auth[_-]?key|private[_-]?key"
    r"|credentials?)(?![\w-])"
)
_VALUE = r"(?P<value>\"[^\"\n]*\"?|'[^'\n]*'?|[^\s,;)}\]`]+)"

RULES: tuple[Rule, ...] = (
    # Credentials.
    Rule(
        "secret.anthropic_key",
        ("sk-ant-",),
        "secret",
        "Anthropic API key",
        (_re(r"\bsk-ant-(?P<key>[A-Za-z0-9_-]{20,})"),),
        _random_key,
    ),
    Rule(
        "secret.openai_key",
        ("sk-",),
        "secret",
        "OpenAI-style API key (sk-…)",
        (_re(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?(?P<key>[A-Za-z0-9_-]{20,})"),),
        _random_key,
    ),
    Rule(
        "secret.aws_access_key",
        ("akia", "asia"),
        "secret",
        "AWS access key id",
        (_re(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),),
    ),
    Rule(
        "secret.aws_secret_key",
        ("secret",),
        "secret",
        "AWS secret access key",
        (
            _re(
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
        (_re(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b"),),
    ),
    Rule(
        "secret.slack_token",
        ("xox",),
        "secret",
        "Slack token",
        (_re(r"\bxox[abposr]-(?P<key>[A-Za-z0-9-]{10,})"),),
        _random_key,
    ),
    Rule(
        "secret.private_key",
        ("private key",),
        "secret",
        "private key block",
        (_re(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),),
    ),
    Rule(
        "secret.jwt",
        ("eyj",),
        "secret",
        "JSON Web Token",
        (_re(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),),
    ),
    Rule(
        "secret.assignment",
        ("pass", "secret", "token", "key", "credential"),
        "secret",
        "credential assigned a literal value",
        (
            _re(r"(?i)" + _SECRET_NAME + r"[\"']?\s*(?::=|=|:)\s*" + _VALUE),
            _re(r"(?i)--(?:password|passwd|token|api-key|secret|client-secret)(?:=|\s+)" + _VALUE),
        ),
        _assignment,
    ),
    # Destructive commands.
    Rule(
        "destructive.rm_rf",
        ("rm",),
        "destructive",
        "recursive delete of the root, a home or system folder, or everything",
        (_re(r"(?<![\w./-])rm\s+(?P<args>[^\n;&|)`]*)"),),
        _rm,
    ),
    Rule(
        "destructive.mkfs",
        ("mkfs",),
        "destructive",
        "formats a disk device",
        (_re(r"(?<![\w-])mkfs(?:\.\w+)?\s[^\n;&|`]*?/dev/\w"),),
    ),
    Rule(
        "destructive.dd_device",
        ("of=/dev/",),
        "destructive",
        "dd writes straight to a device",
        (_re(r"(?<![\w-])dd\s[^\n;&|`]*?\bof=/dev/(?!null\b|zero\b|stdout\b|stderr\b|fd/)\w"),),
    ),
    Rule(
        "destructive.device_overwrite",
        ("/dev/",),
        "destructive",
        "redirects output onto a disk device",
        (_re(r">\s*/dev/(?:sd[a-z]|hd[a-z]|nvme\d|xvd[a-z]|vd[a-z]|mmcblk\d|disk\d)"),),
    ),
    Rule(
        "destructive.chmod_777",
        ("chmod",),
        "destructive",
        "makes the root, a home or system folder world-writable",
        (_re(r"(?<![\w-])chmod\s+(?P<args>[^\n;&|)`]*)"),),
        _chmod,
    ),
    Rule(
        "destructive.force_push_main",
        ("push",),
        "destructive",
        "force-pushes to main/master",
        (_re(r"\bgit\s+push\b(?P<args>[^\n;&|)`]*)"),),
        _force_push,
    ),
    Rule(
        "destructive.sql_drop",
        ("drop",),
        "destructive",
        "drops a table, schema or database",
        (
            _re(
                r"(?i)\bdrop\s+(?:table|database|schema)\s+(?:if\s+exists\s+)?"
                r"[\w`\"\[\]]+(?:\.[\w`\"\[\]]+)?\s*(?:;|$|cascade\b)"
            ),
        ),
    ),
    Rule(
        "destructive.pipe_to_shell",
        ("curl", "wget"),
        "destructive",
        "pipes a download straight into a shell",
        (
            _re(
                r"\b(?:curl|wget)\b[^\n|;&`]*\|\s*(?:sudo\s+(?:-\S+\s+)*)?"
                r"(?:(?:ba|z|k|da|fi)?sh|python3?|perl|ruby)\b"
            ),
            _re(r"\b(?:ba|z)?sh\s+(?:-c\s+)?[\"']?(?:\$\(|<\(|`)\s*(?:curl|wget)\b"),
        ),
    ),
    Rule(
        "destructive.fork_bomb",
        ("{",),
        "destructive",
        "fork bomb",
        (_re(r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:"),),
    ),
    # Path traversal and sensitive locations.
    Rule(
        "path.traversal",
        ("..",),
        "path",
        "relative path escapes the skill folder",
        (_re(r"(?<![\w.~/$-])[\w.~$-]*(?:/[\w.~$-]*)*\.\.(?:/[\w.$-]*)*"),),
        _traversal,
    ),
    Rule(
        "path.sensitive",
        ("/etc/", "/root", ".ssh", ".aws", ".gnupg", ".kube", ".netrc", ".git-cred", ".docker"),
        "path",
        "points at credentials or system secrets",
        (
            _re(
                r"(?<![\w.~/-])(?:/etc/(?:passwd|shadow|gshadow|sudoers(?:\.d)?|ssh)\b"
                r"|/root(?![\w.-])"
                r"|(?:~|\$HOME|\$\{HOME\}|/home/[\w.-]+|/Users/[\w.-]+)/"
                r"\.(?:ssh|aws|gnupg|kube|netrc|git-credentials|docker/config\.json)(?![\w-])"
                r"|\.ssh/(?:id_[a-z0-9]+|authorized_keys)\b)"
            ),
        ),
    ),
    Rule(
        "path.system_config",
        ("/etc/",),
        "path",
        "reads or writes system configuration under /etc",
        (_re(r"(?<![\w.~/-])/etc/(?!(?:passwd|shadow|gshadow|sudoers|ssh)\b)[\w.-]+"),),
        severity="warning",
    ),
)

RULES_BY_ID = {rule.id: rule for rule in RULES}


def scan(text: str) -> list[Finding]:
    """Every rule's first hit on every line (1-based line numbers), in line order."""
    findings: list[Finding] = []
    for number, (line, _eol) in enumerate(split_lines(text), start=1):
        lowered = line.lower()
        for rule in RULES:
            if not any(hint in lowered for hint in rule.hints):
                continue
            hit = rule.check(line)
            if hit is None:
                continue
            severity, matched = hit
            message = rule.message
            if rule.category != "secret":
                message += f": `{_clip(matched)}`"
            findings.append(Finding(rule.id, severity, number, message))
    return findings


def _clip(text: str, limit: int = 60) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["RULES", "RULES_BY_ID", "Finding", "Rule", "Severity", "scan"]
