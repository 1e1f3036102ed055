"""What the model proposer reads, and how its answer becomes a diff.

The article keeps the proposer's input under 10 KB — the current SKILL.md (~5 KB), the
attribution summary (~2 KB), the ground-truth audit (~0.5 KB) and the taboo list (~0.5 KB) —
because a short input keeps the model on the one thing asked. The answer must be a unified diff
and nothing else: prose cannot be applied, compared or undone. Models misnumber hunks and wrap
diffs in fences or chatter, so the extraction takes the diff out of a fence or bare text and
recounts hunk lengths from the hunk bodies; anything else unusable is sent back as the error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from engine.core.config import LimitsConfig
from engine.core.patch_apply import PatchError
from engine.core.skill import SkillDoc
from engine.core.taboo import TabooEntry
from engine.core.vault import redact
from engine.evaluation.patches.focus import encoded_size, focused_view
from engine.evaluation.patches.proposer import PatchTarget, ProposalContext
from engine.evaluation.patches.textrules import TextRules

PROMPT_BUDGET = 10_000  # bytes of the request body (system + user text, JSON-encoded, + envelope)
ENVELOPE = 400  # the body's model, max_tokens, role and key names
NOTES_ROOM = 2_400  # what the diagnosis, audit and taboo notes need beside a skill shown in part
SUMMARY_BUDGET = 2_000
GT_BUDGET = 500
TABOO_BUDGET = 500
EVIDENCE_LINES = 5
TRAPS_SHOWN = 12

_FENCE = re.compile(r"```[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)")

SYSTEM = """\
You improve one SKILL.md — the working manual an agent follows — so that it stops failing in the
way the diagnosis describes. You change as little as possible.

Answer with ONLY a unified diff against SKILL.md and nothing else:
--- a/SKILL.md
+++ b/SKILL.md
@@ -<line>,<count> +<line>,<count> @@
 <context line copied exactly>
-<removed line>
+<added line>

