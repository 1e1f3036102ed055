"""Skill names and the ``current`` pointer of a skill's history, without the version store.

Listing the queue asks each skill which version is current and nothing else of the store; with
these apart, the listing does not load the store (and the SKILL.md parser, folder checks and
secret scanner it brings), which would cost more than listing thousands of candidates.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from engine.core.errors import FormatError, SkillsmithError

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
VERSION = re.compile(r"^v(\d+)$")


def check_name(kind: str, name: str) -> str:
    """Skill and branch names become folder names, so they may not climb out of history/."""
    if not NAME.fullmatch(name) or ".." in name:  # fullmatch: `$` alone lets "x\n" through
        raise SkillsmithError(
            f"{kind} name {name!r}: expected letters, digits, '.', '_' or '-' (no '..', no '/')"
        )
    return name


def read_pointer(vdir: Path) -> str | None:
    """The version ``vdir/current`` points at (a symlink, or a file naming it); None when the
    history has none yet."""
    pointer = vdir / "current"
    if pointer.is_symlink():
        target = os.readlink(pointer)
    elif pointer.is_file():
        target = pointer.read_text(encoding="utf-8").strip()
    else:
        return None
    if not VERSION.match(target) or not (vdir / target).is_dir():
        raise FormatError(pointer, None, f"expected a pointer to an existing vN, got {target!r}")
    return target
