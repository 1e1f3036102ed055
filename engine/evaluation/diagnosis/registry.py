"""Pluggable diagnosis checkers: built-in rules and the user's own, behind one small contract.

A checker looks at one case (its results row and its compressed trace) and either returns
evidence lines — the rule fired — or nothing. Built-in rules know no business vocabulary (the
article's choice), so domain checks ("an audit must run scan.py") live in the workspace, in
``checkers/*.py``, and are loaded here without touching the engine::

    from engine.evaluation.diagnosis import checker

    @checker("scanner_not_run", "the audit never ran scan.py")
    def scanner_not_run(ctx):
        if not any("scan.py" in call.args for call in ctx.trace.calls):
            return ["no call ran scan.py"]
        return None

A class with a ``rule_id`` attribute and a ``check(self, ctx)`` method works too.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from engine.core.config import DiagnosisConfig
from engine.core.errors import FormatError, SkillsmithError
from engine.evaluation.traces import StepLike, Trace, TraceSummary

RULE_ID = re.compile(r"^[a-z][a-z0-9_]*$")
EVIDENCE_LINES = 5
EVIDENCE_CHARS = 160


@dataclass(frozen=True)
class CaseContext:
    """Everything a checker may look at for one results row."""

    case_id: str
    row: Mapping[str, Any]
    trace: Trace
    summary: TraceSummary
    config: DiagnosisConfig
    steps: Sequence[StepLike] = ()
    skill_name: str | None = None
    # A baseline run without a skill has nothing to load; skill_not_loaded only judges the rest.
    expects_skill: bool = True

    @property
    def asked_protocol(self) -> bool:
        """Whether the run's prompt asked for the answer protocol (a label line, STEPS DONE).

        A free-text case's prompt is its statement alone, so a rule that reads the protocol has
        nothing to read there; rows written before the field existed all asked for it."""
        return self.row.get("answer_protocol") is not False


CheckResult = Sequence[str] | None
CheckFn = Callable[[CaseContext], CheckResult]


@dataclass(frozen=True)
class RuleHit:
    rule_id: str
    evidence: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"rule_id": self.rule_id, "evidence": self.evidence}


@dataclass(frozen=True)
class Checker:
    rule_id: str
    check: CheckFn
    description: str = ""
    origin: str = "builtin"

    def run(self, ctx: CaseContext) -> RuleHit | None:
        try:
            found = self.check(ctx)
        except Exception as exc:  # a user checker must not take the whole diagnosis down silently
            raise SkillsmithError(
                f"{self.origin}: checker '{self.rule_id}' failed on case {ctx.case_id}: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        if not found:
            return None
        if isinstance(found, str) or not all(isinstance(line, str) for line in found):
            raise SkillsmithError(
                f"{self.origin}: checker '{self.rule_id}' must return a list of evidence strings"
            )
        lines = [" ".join(line.split())[:EVIDENCE_CHARS] for line in found[:EVIDENCE_LINES]]
        if len(found) > EVIDENCE_LINES:
            lines.append(f"… {len(found) - EVIDENCE_LINES} more")
        return RuleHit(self.rule_id, lines)


def checker(rule_id: str, description: str = "") -> Callable[[CheckFn], Checker]:
    """Decorator that turns ``fn(ctx) -> evidence | None`` into a registrable :class:`Checker`."""
    if not RULE_ID.match(rule_id):
        raise SkillsmithError(f"checker id {rule_id!r}: expected lower_snake_case")

    def wrap(fn: CheckFn) -> Checker:
        doc = description or (inspect.getdoc(fn) or "").split("\n")[0]
        return Checker(rule_id, fn, doc, origin=f"{fn.__module__}.{fn.__qualname__}")

    return wrap


class Registry:
    """The ordered set of checkers a diagnosis runs; ids are unique."""

    def __init__(self, checkers: Iterable[Checker] = ()) -> None:
        self._checkers: dict[str, Checker] = {}
        for item in checkers:
            self.add(item)

    @classmethod
    def builtin(cls) -> Registry:
        from engine.evaluation.diagnosis.rules import BUILTIN_CHECKERS

        return cls(BUILTIN_CHECKERS)

    @classmethod
    def for_folder(cls, folder: Path | None) -> Registry:
        """The built-in rules plus every checker found in ``folder`` (if it exists)."""
        registry = cls.builtin()
        if folder is not None and folder.is_dir():
            registry.load_folder(folder)
        return registry

    def add(self, item: Checker) -> None:
        if item.rule_id in self._checkers:
            other = self._checkers[item.rule_id].origin
            raise SkillsmithError(
                f"{item.origin}: checker id '{item.rule_id}' is already registered by {other}"
            )
        self._checkers[item.rule_id] = item

    def ids(self) -> list[str]:
        return list(self._checkers)

    def get(self, rule_id: str) -> Checker:
        return self._checkers[rule_id]

    def run(self, ctx: CaseContext) -> list[RuleHit]:
        return [hit for c in self._checkers.values() if (hit := c.run(ctx)) is not None]

    def load_folder(self, folder: Path) -> list[str]:
        """Register the checkers of every ``*.py`` in ``folder`` (sorted); returns their ids."""
        added: list[str] = []
        for path in sorted(folder.glob("*.py")):
            if path.name.startswith("_"):
                continue
            for item in _checkers_in(_import(path), path):
                self.add(item)
                added.append(item.rule_id)
        return added


def _import(path: Path) -> ModuleType:
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]
    name = f"skillsmith_user_checker_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FormatError(path, None, "cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise FormatError(path, None, f"invalid Python ({exc.msg})", line=exc.lineno) from None
    except Exception as exc:
        sys.modules.pop(name, None)
        raise FormatError(
            path, None, f"checker module failed to import ({type(exc).__name__}: {exc})"
        ) from None
    return module


def _checkers_in(module: ModuleType, path: Path) -> list[Checker]:
    found: list[Checker] = []
    for attr, value in vars(module).items():
        if isinstance(value, Checker):
            found.append(
                Checker(value.rule_id, value.check, value.description, origin=f"{path}:{attr}")
            )
        elif (
            inspect.isclass(value)
            and value.__module__ == module.__name__
            and isinstance(getattr(value, "rule_id", None), str)
            and callable(getattr(value, "check", None))
        ):
            rule_id = value.rule_id
            if not RULE_ID.match(rule_id):
                raise FormatError(path, f"{attr}.rule_id", "expected lower_snake_case")
            instance = value()
            description = str(getattr(value, "description", "") or inspect.getdoc(value) or "")
            found.append(
                Checker(rule_id, instance.check, description.split("\n")[0], f"{path}:{attr}")
            )
    if not found:
        raise FormatError(path, None, "defines no checker (use @checker or a class with rule_id)")
    return found
