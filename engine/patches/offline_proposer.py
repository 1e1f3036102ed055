"""The offline proposer: a deterministic, network-free patch writer for the demo and for CI.

It does what a careful engineer does with the feedback split: look at what separates the cases
the skill gets wrong from the ones it gets right, and write that difference down as one concrete
line in the agent's own vocabulary (the demo agent runs backticked ``grep``/``read``/``list``
commands of numbered steps and honours Pitfalls items saying a backticked pattern is "not a
finding"):

- missed positives (FN): code tokens (``pickle.loads(``, ``Sprintf(`` … with ``%s`` after it)
  found in the failing positive cases and in no negative case become a new "Flag …" step with a
  ``grep -nE`` over the file under audit;
- false alarms (FP): tokens on the falsely flagged lines of negative cases that no positive case
  contains (``SafeLoader``, ``shlex.quote(`` …) become Pitfalls items "… — not a finding";
- flow anomalies: a "repeat until" step that loops is made to run once; a skill whose agent
  concludes at the first hit gets "run all steps before you conclude"; steps whose file globs miss
  the failing cases' languages get those globs.

Candidates are generated in a fixed order (ties broken by a hash of the seed), every one goes
through the same filters as a model's diff, and the first that passes is the proposal; a diff on
the taboo list is refused there, so the next candidate is tried instead of repeating a failure.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from engine.config import LimitsConfig
from engine.demo.agent import discard_rules, plan, ruled_out
from engine.demo.tools import parse_grep, tool_of
from engine.errors import FormatError
from engine.patches.material import (
    CaseMaterial,
    CodeLine,
    GrepMatcher,
    Material,
    gather,
    grep_matcher,
)
from engine.patches.proposer import NO_VALID_PATCH, Proposal, ProposalContext, Target, summary_of
from engine.patches.textrules import TextRules, default_rules, load_text_rules
from engine.skill import SkillDoc
from engine.store import unified_diff
from engine.workspace import Workspace

MAX_PATTERNS = 3  # grep alternatives one new step may add
MAX_PITFALLS = 3  # Pitfalls items one patch may add
MAX_CANDIDATES = 24  # candidates tried per root cause
MIN_BARE_NAME = 6  # shorter plain call names ("get(", "load(") rank last
LOOP_RULES = ("tool_loop", "budget_exhaustion")
HASTE_RULES = ("premature_conclusion",)
GLOB_RULES = ("progress_mismatch",)
TRIGGER_RULES = ("skill_not_loaded",)
MAX_GUARDS = 2  # exceptions a new flag pattern may bring along

_CHAIN = re.compile(r"(?<![\w$])([A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*)*)\s*\(")
_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*)*")
_ASSIGN = re.compile(r"\b\w+=\w+\b")  # keyword arguments: usedforsecurity=False
_SEP = re.compile(r"\.|->|::")
_QUALIFIED = re.compile(r"(([A-Za-z_$][\w$]*)(?:\.|->|::))?[A-Za-z_$][\w$]*$")
_DEFINITION = re.compile(
    r"^\s*(?:export\s+)?(?:async\s+)?(?:def|function|func|fn|sub)\s+(?:\([^)]*\)\s*)?(\w+)"
    r"|^\s*(?:(?:public|private|protected|static|final|synchronized|abstract)\s+)+"
    r"[\w<>\[\], ]*?\b(\w+)\s*\("
)
_TAINT = (r"\+", "%s", r"\$\{")  # concatenation or formatting after the call, on the same line
_ERE_SPECIAL = re.compile(r"([.\[\](){}*+?|^$\\])")
_CONFIRM = re.compile(r"\b(confirm|re-?read|double-check|finally)\b", re.IGNORECASE)
_NUMBER = re.compile(r"^(\s*)(\d+)([.)])")
_LOOP_CLAUSE = re.compile(r",?\s*(?:and\s+)?\brepeat\b[^.\n`]*?\buntil\b[^.\n`]*", re.IGNORECASE)
_LOOPS = re.compile(r"\brepeat\b[^.\n]*\buntil\b", re.IGNORECASE)
_GLOB = re.compile(r"^\*\.[\w]+$")
_ALL_STEPS = re.compile(r"\b(every|all)\s+(the\s+)?steps?\b[^.\n]*\bbefore\b", re.IGNORECASE)
_PUNCT = re.compile(r"[^\w\s`]+(?:\s[^\w\s`]+)?")
_SPAN = re.compile(r"`[^`\n]+`")
_FENCE = re.compile(r"```[^\n]*\n.*?```", re.DOTALL)
_WORDS = re.compile(r"[a-z]+")
_STOPWORDS = frozenset(
    re.findall(
        r"[a-z]+",
        """about above after again also answer asked audit before being below between both check
    code could does doing each find file files from have here into just like line make more most
    must only other over please same should some such than that their them then there these they
    this those under used using very want what when where which while whether will with would
    your""",
    )
)


@dataclass(frozen=True)
class Candidate:
    text: str  # the patched SKILL.md
    case_ids: tuple[str, ...]  # failing cases it should fix
    how: str


@dataclass
class FlagPattern:
    """A grep pattern mined from failing positive cases."""

    cases: set[str]
    name_class: int  # 0 API-shaped name … 2 short plain name
    tainted: int  # 1 when concatenation/formatting follows the call on the line
    files: set[str]  # the glob operands of the files it matched ("*.java"), or "<file>"


def _ere(token: str) -> str:
    escaped = _ERE_SPECIAL.sub(r"\\\1", token)
    return (r"\b" + escaped) if re.match(r"\w", token) else escaped


# -- editing SKILL.md line by line ----------------------------------------------------------------


def _splice(doc: SkillDoc, start: int, end: int, texts: Sequence[str]) -> str:
    """The document with lines ``[start, end)`` replaced by ``texts`` (the file's line ending)."""
    pairs = [(ln.text, ln.eol) for ln in doc.lines]
    if start == len(pairs) and pairs and not pairs[-1][1]:
        pairs[-1] = (pairs[-1][0], doc.newline)
    new = [(t, doc.newline) for t in texts]
    if end == len(pairs) and new and pairs and not pairs[-1][1]:
        new[-1] = (new[-1][0], "")
    pairs[start:end] = new
    return doc.bom + "".join(t + e for t, e in pairs)


def _section_end(doc: SkillDoc, name: str) -> int | None:
    """Index after the last non-blank line of a section, or None when the skill lacks it."""
    heading = doc.section_heading(name)
    if heading is None:
        return None
    stop = next(
        (h.index for h in doc.headings if h.index > heading.index and h.level <= heading.level),
        len(doc.lines),
    )
    end = stop
    while end > heading.index + 1 and doc.lines[end - 1].blank:
        end -= 1
    return end


def _with_step(doc: SkillDoc, body: str) -> str | None:
    """Add a step: before a closing "confirm" step (renumbering it), else after the last one."""
    steps = doc.steps
    end = _section_end(doc, "steps")
    if not steps or end is None:
        return None
    last = steps[-1]
    index = last.line - 1
    head = _NUMBER.match(doc.lines[index].text)
    if head is None:
        return _splice(doc, end, end, [f"- {body}"])
    indent = head.group(1)
    if _CONFIRM.search(last.text) and not any(s.command for s in plan(doc)[-1:] if s.flags):
        renumbered = _NUMBER.sub(
            lambda m: f"{m.group(1)}{int(m.group(2)) + 1}{m.group(3)}", doc.lines[index].text, 1
        )
        new = [f"{indent}{last.number}{head.group(3)} {body}", renumbered]
        return _splice(doc, index, index + 1, new)
    return _splice(doc, end, end, [f"{indent}{last.number + 1}{head.group(3)} {body}"])


def _with_pitfalls(doc: SkillDoc, items: Sequence[str]) -> str | None:
    end = _section_end(doc, "pitfalls")
    if end is None:
        return None
    return _splice(doc, end, end, [f"- {item}" for item in items])


# -- the proposer ---------------------------------------------------------------------------------


class OfflineProposer:
    kind = "offline"

    def __init__(
        self,
        ws: Workspace | None,
        seed: int = 0,
        *,
        limits: LimitsConfig | None = None,
        rules: TextRules | None = None,
        max_candidates: int = MAX_CANDIDATES,
    ) -> None:
        self.seed = seed
        self.limits = limits or (ws.load_config().limits if ws is not None else LimitsConfig())
        self.rules = rules or (load_text_rules(ws) if ws is not None else default_rules())
        self.max_candidates = max_candidates

    def propose(self, ctx: ProposalContext) -> Proposal:
        targets = ctx.targets()
        if not targets:
            return Proposal(
                None, "", "", "no root cause worth a patch", attempts=0, model="offline"
            )
        if ctx.bench is None:
            first = targets[0]
            return Proposal(
                None,
                first.rule_id,
                first.direction,
                "the offline proposer needs the benchmark's statement files",
                attempts=0,
                model="offline",
            )
        material = gather(ctx.bench, ctx.feedback_rows, ctx.flagged_case_ids)
        doc, _ = SkillDoc.parse_lenient(ctx.skill_text)
        tried = 0
        last = "no candidate found"
        for target in targets:
            for count, candidate in enumerate(self._candidates(doc, target, material)):
                if count >= self.max_candidates:
                    break
                if candidate.text == ctx.skill_text:
                    continue
                diff = unified_diff(ctx.skill_text, candidate.text)
                tried += 1
                report = ctx.check(diff, target, self.limits, self.rules)
                if report.passed:
                    return Proposal(
                        diff,
                        target.rule_id,
                        target.direction,
                        f"offline: {candidate.how} (candidate {tried})",
                        attempts=tried,
                        model="offline",
                        summary=summary_of(target, diff),
                        case_ids=candidate.case_ids,
                        report=report,
                        skill_text=report.patched,
                    )
                last = report.reason()
        first = targets[0]
        return Proposal(
            None,
            first.rule_id,
            first.direction,
            f"{NO_VALID_PATCH}: {tried} offline candidates refused; last: {last}",
            attempts=tried,
            model="offline",
            case_ids=first.case_ids,
        )

    def _candidates(self, doc: SkillDoc, target: Target, material: Material) -> Iterator[Candidate]:
        if target.rule_id in LOOP_RULES:
            yield from _unloop(doc, target)
        if target.rule_id in HASTE_RULES:
            yield from _thorough(doc, target)
        if target.rule_id in TRIGGER_RULES:
            yield from self._triggers(doc, target, material)
        if target.direction == "FN":
            yield from self._flag_steps(doc, target, material)
            if target.rule_id in GLOB_RULES:
                yield from _widen_globs(doc, target, material)
        elif target.direction == "FP":
            yield from self._pitfalls(doc, target, material)

    def _tie(self, token: str) -> str:
        return hashlib.sha256(f"{self.seed}\0{token}".encode()).hexdigest()

    # -- FN: a new flag step --------------------------------------------------------------------

    def _flag_steps(self, doc: SkillDoc, target: Target, material: Material) -> Iterator[Candidate]:
        failing = material.failing("FN", target.case_ids)
        if not failing:
            return
        rules = discard_rules(doc)
        negatives = [
            (c.case_id, ln)
            for c in material.labelled(material.negative)
            for ln in c.lines
            if not ruled_out(ln.text, rules)
        ]
        positives = [ln.text for c in material.labelled(material.positive) for ln in c.lines]
        wanted = set(target.case_ids) & {c.case_id for c in failing}
        sources = [src for step in plan(doc) if not step.flags for src in step.sources]
        covers = _fn_patterns(failing, sources)
        general = _source_pattern(sources, failing, _skill_globs(doc))
        if general is not None:
            covers.setdefault(general[0], general[1])
        ranked: list[tuple[tuple[int, int, int, int, int, int, str], str]] = []
        guards: dict[str, tuple[str, ...]] = {}
        guarded: dict[str, set[str]] = {}  # exception token → the negative cases it spares
        for pattern, info in covers.items():
            try:
                regex = re.compile(pattern)
            except re.error:
                continue
            false = [(cid, ln.text) for cid, ln in negatives if regex.search(ln.text)]
            if false:
                guard = self._guards([text for _, text in false], positives)
                if guard is None:
                    continue
                guards[pattern] = guard
                for token in guard:
                    guarded.setdefault(token, set()).update(
                        cid for cid, text in false if token in text
                    )
            cases = info.cases
            key = (
                -len(cases & wanted),
                -len(cases),
                -(general is not None and pattern == general[0]),
                len(guards.get(pattern, ())),
                info.name_class,
                -info.tainted,
            )
            ranked.append(((*key, self._tie(pattern)), pattern))
        ranked.sort()
        patterns = [p for _, p in ranked]
        hit = {p: covers[p].cases for p in patterns}
        kinds = {c.case_id: c.case_type for c in material.cases.values()}
        for chosen in _covers(patterns, hit, wanted, MAX_PATTERNS):
            fixed = sorted(set().union(*(hit[p] for p in chosen)))
            what = f"{_families(kinds, fixed, ' and ')} calls".lstrip()
            files = " ".join(sorted(set().union(*(covers[p].files for p in chosen))))
            body = f'Flag {what} the earlier steps miss: `grep -nE "{"|".join(chosen)}" {files}`'
            text = _with_step(doc, body)
            exceptions = list(dict.fromkeys(t for p in chosen for t in guards.get(p, ())))
            if text is not None and exceptions:
                if len(exceptions) > MAX_PITFALLS:
                    continue
                items = [_pitfall(t, _families(kinds, guarded[t], " and ")) for t in exceptions]
                text = _with_pitfalls(SkillDoc.parse_lenient(text)[0], items)
            if text is not None:
                how = f"new flag step for {', '.join(fixed)}{_doubt(material, failing)}"
                if exceptions:
                    how += f", with Pitfalls for {', '.join(exceptions)}"
                yield Candidate(text, tuple(fixed), how)

    def _guards(self, lines: Sequence[str], positives: Sequence[str]) -> tuple[str, ...] | None:
        """API-looking tokens that rule out each of ``lines`` (negative cases a new pattern would
        hit) and occur in no positive case, so the exception never hides a real finding."""
        usable: dict[str, set[int]] = {}
        for index, text in enumerate(lines):
            for token in _tokens(text):
                if _token_class(token) <= 1 and not any(token in p for p in positives):
                    usable.setdefault(token, set()).add(index)
        ranked = sorted(usable, key=lambda t: (-len(usable[t]), _token_class(t), self._tie(t)))
        chosen: list[str] = []
        covered: set[int] = set()
        for token in ranked:
            if usable[token] - covered:
                chosen.append(token)
                covered |= usable[token]
            if len(covered) == len(lines):
                return tuple(chosen[:MAX_GUARDS]) if len(chosen) <= MAX_GUARDS else None
        return None

    # -- the description: tasks that never loaded the skill -----------------------------------

    def _triggers(self, doc: SkillDoc, target: Target, material: Material) -> Iterator[Candidate]:
        """Words of the tasks that did not load the skill, added to its description."""
        description = doc.description
        if not description or not doc.has_frontmatter:
            return
        have = _stems(description)
        cases = [
            c
            for c in material.failing(target.direction, target.case_ids)
            if c.case_id in target.case_ids
        ]
        found: dict[str, set[str]] = {}
        for case in cases:
            for word in _task_words(case.prompt):
                if word[:5] not in have:
                    found.setdefault(word, set()).add(case.case_id)
        ranked = sorted(found, key=lambda w: (-len(found[w]), self._tie(w)))
        for first in range(0, len(ranked), 2):
            words = ranked[first : first + 2]
            said = " or ".join(words)
            new = f"{description.rstrip()} Also use it when a task mentions {said}."
            try:
                text = doc.with_frontmatter_value("description", new).render()
            except FormatError:
                return
            fixed = sorted(set().union(*(found[w] for w in words)))
            yield Candidate(text, tuple(fixed), f"description triggers on {said}")

    # -- FP: Pitfalls items ---------------------------------------------------------------------

    def _pitfalls(self, doc: SkillDoc, target: Target, material: Material) -> Iterator[Candidate]:
        matchers = _flag_matchers(doc)
        rules = discard_rules(doc)
        positives = [ln.text for c in material.labelled(material.positive) for ln in c.lines]
        remaining: dict[str, list[CodeLine]] = {}
        failing = material.failing("FP", target.case_ids)
        for case in failing:
            hits = {ln for m in matchers for ln in m.hits(case.lines)}
            left = sorted((ln for ln in hits if not ruled_out(ln.text, rules)), key=_line_key)
            if left:
                remaining[case.case_id] = left
        if not remaining:
            return
        wanted = set(target.case_ids) & set(remaining)
        fixes: dict[str, set[str]] = {}
        for case_id, lines in remaining.items():
            shared = set.intersection(*(_tokens(ln.text) for ln in lines))
            for token in shared:
                if not any(token in text for text in positives):
                    fixes.setdefault(token, set()).add(case_id)
        ranked = sorted(
            fixes,
            key=lambda t: (
                -len(fixes[t] & wanted),
                -len(fixes[t]),
                _token_class(t),
                self._tie(t),
            ),
        )
        kinds = {c.case_id: c.case_type for c in material.cases.values()}
        for chosen in _covers(ranked, fixes, wanted, MAX_PITFALLS):
            items = [_pitfall(t, _families(kinds, fixes[t], " and ")) for t in chosen]
            text = _with_pitfalls(doc, items)
            fixed = sorted(set().union(*(fixes[t] for t in chosen)))
            if text is not None:
                how = f"Pitfalls for {', '.join(fixed)}{_doubt(material, failing)}"
                yield Candidate(text, tuple(fixed), how)


# -- candidate building blocks --------------------------------------------------------------------


def _families(kinds: dict[str, str | None], case_ids: Iterable[str], joint: str) -> str:
    return joint.join(sorted({k for k in (kinds.get(c) for c in case_ids) if k}))


def _pitfall(token: str, families: str) -> str:
    of = f" of {families}" if families else ""
    return f"A hit on a line that also has `{token}` is the guarded form{of} — not a finding."


def _task_words(prompt: str) -> list[str]:
    """The content words of a task: no code, no backticked names, no answer-format line."""
    prose = _SPAN.sub(" ", _FENCE.sub(" ", prompt))
    lines = [line for line in prose.splitlines() if "VERDICT" not in line]
    words = _WORDS.findall(" ".join(lines).lower())
    return sorted({w for w in words if len(w) >= 4 and w not in _STOPWORDS})


def _stems(text: str) -> set[str]:
    return {w[:5] for w in _WORDS.findall(text.lower()) if len(w) >= 4}


def _doubt(material: Material, failing: Sequence[CaseMaterial]) -> str:
    if not material.suspected(failing):
        return ""
    return " (every such failure is a GT-suspected case)"


def _line_key(line: CodeLine) -> tuple[str, int]:
    return (line.path, line.number)


def _definitions(case: CaseMaterial) -> set[str]:
    names: set[str] = set()
    for line in case.lines:
        match = _DEFINITION.match(line.text)
        if match:
            names.add(match.group(1) or match.group(2))
    return names


def _source_pattern(
    sources: Sequence[str], failing: Sequence[CaseMaterial], globs: Iterable[str]
) -> tuple[str, FlagPattern] | None:
    """ "A source of user input handed straight to a call", over every source the skill names.

    The lesson that carries across languages and sinks (``curl_init($_GET[…])`` teaches
    ``fetch(req.query…)``), so it searches every language the skill's steps search.
    """
    names = sorted({s for s in sources if s.strip()})
    if not names:
        return None
    pattern = r"\w\((" + "|".join(_ERE_SPECIAL.sub(r"\\\1", s) for s in names) + ")"
    regex = re.compile(pattern)
    hits = [(c.case_id, ln) for c in failing for ln in c.code() if regex.search(ln.text)]
    if not hits:
        return None
    files = set(globs) | {_operand(ln.path) for _, ln in hits}
    return pattern, FlagPattern({cid for cid, _ in hits}, 0, 1, files)


def _skill_globs(doc: SkillDoc) -> set[str]:
    """The file globs the skill's grep steps search (the languages it knows)."""
    globs: set[str] = set()
    for step in plan(doc):
        if step.command and tool_of(step.command) == "grep":
            parsed = parse_grep(_argv(step.command)[1:])
            if not isinstance(parsed, str):
                globs.update(op for op in parsed.operands if _GLOB.match(op))
    return globs


def _fn_patterns(failing: Sequence[CaseMaterial], sources: Sequence[str]) -> dict[str, FlagPattern]:
    """grep patterns from the calls in failing positive cases → (cases, class, tainted).

    Calls the skill lists as sources of user input (``r.FormValue(``) are traced, not flagged.
    """
    found: dict[str, FlagPattern] = {}
    for case in failing:
        defined = _definitions(case)
        for line in case.code():
            for match in _CHAIN.finditer(line.text):
                parts = _SEP.split(match.group(1))
                if parts[-1] in defined or any(parts[-1] + "(" in src for src in sources):
                    continue
                qualified = _QUALIFIED.search(match.group(1))
                forms = [(parts[-1] + "(", _name_class(parts[-1]))]
                if qualified and qualified.group(1) and qualified.group(2) not in defined:
                    forms.append((qualified.group(0) + "(", 1))
                rest = line.text[match.start() :]
                for form, cls in forms:
                    base = _ere(form)
                    variants = [(base, 0)] + [
                        (f"{base}.*{m}", 1) for m in _TAINT if re.search(f"{base}.*{m}", rest)
                    ]
                    for pattern, tainted in variants:
                        info = found.setdefault(pattern, FlagPattern(set(), cls, tainted, set()))
                        info.cases.add(case.case_id)
                        info.files.add(_operand(line.path))
    return found


def _operand(path: str) -> str:
    """How a step names a file like ``path``: its suffix glob, the way the demo's own steps do
    (the task may name a path the agent cannot open), else the file under audit."""
    name = path.rsplit("/", 1)[-1]
    if "/" in path or "." not in name.strip("."):
        return "<file>"
    return "*." + name.rsplit(".", 1)[1]


def _name_class(name: str) -> int:
    """How telling a bare call name is: an API-shaped name (camelCase, snake_case) names one
    thing; a long plain word is vaguer; a short one ("get", "load") needs its qualifier."""
    if re.search(r"[a-z][A-Z]|_", name.strip("_$")):
        return 0
    return 1 if len(name) >= MIN_BARE_NAME else 2


def _tokens(text: str) -> set[str]:
    """Tokens of a code line a Pitfalls item could name."""
    found: set[str] = set()
    for match in _CHAIN.finditer(text):
        chain = match.group(1)
        found.add(chain + "(")
        found.add(_SEP.split(chain)[-1] + "(")
    for match in _NAME.finditer(text):
        name = match.group(0)
        found.add(name)
        found.update(part for part in _SEP.split(name))
    found.update(m.group(0) for m in _ASSIGN.finditer(text))
    found.update(m.group(0) for m in _PUNCT.finditer(text))
    return {t for t in found if len(t.strip("($")) >= 3 and "`" not in t}


def _token_class(token: str) -> int:
    """Calls and keyword arguments (``basename(``, ``usedforsecurity=False``) name a guard
    best; then API-shaped names (dotted, snake, camel), plain words, bare punctuation."""
    if not re.search(r"[A-Za-z]", token):
        return 3
    if token.endswith("(") or re.search(r"\w=\w", token):
        return 0
    if re.search(r"[._]|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]", token):
        return 1
    return 2


def _covers(
    ranked: Sequence[str], hit: dict[str, set[str]], wanted: set[str], limit: int
) -> Iterator[tuple[str, ...]]:
    """Greedy covers of the failing cases, each starting one rank lower than the last."""
    seen: set[tuple[str, ...]] = set()
    for start in range(len(ranked)):
        chosen: list[str] = []
        covered: set[str] = set()
        for item in ranked[start:]:
            if len(chosen) == limit:
                break
            if hit[item] - covered:
                chosen.append(item)
                covered |= hit[item]
        key = tuple(chosen)
        if chosen and key not in seen and (not wanted or covered & wanted):
            seen.add(key)
            yield key


def _flag_matchers(doc: SkillDoc) -> list[GrepMatcher]:
    matchers: list[GrepMatcher] = []
    for step in plan(doc):
        if not step.flags or step.command is None or tool_of(step.command) != "grep":
            continue
        matcher = grep_matcher(_argv(step.command)[1:])
        if matcher is not None:
            matchers.append(matcher)
    return matchers


def _argv(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _unloop(doc: SkillDoc, target: Target) -> Iterator[Candidate]:
    """A "repeat until no new matches" step loops on a file that always matches: run it once."""
    for step in doc.steps:
        if not _LOOPS.search(step.text):
            continue
        for index in range(step.line - 1, len(doc.lines)):
            line = doc.lines[index].text
            if _LOOP_CLAUSE.search(line):
                fixed = _LOOP_CLAUSE.sub(" once", line, count=1)
                yield Candidate(
                    _splice(doc, index, index + 1, [fixed]),
                    target.case_ids,
                    f"step {step.number} runs its command once instead of looping",
                )
                break
            if index > step.line - 1 and _NUMBER.match(line):
                break


def _thorough(doc: SkillDoc, target: Target) -> Iterator[Candidate]:
    """The agent concluded at its first hit and skipped the Pitfalls: ask for every step."""
    commands = [s for s in plan(doc) if s.command]
    if not commands or _ALL_STEPS.search(doc.render()):
        return
    item = (
        "The first hit is not yet the verdict: run all steps before you conclude, up to "
        f"`{commands[-1].command}`."
    )
    text = _with_pitfalls(doc, [item])
    if text is not None:
        yield Candidate(text, target.case_ids, "run every step before concluding")


def _widen_globs(doc: SkillDoc, target: Target, material: Material) -> Iterator[Candidate]:
    """Flag steps skipped because their globs miss the failing cases' languages get them."""
    suffixes = sorted(
        {
            "*." + ln.path.rsplit(".", 1)[1]
            for cid in target.case_ids
            if cid in material.cases
            for ln in material.cases[cid].lines
            if "." in ln.path and "/" not in ln.path
        }
    )
    if not suffixes:
        return
    edited = doc
    changed = False
    for step in plan(edited):
        if not step.flags or step.command is None or tool_of(step.command) != "grep":
            continue
        parsed = parse_grep(_argv(step.command)[1:])
        if isinstance(parsed, str) or not parsed.operands:
            continue
        if not all(_GLOB.match(op) for op in parsed.operands):
            continue
        missing = [s for s in suffixes if s not in parsed.operands]
        if not missing:
            continue
        index = next(s.line for s in edited.steps if s.number == step.number) - 1
        line = edited.lines[index].text
        span = f"`{step.command}`"
        if span not in line:
            continue
        wider = line.replace(span, f"`{step.command} {' '.join(missing)}`", 1)
        edited = SkillDoc.parse_lenient(_splice(edited, index, index + 1, [wider]))[0]
        changed = True
    if changed:
        yield Candidate(edited.render(), target.case_ids, f"flag steps also search {suffixes}")
