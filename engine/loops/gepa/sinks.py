"""Sinks: the call a missed positive hands user input to — what its new flag step should name.

A missed positive holds many calls, and most of them are incidental: ``io.Copy(w, resp.Body)``
and ``defer f.Close()`` sit in the vulnerable file and in none of the minibatch's negatives, so
a step flagging them fits that file and nothing else. What a reviewer names is the call that
receives the input — ``http.Get(`` fed from ``r.URL.Query(``, ``requests.get(`` fed from a
variable read from ``request.args``. That call is found by a one-step data flow over the file:

- a call whose arguments hold a source of user input (one the skill's trace step names)
  receives it *directly*;
- a call whose arguments hold a name that holds input — a parameter, or a variable assigned
  from a source or from such a name (``engine.evaluation.patches.mining.input_names``, which
  evolve's proposer mines with too) — receives it *through* that name.

Of the calls on one line only the outermost counts: ``os.Open(filepath.Join(dir, input))``
opens the path, ``filepath.Join`` only builds it. A call on a receiver the file itself defines
(``$db->query(``, ``out.println(``) is named by its method, the file's local name carries
nowhere. The pattern then says how the input reaches the sink on that line — the source itself
or the concatenation that builds the argument — so the near-miss ``http.Get(upstream)`` with a
constant URL is not flagged along with the tainted one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.evaluation.patches.material import CaseMaterial, CodeLine
from engine.evaluation.patches.mining import (
    calls,
    carries_input,
    definitions,
    ere,
    input_names,
    operand,
)

_SEP = re.compile(r"\.|->|::")
_ASSIGNED = re.compile(r"(?<![\w$.>])(\$?[A-Za-z_][\w$]*)\s*(?::=|=)(?![=>])")
# concatenation or formatting after the sink's name: ``+``, PHP's ``" . $x``, ``%s``, ``${``
_BUILT = (r"\+", r"\. *\$", "%s", r"\$\{")
_NOT_CALLS = frozenset({"try", "new"})  # ``try (InputStream in = …)`` opens a block


@dataclass(frozen=True)
class Sink:
    """One call receiving user input in one missed positive."""

    case_id: str
    form: str  # how the step names the call: ``http.Get(``, ``->query(``
    pattern: str  # the ERE a flag step searches for
    direct: bool  # the source itself is in the call's arguments
    glob: str  # the file operand of its language (``*.go``)


def sinks(case: CaseMaterial, sources: Sequence[str]) -> list[Sink]:
    """The calls of ``case`` that receive one of ``sources`` (see the module note)."""
    names = [s for s in dict.fromkeys(sources) if s.strip()]
    if not names:
        return []
    code = case.code()
    inputs = input_names(case, names)
    defined = definitions(case)  # ``func Test(w, r)`` declares, it calls nothing
    local = {m.group(1).lstrip("$") for ln in code for m in _ASSIGNED.finditer(ln.text)}
    found: list[Sink] = []
    for line in code:
        best: tuple[int, Sink] | None = None
        for match in calls(line.text):
            chain = match.group(1)
            if chain in _NOT_CALLS | defined or line.text[: match.start()].endswith((".", "->")):
                continue  # a keyword, or a method of a call's result: ``Query().Get(``
            if any(src.rstrip("(") in chain for src in names):
                continue  # reading the input is not handing it on
            args = _arguments(line.text, match.end() - 1)
            if not carries_input(args, names, inputs):
                continue
            direct = any(src in args for src in names)
            depth = line.text[: match.start()].count("(") - line.text[: match.start()].count(")")
            sink = _sink(case.case_id, line, chain, direct, names, local)
            if sink is not None and (best is None or depth < best[0]):
                best = (depth, sink)
        if best is not None:
            found.append(best[1])
    return found


def _arguments(text: str, open_at: int) -> str:
    """The text between the parenthesis at ``open_at`` and its match (or the line's end)."""
    depth = 0
    for index in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return text[open_at + 1 : index]
    return text[open_at + 1 :]


def _sink(
    case_id: str,
    line: CodeLine,
    chain: str,
    direct: bool,
    sources: Sequence[str],
    local: set[str],
) -> Sink | None:
    parts = _SEP.split(chain)
    if len(parts) > 1 and parts[-2].lstrip("$") in local:
        seps = _SEP.findall(chain)
        form = f"{seps[-1]}{parts[-1]}("
    elif len(parts) > 1:
        form = f"{parts[-2]}{_SEP.findall(chain)[-1]}{parts[-1]}("
    else:
        form = f"{parts[-1]}("
    name = ere(form)
    # ``->query(`` would open with a dash, which grep reads as an option
    head = "[-]" + name[1:] if name.startswith("-") else name
    rest = line.text[line.text.find(chain) :]
    if direct:
        pattern = f"{head}.*({'|'.join(ere(s) for s in sources)})"
    else:
        built = next((b for b in _BUILT if re.search(f"{head}.*{b}", rest)), None)
        pattern = head if built is None else f"{head}.*{built}"
    glob = operand(line.path)
    return Sink(case_id, form, pattern, direct, glob) if glob != "<file>" else None


__all__ = ["Sink", "sinks"]
