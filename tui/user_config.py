"""Per-user workbench preferences (the theme), kept outside any workspace.

``platformdirs.user_config_dir("skillsmith")/config.yaml`` — on Linux ``$XDG_CONFIG_HOME`` is
honoured, which is how tests keep their choices out of the real home folder.

The file is written in YAML's JSON form (JSON is YAML): the theme is needed for the first frame,
and reading it with ``json`` spares the workbench importing the YAML parser before it paints. A
file edited by hand in block style is still read, through the YAML loader.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from engine.core.errors import FormatError
from engine.core.fsutil import atomic_write_text
from engine.core.schema import from_mapping, parse_yaml, to_mapping


@dataclass
class UserConfig:
    theme: str | None = None


def user_config_path() -> Path:
    return Path(platformdirs.user_config_dir("skillsmith")) / "config.yaml"


def load_user_config() -> UserConfig:
    """The saved preferences; a missing file is the defaults (a bad one is a FormatError)."""
    path = user_config_path()
    if not path.is_file():
        return UserConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise FormatError(path, None, "file is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except ValueError:  # not the JSON form this module writes: a hand-edited YAML file
        data = parse_yaml(text, path)
    return from_mapping(UserConfig, data, path)


def save_user_config(config: UserConfig) -> None:
    atomic_write_text(user_config_path(), json.dumps(to_mapping(config)) + "\n")
