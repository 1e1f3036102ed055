"""What may become a skill's active version: the last check before ``publish`` and ``approve``.

Both make a text the SKILL.md every later evaluation loads, so both refuse what lint calls an
error (an empty file, missing or broken frontmatter, a name that is not the skill's, a leaked
secret — a vault value included) and a file too large for any agent's context, with one line
naming the file and line. The files published beside SKILL.md meet the snapshot's own secret
check, so nothing that becomes active can make every later snapshot refuse. An
approved candidate also records its ``patch.diff`` in the history, so that must be a diff: text,
every line a unified-diff line — not a binary blob or prose a hand edit put there. A proposed
change to the files beside SKILL.md meets the Safety gate's command rules on the lines it adds (a
reference script is run by the agent as surely as a step is followed), while the lines the
parent already had are the user's own and stay as they are.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from engine.core.errors import SkillsmithError
from engine.core.lint import lint_text
from engine.core.safety import scan
from engine.core.secret_scan import refuse_secrets
from engine.core.skill_folder import Resources
from engine.core.store import read_text

MAX_SKILL_FILE_BYTES = 1_000_000
# hunk lines, hunk and file headers, and the git extended headers a pasted git diff carries
_DIFF_PREFIXES: tuple[str, ...] = ("+", "-", " ", "@@", "\\", "diff ", "index ", "new file")
_DIFF_PREFIXES += ("deleted file", "old mode", "new mode", "similarity", "rename ")


def check_skill(text: str, *, skill: str, where: Path, secrets: Iterable[str] = ()) -> None:
    """Refuse a SKILL.md text that must not become skill ``skill``'s active version; ``secrets``
    are the vault values (``engine.core.vault.secret_values``) it may not hold."""
    size = len(text.encode("utf-8"))
    if size > MAX_SKILL_FILE_BYTES:
        raise SkillsmithError(
            f"{where}: the file has {size} bytes; a skill may hold at most "
            f"{MAX_SKILL_FILE_BYTES} (move detail into references/)"
        )
    if not text.strip():
        raise SkillsmithError(f"{where}: the file is empty; a skill needs frontmatter and a body")
    findings = lint_text(text, path=where, folder=skill, known=secrets)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more; see 'skillsmith skill lint')" if errors[1:] else ""
        raise SkillsmithError(f"{where}:{first.line}: {first.message} [{first.rule_id}]{more}")


def check_resources(resources: Resources, *, folder: Path, secrets: Iterable[str]) -> None:
    """Refuse the files beside SKILL.md when one holds a secret, as a snapshot would."""
    known = list(secrets)
    for rel, resource in sorted(resources.items()):
        refuse_secrets(folder / rel, resource.data, known, then="publish again")


def check_added_lines(before: Resources, after: Resources, *, folder: Path) -> None:
    """Refuse a proposed change whose added lines in a file beside SKILL.md break a Safety rule."""
    for rel, resource in sorted(after.items()):
        old = before.get(rel)
        if old == resource:
            continue
        had = set(old.data.decode("utf-8", "replace").splitlines()) if old is not None else set()
        text = resource.data.decode("utf-8", "replace")
        lines = text.splitlines()
        for finding in scan(text):
            covered = lines[finding.line - 1 : finding.line - 1 + finding.span]
            if finding.severity == "error" and any(line not in had for line in covered):
                raise SkillsmithError(
                    f"{folder / rel}:{finding.line}: {finding.message} [{finding.rule_id}]; "
                    "a proposed change may not add it"
                )


def text_of(path: Path) -> str:
    """A file's text exactly as stored, or one line saying why it is not text."""
    try:
        return read_text(path)
    except FileNotFoundError:
        raise SkillsmithError(f"{path}: no such file") from None


def check_diff(data: bytes, *, where: Path) -> str:
    """The text of a recorded patch, refused unless it is a unified diff (or a piece of one)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillsmithError(
            f"{where}: not a diff (binary data: byte {exc.start} is not UTF-8)"
        ) from None
    for number, line in enumerate(text.splitlines(), start=1):
        if "\0" in line or (line and not line.startswith(_DIFF_PREFIXES)):
            shown = line.replace("\0", "\\0")[:60]
            raise SkillsmithError(
                f"{where}:{number}: not a diff (a unified-diff line starts with '+', '-', ' ' "
                f"or '@@'): {shown!r}"
            )
    return text
