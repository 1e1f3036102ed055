"""Build real session files and run folders for the trace / diagnosis / GT-audit tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.core.skill import SkillDoc, Step

TRACE_DATA = Path(__file__).parent / "data" / "traces"
SKILL_NAME = "vuln-audit"
SKILL_TEXT = (TRACE_DATA / "vuln-audit.SKILL.md").read_text(encoding="utf-8")

# The backticked commands of the fixture skill's steps 1–4 (step 5 has none).
STEP_COMMANDS = {
    1: 'grep -rn "@PostMapping" src',
    2: "sed -n 1,200p src/PayController.java",
    3: 'grep -rn "ServiceImpl" src/main/java',
    4: "grep -rn checkOwner src",
}

Call = tuple[str, str, str, bool]  # name, args, result, is_error


def skill_steps() -> list[Step]:
    return SkillDoc.parse(SKILL_TEXT).steps


def session_lines(
    calls: Sequence[Call],
    final: str,
    *,
    prompt: str = "Audit PayController. Answer with VERDICT: vulnerable or VERDICT: safe.",
    result: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """A transcript in the brief's session format: one assistant line per call, then the answer."""
    lines: list[dict[str, Any]] = [{"type": "user", "content": prompt}]
    for n, (name, args, output, is_error) in enumerate(calls, start=1):
        cid = f"t{n}"
        lines.append(
            {
                "type": "assistant",
                "content": "",
                "tool_calls": [{"id": cid, "name": name, "args": args}],
            }
        )
        lines.append(
            {
                "type": "tool",
                "tool_name": name,
                "tool_call_id": cid,
                "result": output,
                "is_error": is_error,
            }
        )
    lines.append({"type": "assistant", "content": final})
    closing = {"type": "result", "tokens": {"input": 1000, "output": 200}, "is_error": False}
    closing.update(result or {})
    lines.append(closing)
    return lines


def write_jsonl(path: Path, lines: Sequence[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
    return path


def ok(name: str, args: str, result: str = "ok") -> Call:
    return (name, args, result, False)


def err(name: str, args: str, result: str) -> Call:
    return (name, args, result, True)


def step_calls(*numbers: int) -> list[Call]:
    """Bash calls that run the given steps' exact commands."""
    return [ok("Bash", STEP_COMMANDS[n], f"output of step {n}") for n in numbers]


def worked_example_calls() -> list[Call]:
    """The article's biz-vul-037 trace: 67 calls (Read 38, Grep 21, Bash 8), one error, the
    commands of steps 1, 2 and 4 run, step 3's never."""
    reads = [ok("Read", f"skills/{SKILL_NAME}/SKILL.md", "---\nname: vuln-audit")]
    reads += [ok("Read", f"src/main/java/pay/File{i:02d}.java", "class X {}") for i in range(36)]
    reads.append(err("Read", "src/main/resources/secret.properties", "EACCES: permission denied"))
    greps = [ok("Grep", f"pattern{i:02d} src", "src/A.java:1: match") for i in range(21)]
    bash = step_calls(1, 2, 4) + [ok("Bash", f"ls src/main/java/pay/dir{i}") for i in range(5)]
    # interleave deterministically so the skeleton looks like real work
    calls: list[Call] = []
    calls += bash[:2] + reads[:20] + greps[:10] + bash[2:3] + reads[20:] + greps[10:] + bash[3:]
    return calls


WORKED_FINAL = (
    "The endpoint only calls RewardFacade; the facade signature validates its input.\n"
    "STEPS DONE: 1, 2, 3, 4\nVERDICT: safe"
)


def row(
    case_id: str,
    outcome: str,
    *,
    run_index: int = 0,
    variant: str = "skill",
    label: str = "vulnerable",
    case_type: str | None = None,
) -> dict[str, Any]:
    """A results.jsonl row; ``outcome`` is pass, FN, FP, fail or invalid."""
    other = {"vulnerable": "safe", "safe": "vulnerable"}.get(label, "other")
    verdict = label if outcome == "pass" else (None if outcome == "invalid" else other)
    stem = f"{case_id}.{run_index}" + ("" if variant == "skill" else f".{variant}")
    return {
        "case_id": case_id,
        "run_index": run_index,
        "variant": variant,
        "ground_truth": label,
        "judge_verdict": verdict,
        "pass_fail": outcome if outcome in ("pass", "invalid") else "fail",
        "failure_kind": outcome if outcome in ("FN", "FP") else None,
        "score": 1.0 if outcome == "pass" else 0.0,
        "checks": [],
        "tokens": {"input": 1000, "output": 200},
        "cost_usd": None,
        "duration_ms": 1000,
        "session_id": f"s-{stem}",
        "session_file": f"sessions/{stem}.jsonl",
        "invalid_reason": None,
        "split": "selection",
        "case_type": case_type,
        "critical": False,
    }


def write_run(
    folder: Path,
    units: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]],
    *,
    skill_text: str | None = SKILL_TEXT,
    manifest: dict[str, Any] | None = None,
) -> Path:
    """A run folder as the runner writes it: manifest, results.jsonl, sessions/, inputs/."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps(manifest or {"status": "finished"}))
    write_jsonl(folder / "results.jsonl", [r for r, _ in units])
    for r, lines in units:
        write_jsonl(folder / r["session_file"], lines)
    if skill_text is not None:
        target = folder / "inputs" / "skill" / SKILL_NAME / "SKILL.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(skill_text, encoding="utf-8")
    return folder


def clean_calls() -> list[Call]:
    """A flawless trace: the skill loaded, every checkable step run."""
    return [ok("Skill", SKILL_NAME), *step_calls(1, 2, 3, 4)]


def thirteen_failures_run(folder: Path) -> Path:
    """13 failing cases: 5 FN + progress_mismatch (38 %), 3 FP + no_tool_calls (23 %), 5 clean
    failures (undiagnosed); plus 6 passing cases, one of them retrying a failed call."""
    units: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for i in range(5):
        calls = [ok("Skill", SKILL_NAME), *step_calls(1, 2, 4)]
        units.append((row(f"fn-{i}", "FN"), session_lines(calls, WORKED_FINAL)))
    for i in range(3):
        units.append(
            (
                row(f"fp-{i}", "FP", label="safe"),
                session_lines([ok("Skill", SKILL_NAME)], "Looks exploitable.\nVERDICT: vulnerable"),
            )
        )
    for i in range(5):
        final = "STEPS DONE: 1, 2, 3, 4\nVERDICT: safe"
        units.append((row(f"clean-{i}", "FN"), session_lines(clean_calls(), final)))
    for i in range(6):
        calls = clean_calls()
        if i == 0:
            failing = err("Bash", "python scan.py", "Traceback: ImportError")
            calls = [*calls, failing, failing, failing]
        final = "STEPS DONE: 1, 2, 3, 4\nVERDICT: vulnerable"
        units.append((row(f"pass-{i}", "pass"), session_lines(calls, final)))
    return write_run(folder, units)
