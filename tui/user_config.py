"""Per-user workbench preferences (the theme), kept outside any workspace.

``platformdirs.user_config_dir("skillsmith")/config.yaml`` — on Linux ``$XDG_CONFIG_HOME`` is
honoured, which is how tests keep their choices out of the real home folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import platformdirs

from engine.core.fsutil import atomic_write_yaml
from engine.core.schema import from_mapping, load_yaml, to_mapping


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
    return from_mapping(UserConfig, load_yaml(path), path)


def save_user_config(config: UserConfig) -> None:
    atomic_write_yaml(user_config_path(), to_mapping(config))
