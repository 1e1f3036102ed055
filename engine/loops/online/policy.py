"""The review policy: which new session segments are worth a reviewer's model call.

A correct answer to a simple question holds no reusable method; a multi-step tool workflow, a
task the user corrected, and a task where the agent failed and recovered are the strong
candidates (tRPC-Agent-Go's ``DefaultReviewPolicy``: at least 4 tool calls, a user correction, a
recovered error — each trigger configurable). The policy only decides whether to *look*; whether
anything gets published is the gates' business.

The signals are read from the segment alone, in order: a user message is a correction only when
it answers an assistant message, and an error only counts as recovered when the assistant speaks
again after it. A segment in which the agent itself already wrote a SKILL.md is not reviewed —
the method was saved by hand, a second copy would be a duplicate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.core.config import OnlineConfig
from engine.core.transcripts import Message

# Phrases of a user telling the agent it got something wrong (English and Chinese).
CORRECTION_MARKERS = (
    "no,",
    "wrong",
    "actually",
    "instead",
    "not what i",
    "that's incorrect",
    "that is incorrect",
    "please fix",
    "try again",
    "不对",
    "错了",
    "不是",
    "而是",
    "请修正",
    "请修改",
    "改成",
    "重新来",
    "重来",
)
# "From now on, use this workflow": a future marker together with a workflow marker.
FUTURE_MARKERS = (
    "next time",
    "going forward",
    "from now on",
    "in the future",
    "default to",
    "by default",
    "reuse",
    "keep using",
    "以后",
    "今后",
    "后续",
    "下次",
    "默认",
)
WORKFLOW_MARKERS = (
    "workflow",
    "procedure",
    "process",
    "steps",
    "checklist",
    "template",
    "format",
    "structure",
    "schema",
    "fields",
    "output",
    "rule",
    "工作流",
    "流程",
    "步骤",
    "清单",
    "模板",
    "格式",
    "结构",
    "字段",
    "输出",
    "规则",
)
ERROR_MARKERS = ("error:", "failed:", "exception:", "traceback")
_WRITE_TOOL = re.compile(r"write|edit|patch|apply|notebook", re.IGNORECASE)
_SHELL_TOOL = re.compile(r"bash|shell|exec|terminal", re.IGNORECASE)
_SHELL_WRITES = (
    "apply_patch",
    "cat <<",
    "cat >",
    "tee ",
    ">",
    "printf ",
    "echo ",
    "cp ",
    "mv ",
    "sed -i",
    "python ",
)


def looks_like_correction(text: str) -> bool:
    low = text.lower()
    if any(marker in low for marker in CORRECTION_MARKERS):
        return True
    return any(m in low for m in FUTURE_MARKERS) and any(m in low for m in WORKFLOW_MARKERS)


def looks_like_error(message: Message) -> bool:
    low = message.text.lower()
    return message.is_error or any(marker in low for marker in ERROR_MARKERS)


def writes_skill_file(tool: str, args: str) -> bool:
    """Whether a call of ``tool`` with ``args`` writes a SKILL.md (an editor or a shell)."""
    low = args.lower()
    if "skill.md" not in low:
        return False
    if _WRITE_TOOL.search(tool):
        return True
    return bool(_SHELL_TOOL.search(tool)) and any(w in low for w in _SHELL_WRITES)


def writes_skill(message: Message) -> bool:
    return any(writes_skill_file(call.name, call.args) for call in message.calls)


@dataclass(frozen=True)
class Signals:
    """What a segment shows; ``conversation`` is False when no one said anything yet."""

    tool_calls: int
    user_correction: bool
    recovered_error: bool
    wrote_skill: bool
    conversation: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "tool_calls": self.tool_calls,
            "user_correction": self.user_correction,
            "recovered_error": self.recovered_error,
            "wrote_skill": self.wrote_skill,
        }


def scan(messages: Sequence[Message], before: Sequence[Message] = ()) -> Signals:
    """The signals of a segment; ``before`` are the already reviewed messages preceding it.

    Only the last speaker of ``before`` matters: a correction typically opens a new turn, so it
    answers an assistant message the previous segment ended with.
    """
    tool_calls = 0
    correction = recovered = wrote = conversation = False
    saw_error = False
    last_speaker = next(
        (m.role for m in reversed(before) if m.role != "tool" and m.text.strip()), None
    )
    for message in messages:
        tool_calls += len(message.calls)
        wrote = wrote or writes_skill(message)
        if message.role == "tool":
            saw_error = saw_error or looks_like_error(message)
            continue
        if message.role == "user" and last_speaker == "assistant":
            correction = correction or looks_like_correction(message.text)
        if message.role == "assistant" and saw_error:
            recovered, saw_error = True, False
        if message.text.strip():
            conversation = True
            last_speaker = message.role
    return Signals(tool_calls, correction, recovered, wrote, conversation)


@dataclass(frozen=True)
class ReviewPolicy:
    """The three triggers; ``min_tool_calls`` ≤ 0 switches the tool-call trigger off."""

    min_tool_calls: int = 4
    user_correction: bool = True
    recovered_error: bool = True

    @classmethod
    def from_config(cls, cfg: OnlineConfig) -> ReviewPolicy:
        return cls(cfg.min_tool_calls, cfg.user_correction, cfg.recovered_error)

    def reason(self, signals: Signals) -> str | None:
        """Why the segment deserves a review, or None when it does not."""
        if self.min_tool_calls > 0 and signals.tool_calls >= self.min_tool_calls:
            return f"{signals.tool_calls} tool calls (≥ {self.min_tool_calls})"
        if self.user_correction and signals.user_correction:
            return "the user corrected the agent"
        if self.recovered_error and signals.recovered_error:
            return "the agent recovered from an error"
        return None
