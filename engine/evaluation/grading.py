"""Grading one agent run against its private rubric: its answer and the files it left.

Grading is deterministic wherever it can be (label, exact, regex, contains, JSON field, file,
script); the only model call is an explicit ``llm_judge`` check. Real skills are judged by what
they produce, so ``file`` checks, scripts and the judge read the run's kept outputs
(engine.core.outputs), never the agent's claims about them. Every check has a time limit.
A check that could not be graded makes the unit *invalid* rather than failed, so a missing judge
never masquerades as an agent mistake. Evidence per check follows skill-creator's grading.json
(``text``, ``passed``, ``evidence``). The figures over many grades live in
:mod:`engine.evaluation.metrics`; ``metrics`` and ``compare`` are re-exported here because the
team API names them under grading.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import regex

from engine.core.benchmark import Benchmark, Case, Check, normalise_label, token_regex
from engine.core.errors import SkillsmithError
from engine.core.outputs import Outputs
from engine.core.strict_json import Refused, load_line
from engine.core.unfollowed import read_inside
from engine.evaluation.metrics import Comparison, Metrics, compare, metrics

EVIDENCE_CHARS = 300
# Only these reach a check script: a rubric script must not see API keys or the workspace.
_SCRIPT_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT")

# How long reading the verdict may take: a label_pattern that backtracks catastrophically on an
# answer must not hang grading (a regex check has its own ``timeout_s``).
LABEL_TIMEOUT_S = 10.0

FailureKind = Literal["FN", "FP"]


class CheckTimeout(SkillsmithError):
    """A check ran past its time limit: it says nothing about the answer, so it is ungraded."""


def search(
    pattern: str, text: str, flags: int, limit_s: float, *, last: bool = False
) -> regex.Match[str] | None:
    """``re.search`` (or the last match) with a time limit; :class:`CheckTimeout` past it.

    Python's ``re`` cannot be interrupted, and holds the GIL while it backtracks; the ``regex``
    module (the same syntax) can stop itself, and releases the GIL while it matches.
    """
    try:
        if not last:
            return regex.search(pattern, text, flags, timeout=limit_s, concurrent=True)
        found = None
        for match in regex.finditer(pattern, text, flags, timeout=limit_s, concurrent=True):
            found = match
        return found
    except TimeoutError:
        raise CheckTimeout(f"/{pattern[:60]}/ timed out after {limit_s:g}s") from None


class JudgeModel(Protocol):
    """What an llm_judge check needs from ``engine.evaluation.llm.LLM`` (the same method)."""

    def complete(
        self, system: str, messages: list[dict[str, Any]], *, max_tokens: int | None = None
    ) -> Any: ...


@dataclass
class CheckResult:
    text: str
    passed: bool
    evidence: str
    weight: float
    kind: str
    graded: bool = True

    def to_record(self) -> dict[str, Any]:
        return {"text": self.text, "passed": self.passed, "evidence": self.evidence}


@dataclass
class Grade:
    score: float
    passed: bool
    verdict: str | None
    failure_kind: FailureKind | None
    checks: list[CheckResult] = field(default_factory=list)
    invalid_reason: str | None = None

    @property
    def valid(self) -> bool:
        return self.invalid_reason is None

    @property
    def pass_fail(self) -> Literal["pass", "fail", "invalid"]:
        if not self.valid:
            return "invalid"
        return "pass" if self.passed else "fail"

    def row_fields(self) -> dict[str, Any]:
        """The grading part of a results.jsonl row (the runner adds identity, usage, timing)."""
        return {
            "judge_verdict": self.verdict,
            "pass_fail": self.pass_fail,
            "failure_kind": self.failure_kind,
            "score": self.score,
            "checks": [c.to_record() for c in self.checks],
            "invalid_reason": self.invalid_reason,
        }


# -- the answer --------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # Claude-style content blocks
        parts = [b.get("text", "") for b in content if isinstance(b, dict)]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    return ""


def answer_of(run_dir: Path | None, session_lines: list[dict[str, Any]]) -> str:
    """``answer.txt`` if the agent wrote one, else the content of the last assistant line."""
    if run_dir is not None:  # the agent's folder: a link there is not followed (unfollowed.py)
        data = read_inside(Path(run_dir), "answer.txt")
        if data is not None:
            return data.decode("utf-8", errors="replace")
    for line in reversed(session_lines):
        if line.get("type") == "assistant":
            text = _text_of(line.get("content"))
            if text:
                return text
    return ""


def extract_verdict(answer: str, pattern: str, labels: list[str]) -> str | None:
    """The agent's label: group 1 of the LAST match of ``pattern`` (the final word counts).

    A declared label is returned in its declared spelling; anything else normalised.
    """
    match = search(pattern, answer, regex.IGNORECASE | regex.MULTILINE, LABEL_TIMEOUT_S, last=True)
    if match is None:
        return None
    raw = normalise_label(match.group(1) or "")
    if not raw:
        return None
    return next((lb for lb in labels if normalise_label(lb) == raw), raw)


# -- check kinds -------------------------------------------------------------------------------


def _squash(text: str, case_sensitive: bool) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if case_sensitive else text.casefold()


def _snippet(text: str, start: int = 0, end: int | None = None) -> str:
    end = len(text) if end is None else end
    lo, hi = max(0, start - 60), min(len(text), end + 60)
    piece = re.sub(r"\s+", " ", text[lo:hi]).strip()
    return piece[:EVIDENCE_CHARS]


def _check_label(verdict: str | None, expected: str | None) -> tuple[bool, str]:
    if verdict is None:
        return False, "no verdict found (label_pattern did not match the answer)"
    ok = expected is not None and normalise_label(verdict) == normalise_label(expected)
    return ok, f"verdict {verdict!r}"


def _check_exact(answer: str, check: Check, expected: str | None) -> tuple[bool, str]:
    want = str(check.value) if check.value is not None else str(expected)
    got = _squash(answer, check.case_sensitive)
    return got == _squash(want, check.case_sensitive), f"answer was {_snippet(answer)!r}"


def _check_regex(answer: str, check: Check, where: str = "the answer") -> tuple[bool, str]:
    flags = regex.MULTILINE | (0 if check.case_sensitive else regex.IGNORECASE)
    match = search(str(check.value), answer, flags, check.timeout_s)
    if match is None:
        return False, f"no match in {where}"
    return True, f"matched {match.group(0)[:EVIDENCE_CHARS]!r}"


def _check_contains(answer: str, check: Check, where: str = "the answer") -> tuple[bool, str]:
    pattern = token_regex(str(check.value))
    match = re.search(pattern, answer, 0 if check.case_sensitive else re.IGNORECASE)
    if match is None:
        return False, f"not found in {where}"
    return True, f"found in: {_snippet(answer, match.start(), match.end())!r}"


def _json_candidates(answer: str) -> list[str]:
    fenced = re.findall(r"```(?:json)?\s*\n(.*?)```", answer, re.DOTALL)
    braces = [answer[answer.find("{") : answer.rfind("}") + 1]] if "{" in answer else []
    return [answer, *reversed(fenced), *braces]


def _json_path(data: Any, path: str) -> tuple[bool, Any]:
    for part in re.findall(r"[^.\[\]]+", path):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return False, None
    return True, data


def _check_json_field(
    answer: str, check: Check, field_path: str | None = None, where: str = "the answer"
) -> tuple[bool, str]:
    """``field_path`` (default the check's ``path``) of the JSON in ``answer`` equals the value.

    The JSON is the agent's: it is read as strictly as its output lines (no NaN, no nesting
    that would exhaust the stack), so a hostile answer fails the check instead of grading.
    """
    field_path = field_path or str(check.path)
    for candidate in _json_candidates(answer):
        try:
            data = load_line(candidate)
        except Refused:
            continue
        found, value = _json_path(data, field_path)
        if not found:
            return False, f"JSON has no field {field_path}"
        want = check.value
        if isinstance(want, str) and isinstance(value, str):
            ok = _squash(value, check.case_sensitive) == _squash(want, check.case_sensitive)
        else:
            ok = value == want and type(value) is type(want)
        return ok, f"{field_path} = {json.dumps(value)[:EVIDENCE_CHARS]}"
    return False, f"no JSON object found in {where}"


def _check_file(check: Check, outputs: Outputs | None) -> tuple[bool | None, str]:
    """A test of one output the agent left (kept under runs/<id>/outputs/<unit>/)."""
    if outputs is None:
        return None, "not graded: the run's outputs were not kept"
    entry = outputs.get(str(check.path))
    if entry is None:
        return False, f"no output {check.path}"
    if entry.kind == "link":
        return False, f"{check.path} is a link to {entry.target!r} (links are not followed)"
    if entry.kind != "file" or entry.data is None:
        return False, f"{check.path} was not kept ({entry.note})"
    if check.match == "exists":
        return True, f"{check.path}: {entry.size} bytes"
    text = entry.text
    if text is None:
        return False, f"{check.path} is not text ({entry.media_type}, {entry.size} bytes)"
    where = check.path or ""
    if check.match == "equals":
        ok = _squash(text, check.case_sensitive) == _squash(str(check.value), check.case_sensitive)
        return ok, f"{where} was {_snippet(text)!r}"
    if check.match == "contains":
        return _check_contains(text, check, where)
    if check.match == "regex":
        return _check_regex(text, check, where)
    return _check_json_field(text, check, check.field, where)


def _script_command(script: Path) -> list[str]:
    if os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, str(script)]


def _check_script(
    answer: str, check: Check, case: Case, run_dir: Path, kept: Path
) -> tuple[bool, str]:
    """Run a rubric script: answer on stdin, run dir as argv[1], the kept outputs as argv[2],
    cwd the rubric folder."""
    script = case.rubric_dir / str(check.path)
    env = {k: v for k, v in os.environ.items() if k in _SCRIPT_ENV}
    proc = subprocess.Popen(
        [*_script_command(script), str(run_dir), str(kept)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=case.rubric_dir,
        env=env,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(answer.encode("utf-8"), timeout=check.timeout_s)
    except subprocess.TimeoutExpired:
        # The script may have forked; its whole process group goes, not just the leader.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return False, f"timed out after {check.timeout_s:g}s"
    tail = out.decode("utf-8", errors="replace").strip()[-EVIDENCE_CHARS:]
    return proc.returncode == 0, f"exit {proc.returncode}" + (f": {tail}" if tail else "")


JUDGE_SYSTEM = (
    "You grade one run of an agent against one criterion, from what it shows: the task, the "
    "agent's steps, the files it left and its answer. Reply with PASS or FAIL on the first "
    "line, then one line of evidence quoting what decides it."
)


def _check_llm_judge(prompt: str, llm: JudgeModel | None) -> tuple[bool | None, str]:
    if llm is None:
        return None, "not graded: no judge model was given"
    try:
        reply = llm.complete(JUDGE_SYSTEM, [{"role": "user", "content": prompt}], max_tokens=300)
    except SkillsmithError as exc:
        return None, f"not graded: judge failed ({exc})"
    text = str(getattr(reply, "text", reply))
    match = re.search(r"\b(PASS|FAIL)\b", text)
    if match is None:
        return None, f"not graded: judge reply has no PASS/FAIL ({text[:80]!r})"
    evidence = re.sub(r"\s+", " ", text[match.end() :]).strip(" :-")[:EVIDENCE_CHARS]
    return match.group(1) == "PASS", evidence or match.group(1)


# -- the grade ---------------------------------------------------------------------------------


def _run_check(
    stack: contextlib.ExitStack,
    bench: Benchmark,
    case: Case,
    check: Check,
    answer: str,
    verdict: str | None,
    llm: JudgeModel | None,
    run_dir: Path | None,
    outputs: Outputs | None,
    session: list[dict[str, Any]] | None,
) -> tuple[bool | None, str]:
    expected = case.rubric.expected
    if check.kind == "label":
        return _check_label(verdict, expected)
    if check.kind == "exact":
        return _check_exact(answer, check, expected)
    if check.kind == "regex":
        return _check_regex(answer, check)
    if check.kind == "contains":
        return _check_contains(answer, check)
    if check.kind == "json_field":
        return _check_json_field(answer, check)
    if check.kind == "file":
        return _check_file(check, outputs)
    if check.kind == "script":
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        kept = scratch / "outputs"
        (outputs or Outputs()).write(kept)
        return _check_script(answer, check, case, run_dir or scratch, kept)
    from engine.evaluation.judge_view import judge_request  # deferred: it reads trace summaries

    request = judge_request(case, check, answer, session=session, outputs=outputs)
    return _check_llm_judge(request, llm)


def failure_kind(
    expected: str | None, verdict: str | None, labels: list[str]
) -> FailureKind | None:
    """FN/FP for binary labels; a missing or foreign verdict counts as the wrong class.

    Counting a non-answer as wrong keeps the confusion matrix consistent with pass/fail: on a
    positive case it is a miss (FN), on a negative case an unjustified alarm (FP).
    """
    if len(labels) != 2 or expected is None:
        return None
    positive, negative = normalise_label(labels[0]), normalise_label(labels[1])
    want = normalise_label(expected)
    got = normalise_label(verdict) if verdict is not None else None
    if got == want:
        return None
    if want == positive:
        return "FN"
    return "FP" if want == negative else None


def grade(
    bench: Benchmark,
    case: Case,
    answer: str,
    *,
    llm: JudgeModel | None = None,
    run_dir: Path | None = None,
    outputs: Outputs | None = None,
    session: list[dict[str, Any]] | None = None,
) -> Grade:
    """Score ``answer`` by the weighted checks of ``case``'s rubric.

    ``outputs`` are the files the agent left (file checks, script checks and the judge read
    them); ``session`` its transcript, summarised for the judge. A check past its time limit is
    ungraded, which makes the unit invalid rather than failed.
    """
    expected = case.rubric.expected
    try:
        verdict = extract_verdict(answer, bench.label_pattern, bench.labels)
        timed_out = None
    except CheckTimeout as exc:
        verdict, timed_out = None, f"label_pattern {exc}"
    results: list[CheckResult] = []
    with contextlib.ExitStack() as stack:
        for check in case.rubric.checks:
            passed: bool | None
            try:
                passed, evidence = _run_check(
                    stack, bench, case, check, answer, verdict, llm, run_dir, outputs, session
                )
            except CheckTimeout as exc:
                passed, evidence = None, f"not graded: {exc}"
            if check.kind == "label" and timed_out is not None:
                passed, evidence = None, f"not graded: {timed_out}"
            results.append(
                CheckResult(
                    text=check.describe(expected),
                    passed=bool(passed),
                    evidence=evidence,
                    weight=check.weight,
                    kind=check.kind,
                    graded=passed is not None,
                )
            )
    total = sum(r.weight for r in results)
    score = sum(r.weight for r in results if r.passed) / total if total else 0.0
    ungraded = [i for i, r in enumerate(results) if not r.graded]
    invalid = None
    if ungraded:
        invalid = (
            f"check {ungraded[0]} ({results[ungraded[0]].kind}) {results[ungraded[0]].evidence}"
        )
    return Grade(
        score=round(score, 6),
        passed=invalid is None and score >= bench.pass_threshold - 1e-9,
        verdict=verdict,
        failure_kind=failure_kind(expected, verdict, bench.labels),
        checks=results,
        invalid_reason=invalid,
    )


__all__ = [
    "CheckResult",
    "Comparison",
    "Grade",
    "JudgeModel",
    "Metrics",
    "answer_of",
    "compare",
    "extract_verdict",
    "failure_kind",
    "grade",
    "metrics",
]
