"""The first screen: skills, benchmarks, open candidates, sessions, and the next action.

A new user opening the demo saw an empty queue and had to find the skill, the benchmark and its
score two tabs away; this pane puts them first, and says in words which key moves the work on.
Read by ``engine.views.overview`` in a thread worker; every text is engine data, so none is markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from engine.core.errors import SkillsmithError
from engine.core.workspace import Workspace
from tui.navigation import SCROLL_BINDINGS

if TYPE_CHECKING:  # the overview's readers load in its worker, after the first paint
    from engine.views.overview import CandidateLine, NextAction, Overview
    from engine.views.rows import CandidateCache

Parts = list[tuple[str, str] | str]

# Open candidates listed here; the rest are one "… N more" line. A thousand open candidates made
# a thousand-line text that Textual wraps again on every layout pass (each refresh of the queue
# beside it); the queue pane lists them all.
SHOWN_CANDIDATES = 10


def _score(value: float | None, measure: str) -> str:
    if value is None:
        return "–"
    return f"{measure} {value:.2f}".strip()


def _heading(parts: Parts, text: str) -> None:
    parts.append((f"\n{text}\n", "bold $text-primary"))


def first_candidates(candidates: list[CandidateLine]) -> list[CandidateLine]:
    """The open candidates the overview lists: the newest of those awaiting a decision (the
    next action points at them), then the newest of the others (ids start with their creation
    time); shown oldest first, in the order the overview has always listed them."""
    newest = sorted(candidates, key=lambda c: c.id, reverse=True)
    newest.sort(key=lambda c: c.status != "pending_approval")
    return sorted(newest[:SHOWN_CANDIDATES], key=lambda c: c.id)


def render_overview(
    view: Overview, action: NextAction, job: str | None = None, last: str | None = None
) -> Content:
    """The whole first screen as one text (it scrolls; the next action comes first)."""
    parts: Parts = [("Next: ", "bold $text-accent"), (f"{action.text}\n", "bold")]
    if job is not None:
        parts.append((f"Running now: {job} (c cancels)\n", "$text-warning"))
    if last is not None:
        parts.append(("Last outcome: ", "bold"))
        parts.append(f"{last}\n")
        parts.append(("  (7 shows every outcome)\n", "$text-muted"))
    _heading(parts, "Skills")
    if not view.skills:
        parts.append(("  (none)\n", "$text-muted"))
    for skill in view.skills:
        if skill.error:
            parts.append(f"  {skill.name}  ")
            parts.append((f"{skill.error}\n", "$text-error"))
            continue
        version = skill.version or "–"
        if not skill.recorded:
            version += " (recorded at first use)"
        parts.append(("  " + skill.name, "bold"))
        parts.append(f"  {version}")
        parts.append(
            (
                f"  · selection {_score(skill.selection, skill.measure)}"
                f" · holdout {_score(skill.holdout, skill.measure)}\n",
                "$text-muted",
            )
        )
    _heading(parts, "Benchmarks")
    if not view.benchmarks:
        parts.append(("  (none)\n", "$text-muted"))
    for bench in view.benchmarks:
        parts.append(("  " + bench.name, "bold"))
        if bench.error:
            parts.append((f"  {bench.error}\n", "$text-error"))
        elif bench.evaluations == 0 or bench.last_score is None:
            parts.append(("  no evaluation yet\n", "$text-muted"))
        else:
            versions = ", ".join(f"{n} {v}" for n, v in sorted(bench.last_versions.items()))
            run = f" · run {bench.last_run}" if bench.last_run else ""
            on = f" · {versions}" if versions else ""
            parts.append(
                f"  last score {bench.last_score:.2f} ({bench.last_when}{on}{run}) · "
                f"{bench.evaluations} evaluation{'s' if bench.evaluations != 1 else ''}"
                " · 5 shows the scoreboard\n"
            )
    _heading(parts, f"Open candidates ({len(view.candidates)}) · 1 shows the queue")
    if not view.candidates:
        parts.append(("  (none; v proposes one)\n", "$text-muted"))
    for c in first_candidates(view.candidates):
        parts.append(f"  {c.id}  {c.skill}  ")
        parts.append((c.status, "$text-accent"))
        parts.append(f"  {c.summary}\n")
    if len(view.candidates) > SHOWN_CANDIDATES:
        more = len(view.candidates) - SHOWN_CANDIDATES
        parts.append((f"  … {more} more\n", "$text-muted"))
    _heading(parts, "Sessions · 4 shows their events")
    if not view.unfinished and not view.recent:
        parts.append(("  (none yet)\n", "$text-muted"))
    for s in view.unfinished:
        parts.append(f"  {s.session_id}  {s.label}  ")
        parts.append(("unfinished (running, or interrupted: rerun to resume)\n", "$text-warning"))
    for s in reversed(view.recent):
        parts.append(f"  {s.session_id}  {s.label}  ")
        parts.append((f"{s.status} {s.finished_at or ''}\n", "$text-muted"))
    for error in view.errors:
        parts.append((f"\n{error}", "$text-error"))
    return Content.assemble(*parts)


class OverviewPane(VerticalScroll, can_focus=True):
    """Where things stand, read fresh whenever the workspace changes."""

    BINDINGS = SCROLL_BINDINGS
    DEFAULT_CSS = """
    OverviewPane { padding: 0 1; background: $surface; }
    """

    class _Loaded(Message):
        def __init__(self, view: Overview | None, error: str | None) -> None:
            super().__init__()
            self.view = view
            self.error = error

    def __init__(
        self, workspace: Workspace, queue: CandidateCache | None = None, *, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.workspace = workspace
        self.queue = queue  # the candidates the queue pane reads too, re-read only where changed
        self.view: Overview | None = None
        self.job: str | None = None
        self.last: str | None = None
        self.loaded = False
        self._shown: Content | None = None

    def compose(self) -> ComposeResult:
        yield Static("Reading the workspace…", id="overview-body")

    def next_action(self) -> NextAction | None:
        if self.view is None:
            return None
        return self.view.next_action()

    def reload(self) -> None:
        self._load()

    def set_job(self, job: str | None) -> None:
        self.job = job
        self._show()

    def set_last(self, text: str) -> None:
        """The last job's outcome stays here after its toast is gone (7 keeps them all)."""
        self.last = text
        self._show()

    @work(thread=True, exclusive=True, group="overview-load", exit_on_error=False)
    def _load(self) -> None:
        from engine.views.overview import load_overview

        try:
            view, error = load_overview(self.workspace, self.queue), None
        except SkillsmithError as exc:
            view, error = None, str(exc)
        if not get_current_worker().is_cancelled:
            self.post_message(self._Loaded(view, error))

    @on(_Loaded)
    def _loaded(self, message: _Loaded) -> None:
        self.loaded = True
        if message.error is not None:
            self._shown = Content.styled(message.error, "$text-error")
            self.query_one("#overview-body", Static).update(self._shown)
            return
        self.view = message.view
        self._show()

    def _show(self) -> None:
        action = self.next_action()
        if self.view is None or action is None:
            return
        content = render_overview(self.view, action, self.job, self.last)
        # A reload after every change mostly finds the same text: updating the Static anyway
        # would lay out and paint the pane again for nothing.
        if self._shown is not None and content.is_same(self._shown):
            return
        self._shown = content
        self.query_one("#overview-body", Static).update(content)
