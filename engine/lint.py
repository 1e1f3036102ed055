"""Lint a SKILL.md: the Agent Skills spec, the Safety rules, and size warnings.

Errors are what a loader or the Safety gate would refuse (a bad name or description, a leaked key,
a destructive command); warnings are what degrades a skill without breaking it (unknown keys, a
body past the 500 lines the spec recommends). Every finding carries the line it is about, so an
editor, the CLI and the TUI can point at it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from engine.errors import FormatError
from engine.safety import Finding, Severity, scan
from engine.skill import SkillDoc, read_skill_text, resolve_skill_file

NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
MAX_BODY_LINES = 500
MAX_BYTES = 15_000
KNOWN_KEYS = (
    "name",
    "description",
    "license",
    "allowed-tools",
    "metadata",
    "compatibility",
    "when_to_use",
    "version",
)
_NAME_CHARS = re.compile(r"[a-z0-9-]+")
_RESERVED = ("anthropic", "claude")


def lint(path: Path | str) -> list[Finding]:
    """Lint one SKILL.md (or a skill folder); the name must match the folder it sits in."""
    file = resolve_skill_file(path)
    return lint_text(read_skill_text(file), path=file, folder=file.parent.name)


def lint_text(text: str, *, path: Path | None = None, folder: str | None = None) -> list[Finding]:
    """Lint skill text; ``folder`` is the name it must carry (None skips that check)."""
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
    findings.extend(scan(text))
    return sorted(findings, key=lambda f: (f.line, f.severity != "error", f.rule_id))


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
    tools = fm.get("allowed-tools")
    if tools is not None and not _string_or_strings(tools):
        add(
            "spec.allowed_tools",
            "allowed-tools",
            "'allowed-tools' must be a space-separated string (or a list of strings)",
        )
    for key in ("license", "when_to_use"):
        if key in fm and not isinstance(fm[key], str):
            add(f"spec.{key}", key, f"'{key}' should be a string", "warning")
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
    "DESCRIPTION_MAX",
    "KNOWN_KEYS",
    "MAX_BODY_LINES",
    "MAX_BYTES",
    "NAME_MAX",
    "Finding",
    "lint",
    "lint_text",
    "reason",
    "spec_findings",
]
