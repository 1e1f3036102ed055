"""The offline reflection model: a deterministic answerer so the demo optimizes with no network.

It reads the reflection prompt like a model would — the section to rewrite, the skill's
sections, the evaluation records — and answers with the same JSON a model returns. The edit is
mined from the records with the offline patch proposer's own machinery
(``engine.evaluation.patches.offline_proposer``), in the vocabulary of the bundled demo agent:

- steps: calls found in the missed positives (FN) and in none of the negatives become a new
  "Flag …" step with a ``grep -nE``, or the flag steps get the globs of the missed cases'
  languages — whichever first makes a flag step hit more of the missed cases;
- pitfalls: tokens on the falsely flagged lines (FP) that no positive contains become "… — not a
  finding" items;
- description and when_to_use: when the agent never loaded the skill for a failing task, the
  task's own words are added, so the skill is picked for tasks phrased like it.

When the records support no edit of the selected section it returns the section unchanged,
which the GEPA optimizer records as a rejected reflection — exactly what it does with a real model
that finds nothing to improve.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain
from typing import Any

from engine.core.benchmark import normalise_label
from engine.core.skill import SkillDoc
from engine.evaluation.demo.agent import labels_of, task_text
from engine.evaluation.patches.material import CaseMaterial, CodeLine, Material
from engine.evaluation.patches.mining import flag_matchers
from engine.evaluation.patches.offline_proposer import DraftPatch, OfflineProposer, _widen_globs
from engine.evaluation.patches.proposer import PatchTarget
from engine.loops.gepa.reflection import RECORDS_CLOSE, RECORDS_OPEN

MAX_NEW_WORDS = 4  # task words one trigger edit adds
_SECTION = re.compile(r"^Selected section: (\w+)$", re.MULTILINE)
_FILE = re.compile(r"^--- file (.+) ---$", re.MULTILINE)
_WORD = re.compile(r"[a-z][a-z-]{4,}")
_COMMON_WORDS = """
    about above after again against also answer asked before being below could between doing
    during each either every final following found from further given good having here
    itself just line lines more most other ought output over same should some such than that
    their theirs them then there these they this those through under until very what when
    where which while whole with would your
"""
_COMMON = frozenset(_COMMON_WORDS.split())


def offline_reflection(system: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """Answer one reflection prompt (``engine.evaluation.llm.OfflineLLM``'s ``respond``)."""
    prompt = _last_user_text(messages)
    found = _SECTION.search(prompt)
    section = found.group(1) if found else "steps"
    sections = _json_after(prompt, "Current skill sections (JSON):")
    records = _records(prompt)
    current = str(sections.get(section, ""))
    edit = _propose(section, {k: str(v) for k, v in sections.items()}, records)
    text, how = edit if edit is not None else (current, "the records support no edit")
    return json.dumps({"section": section, "text": text, "rationale": how}, ensure_ascii=False)


def _last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(messages):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str):
            return content
    return ""


def _json_after(prompt: str, marker: str) -> dict[str, Any]:
    index = prompt.find(marker)
    if index < 0:
        return {}
    line = prompt[index + len(marker) :].lstrip("\n").split("\n", 1)[0]
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _records(prompt: str) -> list[dict[str, Any]]:
    start, end = prompt.find(RECORDS_OPEN), prompt.find(RECORDS_CLOSE)
    if start < 0 or end < start:
        return []
    try:
        value = json.loads(prompt[start + len(RECORDS_OPEN) : end])
    except json.JSONDecodeError:
        return []
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


# -- mining ---------------------------------------------------------------------------------------


def _skill_doc(sections: Mapping[str, str]) -> SkillDoc:
    """A SKILL.md around the sections, for the proposer's step and pitfall editors."""
    description = " ".join(sections.get("description", "").split())
    text = "\n".join(
        [
            "---",
            json.dumps({"name": "skill", "description": description}),
            "---",
            "",
            "## When to use",
            "",
            sections.get("when_to_use", ""),
            "",
            "## Steps",
            "",
            sections.get("steps", ""),
            "",
            "## Pitfalls",
            "",
            sections.get("pitfalls", ""),
            "",
        ]
    )
    return SkillDoc.parse(text)


