"""Lint a SKILL.md: the Agent Skills spec, the Safety rules, and size warnings.

Errors are what a loader or the Safety gate would refuse (a bad name or description, a leaked key,
a destructive command); warnings are what degrades a skill without breaking it (unknown keys, a
body past the 500 lines the spec recommends). Every finding carries the line it is about, so an
editor, the CLI and the TUI can point at it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.core.errors import FormatError
from engine.core.safety import Finding, Severity, scan
from engine.core.skill import SkillDoc, read_skill_text, resolve_skill_file

if TYPE_CHECKING:
    from engine.core.workspace import Workspace

NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
MAX_BODY_LINES = 500
MAX_BYTES = 15_000
SPEC_KEYS = (
    "name",
    "description",
    "license",
    "allowed-tools",
    "metadata",
    "compatibility",
    "when_to_use",
    "version",
)
# Keys Claude Code reads on top of the Agent Skills spec (its slash-command, subagent and
# activation controls, as its skills reference lists them): a real skill using one must not be
# told its key is unknown.
CLAUDE_CODE_KEYS = (
    "argument-hint",
    "arguments",
    "disable-model-invocation",
    "user-invocable",
    "model",
    "effort",
    "context",
    "agent",
    "hooks",
    "paths",
    "shell",
    "disallowed-tools",
)
KNOWN_KEYS = SPEC_KEYS + CLAUDE_CODE_KEYS
_BOOLEAN_KEYS = ("disable-model-invocation", "user-invocable")
_STRING_KEYS = (
    "license",
    "when_to_use",
    "argument-hint",
    "model",
    "agent",
    "context",
    "effort",
    "shell",
)
_TOOL_LIST_KEYS = ("allowed-tools", "disallowed-tools", "paths")
MODEL_INVOCATION_DISABLED = (
    "disable-model-invocation: true: Claude Code never loads this skill by itself (only a "
    "person's /{name} runs it), so an evaluation cannot measure it through the agent"
)
_NAME_CHARS = re.compile(r"[a-z0-9-]+")
_RESERVED = ("anthropic", "claude")


def lint(path: Path | str) -> list[Finding]:
    """Lint one SKILL.md (or a skill folder); the name must match the folder it sits in."""
    file = resolve_skill_file(path)
    return lint_text(read_skill_text(file), path=file, folder=file.parent.name)


def lint_text(
    text: str, *, path: Path | None = None, folder: str | None = None, known: Iterable[str] = ()
) -> list[Finding]:
    """Lint skill text; ``folder`` is the name it must carry (None skips that check).

    ``known`` are the workspace's vault values: a skill holding one is an error like a key.
    """
    doc, error = SkillDoc.parse_lenient(text, path)
    findings: list[Finding] = []
    if error is not None:
        findings.append(Finding("spec.frontmatter", "error", error.line or 1, reason(error)))
    elif not doc.has_frontmatter:
        findings.append(
            Finding(
                "spec.frontmatter",
                "error",
                1,
                "no YAML frontmatter: the file must start with a '---' line",
            )
        )
    else:
        findings.extend(spec_findings(doc, folder))
    findings.extend(_size(doc, text))
    scanned = scan(text, known)
    if path is not None and path.parent.is_dir():
        findings.extend(reference_findings(doc, path.parent))
        scanned = [f for f in scanned if not _shipped_reference(f, doc, path.parent)]
    findings.extend(scanned)
    return sorted(findings, key=lambda f: (f.line, f.severity != "error", f.rule_id))


def model_invocation_notices(ws: Workspace) -> list[str]:
    """One warning per skill of ``ws`` the model may not load (``disable-model-invocation:
    true``): an evaluation through Claude Code runs without it, whatever the skill says."""
    notices: list[str] = []
    for name in ws.skill_names():
        path = ws.skill_path(name)
        doc, error = SkillDoc.parse_lenient(read_skill_text(path), path)
        if error is None and doc.frontmatter.get("disable-model-invocation") is True:
            why = MODEL_INVOCATION_DISABLED.format(name=doc.name or name)
            notices.append(f"warning: {path}: {why}")
    return notices


def reason(error: FormatError) -> str:
    """A FormatError's explanation without the ``path:line:`` prefix the finding already has."""
    prefix = str(error.path) + (f":{error.line}" if error.line is not None else "") + ":"
    if error.field:
        prefix += f" field '{error.field}':"
    text = str(error)
    return text[len(prefix) :].strip() if text.startswith(prefix) else text


