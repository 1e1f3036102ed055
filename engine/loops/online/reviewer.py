"""The reviewer: turns a new session segment into a create / update / delete decision.

The model only *reads* the trace and proposes; it writes no file (DESIGN principle 1). It sees
the new lines of the session, the existing skills (name, description, the start of the body) and
the task outcome when one is known, and answers with one JSON object that
:func:`engine.loops.online.spec.parse_decision` checks strictly. Everything it is shown is redacted
first — vault values and key-shaped strings (``engine.core.vault``) plus the assignments a
transcript is full of (``API_TOKEN=…``, ``Authorization: Bearer …``, ``--password …``) — and only
then is each message cut to a budget, keeping its head and tail, where the command and the error
usually are (cutting first would leave half a secret no pattern recognises).

The offline reviewer is a deterministic stand-in for the demo: it adds the errors the agent
recovered from and the user's corrections as pitfalls of the skill the session concerns (the one
it loaded or read, else the one the user's words name: :func:`library.concerned_skill`), or, when
none does, drafts a new one from the commands the agent ran. A correction is kept as the rule the
user stated, without its "No, that's wrong —" lead-in. Its answer goes through the same parser as
a model's.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.core.config import Config
from engine.core.errors import SkillsmithError
from engine.core.skill import SkillDoc
from engine.core.transcripts import Message
from engine.core.vault import MASK, redact
from engine.core.workspace import Workspace
from engine.evaluation.gates.candidate import TaskOutcome
from engine.evaluation.llm import LLM, make_llm
from engine.loops.online.library import ExistingSkill, concerned_skill
from engine.loops.online.policy import looks_like_correction, looks_like_error
from engine.loops.online.spec import (
    ReviewDecision,
    ReviewerError,
    SkillSpec,
    SkillUpdate,
    parse_decision,
    spec_of,
)

_SENSITIVE = r"(?:token|secret|password|passwd|api[_-]?key|access[_-]?key|private[_-]?key)"
_BEARER = re.compile(r"(?i)(authorization\s*:\s*bearer\s+|\bbearer\s+)([A-Za-z0-9._~+/=-]{8,})")
_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Za-z_][A-Za-z0-9_-]*" + _SENSITIVE + r")([\"']?\s*[=:]\s*)"
    r"(\"[^\"]*\"|'[^']*'|[^\s,;}\]]+)"
)
_FLAG = re.compile(r"(?i)(--(?:api-key|token|secret|password)(?:\s+|=))(\"[^\"]*\"|'[^']*'|\S+)")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")

SYSTEM_PROMPT = """\
You review one finished agent session and decide whether it holds a reusable method worth \
keeping as a skill: a SKILL.md the agent loads for tasks of the same kind later.

Scope: you manage only the skill library. Facts about the user, preferences and one-off results \
are not skills.

Rules:
- Keep only non-trivial, reusable workflows: tool order, how parameters are built, how \
completion is checked, how failures are handled. Leave out task-only progress, credentials, \
absolute paths and numbers that belong to this one run.
- Read the existing skills first. Prefer updating the skill the session used, then an existing \
skill of the same kind, over creating a new one. A difference in quantity (how many cities, \
files, items) is never a reason for a new skill: update the generic one.
- Names are generic: "Weather Report - Multi-City", never "Weather Report - 3 Cities" or a list \
of entities. Write "for each city" in the steps instead.
- An update uses the exact name of an existing skill and gives its complete new content.
- Delete only a skill the session shows to be obsolete or harmful, by its exact name.
- Never put one name in more than one list.
- Describe only steps the session actually executed. When a session outcome is given it is the \
ground truth: from a failed task keep at most a narrowly scoped lesson in the pitfalls.
- When nothing is worth saving, give a skip_reason and leave the lists empty.

Answer with exactly one JSON object of this shape and nothing else:
{"skip_reason": "string, empty unless nothing is saved",
 "skills": [{"name": "", "description": "", "when_to_use": "", "steps": [""], "pitfalls": [""]}],
 "updates": [{"name": "exact existing name", "new_spec": {"name": "", "description": "", \
"when_to_use": "", "steps": [""], "pitfalls": [""]}, "reason": ""}],
 "deletions": ["exact existing name"]}