Rules every patch must follow (a patch that breaks one is thrown away):
- Context and removed lines match the current SKILL.md character for character.
- At most {max_lines} changed lines in total; one small edit is best.
- Add no heading lines (#, ##, ###).
- Every added step or pitfall line names something concrete to act on: a tool, a file path with
  a suffix, `backticked code`, a CamelCase symbol, a function call or a CLI flag. No slogans such
  as "review the code carefully".
- No absolute phrases ({absolutes}).
- A line that says it fixes or avoids something also says how, on the same line.
- Keep the task's narrow words; never bring in these wider ones: {traps}.
- Do not bend SKILL.md to fit the cases listed as suspected wrong labels.
- Do not repeat an edit listed as rejected before; try a different idea.{slim}"""

SLIM = """
- SKILL.md is over {limit} bytes (slim mode): only delete or merge redundant lines; the patch may
  not add more lines than it removes, nor any new wording."""

RETRY = """\
Your answer could not be used: {problem}
Reply with only a corrected unified diff against the same SKILL.md (--- a/SKILL.md, +++ b/SKILL.md,
@@ hunks), nothing else."""


def _clip(text: str, budget: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= budget:
        return text
    return data[: max(budget - 3, 0)].decode("utf-8", errors="ignore") + "…"


_size = encoded_size


def attribution_summary(diagnosis: Mapping[str, Any], target: PatchTarget, budget: int) -> str:
    """The target root cause with its evidence first, then the others in one line each."""
    failing = diagnosis.get("failing_cases") or len(diagnosis.get("failing_case_ids") or ())
    lines = [
        f"Patch this root cause: {target.id} — {target.explanation}",
        f"It covers {len(target.case_ids)} of {failing} failing cases ({target.share:.0%}): "
        + ", ".join(target.case_ids),
        "Evidence from the traces:",
        *(f"- {e}" for e in target.evidence[:EVIDENCE_LINES]),
    ]
    others = [
        rc
        for rc in diagnosis.get("root_causes") or ()
        if (rc.get("rule_id"), rc.get("direction")) != (target.rule_id, target.direction)
    ]
    if others:
        lines.append("Other root causes (not this patch's job):")
        lines += [
            f"- {rc.get('id')}: {len(rc.get('case_ids') or ())} cases — {rc.get('explanation')}"
            for rc in others
        ]
    undiagnosed = diagnosis.get("undiagnosed_case_ids") or ()
    if undiagnosed:
        lines.append("Failing without a flow anomaly: " + ", ".join(undiagnosed))
    return _clip("\n".join(lines), budget)


def gt_note(flagged: Sequence[str | Mapping[str, Any]], budget: int) -> str:
    rows: list[str] = []
    for flag in flagged:
        if isinstance(flag, str):
            rows.append(f"- {flag}")
        elif flag.get("flagged", True):
            reasons = "; ".join(str(r) for r in (flag.get("reasons") or ())[:2])
            rows.append(f"- {flag.get('case_id')} (suspicion {flag.get('score', '?')}): {reasons}")
    if not rows:
        return "No case is suspected of a wrong label."
    head = "These cases may carry wrong labels; do not bend SKILL.md to fit them:"
    return _clip("\n".join([head, *rows]), budget)


def taboo_note(entries: Sequence[TabooEntry], budget: int) -> str:
    if not entries:
        return "Nothing has been rejected yet."
    recent = sorted(entries, key=lambda e: e.recorded_at, reverse=True)
    rows = [f"- {e.rule_id} patch {e.diff_hash}: {e.reason}" for e in recent]
    return _clip("\n".join(["Patches rejected before (do not repeat them):", *rows]), budget)


def system_prompt(
    limits: LimitsConfig, rules: TextRules, *, slim: bool, limit: int | None = None
) -> str:
    traps = ", ".join(f"'{t.word}' (say '{t.prefer}')" for t in rules.traps[:TRAPS_SHOWN])
    absolutes = ", ".join(f'"{p}"' for p in rules.absolute_phrases[:6])
    return SYSTEM.format(
        max_lines=limits.max_patch_lines,
        absolutes=absolutes or "none listed",
        traps=traps or "none listed",
        slim=SLIM.format(limit=limit or limits.max_skill_bytes) if slim else "",
    )


def build_prompt(
    ctx: ProposalContext, target: PatchTarget, limits: LimitsConfig, rules: TextRules
) -> tuple[str, str]:
    """``(system, user)``, redacted, whose request body stays within :data:`PROMPT_BUDGET`.

    A skill that leaves room for the notes is sent whole; a bigger one as the parts the root
    cause points at plus an outline of the rest (:mod:`engine.evaluation.patches.focus`) — never
    cut in the
    middle of a line, since a diff must quote its lines exactly.
    """
    slim = ctx.slim or len(ctx.skill_text.encode("utf-8")) > ctx.slim_bytes(limits)
    system = redact(system_prompt(limits, rules, slim=slim, limit=ctx.slim_bytes(limits)))
    skill = redact(ctx.skill_text)
    notes = (
        "Diagnosis:\n{summary}\n\nGround-truth audit:\n{gt}\n\nTaboo list:\n{taboo}\n\n"
        "Reply with only the unified diff."
    )
    body = skill if skill.endswith("\n") else skill + "\n"
    whole = f"Current SKILL.md of skill '{ctx.skill_name}' (between the tags):\n<SKILL.md>\n"
    shown = whole + body + "</SKILL.md>\n\n"
    budget = PROMPT_BUDGET - ENVELOPE
    if budget - _size(system, shown, notes) < NOTES_ROOM:
        doc, _ = SkillDoc.parse_lenient(skill)
        head = f"Current SKILL.md of skill '{ctx.skill_name}', in part.\n"
        room = budget - _size(system, head, notes) - NOTES_ROOM
        shown = head + focused_view(doc, target, room) + "\n\n"
    room = budget - _size(system, shown, notes) - 64
    gt = redact(gt_note(ctx.gt_flags, min(GT_BUDGET, max(room // 6, 0))))
    taboo = redact(taboo_note(ctx.taboo_entries, min(TABOO_BUDGET, max(room // 6, 0))))
    summary_room = min(SUMMARY_BUDGET, max(room - _size(gt, taboo), 200))
    summary = redact(attribution_summary(ctx.diagnosis_dict, target, summary_room))
    return system, shown + notes.format(summary=summary, gt=gt, taboo=taboo)


def retry_message(problem: str) -> str:
    return RETRY.format(problem=_clip(" ".join(problem.split()), 1500))


# -- reading the answer ---------------------------------------------------------------------------


def _diff_region(answer: str) -> str:
    for block in _FENCE.findall(answer):
        if re.search(r"(?m)^(--- |@@ )", block):
            return str(block)
    return answer


def _is_diff_line(line: str) -> bool:
    return line == "" or line[0] in " +-\\" or line.startswith("@@")


def extract_diff(answer: str) -> str:
    """The unified diff in a model answer, with hunk lengths recounted; PatchError if none."""
    lines = _diff_region(answer).replace("\r\n", "\n").split("\n")
    start = next(
        (
            i
            for i in range(len(lines) - 1)
            if lines[i].startswith("--- ") and lines[i + 1].startswith("+++ ")
        ),
        None,
    )
    if start is None:
        if any(line.startswith("@@") for line in lines):
            raise PatchError("the diff has no '--- a/SKILL.md' / '+++ b/SKILL.md' header lines")
        raise PatchError(
            "the answer holds no unified diff (expected '--- a/SKILL.md', '+++ b/SKILL.md' "
            "and '@@ -l,n +l,n @@' hunks)"
        )
    body: list[str] = []
    for line in lines[start + 2 :]:
        if not _is_diff_line(line):
            break
        body.append(line)
    while body and body[-1] == "":
        body.pop()
    if not any(line.startswith("@@") for line in body):
        raise PatchError("the diff has headers but no '@@ -l,n +l,n @@' hunk")
    return "\n".join([lines[start], lines[start + 1], *_recount(body)]) + "\n"


def _recount(body: list[str]) -> list[str]:
    """Hunk headers with lengths counted from their bodies; a bare empty line is blank context."""
    out: list[str] = []
    header: re.Match[str] | None = None
    hunk: list[str] = []

    def flush() -> None:
        if header is None:
            return
        old = sum(1 for x in hunk if x[0] in " -")
        new = sum(1 for x in hunk if x[0] in " +")
        out.append(f"@@ -{header.group(1)},{old} +{header.group(3)},{new} @@{header.group(5)}")
        out.extend(hunk)

    for line in body:
        match = _HUNK.match(line)
        if match:
            flush()
            header, hunk = match, []
        elif line.startswith("@@"):
            raise PatchError(f"malformed hunk header {line!r} (expected '@@ -l,n +l,n @@')")
        elif header is not None:
            hunk.append(line if line else " ")
    flush()
    return out
