"""Sinks: the call a missed positive hands user input to — what its new flag step should name.

The calls handed input are those of ``engine.evaluation.patches.input_flow`` (the search
evolve's proposer mines with too). Of those on one line only the outermost counts:
``os.Open(filepath.Join(dir, input))`` opens the path, ``filepath.Join`` only builds it, and a
method of a call's result (``Query().Get(``) belongs to the call before it. A call on a
receiver the file itself assigns (``$db->query(``, ``out.println(``) is named by its method,
the file's local name carries nowhere. The pattern then says how the input reaches the sink on
that line — the source itself or the concatenation that builds the argument — so the near-miss
``http.Get(upstream)`` with a constant URL is not flagged along with the tainted one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

from engine.evaluation.patches.input_flow import BUILT, SEP, Handoff, handoffs
from engine.evaluation.patches.material import CaseMaterial
from engine.evaluation.patches.mining import ere, operand

_ASSIGNED = re.compile(r"(?<![\w$.>])(\$?[A-Za-z_][\w$]*)\s*(?::=|=)(?![=>])")
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
    local = {m.group(1).lstrip("$") for ln in case.code() for m in _ASSIGNED.finditer(ln.text)}
    found: list[Sink] = []
    for _, on_line in groupby(handoffs(case, names), key=lambda h: h.line):
        candidates = [
            (h.depth, sink)
            for h in on_line
            if h.chain not in _NOT_CALLS and not h.line.text[: h.start].endswith((".", "->"))
            for sink in [_sink(case.case_id, h, names, local)]
            if sink is not None
        ]
        if candidates:
            found.append(min(candidates, key=lambda c: c[0])[1])
    return found


def _sink(case_id: str, handoff: Handoff, sources: Sequence[str], local: set[str]) -> Sink | None:
    chain, line = handoff.chain, handoff.line
    parts = SEP.split(chain)
    if len(parts) > 1 and parts[-2].lstrip("$") in local:
        seps = SEP.findall(chain)
        form = f"{seps[-1]}{parts[-1]}("
    elif len(parts) > 1:
        form = f"{parts[-2]}{SEP.findall(chain)[-1]}{parts[-1]}("
    else:
        form = f"{parts[-1]}("
    name = ere(form)
    # ``->query(`` would open with a dash, which grep reads as an option
    head = "[-]" + name[1:] if name.startswith("-") else name
    rest = line.text[line.text.find(chain) :]
    if handoff.direct:
        pattern = f"{head}.*({'|'.join(ere(s) for s in sources)})"
    else:
        built = next((b for b in BUILT if re.search(f"{head}.*{b}", rest)), None)
        pattern = head if built is None else f"{head}.*{built}"
    glob = operand(line.path)
    return Sink(case_id, form, pattern, handoff.direct, glob) if glob != "<file>" else None


__all__ = ["Sink", "sinks"]
