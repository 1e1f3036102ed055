"""Grading one agent answer against its private rubric.

Grading is deterministic wherever it can be (label, exact, regex, contains, JSON field, script);
the only model call is an explicit ``llm_judge`` check. A check that could not be graded makes the
unit *invalid* rather than failed, so a missing judge never masquerades as an agent mistake.
Evidence per check follows skill-creator's grading.json (``text``, ``passed``, ``evidence``).
The figures over many grades live in :mod:`engine.evaluation.metrics`; ``metrics`` and ``compare``
are
re-exported here because the team API names them under grading.
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

from engine.core.benchmark import Benchmark, Case, Check, normalise_label, token_regex
from engine.core.errors import SkillsmithError
from engine.core.unfollowed import read_inside
from engine.evaluation.metrics import Comparison, Metrics, compare, metrics

EVIDENCE_CHARS = 300
# Only these reach a check script: a rubric script must not see API keys or the workspace.
_SCRIPT_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT")

FailureKind = Literal["FN", "FP"]


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
    matches = list(re.finditer(pattern, answer, re.IGNORECASE | re.MULTILINE))
    if not matches:
        return None
    raw = normalise_label(matches[-1].group(1) or "")
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


def _check_regex(answer: str, check: Check) -> tuple[bool, str]:
    flags = re.MULTILINE | (0 if check.case_sensitive else re.IGNORECASE)
    match = re.search(str(check.value), answer, flags)
    if match is None:
        return False, "no match in the answer"
    return True, f"matched {match.group(0)[:EVIDENCE_CHARS]!r}"


def _check_contains(answer: str, check: Check) -> tuple[bool, str]:
    pattern = token_regex(str(check.value))
    match = re.search(pattern, answer, 0 if check.case_sensitive else re.IGNORECASE)
    if match is None:
        return False, "not found in the answer"
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


def _check_json_field(answer: str, check: Check) -> tuple[bool, str]:
    for candidate in _json_candidates(answer):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        found, value = _json_path(data, str(check.path))
        if not found:
            return False, f"JSON has no field {check.path}"
        want = check.value
        if isinstance(want, str) and isinstance(value, str):
            ok = _squash(value, check.case_sensitive) == _squash(want, check.case_sensitive)
        else:
            ok = value == want and type(value) is type(want)
        return ok, f"{check.path} = {json.dumps(value)[:EVIDENCE_CHARS]}"
    return False, "no JSON object found in the answer"


def _script_command(script: Path) -> list[str]:
    if os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, str(script)]


def _check_script(answer: str, check: Check, case: Case, run_dir: Path) -> tuple[bool, str]:
    """Run a rubric script: answer on stdin, run dir as argv[1], cwd the rubric folder."""
    script = case.rubric_dir / str(check.path)
    env = {k: v for k, v in os.environ.items() if k in _SCRIPT_ENV}
    proc = subprocess.Popen(
        [*_script_command(script), str(run_dir)],
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
    "You grade one answer of an agent against one criterion. Reply with PASS or FAIL on the "
    "first line, then one line of evidence quoting the answer."
)


def _check_llm_judge(
    answer: str, check: Check, expected: str | None, llm: JudgeModel | None
) -> tuple[bool | None, str]:
    if llm is None:
        return None, "not graded: no judge model was given"
    prompt = f"Criterion: {check.criteria}\n"
    if expected:
        prompt += f"Expected answer: {expected}\n"
    prompt += f"<answer>\n{answer}\n</answer>"
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
) -> Grade:
    """Score ``answer`` by the weighted checks of ``case``'s rubric."""
    expected = case.rubric.expected
    verdict = extract_verdict(answer, bench.label_pattern, bench.labels)
    results: list[CheckResult] = []
    with contextlib.ExitStack() as stack:
        for check in case.rubric.checks:
            passed: bool | None
            if check.kind == "label":
                passed, evidence = _check_label(verdict, expected)
            elif check.kind == "exact":
                passed, evidence = _check_exact(answer, check, expected)
            elif check.kind == "regex":
                passed, evidence = _check_regex(answer, check)
            elif check.kind == "contains":
                passed, evidence = _check_contains(answer, check)
            elif check.kind == "json_field":
                passed, evidence = _check_json_field(answer, check)
            elif check.kind == "script":
                if run_dir is None:
                    run_dir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
                passed, evidence = _check_script(answer, check, case, run_dir)
            else:
                passed, evidence = _check_llm_judge(answer, check, expected, llm)
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
