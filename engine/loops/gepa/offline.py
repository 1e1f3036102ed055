"""The offline reflection model: a deterministic answerer so the demo optimizes with no network.

It reads the reflection prompt like a model would — the section to rewrite, the skill's
sections, the evaluation records — and answers with the same JSON a model returns. The edit is
mined from the records with the offline patch proposer's own machinery
(``engine.evaluation.patches.offline_proposer``), in the vocabulary of the bundled demo agent:

- steps: a flag step whose pattern matches a missed positive (FN) in a language its globs skip
  searches that language too (only that step); else a new "Flag …" step for the call the
  missed positive hands its user input to (``engine.loops.gepa.sinks``): first the lesson that
  carries across sinks and languages, "a call handed user input as its argument", then the
  sink itself when the input reaches it through a variable or a built string — never a step
  that also flags a negative record's line; else calls found in the missed positives and in
  none of the negatives become a new step with a ``grep -nE`` — never one that matches where
  user input is merely read, which the near-miss negatives do as well — or the flag steps get
  the globs of the missed cases' languages, whichever first makes a flag step hit more of them;
- pitfalls: calls and API names on the falsely flagged lines (FP) that no positive contains
  become "… — not a finding" items — a negative that passed although a flag step hits an
  unguarded line of it counts as falsely flagged too: the agent slipped past the skill's own
  false alarm; of two guards of one line, an option beside the input goes before a call that
  only converts it (``allowed_classes`` before ``base64_decode(``); no plain word (it would
  hide real findings elsewhere, and so would the very call a flag step searches for);
- when_to_use: when a failing record shows the agent skipped the Pitfalls review (it concluded at
  its first finding, or kept a finding a Pitfalls item rules out), the instruction to run every
  step before concluding — which the demo agent obeys, and which steadies it;
- description and when_to_use: when the agent never loaded the skill for a failing task, the
  task's own words are added, so the skill is picked for tasks phrased like it.

A steps or pitfalls rewrite combines up to ``MAX_EDITS`` such edits, each mined for the records
the section as edited so far still gets wrong, as a model answering for all the records would.

When the records support no edit of the selected section it returns the section unchanged,
which the GEPA optimizer records as a rejected reflection — exactly what it does with a real model
that finds nothing to improve.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import chain
from typing import Any

from engine.core.benchmark import normalise_label
from engine.core.skill import SkillDoc
from engine.evaluation.demo.agent import (
    discard_rules,
    item_rules,
    labels_of,
    plan,
    ruled_out,
    task_text,
)
from engine.evaluation.demo.tools import tool_of
from engine.evaluation.patches.edits import with_pitfalls, with_step
from engine.evaluation.patches.material import CaseMaterial, CodeLine, Material, grep_matcher
from engine.evaluation.patches.mining import (
    GLOB,
    flag_matchers,
    skill_globs,
    source_pattern,
    split_command,
    token_class,
)
from engine.evaluation.patches.offline_proposer import (
    DraftPatch,
    OfflineProposer,
    _widen_globs,
    found,
)
from engine.evaluation.patches.proposer import PatchTarget
from engine.evaluation.patches.textrules import default_rules
from engine.loops.gepa.reflection import RECORDS_CLOSE, RECORDS_OPEN
from engine.loops.gepa.sinks import Sink, sinks

MAX_NEW_WORDS = 4  # task words one trigger edit adds
MAX_EDITS = 3  # mined edits one rewrite of steps or pitfalls combines
EVERY_STEP = "- Every audit runs all the steps before it concludes, even after a first finding."
_HASTY = re.compile(r"\bconcluding now\b|\bsettles it\b", re.IGNORECASE)
_SECTION = re.compile(r"^Selected section: (\w+)$", re.MULTILINE)
_FILE = re.compile(r"^--- file (.+) ---$", re.MULTILINE)
_WORD = re.compile(r"[a-z][a-z-]{4,}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
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


def _material(
    records: Sequence[Mapping[str, Any]], doc: SkillDoc
) -> tuple[Material, dict[str, str]]:
    """The records as the proposer's material: labels, outcomes (pass/FN/FP) and code lines.

    A negative record that passed although a flag step of the skill hits one of its lines that
    no Pitfalls item rules out counts as a false alarm: the skill as written flags that safe
    line, and the agent (which loaded the skill) answered right only because it slipped on
    this run (misread the hit, skipped the step). A model reading the record sees the same;
    waiting for a run that fails on it would leave its guard unlearnt in most runs of a noisy
    agent.
    """
    matchers, rules = flag_matchers(doc), discard_rules(doc)
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
        case = CaseMaterial(case_id, expected, outcome, None, _code_lines(prompt))
        loaded = "Skill " in str(record.get("trace", ""))
        if outcome == "pass" and expected == neg and loaded and found(case, matchers, rules):
            case = replace(case, outcome="FP")
        outcomes[case_id] = case.outcome
        cases[case_id] = case
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
    material, outcomes = _material(records, _skill_doc(sections))
    if section == "description":
        return _trigger_words(section, sections, records, outcomes)
    if section == "when_to_use":
        return _finish_every_step(sections, records, outcomes) or _trigger_words(
            section, sections, records, outcomes
        )
    direction = {"steps": "FN", "pitfalls": "FP"}.get(section)
    failing = tuple(c for c, o in outcomes.items() if o == direction)
    if direction is None or not failing:
        return None
    return _rewrite(section, dict(sections), material, failing)


def _rewrite(
    section: str, sections: dict[str, str], material: Material, failing: Sequence[str]
) -> tuple[str, str] | None:
    """Edits of the section, one after another, while each still fixes a failing record.

    A model that reads several failing records rewrites the section for all of them at once;
    one mined edit covers one family or one guard, so the next edit is mined for the records
    the section still gets wrong, on the section as edited so far (at most ``MAX_EDITS``).
    """
    start, hows = sections[section], []
    for _ in range(MAX_EDITS):
        unfixed = _unfixed(section, sections, material, failing)
        # the records addressed so far count as passing: the next edit is mined for the rest
        cases = {
            c: m if c in unfixed or m.outcome == "pass" else replace(m, outcome="pass")
            for c, m in material.cases.items()
        }
        edit = _edit(section, sections, replace(material, cases=cases), unfixed)
        if edit is None or set(
            _unfixed(section, {**sections, section: edit[0]}, material, failing)
        ) >= set(unfixed):
            break
        sections[section], how = edit
        hows.append(how.removeprefix("offline: "))
    if sections[section].strip() == start.strip():
        return None
    return sections[section], "offline: " + "; then ".join(hows)


def _unfixed(
    section: str, sections: Mapping[str, str], material: Material, failing: Sequence[str]
) -> tuple[str, ...]:
    """The failing records the section does not yet address: missed positives no flag step
    reaches, or false alarms with a flagged line no Pitfalls item rules out."""
    doc = _skill_doc(sections)
    if section == "steps":
        return tuple(c for c in failing if not _reached(doc, [material.cases[c]]))
    matchers, rules = flag_matchers(doc), discard_rules(doc)
    return tuple(
        c
        for c in failing
        if any(
            not ruled_out(ln.text, rules)
            for m in matchers
            for ln in m.hits(material.cases[c].lines)
        )
    )


def _edit(
    section: str, sections: Mapping[str, str], material: Material, failing: Sequence[str]
) -> tuple[str, str] | None:
    """One mined edit of the section for the ``failing`` records, or None."""
    if not failing:
        return None
    direction = "FN" if section == "steps" else "FP"
    target = PatchTarget("reflection", direction, tuple(failing), 1.0, "", ())
    proposer = OfflineProposer(None, seed=0)
    doc = _skill_doc(sections)
    if direction == "FP":
        mined = proposer._pitfalls(doc, target, material, demote=_converts)
        flagged = [ln.text for c in failing for ln in material.cases[c].lines]
        shaped = (_api_items(c, doc, flagged) for c in mined)
        return _first((c for c in shaped if c is not None), section, sections[section])
    # Missed positives: the flag steps whose pattern already matches them searching their
    # language too (the narrowest edit), else a new flag step for their calls, else every flag
    # step searching their languages — whichever first makes a flag step hit more of them.
    missed = [material.cases[c] for c in failing]
    widened = _widen_matching(sections["steps"], doc, missed)
    if widened is not None:
        return widened
    sink = _first(_sink_steps(doc, material, missed), section, sections[section])
    if sink is not None:
        return sink
    before = _reached(doc, missed)
    sources = {src for step in plan(doc) for src in step.sources}
    mined = chain(proposer._flag_steps(doc, target, material), _widen_globs(doc, target, material))
    better = (
        c
        for c in mined
        if _reached(SkillDoc.parse(c.text), missed) > before and not _flags_sources(c, doc, sources)
    )
    return _first(better, section, sections[section])


def _sink_steps(
    doc: SkillDoc, material: Material, missed: Sequence[CaseMaterial]
) -> Iterator[DraftPatch]:
    """A flag step for the call that receives user input in the missed positives
    (engine.loops.gepa.sinks), the one reaching most of them first — never one that also
    flags a line of the records' negatives the Pitfalls leave standing."""
    sources = [src for step in plan(doc) if not step.flags for src in step.sources]
    rules = discard_rules(doc)
    negative = [ln.text for c in material.labelled(material.negative) for ln in c.lines]

    def clean(pattern: str) -> bool:
        regex = re.compile(pattern)
        return not any(regex.search(text) and not ruled_out(text, rules) for text in negative)

    # First the lesson that carries across sinks and languages: a call handed the input as
    # its argument (``http.Get(r.URL.Query()…``) teaches ``curl_init($_GET[…])``.
    general = source_pattern(sources, missed, skill_globs(doc))
    if general is not None and clean(general[0]):
        pattern, info = general
        body = (
            "Flag calls handed user input as their argument: "
            f'`grep -nE "{pattern}" {" ".join(sorted(info.files))}`'
        )
        text = with_step(doc, body)
        if text is not None:
            cases = tuple(sorted(info.cases))
            yield DraftPatch(text, cases, f"a call is handed user input in {', '.join(cases)}")
    found: dict[str, list[Sink]] = {}
    for case in missed:
        for sink in sinks(case, sources):
            found.setdefault(sink.pattern, []).append(sink)
    ranked = sorted(
        found, key=lambda p: (-len({s.case_id for s in found[p]}), not found[p][0].direct, p)
    )
    for pattern in filter(clean, ranked):
        first = found[pattern][0]
        how = "straight from a source of user input" if first.direct else "built from user input"
        globs = " ".join(sorted({s.glob for s in found[pattern]}))
        body = f'Flag {first.form} calls that take input {how}: `grep -nE "{pattern}" {globs}`'
        text = with_step(doc, body)
        if text is not None:
            cases = tuple(sorted({s.case_id for s in found[pattern]}))
            yield DraftPatch(text, cases, f"{first.form} receives user input in {', '.join(cases)}")