Every skill needs a name, description, when_to_use and at least two steps."""


def redact_for_review(text: str) -> str:
    """``text`` with credentials masked: vault values, key shapes and sensitive assignments."""
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    text = _ASSIGNMENT.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _FLAG.sub(lambda m: m.group(1) + MASK, text)
    return redact(_JWT.sub(MASK, text))


def redacted_message(message: Message) -> Message:
    """``message`` with its text and every call's arguments passed through
    :func:`redact_for_review`: the pipeline reviews (and quotes in candidates and logs) only
    this form of a transcript."""
    calls = tuple(dataclasses.replace(c, args=redact_for_review(c.args)) for c in message.calls)
    return dataclasses.replace(message, text=redact_for_review(message.text), calls=calls)


def truncate(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, keeping its head (3/4) and tail; ≤ 0: no limit."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = max(16, limit - head)
    omitted = len(text) - head - tail
    return f"{text[:head]}\n... [{omitted} chars omitted] ...\n{text[-tail:]}"


@dataclass(frozen=True)
class ReviewRequest:
    """One segment to review: lines ``first_line``–``last_line`` of ``source``."""

    source: str
    messages: Sequence[Message]
    existing: Sequence[ExistingSkill]
    first_line: int
    last_line: int
    outcome: TaskOutcome | None = None


class Reviewer(Protocol):
    name: str

    def review(self, request: ReviewRequest) -> ReviewDecision:
        """The decision for ``request``; :class:`ReviewerError` when none could be had."""
        ...


def build_prompt(request: ReviewRequest, message_max_chars: int = 4000) -> str:
    """The user prompt: session, outcome, existing skills, the new lines — all redacted."""
    out = [
        "## Session",
        f"- source: {request.source}",
        f"- lines: {request.first_line}-{request.last_line}",
    ]
    concerned = concerned_skill(request.messages, request.existing)
    if concerned is not None:  # the skill a lesson of this session belongs to, unless it says
        out.append(f"- skill it used or talks about: {concerned.name}")
    out.append("")
    if request.outcome is not None:
        o = request.outcome
        out.append("## Session outcome")
        out.append(f"- status: {o.status or 'unknown'}")
        if o.score is not None:
            out.append(f"- score: {o.score:.4f}")
        if o.evaluator:
            out.append(f"- evaluator: {o.evaluator}")
        if o.notes:
            out.append(f"- notes: {o.notes}")
        out.append("")
    if request.existing:
        out.append("## Existing skills")
        out.append(
            "Each entry is `name: description` and the start of its body. If your method "
            "matches one except for quantities or named entities, update it instead of "
            "creating a new skill."
        )
        out.append("")
        for skill in request.existing:
            head = f"- {skill.name}" + (f": {skill.description}" if skill.description else "")
            out.append(head)
            if skill.excerpt:
                out.append("  body excerpt:")
                out.extend(f"  | {line}" for line in skill.excerpt.splitlines())
        out.append("")
    out.append("## Transcript (new lines only)")
    out.append("")
    for message in request.messages:
        title = f"### {message.role}" + (f" ({message.tool_name})" if message.tool_name else "")
        if message.is_error:
            title += " [error]"
        out.append(title)
        # redacted before it is cut: a secret straddling the cut would no longer match whole
        text = truncate(redact_for_review(message.text.strip()), message_max_chars)
        out.append(text or "(no text)")
        if message.calls:
            out.append("Tool calls:")
            out.extend(
                f"- {c.name}"
                + (
                    f" args={truncate(redact_for_review(c.args), message_max_chars)}"
                    if c.args
                    else ""
                )
                for c in message.calls
            )
        out.append("")
    return redact_for_review("\n".join(out))


class ModelReviewer:
    """A model (``models.reviewer``) reads the prompt and answers with the decision JSON."""

    def __init__(
        self, llm: LLM, *, message_max_chars: int = 4000, max_tokens: int | None = None
    ) -> None:
        self.llm = llm
        self.name = f"model:{llm.model}"
        self.message_max_chars = message_max_chars
        self.max_tokens = max_tokens

    def review(self, request: ReviewRequest) -> ReviewDecision:
        prompt = build_prompt(request, self.message_max_chars)
        try:
            completion = self.llm.complete(
                SYSTEM_PROMPT, [{"role": "user", "content": prompt}], max_tokens=self.max_tokens
            )
        except ReviewerError:
            raise
        except SkillsmithError as exc:
            raise ReviewerError(f"{request.source}: reviewer model failed: {exc}") from None
        return parse_decision(completion.text, request.source)


# -- the offline reviewer ------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")
_SKIP_WORDS = frozenset(
    re.findall(
        r"\w+",
        """the and for with from that this are was were have has please can could would should
        into your you our all any each file files code task then end one use using""",
    )
)
MAX_DRAFT_STEPS = 8
# The words a correction opens with before it says what is right: "No, that's wrong —".
_LEAD_IN = re.compile(
    r"^(?:(?:no|nope|wrong|actually|not quite|that'?s (?:wrong|incorrect|not right)|"
    r"that is (?:wrong|incorrect|not right)|you'?re wrong)\b[\s,.:;!\u2014\u2013-]*)+",
    re.IGNORECASE,
)


def _first_line(text: str, limit: int) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _lessons(messages: Sequence[Message]) -> list[str]:
    """Pitfalls a session teaches: each recovered tool error, each user correction."""
    lessons: list[str] = []
    last_call: dict[str, str] = {}
    pending: list[str] = []
    for message in messages:
        for call in message.calls:
            last_call[call.name] = call.args
        if message.role == "tool" and looks_like_error(message):
            args = last_call.get(message.tool_name or "", "")
            what = f"`{_first_line(args, 80)}`" if args else f"the {message.tool_name} call"
            error = _first_line(message.text, 100).replace("`", "'") or "an error"
            pending.append(
                f'{what} failed with "{error}": fix the cause before running it again; '
                "an unchanged retry fails the same way."
            )
        elif message.role == "assistant" and pending:
            lessons.extend(pending)
            pending = []
        elif message.role == "user" and looks_like_correction(message.text):
            lessons.append(correction_rule(message.text))
    return list(dict.fromkeys(lessons))


def correction_rule(text: str) -> str:
    """The rule a user's correction states, as a pitfall: the lead-in dropped, one sentence."""
    said = _first_line(text, 200)
    rule = _LEAD_IN.sub("", said).strip() or said
    rule = rule[0].upper() + rule[1:]
    return f"{rule.rstrip('.!')} (a user corrected the agent on this)."