def _code_lines(text: str) -> tuple[CodeLine, ...]:
    """The statement files quoted in a record's input (``--- file NAME ---`` blocks)."""
    lines: list[CodeLine] = []
    marks = list(_FILE.finditer(text))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end() : end].strip("\n")
        path = mark.group(1).strip()
        lines += [CodeLine(path, n, t) for n, t in enumerate(body.splitlines(), start=1)]
    return tuple(lines)


def _material(records: Sequence[Mapping[str, Any]]) -> tuple[Material, dict[str, str]]:
    """The records as the proposer's material: labels, outcomes (pass/FN/FP) and code lines."""
    positive = negative = None
    cases: dict[str, CaseMaterial] = {}
    outcomes: dict[str, str] = {}
    for record in records:
        case_id = str(record.get("case"))
        prompt = str(record.get("input", ""))
        pos, neg = (normalise_label(x) for x in labels_of(prompt))
        positive, negative = positive or pos, negative or neg
        expected = normalise_label(str(record.get("expected", "")))
        verdict = normalise_label(str(record.get("verdict") or ""))
        outcome = "pass"
        if float(record.get("score") or 0.0) < 1.0:
            outcome = "FN" if expected == pos else "FP" if verdict == pos else "fail"
        outcomes[case_id] = outcome
        cases[case_id] = CaseMaterial(case_id, expected, outcome, None, _code_lines(prompt))
    return Material(positive, negative, cases, frozenset()), outcomes


def _first(candidates: Iterator[DraftPatch], section: str, current: str) -> tuple[str, str] | None:
    for candidate in candidates:
        text = SkillDoc.parse(candidate.text).section(section) or ""
        if text.strip() and text.strip() != current.strip():
            return text, f"offline: {candidate.how}"
    return None


def _propose(
    section: str, sections: Mapping[str, str], records: Sequence[Mapping[str, Any]]
) -> tuple[str, str] | None:
    material, outcomes = _material(records)
    if section in ("description", "when_to_use"):
        return _trigger_words(section, sections, records, outcomes)
    direction = {"steps": "FN", "pitfalls": "FP"}.get(section)
    failing = tuple(c for c, o in outcomes.items() if o == direction)
    if direction is None or not failing:
        return None
    target = PatchTarget("reflection", direction, failing, 1.0, "", ())
    proposer = OfflineProposer(None, seed=0)
    doc = _skill_doc(sections)
    if direction == "FP":
        return _first(proposer._pitfalls(doc, target, material), section, sections[section])
    # Missed positives: a new flag step for their calls, or the existing flag steps searching
    # their languages too — whichever first makes a flag step hit more of the missed cases.
    missed = [material.cases[c] for c in failing]
    before = _reached(doc, missed)
    mined = chain(proposer._flag_steps(doc, target, material), _widen_globs(doc, target, material))
    better = (c for c in mined if _reached(SkillDoc.parse(c.text), missed) > before)
    return _first(better, section, sections[section])


def _reached(doc: SkillDoc, cases: Sequence[CaseMaterial]) -> int:
    """How many of ``cases`` some flag step of ``doc`` has a hit in."""
    matchers = flag_matchers(doc)
    return sum(1 for case in cases if any(m.hits(case.lines) for m in matchers))


def _trigger_words(
    section: str,
    sections: Mapping[str, str],
    records: Sequence[Mapping[str, Any]],
    outcomes: Mapping[str, str],
) -> tuple[str, str] | None:
    """Words of failing tasks the agent did not load the skill for, missing from the section."""
    have = set(_WORD.findall(sections.get(section, "").lower()))
    words: list[str] = []
    for record in records:
        loaded = "Skill " in str(record.get("trace", ""))
        if outcomes.get(str(record.get("case"))) == "pass" or loaded:
            continue
        task = str(record.get("input", "")).split("\n\n--- file ", 1)[0]
        for word in _WORD.findall(task_text(task).lower()):
            if word not in have and word not in _COMMON and word not in words:
                words.append(word)
    if not words:
        return None
    chosen = ", ".join(words[:MAX_NEW_WORDS])
    current = sections.get(section, "").rstrip()
    if section == "description":
        text = f"{current} Also use it for tasks that mention {chosen}."
    else:
        text = f"{current}\n- A task that mentions {chosen}."
    return text.strip(), f"offline: the skill was not loaded for tasks about {chosen}"


__all__ = ["offline_reflection"]
