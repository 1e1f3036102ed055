"""The offline proposer: a deterministic, network-free patch writer for the demo and for CI.

It does what a careful engineer does with the feedback split: look at what separates the cases
the skill gets wrong from the ones it gets right, and write that difference down as one concrete
line in the agent's own vocabulary (the demo agent runs backticked ``grep``/``read``/``list``
commands of numbered steps and honours Pitfalls items saying a backticked pattern is "not a
finding"):

- missed positives (FN): the calls the input reaches on lines of the failing positive cases
  (``pickle.loads(data``, ``Sprintf(`` with ``%s`` after it), or a source of user input the
  skill names handed straight to a call (``curl_init($_GET…``), become a new "Flag …" step with a
  ``grep -nE`` over the languages they occur in; a pattern that also hits a few negative lines
  brings the Pitfalls items that rule those lines out. Only cases no flag step finds yet are
  mined: a missed positive a step already finds failed by a slip of the agent, not a gap;
- false alarms (FP): tokens on the falsely flagged lines of negative cases that no positive case
  contains (``SafeLoader``, ``basename(`` …) become Pitfalls items "… — not a finding";
- flow anomalies: a "repeat until" step that loops is made to run once; a skill whose agent
  concludes at the first hit gets "run all steps before you conclude"; a skill the task never
  loaded gets the task's words in its description; flag steps whose file globs miss the failing
  cases' languages get those globs.

The mining lives in ``mining.py``, the line edits in ``edits.py``.
Candidates are generated in a fixed order (ties broken by a hash of the seed), boldest first: the
flag step covering the most failures, with Pitfalls guards for the negatives it would also hit.
Every one goes through the same filters as a model's diff, and the first that passes is the
proposal; a diff on the taboo list is refused there, so the next candidate is tried instead of
repeating a failure. The root cause of the last rejected patch is tried after every other
cause (:func:`ordered_targets`), so a round after a rejection runs a new experiment rather than a
near-copy of the last one. A rejection also narrows the search: the feedback cases an earlier
rejected patch broke (its taboo reason names them) are *fragile* — a Pitfalls guard did not keep
them passing — so a new flag pattern may no longer touch them at all.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from engine.core.config import LimitsConfig
from engine.core.errors import FormatError
from engine.core.skill import SkillDoc
from engine.core.store import unified_diff
from engine.core.taboo import TabooEntry
from engine.core.workspace import Workspace
from engine.evaluation.demo.agent import DiscardRule, discard_rules, plan, ruled_out
from engine.evaluation.demo.tools import parse_grep, tool_of
from engine.evaluation.patches.edits import NUMBER, splice, with_pitfalls, with_step
from engine.evaluation.patches.material import CaseMaterial, CodeLine, GrepMatcher, Material, gather
from engine.evaluation.patches.mining import (
    GLOB,
    analogies,
    construct,
    flag_matchers,
    fn_patterns,
    greedy_covers,
    grep_command,
    line_tokens,
    nesting,
    skill_globs,
    source_pattern,
    split_command,
    stems,
    task_words,
    token_class,
)
from engine.evaluation.patches.proposer import (
    NO_VALID_PATCH,
    PatchTarget,
    Proposal,
    ProposalContext,
    summary_of,
)
from engine.evaluation.patches.signature import split_taboo_rule
from engine.evaluation.patches.textrules import TextRules, default_rules, load_text_rules

MAX_PATTERNS = 3  # grep alternatives one new step may add
MAX_PITFALLS = 3  # Pitfalls items one patch may add
MAX_CANDIDATES = 24  # candidates tried per root cause
LOOP_RULES = ("tool_loop", "budget_exhaustion")
HASTE_RULES = ("premature_conclusion",)
GLOB_RULES = ("progress_mismatch",)
TRIGGER_RULES = ("skill_not_loaded",)
MAX_GUARDS = 2  # exceptions a new flag pattern may bring along
MIN_FALLBACK_CASES = 2  # a root cause not worth a patch by itself is tried from this many cases
_LOOP_CLAUSE = re.compile(r",?\s*(?:and\s+)?\brepeat\b[^.\n`]*?\buntil\b[^.\n`]*", re.IGNORECASE)
_LOOPS = re.compile(r"\brepeat\b[^.\n]*\buntil\b", re.IGNORECASE)
_ALL_STEPS = re.compile(r"\b(every|all)\s+(the\s+)?steps?\b[^.\n]*\bbefore\b", re.IGNORECASE)


@dataclass(frozen=True)
class DraftPatch:
    text: str  # the patched SKILL.md
    case_ids: tuple[str, ...]  # failing cases it should fix
    how: str


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
        fragile = broken_before(ctx.taboo_entries, material)
        doc, _ = SkillDoc.parse_lenient(ctx.skill_text)
        tried = 0
        last = "no candidate found"
        for target in ordered_targets(ctx):
            candidates = self._candidates(doc, target, material, fragile)
            for count, candidate in enumerate(candidates):
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

    def _candidates(
        self, doc: SkillDoc, target: PatchTarget, material: Material, fragile: frozenset[str]
    ) -> Iterator[DraftPatch]:
        if target.rule_id in LOOP_RULES:
            yield from _unloop(doc, target)
        if target.rule_id in HASTE_RULES:
            yield from _thorough(doc, target)
        if target.rule_id in TRIGGER_RULES:
            yield from self._triggers(doc, target, material)
        if target.direction == "FN":
            yield from self._flag_steps(doc, target, material, fragile)
            if target.rule_id in GLOB_RULES:
                yield from _widen_globs(doc, target, material)
        elif target.direction == "FP":
            yield from self._pitfalls(doc, target, material)

    def _tie(self, token: str) -> str:
        return hashlib.sha256(f"{self.seed}\0{token}".encode()).hexdigest()

    # -- FN: a new flag step --------------------------------------------------------------------

    def _flag_steps(
        self,
        doc: SkillDoc,
        target: PatchTarget,
        material: Material,
        fragile: frozenset[str] = frozenset(),
    ) -> Iterator[DraftPatch]:
        rules = discard_rules(doc)
        matchers = flag_matchers(doc)
        failing = [
            c for c in material.failing("FN", target.case_ids) if not found(c, matchers, rules)
        ]
        if not failing:
            return
        negatives = [
            (c.case_id, ln)
            for c in material.labelled(material.negative)
            for ln in c.lines
            if not ruled_out(ln.text, rules)
        ]
        positives = [ln.text for c in material.labelled(material.positive) for ln in c.lines]
        wanted = set(target.case_ids) & {c.case_id for c in failing}
        sources = [src for step in plan(doc) if not step.flags for src in step.sources]
        covers = fn_patterns(failing, sources)
        for pattern, info in analogies(doc, failing, [ln.text for _, ln in negatives]).items():
            covers.setdefault(pattern, info)
        general = source_pattern(sources, failing, skill_globs(doc))
        if general is not None:
            covers.setdefault(general[0], general[1])
        ranked: list[tuple[tuple[int, int, int, int, int, int, str], str]] = []
        guards: dict[str, tuple[str, ...]] = {}
        guarded: dict[str, set[str]] = {}  # exception token → the negative cases it spares
        searched = "\n".join(m.regex.pattern for m in matchers)
        for pattern, info in covers.items():
            if pattern in searched:
                continue  # a step already searches for it: those cases failed by chance
            try:
                regex = re.compile(pattern)
            except re.error:
                continue
            false = [(cid, ln.text) for cid, ln in negatives if regex.search(ln.text)]
            if any(cid in fragile for cid, _ in false):
                continue  # a guard did not keep this case passing before: leave it alone
            if false:
                guard = self._guards([text for _, text in false], positives, [regex])
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
        for chosen in greedy_covers(patterns, hit, wanted, MAX_PATTERNS):
            fixed = sorted(set().union(*(hit[p] for p in chosen)))
            what = f"{_families(kinds, fixed, ' and ')} calls".lstrip()
            files = " ".join(sorted(set().union(*(covers[p].files for p in chosen))))
            body = f"Flag {what} the earlier steps miss: `{grep_command(chosen, files)}`"
            text = with_step(doc, body)
            exceptions = list(dict.fromkeys(t for p in chosen for t in guards.get(p, ())))
            if text is not None and exceptions:
                if len(exceptions) > MAX_PITFALLS:
                    continue
                items = [_pitfall(t, _families(kinds, guarded[t], " and ")) for t in exceptions]
                text = with_pitfalls(SkillDoc.parse_lenient(text)[0], _heeded(doc, items))
            if text is not None:
                how = f"new flag step for {', '.join(fixed)}{_doubt(material, failing)}"
                if exceptions:
                    how += f", with Pitfalls for {', '.join(exceptions)}"
                yield DraftPatch(text, tuple(fixed), how)

    def _guards(
        self, lines: Sequence[str], positives: Sequence[str], sinks: Sequence[re.Pattern[str]]
    ) -> tuple[str, ...] | None:
        """API-looking tokens that rule out each of ``lines`` (negative cases a new pattern would
        hit) and occur in no positive case, so the exception never hides a real finding."""
        usable: dict[str, set[int]] = {}
        for index, text in enumerate(lines):
            for token in guard_tokens(text, positives, sinks):
                if token_class(token) <= 1:
                    usable.setdefault(token, set()).add(index)
        flagged = {t: all(flagged_by(t, lines[i], sinks) for i in usable[t]) for t in usable}
        ranked = sorted(
            usable,
            key=lambda t: (
                -len(usable[t]),
                flagged[t],
                token_class(t),
                -nesting(t, lines),
                self._tie(t),
            ),
        )
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

    def _triggers(
        self, doc: SkillDoc, target: PatchTarget, material: Material
    ) -> Iterator[DraftPatch]:
        """Words of the tasks that did not load the skill, added to its description."""
        description = doc.description
        if not description or not doc.has_frontmatter:
            return
        have = stems(description)
        cases = [
            c
            for c in material.failing(target.direction, target.case_ids)
            if c.case_id in target.case_ids
        ]
        found: dict[str, set[str]] = {}
        for case in cases:
            for word in task_words(case.prompt):
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
            yield DraftPatch(text, tuple(fixed), f"description triggers on {said}")

    # -- FP: Pitfalls items ---------------------------------------------------------------------

    def _pitfalls(
        self,
        doc: SkillDoc,
        target: PatchTarget,
        material: Material,
        demote: Callable[[str, Sequence[str]], bool] | None = None,
    ) -> Iterator[DraftPatch]:
        """Pitfalls items for the false alarms; ``demote(token, flagged_lines)`` ranks a guard
        last among those that clear as many of them (a caller that sees fewer positives than
        the feedback split says which tokens it distrusts)."""
        matchers = flag_matchers(doc)
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
        sinks = [m.regex for m in matchers]
        for case_id, lines in remaining.items():
            shared = set.intersection(*(guard_tokens(ln.text, positives, sinks) for ln in lines))
            for token in shared:
                fixes.setdefault(token, set()).add(case_id)
        flagged = [ln.text for lines in remaining.values() for ln in lines]
        ranked = sorted(
            fixes,
            key=lambda t: (
                -len(fixes[t] & wanted),
                -len(fixes[t]),
                demote is not None and demote(t, flagged),
                token_class(t),
                -nesting(t, flagged),
                self._tie(t),
            ),
        )
        kinds = {c.case_id: c.case_type for c in material.cases.values()}
        for chosen in greedy_covers(ranked, fixes, wanted, MAX_PITFALLS):
            items = [_pitfall(t, _families(kinds, fixes[t], " and ")) for t in chosen]
            fixed = sorted(set().union(*(fixes[t] for t in chosen)))
            how = f"Pitfalls for {', '.join(fixed)}{_doubt(material, failing)}"
            heeded = _heeded(doc, items)
            text = with_pitfalls(doc, heeded)
            if text is not None and len(heeded) > len(items):
                yield DraftPatch(text, tuple(fixed), how + ", and run every step before concluding")
            text = with_pitfalls(doc, items)
            if text is not None:
                yield DraftPatch(text, tuple(fixed), how)


# -- candidate building blocks --------------------------------------------------------------------
def ordered_targets(ctx: ProposalContext) -> list[PatchTarget]:
    """The root causes to try, in order: those worth a patch, then the smaller ones of at least
    ``MIN_FALLBACK_CASES`` cases — and the root cause of the last rejected patch after all others.

    A rejected or inconclusive idea tells the next round where not to look first: its next-best
    candidate for the same cause is most often a near-copy (one pattern swapped, one guard more)
    that the gate cannot tell apart from it either, while another cause (the false alarms a
    Pitfalls item clears, the agent that concludes early) is a fresh experiment. A named target
    (``ctx.target``) is tried alone.
    """
    worth = ctx.targets()
    if ctx.target is not None:
        return worth
    ids = {t.id for t in worth}
    ordered = worth + [
        t for t in ctx.root_causes if t.id not in ids and len(t.case_ids) >= MIN_FALLBACK_CASES
    ]
    if not ctx.taboo_entries:
        return ordered
    rejected = split_taboo_rule(ctx.taboo_entries[-1].rule_id)
    return sorted(ordered, key=lambda t: (t.rule_id, t.direction) == rejected)


def broken_before(entries: Sequence[TabooEntry], material: Material) -> frozenset[str]:
    """Feedback cases named by the reasons of rejected patches ("… now fail: a, b").

    A gate names the previously passing cases a patch broke; those are the cases where a
    Pitfalls guard was not enough (the agent skipped the Pitfalls, or ran out of budget first).
    Only cases of the material can match, so nothing held out is ever learnt from.
    """
    text = "\n".join(entry.reason for entry in entries)
    if not text:
        return frozenset()
    return frozenset(
        cid
        for cid in material.cases
        if re.search(rf"(?<![\w.-]){re.escape(cid)}(?![\w.-])", text) is not None
    )


def found(case: CaseMaterial, matchers: Sequence[GrepMatcher], rules: list[DiscardRule]) -> bool:
    """Whether a flag step of the skill already finds something in ``case`` that no Pitfalls item
    rules out.

    A missed positive like that is no gap in what the skill searches for: the agent slipped on
    that run (skipped the step, misread the hit, concluded early). Mining its lines for a new
    flag pattern would pick up whatever else the file happens to call — the raw tokens that fit
    this case and nothing else — and a second step for the same sink changes nothing.
    """
    return any(not ruled_out(ln.text, rules) for m in matchers for ln in m.hits(case.lines))


def guard_tokens(text: str, positives: Sequence[str], sinks: Sequence[re.Pattern[str]]) -> set[str]:
    """Tokens of a falsely flagged line that could name its guard in a Pitfalls item.

    Only constructs (``mining.construct``): a rule on raw tokens fits the mined lines alone.
    Not one found in a positive case (the exception would hide a real finding), and not one a
    flag pattern finds by itself (``shell=True``, ``shell_exec(``): that is the sink the step
    flagged, never what makes this use of it safe.
    """
    return {
        token
        for token in line_tokens(text)
        if construct(token)
        and not any(token in p for p in positives)
        and not any(s.search(token) for s in sinks)
    }


def flagged_by(token: str, text: str, sinks: Sequence[re.Pattern[str]]) -> bool:
    """Whether every occurrence of ``token`` on ``text`` lies in what a new pattern matches.

    The call the "input handed to a call" pattern found may be the guard itself
    (``basename($_GET[…])``), but where the line has another guard that one goes first:
    ``Buffer.from(`` of ``JSON.parse(Buffer.from(req.body…`` only decodes, and as a guard it
    would also clear the same call in a vulnerable file (``unserialize(Buffer.from(req.cookies…``).
    """
    spans = [m.span() for s in sinks for m in s.finditer(text)]
    starts = [m.start() for m in re.finditer(re.escape(token), text)]
    return bool(starts) and all(
        any(a < end and a + len(token) > begin for begin, end in spans) for a in starts
    )


def _families(kinds: dict[str, str | None], case_ids: Iterable[str], joint: str) -> str:
    return joint.join(sorted({k for k in (kinds.get(c) for c in case_ids) if k}))


def _pitfall(token: str, families: str) -> str:
    of = f" of {families}" if families else ""
    return f"A hit on a line that also has `{token}` is the guarded form{of} — not a finding."


def _doubt(material: Material, failing: Sequence[CaseMaterial]) -> str:
    if not material.suspected(failing):
        return ""
    return " (every such failure is a GT-suspected case)"


def _line_key(line: CodeLine) -> tuple[str, int]:
    return (line.path, line.number)


def _unloop(doc: SkillDoc, target: PatchTarget) -> Iterator[DraftPatch]:
    """A "repeat until no new matches" step loops on a file that always matches: run it once."""
    for step in doc.steps:
        if not _LOOPS.search(step.text):
            continue
        for index in range(step.line - 1, len(doc.lines)):
            line = doc.lines[index].text
            if _LOOP_CLAUSE.search(line):
                fixed = _LOOP_CLAUSE.sub(" once", line, count=1)
                yield DraftPatch(
                    splice(doc, index, index + 1, [fixed]),
                    target.case_ids,
                    f"step {step.number} runs its command once instead of looping",
                )
                break
            if index > step.line - 1 and NUMBER.match(line):
                break


def _heeded(doc: SkillDoc, items: list[str]) -> list[str]:
    """Pitfalls items, with the every-step item when the skill has none.

    An agent that concludes at its first hit reviews its findings without the Pitfalls, so a
    "not a finding" item is heeded only by an agent that runs on to the confirm step; the
    every-step item also makes every other step steadier (the demo agent, like a model, slips
    less on a skill that says plainly what to do).
    """
    item = _every_step_item(doc)
    return [*items, item] if item else items


def _every_step_item(doc: SkillDoc) -> str | None:
    """The Pitfalls item that keeps the agent going to the last step, unless the skill has one."""
    commands = [s for s in plan(doc) if s.command]
    if not commands or _ALL_STEPS.search(doc.render()):
        return None
    return (
        "The first hit is not yet the verdict: run all steps before you conclude, up to "
        f"`{commands[-1].command}`."
    )


def _thorough(doc: SkillDoc, target: PatchTarget) -> Iterator[DraftPatch]:
    """The agent concluded at its first hit and skipped the Pitfalls: ask for every step."""
    item = _every_step_item(doc)
    text = with_pitfalls(doc, [item]) if item else None
    if text is not None:
        yield DraftPatch(text, target.case_ids, "run every step before concluding")


def _widen_globs(doc: SkillDoc, target: PatchTarget, material: Material) -> Iterator[DraftPatch]:
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
        parsed = parse_grep(split_command(step.command)[1:])
        if isinstance(parsed, str) or not parsed.operands:
            continue
        if not all(GLOB.match(op) for op in parsed.operands):
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
        edited = SkillDoc.parse_lenient(splice(edited, index, index + 1, [wider]))[0]
        changed = True
    if changed:
        yield DraftPatch(edited.render(), target.case_ids, f"flag steps also search {suffixes}")
