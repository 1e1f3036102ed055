"""The bundled demo agent: an offline, deterministic auditor that does what its SKILL.md says.

Run as ``python -m engine.evaluation.demo.agent`` in a run directory (PROMPT.md, the case files,
skills/).
It loads the skill whose description matches the task, runs every backticked ``grep`` / ``read``
/ ``list`` command of the numbered steps for real (tools.py), treats the hits of steps that
*flag* something as findings, drops the findings a Pitfalls line rules out ("… `pattern` … not
a finding") and answers ``VERDICT: vulnerable`` iff a finding survives. The session is printed
as JSONL (the brief's session format), so the answer depends on the skill text: more families
covered and sharper near-miss pitfalls score better.

It also has the working habits of a real agent, each triggered by the case and the skill text
(and, for one of them, the run index), so every diagnosis rule has something to find:

- a task that does not match the skill's description never loads it; the agent guesses;
- a short snippet quoted in the prompt is eyeballed with no tool call at all;
- a step whose file globs do not match the case's language is skipped but claimed as done;
- a source like ``getParameter(`` put into ``grep -E`` is a bad regex; the call is retried as is;
- "repeat until no new matches" re-runs the same grep while it still matches;
- after the first finding it sometimes concludes at once (unless the skill says to finish
  every step first), skipping the Pitfalls review;
- it has a budget of tool calls (``SKILLSMITH_MAX_TURNS``) and stops when it runs out.

Like Claude Code, which loads the ``AGENTS.md`` of its working directory (when no CLAUDE.md is
there) into every session, it reads the ``AGENTS.md`` the runner puts in its run directory as
standing instructions for every skill it follows, in the same vocabulary as a skill: a line
telling it to finish every step before concluding stops the early conclusions, and a line saying
a backticked pattern is "not a finding" clears those hits like a Pitfalls item. Everything else
in it (answer format, tone) the demo agent already does or cannot act on.

With ``SKILLSMITH_NOISE`` above 0 it also slips from run to run like a sampling model, seeded by
``SKILLSMITH_SEED`` (engine.evaluation.demo.noise): the level is ``agent.noise`` of skillsmith.yaml.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from engine.core.skill import SkillDoc
from engine.evaluation.demo.noise import Slips, clarity
from engine.evaluation.demo.tools import Hit, RunDir, ToolResult, clip, tool_of

ENV_PROMPT = "SKILLSMITH_PROMPT_FILE"
ENV_SKILLS = "SKILLSMITH_SKILLS_DIR"
ENV_RUN_INDEX = "SKILLSMITH_RUN_INDEX"
ENV_MAX_TURNS = "SKILLSMITH_MAX_TURNS"
ENV_SEED = "SKILLSMITH_SEED"
ENV_NOISE = "SKILLSMITH_NOISE"
INSTRUCTIONS_FILE = "AGENTS.md"
DEFAULT_MAX_CALLS = 20
LOOP_CAP = 8  # identical calls a "repeat until no new matches" step makes at most
EYEBALL_MAX_LINES = 8  # a quoted snippet this short is judged without tools
PREMATURE_ONE_IN = 3  # runs that conclude at the first finding, unless the skill forbids it
SYSTEM_CHARS = 1200  # the agent's own instructions, counted into the input tokens
SHALLOW_TELLS = ("eval(", "os.system(", "exec(")
DEFAULT_LABELS = ("vulnerable", "safe")

_SPAN = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_LABEL = re.compile(r"VERDICT:\s*([A-Za-z][\w-]*)")
_ONE_OF = re.compile(r"\bone of:\s*([\w-]+(?:\s*,\s*[\w-]+)+)")
_LABEL_WORD = re.compile(r"[\w-]+")
_ANSWER_FORMAT = re.compile(r"VERDICT|STEPS DONE|answer\.txt")
_WORD = re.compile(r"[a-z0-9]+")
_FLAGS = re.compile(r"\b(flag|flags|finding|findings)\b", re.IGNORECASE)
_LOOP = re.compile(r"\brepeat\b[^.\n]*\buntil\b", re.IGNORECASE)
_DISCARD = re.compile(
    r"\bnot (a )?(finding|vulnerab\w*)\b|\bno finding\b|\bis safe\b", re.IGNORECASE
)
_THOROUGH = re.compile(
    r"\b(every|all)\s+(the\s+)?(remaining\s+)?steps?\b[^.\n]*\b(before|even (after|if|when))\b"
    r"|\b(do not|don't|never)\s+(stop|conclude|skip)\b",
    re.IGNORECASE,
)
_CONFIRMS = re.compile(r"\b(drop|discard)\b[^\n]*\bpitfalls?\b", re.IGNORECASE)
_ALTERNATIVE = re.compile(r"\s*(,|/|or|,\s*or)\s*", re.IGNORECASE)
_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        """about also asked code could does each file files from have here into like must only
        other should some such than that their them then there these they this those used using
        what when which whether will with would your""",
    )
)


class BudgetExhausted(Exception):
    """The tool-call budget ran out before the agent finished its steps."""


@dataclass(frozen=True)
class Skill:
    name: str
    text: str
    doc: SkillDoc


@dataclass(frozen=True)
class PlannedStep:
    """One numbered step as the agent understands it."""

    number: int
    text: str
    command: str | None  # the first backticked grep/read/list command
    sources: tuple[str, ...]  # the other backticked spans (what ``<source>`` stands for)
    flags: bool  # its hits are findings
    loops: bool  # "repeat until …"

    @property
    def title(self) -> str:
        return self.text.split("`", 1)[0].strip().rstrip(":,") or f"Step {self.number}"


@dataclass(frozen=True)
class DemoFinding:
    hit: Hit
    step: int


class SessionWriter:
    """Writes the session JSONL and keeps the books: call ids, the budget, token estimates."""

    def __init__(self, out: TextIO, max_calls: int) -> None:
        self.out = out
        self.max_calls = max_calls
        self.calls = 0
        self.context = SYSTEM_CHARS
        self.tokens_in = 0
        self.tokens_out = 0
        self.started = time.monotonic()

    def _emit(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.out.flush()

    def user(self, text: str) -> None:
        self.context += len(text)
        self._emit({"type": "user", "content": text})

    def call(self, name: str, args: str, note: str, run: Callable[[], ToolResult]) -> ToolResult:
        """One assistant turn with one tool call, then its result."""
        if self.calls >= self.max_calls:
            raise BudgetExhausted
        self.calls += 1
        call_id = f"t{self.calls}"
        self._turn(note + args)
        self._emit(
            {
                "type": "assistant",
                "content": note,
                "tool_calls": [{"id": call_id, "name": name, "args": args}],
            }
        )
        outcome = run()
        result = clip(outcome.output)
        self.context += len(result)
        self._emit(
            {
                "type": "tool",
                "tool_name": name,
                "tool_call_id": call_id,
                "result": result,
                "is_error": outcome.is_error,
            }
        )
        return outcome

    def _turn(self, written: str) -> None:
        self.tokens_in += self.context // 4
        self.tokens_out += max(1, len(written) // 4)
        self.context += len(written)

    def finish(self, answer: str, *, reason: str | None) -> None:
        self._turn(answer)
        self._emit({"type": "assistant", "content": answer})
        result: dict[str, Any] = {
            "type": "result",
            "tokens": {"input": self.tokens_in, "output": self.tokens_out},
            "cost_usd": 0.0,
            "duration_ms": int((time.monotonic() - self.started) * 1000),
            "is_error": reason is not None,
        }
        if reason is not None:
            result["reason"] = reason
            result["subtype"] = f"error_{reason}"
        self._emit(result)


# -- reading the task and the skills ----------------------------------------------------------


def labels_of(prompt: str) -> tuple[str, str]:
    """The positive and negative label the task names ("one of: x, y", or ``VERDICT: x``)."""
    listed = _ONE_OF.search(prompt)
    found = _LABEL_WORD.findall(listed.group(1)) if listed else _LABEL.findall(prompt)
    unique = list(dict.fromkeys(found))
    return (unique[0], unique[1]) if len(unique) >= 2 else DEFAULT_LABELS


def task_text(prompt: str) -> str:
    """The prose of the task: no code, no backticked names, no answer-format instructions."""
    lines = _FENCE.sub(" ", prompt).splitlines()
    return "\n".join(_SPAN.sub(" ", ln) for ln in lines if not _ANSWER_FORMAT.search(ln))


def _stems(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.lower()) if len(w) >= 4 and w not in _STOPWORDS}


def trigger_score(skill: Skill, prompt: str) -> int:
    """How strongly the task matches the skill: its name, or words of its description."""
    task = task_text(prompt).lower()
    named = skill.name.lower() in task or skill.name.lower().replace("-", " ") in task
    shared = _stems(skill.doc.description or "") & _stems(task)
    return len(shared) + (10 if named else 0)


def load_skills(folder: Path) -> list[Skill]:
    skills: list[Skill] = []
    for path in sorted(folder.glob("*/SKILL.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        doc, _error = SkillDoc.parse_lenient(text, path)
        skills.append(Skill(doc.name or path.parent.name, text, doc))
    return skills


def choose_skill(skills: list[Skill], prompt: str) -> Skill | None:
    """The skill to load: the best-matching one, or none when no description matches."""
    ranked = sorted(skills, key=lambda s: (-trigger_score(s, prompt), s.name))
    return ranked[0] if ranked and trigger_score(ranked[0], prompt) > 0 else None


def plan(doc: SkillDoc) -> list[PlannedStep]:
    planned: list[PlannedStep] = []
    for step in doc.steps:
        spans = _SPAN.findall(step.text)
        command = next((s for s in spans if tool_of(s)), None)
        sources = tuple(s for s in spans if s != command and not tool_of(s))
        planned.append(
            PlannedStep(
                number=step.number,
                text=step.text,
                command=command,
                sources=sources,
                flags=bool(_FLAGS.search(step.text)),
                loops=bool(_LOOP.search(step.text)),
            )
        )
    return planned


# every group must match; a group matches when any of its patterns does
DiscardRule = list[list[str]]


def discard_rules(doc: SkillDoc) -> list[DiscardRule]:
    """The Pitfalls items that say a hit is "not a finding", as patterns a hit's line must hold.

    Patterns joined by "or" are alternatives ("`shlex.quote(` or `escapeshellarg(`"); otherwise
    all are required ("`sendFile` with a `{ root:` option" needs both).
    """
    return item_rules(doc.section("pitfalls") or "")


def item_rules(text: str) -> list[DiscardRule]:
    """The "not a finding" rules of the list items of ``text`` (a Pitfalls section, AGENTS.md)."""
    rules: list[DiscardRule] = []
    for item in re.split(r"\n(?=\s*[-*+] )", text):
        if not _DISCARD.search(_SPAN.sub(" ", item)):
            continue
        parts = _SPAN.split(item)  # prose, pattern, prose, pattern, …
        rule: DiscardRule = []
        for index in range(1, len(parts), 2):
            pattern = parts[index]
            if tool_of(pattern):
                continue
            if rule and _ALTERNATIVE.fullmatch(parts[index - 1]):
                rule[-1].append(pattern)
            else:
                rule.append([pattern])
        if rule:
            rules.append(rule)
    return rules


def ruled_out(text: str, rules: list[DiscardRule]) -> bool:
    return any(all(any(p in text for p in group) for group in rule) for rule in rules)


def target_file(prompt: str, run_dir: RunDir) -> str:
    """The file under audit: the first backticked file name of the task, else the only code file."""
    spans: list[str] = _SPAN.findall(_FENCE.sub(" ", prompt))
    for span in spans:
        if " " not in span and "." in span.strip(".") and not span.startswith("VERDICT"):
            return span
    code = [
        p.name
        for p in sorted(run_dir.root.iterdir())
        if p.is_file() and not p.name.startswith(".") and p.suffix.lower() != ".md"
    ]
    return code[0] if len(code) == 1 else "<file>"


def shallow_guess(code: str, labels: tuple[str, str]) -> str:
    """What the agent answers without its skill: only the most notorious calls look wrong."""
    return labels[0] if any(tell in code for tell in SHALLOW_TELLS) else labels[1]


def _coin(seed_text: str, run_index: int, one_in: int) -> bool:
    digest = hashlib.sha256(f"{seed_text}\x00{run_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % one_in == 0


# -- the agent --------------------------------------------------------------------------------


class DemoAgent:
    def __init__(
        self,
        run_dir: RunDir,
        prompt: str,
        skills: list[Skill],
        *,
        run_index: int = 0,
        max_calls: int = DEFAULT_MAX_CALLS,
        noise: float = 0.0,
        seed: int = 0,
        instructions: str = "",
        out: TextIO = sys.stdout,
    ) -> None:
        self.dir = run_dir
        self.prompt = prompt
        self.skills = skills
        self.instructions = instructions  # the run directory's AGENTS.md
        self.run_index = run_index
        self.noise = noise
        self.seed = seed
        self.slips = Slips.of(0.0, seed, "", "", 0.0)
        self.t = SessionWriter(out, max_calls)
        self.labels = labels_of(prompt)
        self.target = target_file(prompt, run_dir)

    def run(self) -> None:
        self.t.user(self.prompt)
        skill = choose_skill(self.skills, self.prompt)
        if skill is not None:
            self.t.call(
                "Skill",
                skill.name,
                f"The task matches the {skill.name} skill; loading it.",
                lambda: ToolResult(skill.text),
            )
        snippet = next(iter(_FENCE.findall(self.prompt)), None)
        if snippet is not None and _code_lines(snippet) <= EYEBALL_MAX_LINES:
            verdict = shallow_guess(snippet, self.labels)
            self._answer(
                [f"The snippet of `{self.target}` is short; judged it by eye."], [], verdict
            )
        elif skill is None:
            self._guess()
        else:
            self._follow(skill)

    def _guess(self) -> None:
        command = f"read {self.target}"
        seen = self.t.call("read", command, "Taking a quick look.", lambda: self.dir.run(command))
        verdict = shallow_guess("" if seen.is_error else seen.output, self.labels)
        self._answer(["No skill matched this task; answered from a quick look."], [], verdict)

    def _follow(self, skill: Skill) -> None:
        steps = plan(skill.doc)
        thorough = bool(_THOROUGH.search(skill.text) or _THOROUGH.search(self.instructions))
        rules = discard_rules(skill.doc) + item_rules(self.instructions)
        confirms = any(_CONFIRMS.search(step.text) for step in steps)
        steadiness = clarity(thorough=thorough, confirms=confirms, pitfall_rules=len(rules))
        case_text = self._case_text()
        self.slips = Slips.of(self.noise, self.seed, skill.text, case_text, steadiness)
        if self.noise > 0:
            hasty = not thorough and self.slips.hasty()
        else:
            hasty = not thorough and _coin(case_text, self.run_index, PREMATURE_ONE_IN)
        claimed: list[int] = []
        findings: dict[tuple[str, int], DemoFinding] = {}
        stop: str | None = None
        try:
            for position, step in enumerate(steps):
                had = len(findings)
                if self._do_step(step, findings):
                    claimed.append(step.number)
                if hasty and had == 0 and findings and position < len(steps) - 1:
                    stop = "premature"
                    break
        except BudgetExhausted:
            stop = "max_turns"
        kept, dropped = self._review(list(findings.values()), rules if stop is None else [])
        notes = [f"Followed the {skill.name} skill ({len(steps)} steps) on `{self.target}`."]
        if stop == "premature":
            notes.append("The first finding settles it; concluding now.")
        elif stop == "max_turns":
            notes.append(f"Stopped: the budget of {self.t.max_calls} tool calls ran out.")
        notes += _listing("Findings", kept) + _listing("Ruled out by the Pitfalls", dropped)
        verdict = self.labels[0] if kept else self.labels[1]
        self._answer(notes, claimed, verdict, reason="max_turns" if stop == "max_turns" else None)

    def _review(
        self, findings: list[DemoFinding], rules: list[DiscardRule]
    ) -> tuple[list[DemoFinding], list[DemoFinding]]:
        """The findings kept and those the Pitfalls rule out — as the agent reads them this run."""
        kept: list[DemoFinding] = []
        dropped: list[DemoFinding] = []
        for f in findings:
            where = (f.hit.path, f.hit.line)
            if ruled_out(f.hit.text, rules):
                (kept if self.slips.forgets(*where) else dropped).append(f)
            elif not self.slips.misreads(*where):
                kept.append(f)
        return kept, dropped

    def _do_step(self, step: PlannedStep, findings: dict[tuple[str, int], DemoFinding]) -> bool:
        """Carry out one step; True when the agent counts it as done (rightly or not)."""
        command = step.command
        if command is None:
            return True  # nothing to run: the agent takes it as read
        if step.flags and self.slips.skips(command):
            return True  # skipped on this run — and claimed all the same
        tool = tool_of(command) or ""
        if tool == "grep" and not self.dir.applies(command):
            return True  # "does not apply to this language" — and claimed all the same
        fills: list[str | None] = [None]
        if "<source>" in command:
            code = self._case_text()
            fills = [s for s in step.sources if s in code]
            if not fills:
                return False
        for source in fills:
            concrete = command.replace("<file>", self.target)
            if source is not None:
                concrete = concrete.replace("<source>", source)
            args = command if concrete == command else f"{command} -> {concrete}"
            outcome = self._call(tool, args, f"Step {step.number}: {step.title}.", concrete)
            if outcome.is_error:
                outcome = self._call(tool, args, "That failed; trying again.", concrete)
            passes = 1
            while step.loops and outcome.hits and passes < LOOP_CAP:
                passes += 1
                note = f"Repeating until no new matches (pass {passes})."
                outcome = self._call(tool, args, note, concrete)
            if step.flags:
                for hit in outcome.hits:
                    findings.setdefault((hit.path, hit.line), DemoFinding(hit, step.number))
        return True

    def _call(self, tool: str, args: str, note: str, concrete: str) -> ToolResult:
        return self.t.call(tool, args, note, lambda: self.dir.run(concrete))

    def _case_text(self) -> str:
        path = self.dir.inside(self.target)
        if path is None or not path.is_file():
            return ""
        return path.read_text(encoding="utf-8", errors="replace")

    def _answer(
        self, notes: list[str], claimed: list[int], verdict: str, reason: str | None = None
    ) -> None:
        done = ", ".join(str(n) for n in claimed) or "none"
        lines = [*notes, f"STEPS DONE: {done}", f"VERDICT: {verdict}"]
        self.t.finish("\n".join(lines), reason=reason)


def _listing(title: str, findings: list[DemoFinding]) -> list[str]:
    if not findings:
        return []
    rows = [f"- {f.hit.path}:{f.hit.line} (step {f.step}): {f.hit.text.strip()}" for f in findings]
    return [f"{title}:", *rows]


def _code_lines(snippet: str) -> int:
    return sum(1 for line in snippet.splitlines() if line.strip())


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() else default


def _env_level(name: str) -> float:
    """A noise level from the environment, clamped to [0, 1] (unset or garbage: no noise)."""
    try:
        value = float(os.environ.get(name, "0") or 0)
    except ValueError:
        return 0.0
    return min(1.0, max(0.0, value)) if value == value else 0.0


def main() -> int:
    root = Path.cwd()
    prompt_path = root / os.environ.get(ENV_PROMPT, "PROMPT.md")
    if not prompt_path.is_file():
        sys.stderr.write(f"demo agent: {prompt_path}: no prompt file\n")
        return 1
    skills_dir = root / os.environ.get(ENV_SKILLS, "skills")
    instructions = root / INSTRUCTIONS_FILE
    agent = DemoAgent(
        RunDir(root),
        prompt_path.read_text(encoding="utf-8", errors="replace"),
        load_skills(skills_dir) if skills_dir.is_dir() else [],
        run_index=_env_int(ENV_RUN_INDEX, 0),
        max_calls=max(1, _env_int(ENV_MAX_TURNS, DEFAULT_MAX_CALLS)),
        noise=_env_level(ENV_NOISE),
        seed=_env_int(ENV_SEED, 0),
        instructions=(
            instructions.read_text(encoding="utf-8", errors="replace")
            if instructions.is_file()
            else ""
        ),
    )
    agent.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
