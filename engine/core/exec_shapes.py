"""Commands that run code nobody reviewed, recognised by their shape rather than by a list.

A blocklist of ``curl … | bash`` spellings was passed by every variation the hostile pass tried:
a download saved to a file and run on the next command, a base64 blob decoded into ``sh``, a
``| \\`` continuation into ``bash`` on the next line, ``os.system("curl …; bash …")``. What those
have in common is a shape — text that did not come from the skill becomes the *program* of a
shell or an interpreter — and these rules look for the shape:

* ``destructive.pipe_to_shell``: a pipe into any shell or interpreter that then runs its standard
  input as the program (``| sh``, ``| sudo -E bash -s --``, ``| python3 -``, ``| iex``), and a
  shell, interpreter, ``eval`` or ``source`` handed fetched or decoded text through ``$(…)`` or
  ``<(…)``. Data piped into a named script (``| python3 scripts/clean.py``, ``| jq .``,
  ``| bash -c '…'``) is not a program and passes.
* ``destructive.download_then_run``: a file a fetch wrote (``curl -o``, ``curl -O``, ``wget``,
  ``> file``, ``-OutFile``, ``urlretrieve``) later run as a program (``sh /tmp/i.sh``, ``./i.sh``,
  ``python get-pip.py``, ``source i.sh``), anywhere later in the same text.
* ``destructive.exec_payload``: ``eval``/``exec``/``Function`` of fetched or decoded data, and
  ``os.system``/``subprocess``/``child_process`` running a command that fetches and runs, or
  decodes.

Rules run on *logical* lines: a line ending in ``\\`` (or in ``|``, ``&&``, ``||``) is joined with
the next, so a pipeline split over lines is judged whole; the finding names its first line and
how many lines it spans.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from engine.core.findings import Rule, Severity

_SHELLS = r"(?:ba|z|k|da|fi|a|c|tc|mk)?sh"
_INTERPRETERS = (
    r"python(?:[23](?:\.\d+)?)?|pypy3?|perl|ruby|node(?:js)?|php|lua|pwsh|powershell|deno|bun"
    r"|osascript|tclsh|Rscript"
)
# what may stand between a pipe (or a command start) and the program it runs
_PREFIX = (
    r"(?:(?:sudo|doas)\s+(?:-\S+\s+)*|env\s+(?:-\S+\s+)*(?:\w+=\S*\s+)*|command\s+|exec\s+"
    r"|nohup\s+|time\s+)*(?:[\w./-]*/)?"
)
_FETCH = re.compile(
    r"(?i)\b(?:curl|wget|aria2c|invoke-webrequest|iwr|invoke-restmethod|irm|urlopen|urlretrieve"
    r"|requests\.get|httpx\.get|urllib\.request|fetch\s*\()|https?://"
)
_DECODE = re.compile(
    r"(?i)\bbase64\s+(?:-\S+\s+)*(?:-[a-z]*d[a-z]*|--decode)\b|\bb64decode\b|\batob\s*\("
    r"|\bxxd\s+(?:-\S+\s+)*-r|\bopenssl\s+(?:base64|enc)\b[^|;]*\s-d\b|\buudecode\b"
    r"|\bfromhex\b|\bcodecs\.decode\b|\bzlib\.decompress\b|\bmarshal\.loads\b"
    r"|\b(?:gunzip|zcat|bzcat|xzcat)\b|\bgzip\s+(?:-\S+\s+)*-[a-z]*d"
)
_RUNNER = re.compile(rf"(?<![\w.-])(?:{_SHELLS}|{_INTERPRETERS})(?![\w.-])")
_TOKEN_END = "\\s;&|'\"`)<>"


@dataclass(frozen=True)
class LogicalLine:
    """Physical lines ``first``..``first + span - 1`` joined into the command they form."""

    first: int
    span: int
    text: str


_CONTINUES = re.compile(r"(?:\\|\|\||&&|(?<!\|)\|)\s*$")


def logical_lines(lines: list[str]) -> list[LogicalLine]:
    """``lines`` with every continued command joined: a trailing ``\\`` is removed (as the shell
    does), a trailing ``|``, ``&&`` or ``||`` kept."""
    out: list[LogicalLine] = []
    number = 0
    while number < len(lines):
        first, parts = number, [lines[number]]
        while _CONTINUES.search(parts[-1]) and number + 1 < len(lines):
            if parts[-1].rstrip().endswith("\\") and not parts[-1].rstrip().endswith("\\\\"):
                parts[-1] = parts[-1].rstrip()[:-1]
            number += 1
            parts.append(lines[number])
        out.append(LogicalLine(first + 1, len(parts), " ".join(p.strip() for p in parts)))
        number += 1
    return out


def _args(text: str) -> list[str]:
    # up to the next ; & | quote ( ) < > — or the prose after a command in a sentence
    end = re.search(rf"[{_TOKEN_END[2:]}(\n]", text)
    return text[: end.start() if end else len(text)].split()


def _reads_program_from_stdin(program: str, args: list[str]) -> bool:
    """Whether ``program args`` takes its program from standard input: no ``-c``/``-e``/``-m``
    and no script file before ``-s``, ``-`` or ``--``."""
    if program.lower() in ("iex", "invoke-expression"):
        return True
    shell = re.fullmatch(_SHELLS, program) is not None
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in ("-s", "-", "--"):
            return True
        if arg in ("-o", "-O", "+O", "-W", "-X"):  # an option taking a value
            skip = True
            continue
        if arg.startswith("-") and not arg.startswith("--"):
            given = "c" if shell else "cemrE"
            if any(flag in arg[1:] for flag in given):
                return False
            continue
        if arg.startswith("--") or not arg.strip(".,:;!?"):  # an option, or a sentence's end
            continue
        return False  # a script file: what comes down the pipe is its data
    return True


def _pipe(match: re.Match[str], line: str) -> Severity | None:
    if line.lstrip().startswith("|"):  # a Markdown table row, not a pipeline
        return None
    if "program" in match.re.groupindex:
        return (
            "error" if _reads_program_from_stdin(match["program"], _args(match["args"])) else None
        )
    inner = match["inner"]
    return "error" if _FETCH.search(inner) or _DECODE.search(inner) else None


PIPE_TO_SHELL = Rule(
    "destructive.pipe_to_shell",
    ("|", "$(", "<("),
    "destructive",
    "runs piped, fetched or decoded text as a program",
    (
        re.compile(
            r"(?<!\|)\|&?(?!\|)\s*"
            + _PREFIX
            + r"(?P<program>"
            + _SHELLS
            + "|"
            + _INTERPRETERS
            + r"|iex|Invoke-Expression)(?![\w-]|\.\w)(?P<args>[^|;&`\n]*)"
        ),
        re.compile(
            r"(?<![\w.-])(?:" + _SHELLS + "|" + _INTERPRETERS + r"|eval|source|exec|(?<!\S)\.)"
            r"\s+(?:-\S+\s+)*[\"']?(?:\$\(|<\()(?P<inner>[^)]*)"
        ),
    ),
    _pipe,
)


# -- download, then run ------------------------------------------------------------------------

_FETCH_COMMAND = re.compile(
    r"(?i)(?<![\w-])(?:curl|wget|aria2c|invoke-webrequest|iwr)\b(?P<args>[^;&|\n]*)"
)
_URL = re.compile(r"https?://[^\s'\"`)<>]+")
_OUTPUT = re.compile(
    r"(?:\s-o\s*|\s--output[=\s]+|\s-O\s+|\s--output-document[=\s]+|\s-outfile\s+|>>?\s*)"
    rf"(?P<file>[^{_TOKEN_END}]+)",
    re.IGNORECASE,
)
_RETRIEVE = re.compile(r"urlretrieve\s*\([^,]*,\s*[rbf]*[\"'](?P<file>[^\"']+)")


def fetched_files(text: str) -> set[str]:
    """The base names of every file a fetch in ``text`` writes: its ``-o``/``-O``/``> file``
    target, or for ``curl -O`` and a plain ``wget`` the last part of the URL."""
    names: set[str] = set()
    for match in _FETCH_COMMAND.finditer(text):
        args = match["args"]
        targets = [m["file"] for m in _OUTPUT.finditer(args) if m["file"] != "-"]
        remote_name = re.search(r"\s-[a-zA-Z]*O(?:\s|$)|--remote-name\b", args) is not None
        wget = match.group(0).lower().startswith("wget") and not targets
        if not targets and (remote_name or wget):
            targets = [m.group(0).split("?")[0].rstrip("/") for m in _URL.finditer(args)]
        names.update(PurePosixPath(t).name for t in targets if PurePosixPath(t).name)
    names.update(PurePosixPath(m["file"]).name for m in _RETRIEVE.finditer(text))
    return names


def _runs_fetched(match: re.Match[str], context: str) -> Severity | None:
    _line, _sep, fetched = context.partition("\n")
    return "error" if PurePosixPath(match["file"]).name in fetched.split("\n") else None


DOWNLOAD_THEN_RUN = Rule(
    "destructive.download_then_run",
    ("/", "sh", "python", "perl", "ruby", "node", "php", "source", ". "),
    "destructive",
    "runs a file it downloaded",
    (
        re.compile(
            r"(?:(?<![\w.-])(?:" + _SHELLS + "|" + _INTERPRETERS + r"|source)\s+(?:-\S+\s+)*"
            r"|(?:^|[;&|(`]|\bthen|\bdo|\bsudo|(?<!\S)\.)\s*"
            r"(?!(?:" + _SHELLS + "|" + _INTERPRETERS + r"|source|sudo|env)\s|\.\s))"
            rf"(?P<file>[^{_TOKEN_END}-][^{_TOKEN_END}]*)"
        ),
    ),
    _runs_fetched,
    lookahead=True,
)


# -- eval / exec / os.system with a fetched or decoded payload ----------------------------------

_EVALUATORS = ("exec", "eval", "execfile", "compile", "Function")


def _payload(match: re.Match[str], _line: str) -> Severity | None:
    call, arg = match["call"], match["arg"]
    if _DECODE.search(arg):
        return "error"
    if call.split(".")[-1].split()[-1] in _EVALUATORS:
        return "error" if _FETCH.search(arg) else None
    # a shell command: fetching is ordinary, fetching and running is not
    if _FETCH.search(arg) and _RUNNER.search(arg):
        return "error"
    return "error" if PIPE_TO_SHELL.check(arg) else None


EXEC_PAYLOAD = Rule(
    "destructive.exec_payload",
    ("system", "popen", "subprocess", "exec", "eval", "compile", "function", "spawn", "iex"),
    "destructive",
    "evaluates or runs fetched or decoded code",
    (
        re.compile(
            r"(?P<call>\bos\.(?:system|popen|exec\w*|spawn\w*)|\bsubprocess\.\w+"
            r"|\bchild_process\.exec\w*|(?<![\w.])execSync|\bpty\.spawn|(?<![\w.])system"
            r"|(?<![\w.])(?:exec|eval|execfile|compile)|\bnew\s+Function)\s*\((?P<arg>.*)"
        ),
    ),
    _payload,
)

SHAPE_RULES: tuple[Rule, ...] = (PIPE_TO_SHELL, DOWNLOAD_THEN_RUN, EXEC_PAYLOAD)


def check_shapes(lines: list[str]) -> Iterable[tuple[Rule, LogicalLine, Severity, str]]:
    """Every shape rule's first hit on every logical line of ``lines``."""
    logical = logical_lines(lines)
    fetched = "\n".join(sorted(fetched_files("\n".join(line.text for line in logical))))
    for line in logical:
        lowered = line.text.lower()
        for rule in SHAPE_RULES:
            if rule is DOWNLOAD_THEN_RUN and not fetched:
                continue
            if not any(hint in lowered for hint in rule.hints):
                continue
            hit = rule.check(line.text, fetched)
            if hit is not None:
                yield rule, line, hit[0], hit[1]


__all__ = [
    "DOWNLOAD_THEN_RUN",
    "EXEC_PAYLOAD",
    "PIPE_TO_SHELL",
    "SHAPE_RULES",
    "LogicalLine",
    "check_shapes",
    "fetched_files",
    "logical_lines",
]
