"""The word tables the text filters enforce, as data a workspace can change.

Which words are traps, which phrases are absolute and which tools count as concrete depends on
the domain and the language of the skills, so the tables live in ``semantic_traps.yaml`` beside
this module and ``<workspace>/rules/semantic_traps.yaml`` replaces any of its keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path

from engine.core.schema import from_mapping, load_yaml
from engine.core.workspace import Workspace

DEFAULTS = Path(__file__).with_name("semantic_traps.yaml")
WORKSPACE_FILE = Path("rules") / "semantic_traps.yaml"
_ALL_OF = " + "


@dataclass(frozen=True)
class Trap:
    word: str
    prefer: str
    why: str = ""


@dataclass(frozen=True)
class TextRules:
    traps: list[Trap] = field(default_factory=list)
    absolute_phrases: list[str] = field(default_factory=list)
    claim_words: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    catch_all: list[str] = field(default_factory=list)

    @cached_property
    def _trap_patterns(self) -> list[tuple[Trap, re.Pattern[str]]]:
        return [(t, _word_start(t.word)) for t in self.traps]

    @cached_property
    def _absolutes(self) -> list[tuple[str, list[re.Pattern[str]]]]:
        return [(p, [_whole(part) for part in p.split(_ALL_OF)]) for p in self.absolute_phrases]

    @cached_property
    def _claims(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(w, _whole(w)) for w in self.claim_words]

    @cached_property
    def _tools(self) -> re.Pattern[str] | None:
        if not self.tools:
            return None
        names = "|".join(re.escape(t) for t in sorted(self.tools, key=len, reverse=True))
        return re.compile(rf"(?<![\w./-])(?:{names})(?![\w/-])")

    @cached_property
    def _catch_all(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(w, _whole(w)) for w in self.catch_all]

    def catch_all_in(self, text: str) -> str | None:
        """A word saying the skill is for every task ("anything"), or None."""
        return next((w for w, pattern in self._catch_all if pattern.search(text)), None)

    def traps_in(self, text: str) -> list[Trap]:
        """Each trap word ``text`` uses, once per occurrence."""
        return [t for t, pattern in self._trap_patterns for _ in pattern.finditer(text)]

    def absolute_in(self, text: str) -> str | None:
        return next((p for p, parts in self._absolutes if all(x.search(text) for x in parts)), None)

    def claim_in(self, text: str) -> str | None:
        return next((w for w, pattern in self._claims if pattern.search(text)), None)

    def tool_in(self, text: str) -> str | None:
        """A tool named anywhere but as the first word (where it is a verb: "Read the code")."""
        if self._tools is None:
            return None
        first = re.match(r"\s*(?:[-*+]|\d+[.)])?\s*", text)
        start = first.end() if first else 0
        for match in self._tools.finditer(text):
            if match.start() > start:
                return match.group(0)
        return None


def _is_cjk(text: str) -> bool:
    return any(ord(ch) > 0x2E7F for ch in text)


def _phrase(text: str) -> str:
    return r"\s+".join(re.escape(part) for part in text.split())


def _word_start(word: str) -> re.Pattern[str]:
    """ASCII words from a word start with any ending (risk, risks, risky); CJK anywhere."""
    if _is_cjk(word):
        return re.compile(re.escape(word))
    return re.compile(rf"(?<!\w){_phrase(word)}\w*", re.IGNORECASE)


def _whole(word: str) -> re.Pattern[str]:
    if _is_cjk(word):
        return re.compile(re.escape(word.strip()))
    return re.compile(rf"(?<!\w){_phrase(word.strip())}(?!\w)", re.IGNORECASE)


@lru_cache(maxsize=1)
def default_rules() -> TextRules:
    return from_mapping(TextRules, load_yaml(DEFAULTS), DEFAULTS)


def load_text_rules(ws: Workspace | None = None) -> TextRules:
    """The bundled tables, with the keys of the workspace's own file replacing theirs."""
    base = default_rules()
    if ws is None or not (ws.root / WORKSPACE_FILE).is_file():
        return base
    path = ws.root / WORKSPACE_FILE
    data = load_yaml(path)
    override = from_mapping(TextRules, data, path)
    return replace(base, **{key: getattr(override, key) for key in data or {}})
