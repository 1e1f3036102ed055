"""Input flow: which calls of a case are handed user input — one data-flow step over its code.

A missed positive holds many calls, and most of them are incidental: ``io.Copy(w, resp.Body)``,
``http.Error(w, "…")`` or ``defer f.Close()`` sit in the vulnerable file and in none of the
negatives, so a rule built on them fits that file and nothing else. What a reviewer names is
the call that receives the input. Evolve's offline proposer mines its flag patterns from those
calls and GEPA's offline reflection picks its sink among them, so both ask this one search:

- a call whose arguments hold a source of user input (one the skill's trace step names)
  receives it *directly*;
- a call whose arguments hold a name that holds input — a parameter of the file's functions,
  or a variable assigned from a source or from such a name (one pass, top to bottom) —
  receives it *through* that name. A function handed the request a source reads from (``r``
  of ``r.FormValue(``) takes its input through that parameter alone: the others are the
  framework's outputs or the caller's settings (``w http.ResponseWriter``, a cipher ``key``),
  and the calls they reach (``http.Error(w, …)``, ``io.Copy(w, …)``) receive no input.

The file's own functions (``def image(request)`` declares, ``image(x)`` calls code the file
holds) and the calls that read the input (``r.FormValue(``) are not calls it is handed to.
Plain string work over the statement files, in the vocabulary of the bundled demo agent's
languages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from engine.evaluation.patches.material import CaseMaterial, CodeLine

_CHAIN = re.compile(r"(?<![\w$])([A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*)*)\s*\(")


# Words that take a parenthesis without being a call: ``return (Session) in``, ``if (ok)``.
KEYWORDS = frozenset(
    re.findall(
        r"[a-z]+",
        """and assert await case catch elif else for foreach func function if in is lambda not
        or return switch synchronized throw typeof sizeof while with yield""",
    )
)


NAME = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*)*")


SEP = re.compile(r"\.|->|::")  # between the parts of a name chain: ``a.b``, ``$a->b``, ``A::b``


# How input is built into an argument after the call's name, on the same line: concatenation
# (``+``, PHP's ``" . $x``) or formatting (``%s``, ``${``).
BUILT = (r"\+", r"\. *\$", "%s", r"\$\{")


_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`")


# ``name = …``, ``name := …``, ``$name = …``, ``const name = …``, ``String name = …``
_ASSIGNED = re.compile(r"^\s*(?:[\w<>\[\],.]+\s+)*?(\$?[A-Za-z_]\w*)\s*:?=(?!=)")


_PARAM = re.compile(r"\$?[A-Za-z_]\w*")


_DEFINITION = re.compile(
    r"^\s*(?:export\s+)?(?:async\s+)?(?:def|function|func|fn|sub)\s+(?:\([^)]*\)\s*)?(\w+)"
    r"|^\s*(?:(?:public|private|protected|static|final|synchronized|abstract)\s+)+"
    r"[\w<>\[\], ]*?\b(\w+)\s*\("
)


@dataclass(frozen=True)
class Handoff:
    """One call on one code line whose arguments hold input."""

    line: CodeLine
    chain: str  # the call's name chain: ``requests.get``, ``$db->query``
    start: int  # where the chain starts on the line
    arguments: str  # the text inside the call's parentheses (to the line's end if unclosed)
    direct: bool  # a source itself is in the arguments, not only a name holding input

    @property
    def depth(self) -> int:
        """How many parentheses the call sits inside: ``os.Open(filepath.Join(…))`` opens the
        path at depth 0, ``filepath.Join`` only builds it at depth 1."""
        before = self.line.text[: self.start]
        return before.count("(") - before.count(")")


def calls(text: str) -> Iterator[re.Match[str]]:
    """The call chains of a code line (``hashlib.md5(``), keywords left out."""
    for match in _CHAIN.finditer(text):
        if match.group(1) not in KEYWORDS:
            yield match


def definitions(case: CaseMaterial) -> set[str]:
    """The names of the functions the case's files define."""
    names: set[str] = set()
    for line in case.lines:
        match = _DEFINITION.match(line.text)
        if match:
            names.add(match.group(1) or match.group(2))
    return names


def handoffs(case: CaseMaterial, sources: Sequence[str]) -> Iterator[Handoff]:
    """The calls of ``case`` handed input (see the module note), line by line, left to right."""
    names = [s for s in dict.fromkeys(sources) if s.strip()]
    inputs = input_names(case, names)
    defined = definitions(case)
    for line in case.code():
        for match in calls(line.text):
            chain = match.group(1)
            if chain in defined or _reads_input(chain, names):
                continue
            args = arguments(line.text, match.end() - 1)
            if carries_input(args, names, inputs):
                direct = any(src in args for src in names)
                yield Handoff(line, chain, match.start(), args, direct)


def _reads_input(chain: str, sources: Sequence[str]) -> bool:
    """Whether the call is one a source names: reading the input is not handing it on."""
    last = SEP.split(chain)[-1] + "("
    return any(last in src or src.rstrip("(") in chain for src in sources)


def input_names(case: CaseMaterial, sources: Sequence[str]) -> set[str]:
    """The names that hold input in a case: its functions' parameters, and every variable
    assigned from a source the skill names or from such a name (one pass, top to bottom)."""
    names: set[str] = set()
    receivers = {SEP.split(src)[0].lstrip("$") for src in sources if SEP.search(src)}
    for line in case.code():
        if _DEFINITION.match(line.text):
            params = set(_PARAM.findall(line.text.split("(", 1)[-1]))
            # a handler handed the request (``r`` of ``r.FormValue(``) takes the input through
            # it; its other parameters are the framework's outputs (``w http.ResponseWriter``)
            names.update(params & receivers or params)
            continue
        assigned = _ASSIGNED.match(line.text)
        if assigned and carries_input(line.text[assigned.end() :], sources, names):
            names.add(assigned.group(1).lstrip("$"))
    return names - KEYWORDS


def carries_input(arguments: str, sources: Sequence[str], names: set[str]) -> bool:
    """Whether the text after a call's parenthesis hands it input: a source the skill names, or
    a name that holds input, outside string literals."""
    code = _STRING.sub('""', arguments.split(")", 1)[0] if ")" in arguments else arguments)
    if any(s.strip() and s in arguments for s in sources):
        return True
    return any(SEP.split(word)[0].lstrip("$") in names for word in NAME.findall(code))


def arguments(text: str, open_at: int) -> str:
    """The text between the parenthesis at ``open_at`` and its match (or the line's end)."""
    depth = 0
    for index in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return text[open_at + 1 : index]
    return text[open_at + 1 :]
