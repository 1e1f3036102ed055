"""The transcript of one case run, opened from a session event that names the run and case.

Parsing is the engine's (``engine.evaluation.traces.load_trace`` reads the session format and both
Claude
Code formats); this screen lays the trace out as plain lines in a Log, which stays fast on the
megabyte transcripts of looping agents.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Log, Static
from textual.worker import get_current_worker

from engine.core.errors import SkillsmithError
from engine.core.workspace import Workspace
from engine.evaluation.traces import Trace, load_trace
from engine.views.rows import transcript_path
from tui.navigation import SCROLL_BINDINGS

_RESULT_PREVIEW = 400


def trace_lines(trace: Trace) -> list[str]:
    """The trace as readable lines: prompt, every tool call with its result, texts, outcome."""
    lines = ["PROMPT", *("  " + line for line in trace.prompt.splitlines()), ""]
    lines.append(f"TOOL CALLS ({len(trace.calls)})")
    for call in trace.calls:
        flag = " [error]" if call.is_error else ""
        lines.append(f"  #{call.index + 1} {call.name}({call.args}){flag}")
        result = call.result.strip()
        if len(result) > _RESULT_PREVIEW:
            result = result[:_RESULT_PREVIEW] + " …"
        lines.extend("      " + line for line in result.splitlines())
    lines.append("")
    if trace.texts:
        lines.append("ASSISTANT")
        for text in trace.texts:
            lines.extend("  " + line for line in text.splitlines())
            lines.append("")
    lines.append("FINAL ANSWER")
    lines.extend("  " + line for line in trace.final_text.splitlines())
    lines.append("")
    tokens = trace.tokens
    outcome = f"tokens in={tokens.input} out={tokens.output}"
    if trace.result is not None:
        if trace.result.cost_usd is not None:
            outcome += f"  cost=${trace.result.cost_usd:.4f}"
        if trace.result.duration_ms is not None:
            outcome += f"  duration={trace.result.duration_ms} ms"
        if trace.result.is_error:
            outcome += f"  error: {trace.result.reason or 'unknown'}"
    lines.append(outcome)
    return lines


class TranscriptLog(Log):
    BINDINGS: ClassVar[list[BindingType]] = SCROLL_BINDINGS


class TranscriptScreen(Screen[None]):
    """Full-screen transcript; escape or q goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "app.pop_screen", "Back", id="close"),
    ]
    DEFAULT_CSS = """
    TranscriptScreen > #transcript-title { height: 1; padding: 0 1; background: $panel; }
    TranscriptScreen > Log { height: 1fr; }
    """

    class _Loaded(Message):
        def __init__(self, lines: list[str]) -> None:
            super().__init__()
            self.lines = lines

    def __init__(
        self,
        workspace: Workspace,
        run_id: str,
        case_id: str,
        run_index: int | None = None,
        variant: str | None = None,
    ) -> None:
        super().__init__()
        self.workspace = workspace
        self._unit = (run_id, case_id, run_index, variant)
        index = "" if run_index is None else f" · run {run_index}"
        self._title = f"Transcript · {run_id} · {case_id}{index} · esc back"

    def compose(self) -> ComposeResult:
        yield Static(self._title, id="transcript-title", markup=False)
        yield TranscriptLog(id="transcript", auto_scroll=False)
        yield Footer()

    def on_mount(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def _load(self) -> None:
        path = transcript_path(self.workspace, *self._unit)
        if path is None:
            run_id, case_id = self._unit[:2]
            lines = [f"No transcript of case {case_id} in runs/{run_id}/sessions/."]
        else:
            try:
                lines = trace_lines(load_trace(path))
            except SkillsmithError as exc:
                lines = [str(exc)]
        if not get_current_worker().is_cancelled:
            self.post_message(self._Loaded(lines))

    @on(_Loaded)
    def _loaded(self, message: _Loaded) -> None:
        log = self.query_one(Log)
        log.write_lines(message.lines)
        log.scroll_home(animate=False)
