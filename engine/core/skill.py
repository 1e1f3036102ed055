"""The SKILL.md model: YAML frontmatter plus a Markdown body, edited surgically.

Skills are versioned, diffed, hashed and put on a taboo list, so an edit must touch only the bytes
it means to change, and re-rendering an untouched file must give back the very same bytes (CRLF,
BOM, quoting styles, trailing whitespace, a missing final newline). The document is therefore kept
as its raw lines; the parsed views (the frontmatter mapping, headings, sections, steps) are indexes
into those lines, and every edit splices lines and parses the result again. Nothing is ever dumped
back out of YAML or Markdown except the one value an edit writes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.core.errors import FormatError

SKILL_FILE = "SKILL.md"
BOM = "\ufeff"
_MISSING = object()

# One line with its own ending. Only CR, LF and CRLF end a line: str.splitlines() would also split
# on form feeds and U+2028, and the file would no longer render back to itself.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_EOL = re.compile(r"\r\n|\r|\n")
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_DELIM = re.compile(r"---[ \t]*")
_NUMBERED = re.compile(r"([ \t]*)(\d{1,9})[.)](?:[ \t]+(.*))?")
_BULLET = re.compile(r"([ \t]*)[-*+](?:[ \t]+(.*))?")
_LEADING_NUMBER = re.compile(r"(?:step\s*)?(\d{1,9})(?:\.\d+)*[.):]?\s+", re.IGNORECASE)
_STEP_HEADING = re.compile(r"step\s*\d+\b", re.IGNORECASE)
_TITLE_JUNK = re.compile(r"[^\w\s'’:-]+")

CANONICAL = ("description", "when_to_use", "steps", "pitfalls")
_DEFAULT_TITLES = {
    "description": "Description",
    "when_to_use": "When to use",
    "steps": "Steps",
    "pitfalls": "Pitfalls",
}
# Heading variants seen in real skills. A title matches when it equals a phrase, starts with one of
# the `prefix` phrases ("When to Use This Skill") or ends with one of the `suffix` words
# ("High-Level Workflow", "Common Pitfall").
_ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    "description": {
        "exact": ("description", "overview", "描述", "概述", "简介"),
        "prefix": ("overview of",),
        "suffix": (),
    },
    "when_to_use": {
        "exact": (
            "usage",
            "when to use",
            "when to apply",
            "triggers",
            "trigger conditions",
            "use cases",
            "何时使用",
            "使用场景",
            "适用场景",
            "触发条件",
        ),
        "prefix": ("when to use", "when to apply", "when should"),
        "suffix": (),
    },
    "steps": {
        "exact": (
            "steps",
            "procedure",
            "workflow",
            "instructions",
            "process",
            "how to use",
            "步骤",
            "流程",
            "操作步骤",
            "工作流程",
            "执行步骤",
        ),
        "prefix": ("how to use",),
        "suffix": ("steps", "procedure", "workflow", "instructions", "process", "步骤", "流程"),
    },
    "pitfalls": {
        "exact": (
            "pitfalls",
            "pitfall",
            "gotchas",
            "gotcha",
            "common mistakes",
            "mistakes to avoid",
            "caveats",
            "anti-patterns",
            "常见陷阱",
            "陷阱",
            "注意事项",
            "常见错误",
            "易错点",
        ),
        "prefix": ("common mistakes", "mistakes to avoid", "pitfalls"),
        "suffix": ("pitfalls", "pitfall", "gotchas", "gotcha", "mistakes", "caveats", "陷阱"),
    },
}


@dataclass(frozen=True)
class Line:
    """One raw line: ``text`` without its ending, ``eol`` exactly as in the file."""

    number: int
    text: str
    eol: str
    in_code: bool = False

    @property
    def raw(self) -> str:
        return self.text + self.eol

    @property
    def blank(self) -> bool:
        return not self.text.strip()


@dataclass(frozen=True)
class Heading:
    """An ATX heading outside code; ``kind`` is the canonical section it stands for, if any."""

    level: int
    title: str
    line: int
    index: int
    kind: str | None


@dataclass(frozen=True)
class Step:
    number: int
    text: str
    line: int


@dataclass(frozen=True)
class _Entry:
    """The document lines ``[start, end)`` that set one top-level frontmatter key."""

    key: str
    start: int
    end: int


@dataclass(frozen=True)
class _Span:
    """A section: heading index, then its content lines ``[start, end)`` minus edge blank lines."""

    heading: int
    level: int
    start: int
    end: int
    stop: int


# Titles that end like a canonical one but are not it: "## Next Steps" lists what to do after the
# skill has done its work, not the skill's procedure.
_LOOKALIKES = {
    "steps": ("next steps", "next step", "further steps", "follow-up steps", "additional steps")
}


def canonical_section(title: str) -> str | None:
    """Which of description/when_to_use/steps/pitfalls a heading title stands for, if any."""
    norm = _normalise_title(title)
    for kind, alias in _ALIASES.items():
        if norm in _LOOKALIKES.get(kind, ()):
            continue
        if norm in alias["exact"]:
            return kind
        if any(norm.startswith(p + " ") for p in alias["prefix"]):
            return kind
        if any(_ends_with_word(norm, s) for s in alias["suffix"]):
            return kind
    return None


def _ends_with_word(text: str, word: str) -> bool:
    """``word`` closes ``text`` as a whole word (CJK words need no separator)."""
    if not text.endswith(word) or len(text) == len(word):
        return False
    return not word.isascii() or text[-len(word) - 1] in " -"


def _normalise_title(title: str) -> str:
    text = title.replace("：", ":").replace("`", " ").replace("*", " ").replace("_", " ")
    text = _TITLE_JUNK.sub(" ", text)
    text = " ".join(text.lower().split())
    text = _LEADING_NUMBER.sub("", text, count=1)
    head = text.split(":", 1)[0].strip()
    return head or text.strip()


def split_lines(text: str) -> list[tuple[str, str]]:
    """``(text, eol)`` pairs whose concatenation is exactly ``text``."""
    # str.splitlines is fast but also splits on form feeds, U+2028 and the like; use it only when
    # none of those occur.
    raws = _LINE.findall(text) if _OTHER_BREAKS.search(text) else text.splitlines(keepends=True)
    out: list[tuple[str, str]] = []
    for raw in raws:
        if raw.endswith("\r\n"):
            out.append((raw[:-2], "\r\n"))
        elif raw.endswith(("\n", "\r")):
            out.append((raw[:-1], raw[-1]))
        else:
            out.append((raw, ""))
    return out


def code_mask(texts: Sequence[str]) -> list[bool]:
    """True for every line inside a fenced code block, fence lines included.

    Fences are recognised at any indentation so that a fence nested in a list item still hides its
    ``# comment`` and ``---`` lines; an unclosed fence runs to the end, as in CommonMark.
    """
    mask: list[bool] = []
    opener: tuple[str, int] | None = None
    for text in texts:
        if opener is None:
            match = _FENCE_OPEN.fullmatch(text)
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                opener = (match.group(1)[0], len(match.group(1)))
                mask.append(True)
            else:
                mask.append(False)
            continue
        mask.append(True)
        close = _FENCE_CLOSE.fullmatch(text)
        if close and close.group(1)[0] == opener[0] and len(close.group(1)) >= opener[1]:
            opener = None
    return mask


def _indent(text: str) -> int:
    expanded = text.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def resolve_skill_file(path: Path | str) -> Path:
    """A skill folder stands for its SKILL.md."""
    path = Path(path)
    return path / SKILL_FILE if path.is_dir() else path


def read_skill_text(path: Path | str) -> str:
    """The file's exact text: undecoded newlines and a BOM survive, unlike ``Path.read_text``."""
    path = resolve_skill_file(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FormatError(path, None, "file not found") from None
    except OSError as exc:
        raise FormatError(path, None, f"cannot read the file ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FormatError(path, None, "file is not UTF-8 text", line=line) from None


def frontmatter_error(text: str, path: Path | str | None = None) -> FormatError | None:
    """The error :meth:`SkillDoc.parse_lenient` returns for ``text``, from its frontmatter alone.

    That error depends only on the lines up to the closing ``---``, so the body is not split or
    indexed: a restore checks every SKILL.md of an archive, and parsing whole bodies cost more
    than the rest of those checks together.
    """
    start = len(BOM) if text.startswith(BOM) else 0
    lines = _LINE.finditer(text, start)
    first = next(lines, None)
    if first is None or not _DELIM.fullmatch(first.group().rstrip("\r\n")):
        return None
    for line in lines:
        if _DELIM.fullmatch(line.group().rstrip("\r\n")):
            return SkillDoc.parse_lenient(text[: line.end()], path)[1]
    return SkillDoc.parse_lenient(text, path)[1]  # never closed: that is the error


class SkillDoc:
    """A parsed SKILL.md; immutable, every edit returns a new document."""

    def __init__(
        self,
        path: Path | None,
        bom: str,
        lines: tuple[Line, ...],
        body_start: int,
        frontmatter: dict[str, Any],
        entries: tuple[_Entry, ...],
        fm_close: int | None,
    ) -> None:
        self.path = path
        self.bom = bom
        self.lines = lines
        self.body_start = body_start
        self.frontmatter = frontmatter
        self._entries = entries
        self._fm_close = fm_close
        self.headings = tuple(self._find_headings())

    # ---------------------------------------------------------------- parsing

    @classmethod
    def parse(cls, text: str, path: Path | str | None = None) -> SkillDoc:
        """Parse; a frontmatter that is unclosed, not YAML or not a mapping is a FormatError."""
        doc, error = cls.parse_lenient(text, path)
        if error is not None:
            raise error
        return doc

    @classmethod
    def parse_lenient(
        cls, text: str, path: Path | str | None = None
    ) -> tuple[SkillDoc, FormatError | None]:
        """Parse even a broken frontmatter (read as empty), returning the error beside the doc.

        Lint and the Verify score still judge the body of a skill whose YAML is broken.
        """
        where = Path(path) if path is not None else None
        bom = BOM if text.startswith(BOM) else ""
        pairs = split_lines(text[len(bom) :])
        has_fm = bool(pairs) and _DELIM.fullmatch(pairs[0][0]) is not None
        close = None
        if has_fm:
            close = next(
                (i for i in range(1, len(pairs)) if _DELIM.fullmatch(pairs[i][0])),
                None,
            )
        error: FormatError | None = None
        if has_fm and close is None:
            error = FormatError(
                where or SKILL_FILE, "frontmatter", "the '---' on line 1 is never closed", line=1
            )
        body_start = close + 1 if close is not None else 0
        mask = code_mask([t for t, _ in pairs[body_start:]])
        lines = tuple(
            Line(i + 1, t, e, i >= body_start and mask[i - body_start])
            for i, (t, e) in enumerate(pairs)
        )
        frontmatter: dict[str, Any] = {}
        entries: tuple[_Entry, ...] = ()
        if close is not None:
            inner = "".join(ln.raw for ln in lines[1:close])
            try:
                frontmatter, entries = _parse_frontmatter(inner, close, where)
            except FormatError as exc:
                error = exc
        doc = cls(where, bom, lines, body_start, frontmatter, entries, close)
        return doc, error

    @classmethod
    def load(cls, path: Path | str) -> SkillDoc:
        file = resolve_skill_file(path)
        return cls.parse(read_skill_text(file), file)

    def _find_headings(self) -> list[Heading]:
        found: list[Heading] = []
        for index in range(self.body_start, len(self.lines)):
            ln = self.lines[index]
            if ln.in_code:
                continue
            match = _ATX.fullmatch(ln.text)
            if match is None:
                continue
            title = (match.group(2) or "").strip()
            found.append(
                Heading(len(match.group(1)), title, ln.number, index, canonical_section(title))
            )
        return found

    # ---------------------------------------------------------------- views

    def render(self) -> str:
        return self.bom + "".join(ln.raw for ln in self.lines)

    @property
    def body(self) -> str:
        return "".join(ln.raw for ln in self.lines[self.body_start :])

    @property
    def body_lines(self) -> tuple[Line, ...]:
        return self.lines[self.body_start :]

    @property
    def has_frontmatter(self) -> bool:
        return self._fm_close is not None

    @property
    def newline(self) -> str:
        """The line ending new lines get: the file's first one, else LF."""
        return next((ln.eol for ln in self.lines if ln.eol), "\n")

    @property
    def name(self) -> str | None:
        return _as_text(self.frontmatter.get("name"))

    @property
    def description(self) -> str | None:
        return self.section("description")

    def frontmatter_line(self, key: str) -> int:
        """The file line where ``key`` is set (line 1, the frontmatter start, when absent)."""
        entry = next((e for e in self._entries if e.key == key), None)
        return self.lines[entry.start].number if entry is not None else 1

    def section(self, name: str) -> str | None:
        """The text of a section with edge blank lines removed and LF endings; None if absent.

        ``description`` is the frontmatter description when set, else a Description/Overview
        section. Other names are canonical (when_to_use, steps, pitfalls) or a heading title.
        """
        if name == "description":
            value = _as_text(self.frontmatter.get("description"))
            if value is not None:
                return value
        span = self._span(name)
        if span is None:
            return None
        return "\n".join(ln.text for ln in self.lines[span.start : span.end])

    def section_heading(self, name: str) -> Heading | None:
        span = self._span(name)
        if span is None:
            return None
        return next(h for h in self.headings if h.index == span.heading)

    def _span(self, name: str) -> _Span | None:
        target = name if name in CANONICAL else None
        wanted = _normalise_title(name)
        heading = next(
            (
                h
                for h in self.headings
                if (h.kind == target if target else _normalise_title(h.title) == wanted)
            ),
            None,
        )
        if heading is None:
            return None
        stop = next(
            (
                h.index
                for h in self.headings
                if h.index > heading.index and h.level <= heading.level
            ),
            len(self.lines),
        )
        start, end = heading.index + 1, stop
        while start < end and self.lines[start].blank:
            start += 1
        while end > start and self.lines[end - 1].blank:
            end -= 1
        return _Span(heading.index, heading.level, start, end, stop)

    @property
    def steps(self) -> list[Step]:
        """Items of the steps section: numbered ones if any, else bullets, else sub-headings.

        A skill without a steps section may still be written as "## STEP 1: …" headings (the
        security-audit skills of the outcome-driven article are); those headings are its steps.
        """
        span = self._span("steps")
        if span is None:
            chosen = [h for h in self.headings if _STEP_HEADING.match(h.title)]
            return _heading_steps(self.lines, self.headings, chosen, len(self.lines))
        subs = [
            h
            for h in self.headings
            if span.start <= h.index < span.stop and h.level == span.level + 1
        ]
        return _list_steps(self.lines, span.start, span.stop) or _heading_steps(
            self.lines, self.headings, subs, span.stop
        )

    # ---------------------------------------------------------------- edits

    def with_section(self, name: str, new_body: str) -> SkillDoc:
        """Replace one section's text; every other byte, and the section's own margins, stay.

        A section the document lacks is added under a new heading, before the canonical section
        that follows it (description, when_to_use, steps, pitfalls) or at the end.
        """
        content = _EOL.sub("\n", new_body).strip("\n")
        if name == "description" and (
            "description" in self.frontmatter or self._span("description") is None
        ):
            return self.with_frontmatter_value("description", " ".join(content.split("\n")))
        nl = self.newline
        new_texts = content.split("\n") if content.strip() else []
        span = self._span(name)
        if span is None:
            return self._with_new_section(name, new_texts)
        lines = list(self.lines)
        if span.start < span.end:
            if not new_texts:
                # Clear the section: its blank margins collapse into the trailing ones.
                return self._splice(span.heading + 1, span.end, [])
            # Line k keeps the ending the old line k had, so unchanged text stays byte-identical
            # even in a file with mixed endings; the last line keeps the section's last ending.
            eols = [ln.eol for ln in lines[span.start : span.end]]
            raws = [t + (eols[k] if k < len(eols) - 1 else nl) for k, t in enumerate(new_texts)]
            raws[-1] = new_texts[-1] + eols[-1]
            return self._splice(span.start, span.end, raws)
        if not new_texts:
            return self
        at_end = span.stop == len(lines)
        final_eol = lines[-1].eol if at_end else nl
        heading = lines[span.heading]
        raws = [heading.text + (heading.eol or nl), nl] + [t + nl for t in new_texts]
        if not at_end:
            raws.append(nl)
        elif not final_eol:
            raws[-1] = new_texts[-1]
        return self._splice(span.heading, span.stop, raws)

    def _with_new_section(self, name: str, texts: list[str]) -> SkillDoc:
        if not texts:
            return self
        nl = self.newline
        title = _DEFAULT_TITLES.get(name, name)
        later = CANONICAL[CANONICAL.index(name) + 1 :] if name in CANONICAL else ()
        follower = next((h for h in self.headings if h.kind in later), None)
        if follower is not None:
            block = ["#" * follower.level + " " + title + nl, nl, *(t + nl for t in texts), nl]
            return self._splice(follower.index, follower.index, block)
        known = [h for h in self.headings if h.kind is not None]
        level = known[-1].level if known else 2
        lines = self.lines
        prefix: list[str] = []
        start = len(lines)
        if lines and not lines[-1].eol:
            start -= 1
            prefix.append(lines[-1].text + nl)
        if lines and not lines[-1].blank and len(lines) > self.body_start:
            prefix.append(nl)
        block = [*prefix, "#" * level + " " + title + nl, nl, *(t + nl for t in texts)]
        return self._splice(start, len(lines), block)

    def with_frontmatter_value(self, key: str, value: Any) -> SkillDoc:
        """Set one top-level frontmatter key; the other keys keep their raw text and order."""
        current = self.frontmatter.get(key, _MISSING)
        if type(current) is type(value) and current == value:
            return self
        nl = self.newline
        dumped = yaml.safe_dump(
            {key: value},
            allow_unicode=True,
            sort_keys=False,
            default_flow_style=False,
            width=2**31 - 1,
        )
        raws = [t + nl for t in dumped.rstrip("\n").split("\n")]
        if self._fm_close is None:
            return self._splice(0, 0, ["---" + nl, *raws, "---" + nl])
        # YAML keeps the last of duplicate keys, so that is the one to edit.
        entry = next((e for e in reversed(self._entries) if e.key == key), None)
        if entry is not None:
            doc = self._splice(entry.start, entry.end, raws)
        elif self.frontmatter and not self._entries:
            raise FormatError(
                self.path or SKILL_FILE,
                "frontmatter",
                "cannot edit a frontmatter written as a flow mapping; use 'key: value' lines",
            )
        else:
            doc = self._splice(self._fm_close, self._fm_close, raws)
        expected = {**self.frontmatter, key: value}
        if doc.frontmatter != expected:
            raise FormatError(
                self.path or SKILL_FILE, key, "could not be set without changing other keys"
            )
        return doc

    def _splice(self, start: int, end: int, raws: list[str]) -> SkillDoc:
        head = "".join(ln.raw for ln in self.lines[:start])
        tail = "".join(ln.raw for ln in self.lines[end:])
        return SkillDoc.parse(self.bom + head + "".join(raws) + tail, self.path)


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


# libyaml (bundled with the PyYAML wheels) is several times faster, and it accepts a tab after a
# plain scalar ("name: x<TAB>") as YAML 1.2 and the JS loaders do, where pure PyYAML refuses it.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _compose(inner: str, where: Path | str) -> tuple[yaml.Node | None, Any]:
    """The YAML node tree (for key positions) and its value; errors name the file line."""
    loader = _LOADER(inner)
    try:
        node = loader.get_single_node()
        return node, loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 2
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FormatError(where, "frontmatter", f"invalid YAML: {problem}", line=line) from None
    except ValueError as exc:  # e.g. a date-looking value such as 2024-13-45
        raise FormatError(where, "frontmatter", f"invalid YAML value: {exc}", line=2) from None
    finally:
        loader.dispose()


def _parse_frontmatter(
    inner: str, close: int, path: Path | None
) -> tuple[dict[str, Any], tuple[_Entry, ...]]:
    """The mapping and, per top-level key, the raw lines that set it (for surgical edits)."""
    where = path or SKILL_FILE
    node, data = _compose(inner, where)
    if data is None:
        return {}, ()
    if not isinstance(data, dict):
        raise FormatError(
            where, "frontmatter", f"expected a mapping of keys, got {type(data).__name__}", line=2
        )
    mapping = {str(k): v for k, v in data.items()}
    if not isinstance(node, yaml.MappingNode) or node.flow_style:
        return mapping, ()
    inner_lines = split_lines(inner)
    starts = [key.start_mark.line for key, _ in node.value]
    entries: list[_Entry] = []
    for n, (key, _) in enumerate(node.value):
        first = starts[n]
        last = starts[n + 1] if n + 1 < len(starts) else len(inner_lines)
        while last > first + 1 and (
            not inner_lines[last - 1][0].strip() or inner_lines[last - 1][0].startswith("#")
        ):
            last -= 1
        # Document index = inner index + 1 (the opening '---').
        entries.append(_Entry(str(key.value), first + 1, min(last, close - 1) + 1))
    return mapping, tuple(entries)


def _list_steps(lines: Sequence[Line], start: int, stop: int) -> list[Step]:
    items: list[tuple[int, int, str, str, int]] = []  # index, indent, kind, text, number
    for index in range(start, stop):
        ln = lines[index]
        if ln.in_code or _ATX.fullmatch(ln.text):
            continue
        num = _NUMBERED.fullmatch(ln.text)
        if num:
            items.append((index, _indent(ln.text), "n", num.group(3) or "", int(num.group(2))))
            continue
        bullet = _BULLET.fullmatch(ln.text)
        if bullet:
            items.append((index, _indent(ln.text), "b", bullet.group(2) or "", 0))
    kind = "n" if any(it[2] == "n" for it in items) else "b"
    chosen = [it for it in items if it[2] == kind]
    if not chosen:
        return []
    base = min(it[1] for it in chosen)
    starts = {it[0]: it for it in chosen if it[1] == base}
    others = {it[0] for it in items if it[1] <= base and it[0] not in starts}
    steps: list[Step] = []
    current: list[str] | None = None
    first = start
    after_blank = False
    code_taken = False
    ordinal = 0

    def flush() -> None:
        nonlocal current
        if current is not None:
            item = starts[first]
            while current and not current[-1]:
                current.pop()
            number = item[4] if kind == "n" else ordinal
            steps.append(Step(number, "\n".join(current).strip(), lines[first].number))
        current = None

    for index in range(start, stop):
        ln = lines[index]
        if index in starts:
            flush()
            ordinal += 1
            first, current, after_blank, code_taken = (
                index,
                [starts[index][3].strip()],
                False,
                False,
            )
            continue
        if current is None:
            continue
        if ln.in_code and index > start and lines[index - 1].in_code and code_taken:
            current.append(ln.text.strip())
            continue
        if ln.blank and not ln.in_code:
            after_blank = True
            current.append("")
            continue
        ends = (
            index in others
            or (not ln.in_code and _ATX.fullmatch(ln.text) is not None)
            or (after_blank and _indent(ln.text) <= base)
        )
        if ends:
            flush()
            continue
        code_taken = ln.in_code
        after_blank = False
        current.append(ln.text.strip())
    flush()
    return steps


def _heading_steps(
    lines: Sequence[Line], headings: Sequence[Heading], chosen: list[Heading], stop: int
) -> list[Step]:
    """Headings as steps: each step is its title plus the text up to the next heading."""
    steps: list[Step] = []
    for n, heading in enumerate(chosen):
        end = next(
            (h.index for h in headings if h.index > heading.index and h.level <= heading.level),
            stop,
        )
        end = min(end, stop)
        body = [ln.text.strip() for ln in lines[heading.index + 1 : end] if not ln.blank]
        match = _LEADING_NUMBER.match(heading.title)
        number = int(match.group(1)) if match else n + 1
        text = "\n".join([heading.title, *body])
        steps.append(Step(number, text, heading.line))
    return steps


__all__ = [
    "CANONICAL",
    "SKILL_FILE",
    "Heading",
    "Line",
    "SkillDoc",
    "Step",
    "canonical_section",
    "code_mask",
    "read_skill_text",
    "resolve_skill_file",
    "split_lines",
]
