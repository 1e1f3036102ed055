"""The user documentation lives in the repository and keeps up with the code it describes."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from engine.cli import COMMANDS, main
from engine.core.config import Config

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def _keys(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Every dotted key skillsmith.yaml accepts, with its default."""
    found: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            found.update(_keys(value, f"{prefix}{f.name}."))
        else:
            found[f"{prefix}{f.name}"] = value
    return found


def _rows(page: Path) -> dict[str, tuple[str, str]]:
    """``| `key` | default | meaning |`` table rows of a page."""
    rows: dict[str, tuple[str, str]] = {}
    for line in page.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `([a-z0-9_.]+)` \| (.+?) \| (.+) \|$", line)
        if match:
            rows[match.group(1)] = (match.group(2), match.group(3))
    return rows


def test_every_config_key_is_documented_with_its_default() -> None:
    rows = _rows(DOCS / "configuration.md")
    keys = _keys(Config())
    missing = sorted(set(keys) - set(rows))
    assert not missing, f"docs/configuration.md lacks {missing}"
    assert not sorted(set(rows) - set(keys)), "docs/configuration.md documents unknown keys"
    for key, default in keys.items():
        shown, meaning = rows[key]
        assert meaning.strip(), key
        if isinstance(default, (list, dict)) and default:
            continue  # long lists are abbreviated; their first item is checked below
        want = json.dumps(default) if default is None or isinstance(default, bool) else str(default)
        assert shown.strip("`") == want, key
    for key in ("agent.allowed_tools", "diagnosis.search_tools", "diagnosis.gt_audit.hedge_words"):
        assert str(keys[key][0]) in rows[key][0], key


def test_nothing_user_facing_points_outside_the_repository() -> None:
    pages = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
    pages.append(REPO / "engine" / "evaluation" / "demo" / "workspace" / "skillsmith.yaml")
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "../shared" not in text and "DESIGN.md" not in text, page
        for link in re.findall(r"\]\(([^)#]+)\)", text):
            if "://" not in link:
                assert (page.parent / link).exists(), f"{page}: broken link {link}"


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0, argv
    return capsys.readouterr().out


def test_no_help_text_or_message_points_outside_the_repository(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The developers' notes beside the checkout are no user's: neither ``--help`` nor a string
    in the product's code may send a user there."""
    texts = {"skillsmith --help": _help(capsys)}
    for name in COMMANDS:
        texts[f"skillsmith {name} --help"] = _help(capsys, name)
    for package in ("engine", "tui", "themes"):
        for path in sorted((REPO / package).rglob("*.py")):
            texts[str(path.relative_to(REPO))] = path.read_text(encoding="utf-8")
    for where, text in texts.items():
        assert "../shared" not in text and "DESIGN.md" not in text, where


def test_every_argument_of_every_command_has_a_help_line() -> None:
    """``SKILL``, ``BRANCH``, ``PATH``, ``--queries``: a user reading ``--help`` learns what
    each one is, not only its name."""
    import argparse

    from engine.cli import build_parser

    def silent(parser: argparse.ArgumentParser, path: str) -> list[str]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += silent(sub, f"{path} {name}")
            elif not action.help and not isinstance(action, argparse._HelpAction):
                found.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
        return found

    missing = []
    for name in COMMANDS:
        commands = next(
            a for a in build_parser([name])._actions if isinstance(a, argparse._SubParsersAction)
        )
        missing += silent(commands.choices[name], name)
    assert not missing