def _api_items(candidate: DraftPatch, doc: SkillDoc, flagged: Sequence[str]) -> DraftPatch | None:
    """The candidate with only the new Pitfalls items whose patterns are calls or API names
    (None when none is left).

    From a handful of records a plain word (``name``) can look like the guard of a false alarm;
    across the benchmark it also sits on the line of real findings and hides them. So does the
    sink a flag step searches for (``execute(``): no positive in the minibatch had it, but it is
    on the line of every real finding of that step. Such an item is dropped on its own: the
    cover it came in also holds the guards of the minibatch's other false alarms
    (``shlex.quote(``), and a rewrite that threw them all away for one bad item would leave
    those false alarms standing — or fall back to a worse guard of the same line.

    Where the sink is handed a literal list on the falsely flagged line (``flagged``), the
    item names that form instead (``->execute([`` of ``$stmt->execute(['%' . $_GET['q']…``):
    values passed as a list are bound as parameters, the very guard of the placeholder item,
    on the line the values are passed — and no concatenated query is written so.
    """
    sinks = {
        word
        for step in plan(doc)
        if step.flags and step.command
        for word in _IDENTIFIER.findall(step.command)
    }
    have = set((doc.section("pitfalls") or "").splitlines())
    added = [
        line.strip()
        for line in (SkillDoc.parse(candidate.text).section("pitfalls") or "").splitlines()
        if line not in have and line.strip()
    ]
    kept = [
        item.removeprefix("- ")
        for item in (_bound(i, sinks, flagged) for i in added)
        if all(
            t.endswith("([") or (token_class(t) <= 1 and _last_name(t) not in sinks)
            for rule in item_rules(item)
            for group in rule
            for t in group
        )
    ]
    if not kept or not any(item_rules(item) for item in kept):
        return None
    text = with_pitfalls(doc, kept)
    if text is None:
        return None
    dropped = len(added) - len(kept)
    how = candidate.how + (
        f" ({dropped} item(s) that would hide real findings left out)" if dropped else ""
    )
    return DraftPatch(text, candidate.case_ids, how)


