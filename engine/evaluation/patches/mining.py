"""Mining a feedback split for what separates failing cases from passing ones.

The offline proposer's raw material: grep patterns from the calls on the lines of missed
positives (with the concatenation or formatting that follows them), tokens of a code line that
could name an exception in a Pitfalls item, the words of a task, and greedy covers of the failing
cases by such patterns. All of it is plain string work over the statement files, in the
vocabulary of the bundled demo agent (``grep -nE`` patterns, backticked Pitfalls tokens).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from engine.core.skill import SkillDoc
from engine.evaluation.demo.agent import plan
from engine.evaluation.demo.tools import parse_grep, tool_of
from engine.evaluation.patches.input_flow import BUILT, NAME, SEP, calls, definitions, handoffs
from engine.evaluation.patches.material import CaseMaterial, GrepMatcher, grep_matcher

MIN_BARE_NAME = 6  # shorter plain call names ("get(", "load(") rank last
VARIABLE = r"\$\w+"  # any PHP variable, in the agent's grep -E


_ASSIGN = re.compile(r"\b\w+=\w+\b")  # keyword arguments: usedforsecurity=False


_CONSTANT_ARGUMENT = re.compile(r"\w+=(?:True|False|None|true|false|null|\d+|[A-Z]\w*)")


_QUALIFIED = re.compile(r"(([A-Za-z_$][\w$]*)(?:\.|->|::))?[A-Za-z_$][\w$]*$")


_ERE_SPECIAL = re.compile(r"([.\[\](){}*+?|^$\\])")


GLOB = re.compile(r"^\*\.[\w]+$")


_PUNCT = re.compile(r"[^\w\s`]+(?:\s[^\w\s`]+)?")


_SPAN = re.compile(r"`[^`\n]+`")


_FENCE = re.compile(r"```[^\n]*\n.*?```", re.DOTALL)


_WORDS = re.compile(r"[a-z]+")


_WORDS_ANY = re.compile(r"[A-Za-z0-9]+")


_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


_LEADING = re.compile(r"[(,]\s*[\"']([A-Za-z]{3,})")  # "des-ecb" handed to a call: its first word


_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_?]*")


_WORD_GROUP = re.compile(r"\(([A-Za-z][A-Za-z0-9_?]*(?:\|[A-Za-z][A-Za-z0-9_?]*)+)\)")


# words every file of a language has: a construct made of them names nothing
_CODE_WORDS = frozenset(
    re.findall(
        r"[a-z]+",
        """abstract async await bool boolean byte catch char class const def elif else err error
    except export extends false final finally float for from func function go if implements
    import int interface let long main module new nil none null package private protected
    public require return self short static string struct super switch this throw throws true
    try type var void while with""",
    )
)


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


@dataclass
class FlagPattern:
    """A grep pattern mined from failing positive cases."""

    cases: set[str]
    name_class: int  # 0 API-shaped name … 2 short plain name
    tainted: int  # 1 when concatenation/formatting follows the call on the line
    files: set[str]  # the glob operands of the files it matched ("*.java"), or "<file>"


def ere(token: str) -> str:
    escaped = _ERE_SPECIAL.sub(r"\\\1", token)
    return (r"\b" + escaped) if re.match(r"\w", token) else escaped


def task_words(prompt: str) -> list[str]:
    """The content words of a task: no code, no backticked names, no answer-format line."""
    prose = _SPAN.sub(" ", _FENCE.sub(" ", prompt))
    lines = [line for line in prose.splitlines() if "VERDICT" not in line]
    words = _WORDS.findall(" ".join(lines).lower())
    return sorted({w for w in words if len(w) >= 4 and w not in _STOPWORDS})


def stems(text: str) -> set[str]:
    return {w[:5] for w in _WORDS.findall(text.lower()) if len(w) >= 4}


def source_pattern(
    sources: Sequence[str], failing: Sequence[CaseMaterial], globs: Iterable[str]
) -> tuple[str, FlagPattern] | None:
    """ "A source of user input handed straight to a call", over every source the skill names.

    The lesson that carries across languages and sinks (``curl_init($_GET[…])`` teaches
    ``fetch(req.query…)``), so it searches every language the skill's steps search.
    """
    names = sorted({s for s in sources if s.strip()})
    if not names:
        return None
    # a source may be reached through its receiver: ``new URL(req.getParameter(…))``. Spelt
    # without ``\w`` inside the brackets: POSIX grep reads ``[\w$]`` as the three characters
    # ``\``, ``w`` and ``$``, so the pattern Python matched would never match in the agent's grep.
    receiver = r"([A-Za-z_$][A-Za-z0-9_$]*(\.|->))?"
    alternatives = "|".join(_ERE_SPECIAL.sub(r"\\\1", s) for s in names)
    pattern = rf"\w\({receiver}({alternatives})"
    regex = re.compile(pattern)
    hits = [(c.case_id, ln) for c in failing for ln in c.code() if regex.search(ln.text)]
    if not hits:
        return None
    files = set(globs) | {operand(ln.path) for _, ln in hits}
    return pattern, FlagPattern({cid for cid, _ in hits}, 0, 1, files)


def analogies(
    doc: SkillDoc, failing: Sequence[CaseMaterial], negatives: Sequence[str]
) -> dict[str, FlagPattern]:
    """A flag step's own construct with another word of the same kind, where a missed positive
    uses that word: ``(password|secret|api_?key)\\s*=\\s*["']`` meets ``webhookToken = "…"``
    and gives ``(token|Token|TOKEN)\\s*=\\s*["']``; ``md5|sha1`` meets ``"des-ecb"`` and gives
    ``\\b(des|Des|DES)\\b``.

    Not every flaw is input handed to a call (``fn_patterns``): a weak cipher or a secret in a
    constant is in a name or a literal. The step's author already wrote the construct down with
    a list of words; what carries to files nobody mined is that construct, so only the word is
    learnt. Spelt in each case a ``-i`` step would match, since the new step's grep is not.
    A bare word has no context to hold it, so it must be the leading word of a literal in at
    least two missed files and in no line of a negative case (``negatives``).
    """
    found: dict[str, FlagPattern] = {}
    bare_words: set[str] = set()
    for step in plan(doc):
        if not step.flags or step.command is None or tool_of(step.command) != "grep":
            continue
        parsed = parse_grep(split_command(step.command)[1:])
        if isinstance(parsed, str):
            continue
        insensitive = any("i" in flag for flag in parsed.flags)
        globs = {op for op in parsed.operands if GLOB.match(op)}
        for head, tail, bare in word_slots(parsed.pattern):
            for case in failing:
                for line in case.code():
                    for word in sorted(analogy_words(line.text, literals_only=bare)):
                        pattern = head + spelled(word, insensitive) + tail
                        regex = _compiled(pattern)
                        if regex is None or not regex.search(line.text):
                            continue
                        info = found.setdefault(pattern, FlagPattern(set(), 0, 1, set(globs)))
                        info.cases.add(case.case_id)
                        info.files.add(operand(line.path))
                        if bare:
                            bare_words.add(pattern)
    for pattern in bare_words:
        regex = re.compile(pattern)
        if len(found[pattern].cases) < 2 or any(regex.search(text) for text in negatives):
            del found[pattern]
    return found


def word_slots(pattern: str) -> Iterator[tuple[str, str, bool]]:
    """Where a step's pattern lists plain words → the pattern text around the slot, and whether
    the slot is a bare word.

    A group of words keeps what surrounds it in its alternative (``(password|secret|api_?key)``
    with ``\\s*=\\s*["']``): that context is the construct. A whole alternative that is one
    word (``md5`` of ``…|md5|sha1``) has no context but word bounds, so only a word of a string
    literal may fill it: ``"des-ecb"`` names an algorithm, while any identifier of a missed file
    (``http``, ``net``) would flag every file that has it.
    """
    for alternative in _alternatives(pattern):
        if _PLAIN.fullmatch(alternative):
            yield r"\b", r"\b", True
            continue
        for group in _WORD_GROUP.finditer(alternative):
            head, tail = alternative[: group.start()], alternative[group.end() :]
            if not (head + tail).replace(r"\b", ""):
                # ``\b(des|Des|DES)\b``, a learnt word: bounds are no construct either
                yield r"\b", r"\b", True
            else:
                yield head, tail, False


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of an ERE (``|`` outside groups and brackets)."""
    parts: list[str] = []
    depth, start, index, bracket = 0, 0, 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if bracket:
            bracket = char != "]"
        elif char == "[":
            bracket = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(pattern[start:index])
            start = index + 1
        index += 1
    parts.append(pattern[start:])
    return parts


def analogy_words(text: str, *, literals_only: bool = False) -> set[str]:
    """The words of a code line's names and literals (``webhookToken`` → webhook, token;
    ``"des-ecb"`` → des, ecb), lower-cased, without the languages' own keywords."""
    if literals_only:
        return {w.lower() for w in _LEADING.findall(text) if w.lower() not in _CODE_WORDS}
    spans = [text]
    return {
        part.lower()
        for span in spans
        for token in _WORDS_ANY.findall(span)
        for part in _CAMEL.findall(token)
        if len(part) >= 3 and part.lower() not in _CODE_WORDS
    }


def spelled(word: str, insensitive: bool) -> str:
    forms = dict.fromkeys([word, word.capitalize(), word.upper()] if insensitive else [word])
    return f"({'|'.join(forms)})" if len(forms) > 1 else word


def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def skill_globs(doc: SkillDoc) -> set[str]:
    """The file globs the skill's grep steps search (the languages it knows)."""
    globs: set[str] = set()
    for step in plan(doc):
        if step.command and tool_of(step.command) == "grep":
            parsed = parse_grep(split_command(step.command)[1:])
            if not isinstance(parsed, str):
                globs.update(op for op in parsed.operands if GLOB.match(op))
    return globs


def fn_patterns(failing: Sequence[CaseMaterial], sources: Sequence[str]) -> dict[str, FlagPattern]:
    """grep patterns from the calls failing positive cases hand input to → (cases, class,
    tainted): the file's other calls only tell that file apart, and a rule built on them flags
    whatever else calls them (``engine.evaluation.patches.input_flow``).
    """
    found: dict[str, FlagPattern] = {}
    for case in failing:
        defined = definitions(case)
        for handoff in handoffs(case, sources):
            line = handoff.line
            parts = SEP.split(handoff.chain)
            if parts[-1] in defined:
                continue  # ``http.send(`` in a class defining ``send``: the name finds that too
            qualified = _QUALIFIED.search(handoff.chain)
            bare = name_class(parts[-1])
            # a short plain name ("get(", "from(") names no API by itself: only its
            # qualified form ("requests.get(") is a construct that carries to other files
            forms = [(ere(parts[-1] + "("), bare)] if bare < 2 else []
            if qualified and qualified.group(1) and qualified.group(2) not in defined:
                forms.append((qualified_form(qualified.group(0), qualified.group(2), parts[-1]), 1))
            rest = line.text[handoff.start :]
            for base, cls in forms:
                variants = [(base, 0)] + [
                    (f"{base}.*{m}", 1) for m in BUILT if re.search(f"{base}.*{m}", rest)
                ]
                for pattern, tainted in variants:
                    info = found.setdefault(pattern, FlagPattern(set(), cls, tainted, set()))
                    info.cases.add(case.case_id)
                    info.files.add(operand(line.path))
    return found


def qualified_form(qualified: str, receiver: str, name: str) -> str:
    """The pattern of ``receiver.name(``: a module or class receiver (``requests.get(``) is part
    of the API; a PHP variable (``$db->query(``) is the file's own name for an object, so any
    variable stands in for it (``$conn->query(`` calls the same sink).
    """
    if receiver.startswith("$"):
        return VARIABLE + "->" + _ERE_SPECIAL.sub(r"\\\1", name + "(")
    return ere(qualified + "(")


def operand(path: str) -> str:
    """How a step names a file like ``path``: its suffix glob, the way the demo's own steps do
    (the task may name a path the agent cannot open), else the file under audit."""
    name = path.rsplit("/", 1)[-1]
    if "/" in path or "." not in name.strip("."):
        return "<file>"
    return "*." + name.rsplit(".", 1)[1]


def name_class(name: str) -> int:
    """How telling a bare call name is: an API-shaped name (camelCase, snake_case) names one
    thing; a long plain word is vaguer; a short one ("get", "load") needs its qualifier."""
    if re.search(r"[a-z][A-Z]|_", name.strip("_$")):
        return 0
    return 1 if len(name) >= MIN_BARE_NAME else 2


def line_tokens(text: str) -> set[str]:
    """Tokens of a code line a Pitfalls item could name."""
    found: set[str] = set()
    for match in calls(text):
        chain = match.group(1)
        found.add(chain + "(")
        found.add(SEP.split(chain)[-1] + "(")
    for match in NAME.finditer(text):
        name = match.group(0)
        found.add(name)
        found.update(part for part in SEP.split(name))
    found.update(m.group(0) for m in _ASSIGN.finditer(text))
    found.update(m.group(0) for m in _PUNCT.finditer(text))
    return {t for t in found if len(t.strip("($")) >= 3 and "`" not in t}


def construct(token: str) -> bool:
    """Whether a Pitfalls token names a construct that carries to files nobody mined.

    A guard worth writing down is an API: a call (``shlex.quote(``, ``basename(``), a keyword
    argument set to a constant (``usedforsecurity=False``), a type or qualified name
    (``yaml.SafeLoader``, ``ValidatingObjectInputStream``). Punctuation (``,))``), plain words,
    short bare calls (``from(``), arguments bound to a local (``name=request``) and the file's
    own constants (``UPLOAD_DIR``) only tell the mined lines apart; a rule built on them fits
    the feedback cases and nothing else.
    """
    if token.endswith("("):
        parts = SEP.split(token[:-1].lstrip("$"))
        return (len(parts) > 1 and all(parts)) or name_class(parts[-1]) < 2
    if "=" in token:
        return _CONSTANT_ARGUMENT.fullmatch(token) is not None
    return token_class(token) == 1 and not token.replace(".", "").isupper()


def token_class(token: str) -> int:
    """Calls and keyword arguments (``basename(``, ``usedforsecurity=False``) name a guard
    best; then API-shaped names (dotted, snake, camel), plain words, bare punctuation."""
    if not re.search(r"[A-Za-z]", token):
        return 3
    if token.endswith("(") or re.search(r"\w=\w", token):
        return 0
    if re.search(r"[._]|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]", token):
        return 1
    return 2


def nesting(token: str, lines: Iterable[str]) -> int:
    """How deep inside parentheses ``token`` sits where it occurs (the shallowest occurrence).

    A guard wraps what is handed to the sink — ``shell_exec('…' . escapeshellarg($d))``,
    ``md5(body, usedforsecurity=False)`` — so it sits inside the sink's call; the outermost
    call of a line is the sink itself, the very thing the flag step found.
    """
    depths = [
        line[:at].count("(") - line[:at].count(")")
        for line in lines
        for at in (m.start() for m in re.finditer(re.escape(token), line))
    ]
    return min(depths, default=0)


def greedy_covers(
    ranked: Sequence[str], hit: dict[str, set[str]], wanted: set[str], limit: int
) -> Iterator[tuple[str, ...]]:
    """Greedy covers of the failing cases, each starting one rank lower than the last.

    A cover comes in one canonical (sorted) order and each set once: the same patterns in
    another order are the same patch, and a reordered diff would slip past the taboo list and
    rerun a rejected experiment until luck let it through.
    """
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
        key = tuple(sorted(chosen))
        if chosen and key not in seen and (not wanted or covered & wanted):
            seen.add(key)
            yield key


def grep_command(patterns: Sequence[str], files: str) -> str:
    """The command of a new flag step: the patterns as one ``grep -nE`` alternation, quoted the
    way the agent's shell-style split reads it back (a ``"`` of ``["']`` escaped)."""
    quoted = "|".join(patterns).replace('"', '\\"')
    return f'grep -nE "{quoted}" {files}'


def flag_matchers(doc: SkillDoc) -> list[GrepMatcher]:
    matchers: list[GrepMatcher] = []
    for step in plan(doc):
        if not step.flags or step.command is None or tool_of(step.command) != "grep":
            continue
        matcher = grep_matcher(split_command(step.command)[1:])
        if matcher is not None:
            matchers.append(matcher)
    return matchers


def split_command(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()
