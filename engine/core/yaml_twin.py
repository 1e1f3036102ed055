"""A YAML file's parse kept as JSON beside it, so a quick command reads it without PyYAML.

Importing PyYAML is a fifth of ``skillsmith queue``'s own start-up, far more than parsing the file;
the workspace's settings (skillsmith.yaml) are read by every command and change seldom. The twin
holds the parsed data with the file's stamp (device, inode, size, mtime, ctime): an edit in
place, an atomic replace or a restore each change it, and a stamp that differs is a miss. A
file changed in the last moments is not twinned ("racy git": a second edit within the same
timestamp tick would keep the stamp), nor is data JSON cannot hold exactly (a date, a non-text
key): those are parsed each time. Nor is a file in which the secret scanner finds anything
(a key pasted into an agent's command line): secrets never leave the vault, and a copy of one
beside the runs would be a second place to leak it from. The twin is a cache: unreadable,
missing or unwritable, the file is parsed as before; it carries no more trust than the file it
stands for, which sits in the same workspace.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from engine.core.fsutil import atomic_write_bytes, settled, stamp_of
from engine.core.schema import load_yaml


def load_yaml_twinned(path: Path, twin: Path) -> Any:
    """``load_yaml(path)``, read from ``twin`` when it was written for the file as it is now."""
    try:
        stamp = list(stamp_of(os.stat(path)))
    except OSError:
        return load_yaml(path)  # says what is wrong with the path, in one line
    with contextlib.suppress(OSError, ValueError):
        kept = json.loads(twin.read_bytes())
        if isinstance(kept, dict) and kept.get("stamp") == stamp and "data" in kept:
            return kept["data"]
    data = load_yaml(path)
    with contextlib.suppress(OSError):
        after = stamp_of(os.stat(path))  # unchanged while it was parsed, and not just written
        if list(after) == stamp and settled([after]) and not _holds_a_secret(path):
            _keep(twin, stamp, data)
    return data


def _holds_a_secret(path: Path) -> bool:
    from engine.core.secret_scan import find_secrets  # here: only a twin's first write scans

    return bool(find_secrets(path.read_text(encoding="utf-8").splitlines()))


def _keep(twin: Path, stamp: list[int], data: Any) -> None:
    try:
        text = json.dumps({"stamp": stamp, "data": data}, ensure_ascii=False, default=_refuse)
    except (TypeError, ValueError):  # a key that is not text, a value JSON has no type for
        return
    if json.loads(text)["data"] != data:  # an int key turned text, a NaN: not given back exactly
        return
    with contextlib.suppress(OSError):
        atomic_write_bytes(twin, text.encode("utf-8"), sync_dir=False)


def _refuse(value: object) -> Any:
    raise TypeError(f"not JSON: {type(value).__name__}")