class OfflineReviewer:
    """A deterministic reviewer: pitfalls from recovered errors, drafts from repeated work."""

    name = "offline"

    def review(self, request: ReviewRequest) -> ReviewDecision:
        used = concerned_skill(request.messages, request.existing)
        lessons = _lessons(request.messages)
        wire: dict[str, object]
        if used is not None:
            wire = self._update(used, lessons)
        else:
            wire = self._draft(request.messages, lessons)
        return parse_decision(json.dumps(wire), request.source)

    @staticmethod
    def _update(skill: ExistingSkill, lessons: list[str]) -> dict[str, object]:
        spec = spec_of(SkillDoc.parse_lenient(skill.text)[0], skill.name)
        new = [p for p in lessons if p not in spec.pitfalls]
        if not new or len(spec.steps) < 1 or not spec.description or not spec.when_to_use:
            return {"skip_reason": f"nothing new for {skill.name} in this segment"}
        pitfalls = (*spec.pitfalls, *new)
        updated = SkillSpec(spec.name, spec.description, spec.when_to_use, spec.steps, pitfalls)
        change = SkillUpdate(skill.name, updated, f"{len(new)} pitfall(s) learnt from a session")
        return ReviewDecision(updates=(change,)).to_dict()

    @staticmethod
    def _draft(messages: Sequence[Message], lessons: list[str]) -> dict[str, object]:
        prompt = next((m.text for m in messages if m.role == "user" and m.text.strip()), "")
        commands = list(dict.fromkeys(c.args.strip() for m in messages for c in m.calls))
        commands = [c for c in commands if c and "`" not in c][:MAX_DRAFT_STEPS]
        words = [w for w in _WORD.findall(prompt) if w.lower() not in _SKIP_WORDS]
        if len(commands) < 2 or len(words) < 2:
            return {
                "skip_reason": "no skill loaded, read or named, and too little repeated work "
                "to draft one"
            }
        title = " ".join(w.capitalize() for w in words[:3]) + " Workflow"
        task = _first_line(prompt, 160)
        spec = SkillSpec(
            name=title,
            description=f"Steps that worked for tasks like: {task}",
            when_to_use=f"Use for a task like: {task}",
            steps=tuple(f"Run `{c}` and check its output." for c in commands),
            pitfalls=tuple(lessons),
        )
        return ReviewDecision(creates=(spec,)).to_dict()


def make_reviewer(ws: Workspace, cfg: Config | None = None) -> Reviewer:
    """The reviewer ``models.reviewer`` configures: the offline one, or a model."""
    cfg = cfg or ws.load_config()
    if cfg.models.reviewer.provider == "offline":
        return OfflineReviewer()
    llm = make_llm(cfg.models.reviewer, ws)
    return ModelReviewer(llm, message_max_chars=cfg.online.message_max_chars)