def _bound(item: str, sinks: set[str], flagged: Sequence[str]) -> str:
    """``item`` with a sink call it names (``$stmt->execute(``) written as the sink handed a
    literal list (``->execute([``), where every flagged line that has the call passes one."""
    for rule in item_rules(item):
        for token in (t for group in rule for t in group):
            name = _last_name(token)
            if not token.endswith("(") or name not in sinks:
                continue
            calls = [re.search(rf"(->|\.)?{re.escape(name)}\((\[)?", t) for t in flagged]
            hits = [m for m in calls if m is not None]
            if hits and all(m.group(2) for m in hits):
                item = item.replace(f"`{token}`", f"`{hits[0].group(1) or ''}{name}([`")
    return item


def _converts(token: str, flagged: Sequence[str]) -> bool:
    """Whether ``token`` is a call that is a flagged call's whole first argument on one of the
    ``flagged`` lines (``unserialize(base64_decode($_POST…``, ``JSON.parse(Buffer.from(…``).

    Such a call converts the input before the sink sees it — it decodes as often as it cleans —
    while an option the sink is given beside the input (``['allowed_classes' => false]``,
    ``usedforsecurity=False``) or a call inside a built argument (``'ping ' .
    escapeshellarg($h)``) names what makes this use safe. Evolve's proposer keeps such a
    decoder out because some positive of the feedback split has it too; a minibatch seldom
    holds that positive, so where a false alarm's line has both kinds the converter goes last —
    as a guard it would also clear the vulnerable files that decode their input
    (``unserialize(base64_decode($_COOKIE…`` with no ``allowed_classes``).
    """
    name = token.removesuffix("(")
    return bool(name) and any(re.search(rf"\(\s*{re.escape(name)}\(", t) for t in flagged)