def spec_findings(doc: SkillDoc, folder: str | None = None) -> list[Finding]:
    """The Agent Skills frontmatter rules for a document whose frontmatter parsed."""
    fm = doc.frontmatter
    out: list[Finding] = []

    def add(rule: str, key: str, message: str, severity: Severity = "error") -> None:
        out.append(Finding(rule, severity, doc.frontmatter_line(key), message))

    out.extend(_name(fm.get("name"), doc.frontmatter_line("name"), folder))
    description = fm.get("description")
    if description is None or (isinstance(description, str) and not description.strip()):
        add("spec.description.missing", "description", "'description' is required (1–1024 chars)")
    elif not isinstance(description, str):
        add("spec.description.type", "description", "'description' must be a string")
    else:
        if len(description) > DESCRIPTION_MAX:
            add(
                "spec.description.length",
                "description",
                f"'description' has {len(description)} chars (at most {DESCRIPTION_MAX})",
            )
        if "<" in description or ">" in description:
            add("spec.description.markup", "description", "'description' must not contain < or >")
    compatibility = fm.get("compatibility")
    if compatibility is not None and (
        not isinstance(compatibility, str) or not 1 <= len(compatibility) <= COMPATIBILITY_MAX
    ):
        add(
            "spec.compatibility",
            "compatibility",
            f"'compatibility' must be a string of 1–{COMPATIBILITY_MAX} chars",
        )
    metadata = fm.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            add("spec.metadata", "metadata", "'metadata' must be a mapping of strings to strings")
        elif not all(isinstance(v, str) for v in metadata.values()):
            add(
                "spec.metadata",
                "metadata",
                "'metadata' values should be strings",
                "warning",
            )
    for key in _TOOL_LIST_KEYS:
        if key in fm and not _string_or_strings(fm[key]):
            add(
                f"spec.{key.replace('-', '_')}",
                key,
                f"'{key}' must be a string (or a list of strings)",
            )
    if fm.get("disable-model-invocation") is True:
        add(
            "spec.model_invocation_disabled",
            "disable-model-invocation",
            MODEL_INVOCATION_DISABLED.format(name=fm.get("name") or folder or "name"),
            "warning",
        )
    for key in _STRING_KEYS:
        if key in fm and not isinstance(fm[key], str):
            add(f"spec.{key}", key, f"'{key}' should be a string", "warning")
    for key in _BOOLEAN_KEYS:
        if key in fm and not isinstance(fm[key], bool):
            add(f"spec.{key}", key, f"'{key}' should be true or false", "warning")
    if "hooks" in fm and not isinstance(fm["hooks"], dict):
        add("spec.hooks", "hooks", "'hooks' should be a mapping of hook events", "warning")
    for key in fm:
        if key not in KNOWN_KEYS:
            add(
                "spec.unknown_key",
                key,
                f"unknown frontmatter key '{key}' (known: {', '.join(KNOWN_KEYS)})",
                "warning",
            )
    if not doc.body.strip():
        out.append(
            Finding("spec.body.empty", "warning", len(doc.lines), "the body has no instructions")
        )
    return out


def _name(name: Any, line: int, folder: str | None) -> list[Finding]:
    def err(rule: str, message: str, severity: Severity = "error") -> list[Finding]:
        return [Finding(rule, severity, line, message)]

    if name is None or name == "":
        return err("spec.name.missing", "'name' is required (1–64 chars of a-z, 0-9 and -)")
    if not isinstance(name, str):
        return err("spec.name.type", "'name' must be a string")
    if len(name) > NAME_MAX:
        return err("spec.name.length", f"'name' has {len(name)} chars (at most {NAME_MAX})")
    if not _NAME_CHARS.fullmatch(name):
        return err("spec.name.charset", f"'name' {name!r} may only use a-z, 0-9 and -")
    if name.startswith("-") or name.endswith("-") or "--" in name:
        return err(
            "spec.name.hyphen", f"'name' {name!r} must not start or end with - or contain --"
        )
    found: list[Finding] = []
    if folder is not None and name != folder:
        found += err("spec.name.folder", f"'name' {name!r} does not match its folder {folder!r}")
    if any(word in name for word in _RESERVED):
        found += err(
            "spec.name.reserved",
            f"'name' {name!r} uses a reserved word (anthropic, claude)",
            "warning",
        )
    return found


def _string_or_strings(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    )


