"""What the offline proposer may learn from: the statement files and rows of one split.

Evolution must not peek at holdout or golden cases (that would be learning the answers), nor at
any rubric: so the material is built from the rows the caller hands over, every row or case of a
held-out split is dropped, and only files under ``statement/`` are read. Cases the ground-truth
audit doubts are passed over while other failures remain — the skill is not bent to a possibly
wrong label — and still count as evidence of what their label looks like.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from engine.core.benchmark import Benchmark, normalise_label
from engine.core.fsutil import iter_files
from engine.evaluation.demo.tools import parse_grep

HELD_OUT = frozenset({"holdout", "golden"})
MAX_FILE_BYTES = 200_000
_IMPORT = re.compile(
    r"^\s*(?:import\b|from\s+\S+\s+import\b|package\b|using\b|#\s*include\b|<\?php\b|"
    r"(?:const|let|var)\s+\S+\s*=\s*require\()"
)


@dataclass(frozen=True)
class CodeLine:
    path: str  # relative to the statement folder
    number: int
    text: str


@dataclass(frozen=True)
class CaseMaterial:
    case_id: str
    label: str | None
    outcome: str  # pass | FN | FP | fail
    case_type: str | None
    lines: tuple[CodeLine, ...]
    prompt: str = ""  # statement/prompt.md: the task as the agent reads it

    def code(self) -> list[CodeLine]:
        """The lines that can hold a finding: no imports, no blank lines."""
        return [ln for ln in self.lines if ln.text.strip() and not _IMPORT.match(ln.text)]


@dataclass(frozen=True)
class Material:
    positive: str | None
    negative: str | None
    cases: dict[str, CaseMaterial]
    flagged: frozenset[str]

    def failing(self, outcome: str, first: Sequence[str] = ()) -> list[CaseMaterial]:
        """Cases failing with ``outcome``, the ``first`` ids leading.

        Cases the ground-truth audit suspects are left out while any other case fails the same
        way; only when every such failure is suspected are they used (the gates still judge the
        patch on every case, and :meth:`suspected` says so in the proposal).
        """
        found = [c for c in self.cases.values() if c.outcome == outcome]
        chosen = [c for c in found if c.case_id not in self.flagged] or found
        order = {cid: i for i, cid in enumerate(first)}
        return sorted(chosen, key=lambda c: (order.get(c.case_id, len(order)), c.case_id))

    def suspected(self, cases: Sequence[CaseMaterial]) -> bool:
        return bool(cases) and all(c.case_id in self.flagged for c in cases)

    def labelled(self, label: str | None) -> list[CaseMaterial]:
        return [c for c in self.cases.values() if label is not None and c.label == label]


def _outcome(rows: Sequence[Mapping[str, object]]) -> str:
    kinds = [str(r.get("failure_kind") or "fail") for r in rows if r.get("pass_fail") == "fail"]
    for kind in ("FN", "FP", "fail"):
        if kind in kinds:
            return kind
    return "pass"


def _read_lines(folder: Path) -> tuple[CodeLine, ...]:
    lines: list[CodeLine] = []
    for path in iter_files(folder):
        rel = path.relative_to(folder).as_posix()
        if path.suffix.lower() == ".md" or path.stat().st_size > MAX_FILE_BYTES:
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        text = data.decode("utf-8", errors="replace")
        lines += [CodeLine(rel, n, t) for n, t in enumerate(text.splitlines(), start=1)]
    return tuple(lines)


def _read_prompt(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def gather(
    bench: Benchmark, rows: Sequence[Mapping[str, object]], flagged: Sequence[str]
) -> Material:
    by_case: dict[str, list[Mapping[str, object]]] = {}
    for row in rows:
        if (row.get("variant") or "skill") != "skill" or row.get("split") in HELD_OUT:
            continue
        by_case.setdefault(str(row.get("case_id")), []).append(row)
    known = {c.id: c for c in bench.cases}
    cases: dict[str, CaseMaterial] = {}
    for case_id in sorted(by_case):
        case = known.get(case_id)
        if case is None or case.split in HELD_OUT:
            continue
        case_rows = by_case[case_id]
        truth = next((r.get("ground_truth") for r in case_rows if r.get("ground_truth")), None)
        kind = next((r.get("case_type") for r in case_rows if r.get("case_type")), None)
        cases[case_id] = CaseMaterial(
            case_id=case_id,
            label=normalise_label(str(truth)) if truth is not None else None,
            outcome=_outcome(case_rows),
            case_type=str(kind) if kind else None,
            lines=_read_lines(case.statement_dir),
            prompt=_read_prompt(case.prompt_path),
        )
    labels = [normalise_label(label) for label in bench.labels]
    binary = len(labels) == 2
    return Material(
        positive=labels[0] if binary else None,
        negative=labels[1] if binary else None,
        cases=cases,
        flagged=frozenset(flagged),
    )


# -- what a grep step of the skill matches --------------------------------------------------------


@dataclass(frozen=True)
class GrepMatcher:
    """A skill step's grep command as a Python matcher over a case's files."""

    regex: re.Pattern[str]
    operands: tuple[str, ...]

    def applies_to(self, path: str) -> bool:
        return any(
            op == "<file>" or (("/" in op or "/" not in path) and fnmatch(path, op))
            for op in self.operands
        )

    def hits(self, lines: Sequence[CodeLine]) -> list[CodeLine]:
        return [ln for ln in lines if self.applies_to(ln.path) and self.regex.search(ln.text)]


_BRE_SWAP = str.maketrans({"(": r"\(", ")": r"\)", "|": r"\|", "{": r"\{", "}": r"\}", "+": r"\+"})


def _bre_to_python(pattern: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern) and pattern[index + 1] in "()|{}+?":
            out.append(pattern[index + 1])
            index += 2
            continue
        out.append(char.translate(_BRE_SWAP) if char != "?" else r"\?")
        index += 1
    return "".join(out)


def grep_matcher(argv: Sequence[str]) -> GrepMatcher | None:
    """The matcher of ``grep [flags] PATTERN FILE…`` (argv without "grep"), None if unusable."""
    parsed = parse_grep(list(argv))
    if isinstance(parsed, str) or "<source>" in parsed.pattern:
        return None
    flags = "".join(f.lstrip("-") for f in parsed.flags)
    if "F" in flags:
        source = re.escape(parsed.pattern)
    elif "E" in flags:
        source = parsed.pattern.replace(r"\<", r"\b").replace(r"\>", r"\b")
    else:
        source = _bre_to_python(parsed.pattern)
    if "w" in flags:
        source = rf"(?<!\w)(?:{source})(?!\w)"
    if "x" in flags:
        source = rf"^(?:{source})$"
    try:
        regex = re.compile(source, re.IGNORECASE if "i" in flags else 0)
    except re.error:
        return None
    return GrepMatcher(regex, parsed.operands or ("<file>",))
