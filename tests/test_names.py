"""Names chosen once: no class name defined twice in the engine, one spelling of "optimize".

A class name shared by two modules makes every import a guess (``Candidate`` was a queued
candidate, a drafted patch and an agent-state change) and a grep useless; a second spelling
splits every search in two.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO_DATA = ROOT / "engine" / "evaluation" / "demo" / "workspace"  # sample code the agent audits


def class_definitions(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted((root / "engine").rglob("*.py")):
        if DEMO_DATA in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef):
                found[node.name].append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_class_name_is_defined_twice_in_the_engine() -> None:
    twice = {name: where for name, where in class_definitions(ROOT).items() if len(where) > 1}
    assert not twice, f"class names defined more than once: {twice}"


def test_one_spelling_of_optimize() -> None:
    british = re.compile(r"optimis", re.IGNORECASE)
    texts = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    for folder in ("engine", "tui", "themes", "tests", "benchmarks"):
        texts += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md", ".tcss")]
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in texts
        if DEMO_DATA not in path.parents and path != Path(__file__).resolve()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if british.search(line)
    ]
    assert not found, f"'optimise' spelled the British way: {found}"