def _last_name(token: str) -> str:
    names = _IDENTIFIER.findall(token)
    return names[-1] if names else ""


def _flags_sources(candidate: DraftPatch, doc: SkillDoc, sources: set[str]) -> bool:
    """A new flag step that matches where user input is read flags every file that reads any.

    Reading ``request.args`` is not a vulnerability: the near-miss negatives read it too. The
    trace step already follows the sources; a flag step has to name a sink.
    """
    old = {step.command for step in plan(doc)}
    new = [s for s in plan(SkillDoc.parse(candidate.text)) if s.flags and s.command not in old]
    return any(re.escape(src) in (step.command or "") for step in new for src in sources)


def _widen_matching(
    steps: str, doc: SkillDoc, missed: Sequence[CaseMaterial]
) -> tuple[str, str] | None:
    """Flag steps whose pattern matches a missed case's line in a file their globs leave out
    get that file's language — only those steps, so no other family starts flagging it."""
    text, added = steps, []
    for step in plan(doc):
        if not step.flags or step.command is None or tool_of(step.command) != "grep":
            continue
        matcher = grep_matcher(split_command(step.command)[1:])
        if matcher is None or not all(GLOB.match(op) for op in matcher.operands):
            continue
        suffixes = sorted(
            {
                "*." + ln.path.rsplit(".", 1)[1]
                for case in missed
                for ln in case.lines
                if "." in ln.path and "/" not in ln.path
                if not matcher.applies_to(ln.path) and matcher.regex.search(ln.text)
            }
        )
        span = f"`{step.command}`"
        if suffixes and span in text:
            text = text.replace(span, f"`{step.command} {' '.join(suffixes)}`", 1)
            added.append(f"step {step.number} also searches {' '.join(suffixes)}")
    if not added:
        return None
    return (
        text,
        f"offline: the missed cases match a flag step in a language it skips: {'; '.join(added)}",
    )


def _finish_every_step(
    sections: Mapping[str, str],
    records: Sequence[Mapping[str, Any]],
    outcomes: Mapping[str, str],
) -> tuple[str, str] | None:
    """The instruction to run every step, Pitfalls review included, before concluding — when a
    failing record shows the agent skipped that review: it settled the task at its first
    finding, or it kept a finding one of the skill's own Pitfalls rules out."""
    rules = discard_rules(_skill_doc(sections))
    unreviewed = [
        str(r.get("case"))
        for r in records
        if outcomes.get(str(r.get("case"))) != "pass" and _unreviewed(str(r.get("output")), rules)
    ]
    current = sections.get("when_to_use", "").rstrip()
    if not unreviewed or EVERY_STEP in current:
        return None
    text = f"{current}\n{EVERY_STEP}".strip()
    return text, f"offline: the agent skipped the Pitfalls review in {', '.join(unreviewed)}"


def _unreviewed(output: str, rules: list[list[list[str]]]) -> bool:
    if _HASTY.search(output):
        return True
    findings = output.split("Findings:", 1)[1] if "Findings:" in output else ""
    kept = [ln for ln in findings.splitlines() if ln.startswith("- ")]
    return any(ruled_out(ln.split("): ", 1)[-1], rules) for ln in kept)


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
    # a word that says "every task" ("anything") would make the skill load everywhere: the
    # candidate filters refuse such a trigger, so never propose one
    rules = default_rules()
    words: list[str] = []
    for record in records:
        loaded = "Skill " in str(record.get("trace", ""))
        if outcomes.get(str(record.get("case"))) == "pass" or loaded:
            continue
        task = str(record.get("input", "")).split("\n\n--- file ", 1)[0]
        for word in _WORD.findall(task_text(task).lower()):
            if (
                word not in have
                and word not in _COMMON
                and word not in words
                and rules.catch_all_in(word) is None
            ):
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