# A file a skill points at: a Markdown link target, or a bare/backticked relative path with a file
# extension (real skills say "read FORMS.md" as often as they link it).
_LINK = re.compile(r"\]\(\s*<?([^)>\s]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_MENTION = re.compile(
    r"(?<![\w/.:~$@-])((?:\.{1,2}/)*(?:[\w-][\w.-]*/)*[\w-][\w.-]*"
    r"\.(?:md|py|sh|js|ts|txt|json|ya?ml|xml|html|csv|toml|ini|cfg))(?![\w/-])"
)


def reference_findings(doc: SkillDoc, folder: Path) -> list[Finding]:
    """Warn where a reference names a file of the skill folder in the wrong letter case.

    Claude Code runs on case-sensitive file systems: ``FORMS.md`` next to ``forms.md`` is a
    missing file on Linux although it opens on a Mac. A Markdown link to a file that is not
    there at all is reported too; a bare mention of one is not (it may be the user's file).
    """
    out: list[Finding] = []
    for line in doc.body_lines:
        if line.in_code:  # an example command or program names the user's files, not the skill's
            continue
        links = {m.group(1) for m in _LINK.finditer(line.text)}
        mentions = {m.group(1) for m in _MENTION.finditer(line.text)}
        for target in sorted(links | mentions):
            rel = target.split("#", 1)[0].split("?", 1)[0]
            if not rel or "://" in rel or rel.startswith(("/", "mailto:", "~")):
                continue
            actual = _exact_case(folder, rel)
            if actual is True:
                continue
            if isinstance(actual, str):
                out.append(
                    Finding(
                        "reference.case",
                        "warning",
                        line.number,
                        f"'{rel}' is '{actual}' in the skill folder (file names are "
                        "case-sensitive where the agent runs)",
                    )
                )
            elif target in links:
                out.append(
                    Finding(
                        "reference.missing", "warning", line.number, f"links to missing '{rel}'"
                    )
                )
    return out


def _shipped_reference(finding: Finding, doc: SkillDoc, folder: Path) -> bool:
    """A ``..`` finding on a line whose every ``..`` path is a link to a file that exists: the
    author ships what it points at (a plugin's README beside its skills), and reading it is
    what the loader does. Writes and missing targets stay findings."""
    if finding.rule_id != "path.traversal":
        return False
    text = doc.lines[finding.line - 1].text
    links = [m.group(1).split("#", 1)[0] for m in _LINK.finditer(text)]
    ups = [t for t in links if ".." in Path(t).parts]
    if not ups or text.count("..") != sum(t.count("..") for t in ups):
        return False
    return all(_exact_case(folder, t) is True for t in ups)


def _exact_case(folder: Path, rel: str) -> bool | str | None:
    """True if ``rel`` names a file from ``folder`` exactly; the path as it really is spelled
    when only the letter case differs; None when there is no such file. A ``..`` goes up as the
    loader resolving the link would (a plugin's skill links its plugin's README)."""
    here = folder
    spelled: list[str] = []
    exact = True
    for part in Path(rel).parts:
        if part == ".":
            continue
        if part == "..":
            here = here.parent
            spelled.append(part)
            continue
        try:
            names = os.listdir(here)
        except OSError:
            return None
        if part in names:
            spelled.append(part)
        else:
            match = next((n for n in sorted(names) if n.casefold() == part.casefold()), None)
            if match is None:
                return None
            spelled.append(match)
            exact = False
        here = here / spelled[-1]
    if not here.is_file():
        return None
    return True if exact else "/".join(spelled)


def _size(doc: SkillDoc, text: str) -> list[Finding]:
    out: list[Finding] = []
    body = doc.body_lines
    if len(body) > MAX_BODY_LINES:
        out.append(
            Finding(
                "size.body_lines",
                "warning",
                body[MAX_BODY_LINES].number,
                f"the body has {len(body)} lines (keep it under {MAX_BODY_LINES}; "
                "move detail into references/)",
            )
        )
    size = len(text.encode("utf-8"))
    if size > MAX_BYTES:
        out.append(
            Finding(
                "size.bytes",
                "warning",
                1,
                f"the file has {size} bytes (keep it under {MAX_BYTES})",
            )
        )
    return out


__all__ = [
    "CLAUDE_CODE_KEYS",
    "DESCRIPTION_MAX",
    "KNOWN_KEYS",
    "MAX_BODY_LINES",
    "MAX_BYTES",
    "NAME_MAX",
    "Finding",
    "lint",
    "lint_text",
    "model_invocation_notices",
    "reason",
    "reference_findings",
    "spec_findings",
]
