"""Safety rules for skill text: leaked credentials, destructive commands, path traversal, and
code that runs what it fetched or decoded (by shape: ``engine.core.exec_shapes``).

A skill is instructions an agent will follow with real tools, and every candidate an LLM proposes
passes through here before a human sees it (the Safety gate), as do the files `skill lint` checks.
The rules follow the intent of tRPC-Agent-Go's safety gate (secret, dangerous-shell and
path-traversal patterns) with our own, tighter patterns: each rule pairs a regex that finds a
candidate with a check that tells the dangerous form from its harmless near miss (``rm -rf ./build``
is housekeeping, ``rm -rf ~`` is not; ``password = os.environ["X"]`` reads a secret, it does not
leak one). A finding about a credential never quotes the credential. The credential rules are the
one secret scanner's (``engine.core.secret_scan``); this module adds the command and path rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engine.core.exec_shapes import SHAPE_RULES, check_shapes
from engine.core.findings import Finding, Rule, Severity, any_hint
from engine.core.secret_scan import SECRET_RULES, find_secrets
from engine.core.skill import split_lines

# ------------------------------------------------------------------------------------- judges

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
# In Markdown a `>` is as often an arrow (`a -> b`, Graphviz edges, `=>`) or a blockquote marker
# as a shell redirect; only a redirect turns a one-level `../` into a write outside the skill.
_NOT_A_REDIRECT = re.compile(r"(?<=[-=])>|^[ \t]*>")


# What may stand right before or after a path: a space, quotes, brackets, `=`, punctuation. A
# ``..`` glued to ``>`` or ``<`` is a git range (``<a7>..<b7>``), not a folder walk.
_PATH_EDGE = " \t\"'`([{=,;:)]}."


def _reads_as_path(match: re.Match[str], line: str) -> bool:
    """A ``..`` counts only as a segment of something that reads as a path: ``../x``, ``a/..``,
    or a bare ``..`` standing on its own (``cd ..``)."""
    path = match.group(0)
    if "/" in path:
        return True
    before = line[match.start() - 1] if match.start() > 0 else " "
    after = line[match.end()] if match.end() < len(line) else " "
    return path == ".." and before in _PATH_EDGE and after in _PATH_EDGE


def _traversal(match: re.Match[str], line: str) -> Severity | None:
    """Walk the path from the skill folder; escaping it by two levels, or to write, is an error."""
    path = match.group(0)
    if path.startswith(("/", "~", "$")) or not _reads_as_path(match, line):
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
    if lowest <= -2 or _WRITE_VERB.search(_NOT_A_REDIRECT.sub(" ", line)):
        return "error"
    return "warning"


# ------------------------------------------------------------------------------------- rules


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_COMMAND_RULES: tuple[Rule, ...] = (
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

RULES: tuple[Rule, ...] = SECRET_RULES + _COMMAND_RULES + SHAPE_RULES
RULES_BY_ID = {rule.id: rule for rule in RULES}
_HINTS = any_hint(_COMMAND_RULES)


def scan(text: str, known: Iterable[str] = ()) -> list[Finding]:
    """Every rule's first hit on every line (1-based line numbers), in line order.

    ``known`` are literal vault values (``engine.core.vault.secret_values``): a text holding one is
    refused like a key, so what passes here can always be snapshotted.
    """
    lines = [line for line, _eol in split_lines(text)]
    findings = find_secrets(lines, known)
    for number, line in enumerate(lines, start=1):
        lowered = line.lower()
        if _HINTS.search(lowered) is None:
            continue
        for rule in _COMMAND_RULES:
            if not any(hint in lowered for hint in rule.hints):
                continue
            hit = rule.check(line)
            if hit is not None:
                severity, matched = hit
                message = f"{rule.message}: `{_clip(matched)}`"
                findings.append(Finding(rule.id, severity, number, message))
    for rule, logical, severity, matched in check_shapes(lines):
        message = f"{rule.message}: `{_clip(matched)}`"
        findings.append(Finding(rule.id, severity, logical.first, message, logical.span))
    return sorted(findings, key=lambda f: f.line)


def _clip(text: str, limit: int = 60) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["RULES", "RULES_BY_ID", "Finding", "Rule", "Severity", "scan"]
