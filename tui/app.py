"""The Skillsmith workbench: a Textual view over a workspace; every write goes through engine/.

Reading happens in thread workers owned by each pane, so a workspace of thousands of files
paints at once and fills in; writing (a decision, a rollback, a snapshot, a restore) runs in a
thread worker holding one app-wide lock, so two keypresses never race each other, and the
engine's workspace lock keeps them from racing a CLI process. The workspace is watched: what any
process writes shows up in the pane it concerns within a fraction of a second.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual import on, work
from textual.actions import parse as parse_action
from textual.app import App, ComposeResult, SystemCommand
from textual.await_complete import AwaitComplete
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.widget import MountError
from textual.widgets import DataTable, Static, TabbedContent, TabPane, Tabs
from textual.worker import get_current_worker

from engine.core.errors import SkillsmithError, UsageError
from engine.core.workspace import Workspace
from engine.views.rows import CandidateCache
from themes.palette import DEFAULT_THEME, STYLESHEET, THEMES, resolve_theme_name, variable_defaults
from tui.activity import ActivityLog, ActivityPane, Kind, Link
from tui.dialogs import ConfirmScreen, ErrorScreen, ReasonScreen
from tui.gates_pane import GatesPane
from tui.jobs import Job, JobBar, JobEnded, JobEvent, JobOutcome
from tui.keys import APP_BINDINGS
from tui.overview_pane import OverviewPane
from tui.queue_pane import DECIDED_STATUSES, OPEN_STATUSES, QueueEntry, QueuePane
from tui.user_config import UserConfig, load_user_config, save_user_config

# What the first screen does not show is imported when first used (the panes behind tabs 4-6,
# the loops, the engine's writers): the workbench paints before they are loaded.
if TYPE_CHECKING:
    from engine.core.events import CancelToken, Event
    from tui.diff_pane import DiffPane
    from tui.help_screen import KeyGroup
    from tui.scoreboard_pane import ScoreboardPane
    from tui.sessions_pane import SessionsPane
    from tui.skills_pane import SkillsPane
    from tui.snapshots_screen import SnapshotsScreen
    from tui.watch import Area

    LazyPane = SessionsPane | ScoreboardPane | SkillsPane | ActivityPane

# Pane number → (tab id or None for the queue, selector of the widget that takes focus).
PANES: dict[int, tuple[str | None, str]] = {
    0: ("tab-overview", "#overview-pane"),
    1: (None, "#queue"),
    2: ("tab-diff", "#diff-view"),
    3: ("tab-gates", "#gates-pane"),
    4: ("tab-sessions", "#session-list"),
    5: ("tab-scoreboard", "#score-records"),
    6: ("tab-skills", "#skill-list"),
    7: ("tab-activity", "#activity-list"),
}
WATCH_DEBOUNCE_MS = 300
WATCH_STEP_MS = 30
DECISION_WHY = "approved in the workbench"


@dataclass(frozen=True)
class Move:
    """A change the workbench made that ``z`` can take back (decisions undo through the queue's
    own log; a rollback and a restore through what this records)."""

    kind: str  # decision | rollback | restore
    skill: str = ""
    frm: str = ""  # the version rolled back from, or the snapshot taken before a restore
    to: str = ""


@dataclass(frozen=True)
class WorkspaceFacts:
    """What the key checks need to know about the workspace, read with the queue."""

    version: int | None = None
    benchmarks: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    has_decisions: bool = False
    skill_versions: dict[str, str] = field(default_factory=dict)


class QueueLoaded(Message):
    def __init__(
        self,
        entries: list[QueueEntry] | None,
        facts: WorkspaceFacts,
        error: str | None,
        facts_asked: int,
    ) -> None:
        super().__init__()
        self.entries = entries
        self.facts = facts
        self.error = error
        self.facts_asked = facts_asked  # the request for fresh facts these answer


class PatchLoaded(Message):
    def __init__(self, entry: QueueEntry, patch: str | None, error: str | None) -> None:
        super().__init__()
        self.entry = entry
        self.patch = patch
        self.error = error


class EvalSized(Message):
    """The size of the evaluation ``e`` would start (or why it cannot start)."""

    def __init__(self, bench: str, text: str, ok: bool) -> None:
        super().__init__()
        self.bench = bench
        self.text = text
        self.ok = ok


class EngineDone(Message):
    """A write finished: the toast to show and the panes whose files it changed."""

    def __init__(
        self, text: str, *, ok: bool, areas: set[Area], crashed: bool = False, timeout: float = 6
    ) -> None:
        super().__init__()
        self.text = text
        self.ok = ok
        self.areas = areas
        self.crashed = crashed
        self.timeout = timeout


def load_queue(
    cache: CandidateCache, *, incremental: bool = False
) -> tuple[list[QueueEntry], bool, list[str]]:
    """Every candidate with its gates (a bad gates.json shows as a failed pseudo-gate), whether
    any decision was taken, and one line per unreadable candidate."""
    from engine.core.queue import CandidateQueue
    from engine.evaluation.gates.stale import stale_against

    views, errors = cache.load(incremental=incremental)
    entries = []
    currents: dict[str, str | None] = {}
    for view in views:
        gates = view.gates
        if view.gates_error is not None:
            gates = [{"gate": "gates.json", "verdict": "fail", "reasons": [view.gates_error]}]
        behind = stale_against(cache.ws, view.candidate, currents)
        entries.append(QueueEntry(view.candidate, gates, behind))
    # Whether the log holds any decision, without parsing a log that grows with every one.
    log = CandidateQueue(cache.ws).decisions_path
    return entries, log.is_file() and log.stat().st_size > 0, errors


class SkillsmithApp(App[None]):
    """The workbench on one workspace."""

    CSS_PATH = STYLESHEET
    TITLE = "skillsmith"
    AUTO_FOCUS = "#queue"
    BINDINGS: ClassVar[list[BindingType]] = APP_BINDINGS

    def __init__(
        self, workspace: Workspace, *, theme: str | None = None, watch: bool = True
    ) -> None:
        super().__init__()
        self.workspace = workspace
        self.watching = watch
        self.facts = WorkspaceFacts()
        self.activity = ActivityLog()
        self._user_config = load_user_config()
        # The keymap comes from skillsmith.yaml, read once the first frame is out (the YAML
        # parser is not needed to paint it): see _after_first_paint.
        self._keymap: dict[str, str] = {}
        for definition in THEMES.values():
            self.register_theme(definition)
        self.theme = self._initial_theme(theme)
        self._theme_ready = False
        self._write_lock = threading.Lock()
        self._job_token: CancelToken | None = None
        self._watch_stop = threading.Event()
        self._candidates = CandidateCache(workspace)
        # Facts (config version, skills, benchmarks, versions) are re-read only when a change
        # outside candidates/ asked for them: numbered requests, and the last one answered.
        self._facts_asked = 1
        self._facts_read = 0
        self._overview_waits = False  # a reload asked for while the queue reloads
        self._queue_error: str | None = None
        self._shown_patch: tuple[str, str] | None = None
        self._round_gates: tuple[str, list[dict[str, Any]]] | None = None
        self._moves: list[Move] = []
        self._mounted = False
        self._heap_frozen = False

    def _initial_theme(self, requested: str | None) -> str:
        name = resolve_theme_name(requested or self._user_config.theme or DEFAULT_THEME)
        if self.get_theme(name) is None:
            known = ", ".join(["dark", "light", *sorted(self.available_themes)])
            source = "--theme" if requested else f"theme in {self._user_config_file()}"
            raise UsageError(f"{source}: unknown theme {name!r} (known: {known})")
        return name

    @staticmethod
    def _user_config_file() -> Path:
        from tui.user_config import user_config_path

        return user_config_path()

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return variable_defaults(self.current_theme.to_color_system().generate())

    # -- layout --------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("", id="status", markup=False)
        yield QueuePane(id="queue-pane")
        # The first frame shows the overview tab; the other tabs (half the widgets of the first
        # screen, none of them showing) are added once it is out: see _add_later_tabs.
        with (
            TabbedContent(id="detail-tabs", initial="tab-overview"),
            TabPane("0 Overview", id="tab-overview"),
        ):
            yield OverviewPane(self.workspace, self._candidates, id="overview-pane")
        # The job bar (hidden until a job runs) and the key line (whose keys Textual fills in
        # after a frame anyway) are mounted once the first frame is out: see _after_first_paint.

    def _add_later_tabs(self) -> AwaitComplete:
        """The tabs after the overview, in key order; the panes behind 4-7 are composed when
        first opened (see _open_tab)."""
        from tui.diff_pane import DiffPane

        tabs = self.query_one(TabbedContent)
        return AwaitComplete(
            tabs.add_pane(TabPane("2 Diff", DiffPane(id="diff-pane"), id="tab-diff")),
            tabs.add_pane(TabPane("3 Gates", GatesPane(id="gates-pane"), id="tab-gates")),
            tabs.add_pane(TabPane("4 Sessions", id="tab-sessions")),
            tabs.add_pane(TabPane("5 Scoreboard", id="tab-scoreboard")),
            tabs.add_pane(TabPane("6 Skills & history", id="tab-skills")),
            tabs.add_pane(TabPane("7 Activity", id="tab-activity")),
        )

    def _closing_view(self) -> bool:
        """True once the widgets are gone (the app is closing): late worker results are dropped."""
        return self.query_one_optional(QueuePane) is None

    @property
    def queue_pane(self) -> QueuePane:
        return self.query_one(QueuePane)

    @property
    def diff_pane(self) -> DiffPane:
        return cast("DiffPane", self.query_one("#diff-pane"))

    @property
    def overview_pane(self) -> OverviewPane:
        return self.query_one(OverviewPane)

    # The lazy panes, by id: their classes are imported only when their tab is first opened.
    @property
    def skills_pane(self) -> SkillsPane | None:
        """The Skills & history pane, once it has been opened."""
        return cast("SkillsPane | None", self.query_one_optional("#skills-pane"))

    @property
    def sessions_pane(self) -> SessionsPane | None:
        return cast("SessionsPane | None", self.query_one_optional("#sessions-pane"))

    @property
    def scoreboard_pane(self) -> ScoreboardPane | None:
        return cast("ScoreboardPane | None", self.query_one_optional("#scoreboard-pane"))

    def _make_pane(self, tab: str) -> LazyPane | None:
        """The pane behind a lazy tab (None for a tab composed at start)."""
        if tab == "tab-sessions":
            from tui.sessions_pane import SessionsPane

            return SessionsPane(self.workspace, id="sessions-pane")
        if tab == "tab-scoreboard":
            from tui.scoreboard_pane import ScoreboardPane

            return ScoreboardPane(self.workspace, id="scoreboard-pane")
        if tab == "tab-skills":
            from tui.skills_pane import SkillsPane

            return SkillsPane(self.workspace, id="skills-pane")
        if tab == "tab-activity":
            return ActivityPane(self.activity, id="activity-pane")
        return None

    async def _open_tab(self, tab: str) -> None:
        """Compose a lazy pane the first time its tab is shown, and load it."""
        tab_pane = self.query_one_optional(f"#{tab}", TabPane)
        if tab_pane is None or tab_pane.children:
            return
        pane = self._make_pane(tab)
        if pane is not None:
            await tab_pane.mount(pane)
            if not isinstance(pane, ActivityPane):
                pane.reload()

    def on_mount(self) -> None:
        self._mounted = True
        self.query_one(Tabs).can_focus = False
        self.queue_pane.table.focus()
        self._update_status()
        # Everything that reads the disk starts once the first frame is out: worker threads
        # parsing a thousand candidates would otherwise share the interpreter with the paint.
        self.call_after_refresh(self._after_first_paint)
        if self._user_config.theme != self.theme:
            self._save_theme(self.theme)
        self._theme_ready = True

    async def _after_first_paint(self) -> None:
        # The user's keys, before the key line is mounted and before any row loads (so no key
        # acts on a row with the default binding).
        try:
            keymap = dict(self.workspace.load_config().keymap)
        except SkillsmithError as exc:
            self.notify(str(exc), severity="error", timeout=8)
        else:
            self._apply_keymap(keymap)
        from textual.widgets import Footer

        try:
            await self.mount(JobBar(id="jobbar"), Footer(compact=True))
            await self._add_later_tabs()
        except MountError:
            return  # the app quit before its first frame was out: nothing left to load into
        self._load_queue()
        self.overview_pane.reload()
        if self.watching:
            self._watch()

    def _check_keymap(self) -> None:
        if not self._keymap:  # nothing to check: listing every binding is not free
            return
        known = {b.id for b in self._all_bindings() if b.id}
        unknown = sorted(set(self._keymap) - known)
        if unknown:
            self.notify(
                f"keymap in skillsmith.yaml: unknown binding id(s) {', '.join(unknown)}; "
                "? lists the ids",
                severity="warning",
                timeout=10,
            )

    # -- notifications: every toast also goes to the activity log ----------------------------
    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        kinds: dict[str, Kind] = {"information": "info", "warning": "warning", "error": "error"}
        self.activity.add(kinds.get(severity, "info"), f"{title}: {message}" if title else message)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def report(
        self,
        kind: Kind,
        text: str,
        link: Link | None = None,
        *,
        timeout: float = 10,
    ) -> None:
        """A job outcome: a toast now, and an activity entry with its link for later."""
        self.activity.add(kind, text, link)
        severity: SeverityLevel = "error" if kind == "error" else "information"
        if kind in ("rejected", "warning"):
            severity = "warning"
        super().notify(text, severity=severity, timeout=timeout, markup=False)

    # -- status line ---------------------------------------------------------------------------
    def _update_status(self) -> None:
        entries = self.queue_pane.entries
        open_count = sum(e.is_open for e in entries)
        version = "?" if self.facts.version is None else f"v{self.facts.version}"
        watch = "watching" if self.watching else "not watching"
        skills = ", ".join(f"{n} {v}" for n, v in sorted(self.facts.skill_versions.items()))
        # One line of fixed height across the screen: a new text never resizes it, so no
        # layout pass of the whole screen (each refresh of the queue updates this line).
        self.query_one("#status", Static).update(
            f"skillsmith · {self.workspace.root.name} · {skills or 'no skills'} · "
            f"workspace state {version} · "
            f"{open_count} open candidate{'s' if open_count != 1 else ''} · {watch}",
            layout=False,
        )

    # -- loading the queue and the selected candidate ------------------------------------------
    @work(thread=True, exclusive=True, group="queue-load", exit_on_error=False)
    def _load_queue(self, incremental: bool = False) -> None:
        worker = get_current_worker()
        asked = self._facts_asked
        try:
            entries, decided, errors = load_queue(self._candidates, incremental=incremental)
            error = "; ".join(errors) or None
        except SkillsmithError as exc:
            entries, decided, error = None, self.facts.has_decisions, str(exc)
        if asked > self._facts_read:
            facts = self._read_facts(decided)
        else:
            facts = replace(self.facts, has_decisions=decided)
        if not worker.is_cancelled:
            self.post_message(QueueLoaded(entries, facts, error, asked))

    def _read_facts(self, has_decisions: bool) -> WorkspaceFacts:
        from engine.core.benchmark import benchmark_ids
        from engine.views.rows import current_versions

        try:
            version: int | None = self.workspace.version()
        except SkillsmithError:
            version = None
        skills = self.workspace.skill_names()
        return WorkspaceFacts(
            version=version,
            benchmarks=benchmark_ids(self.workspace),
            skills=skills,
            has_decisions=has_decisions,
            skill_versions=current_versions(self.workspace, skills),
        )

    @on(QueueLoaded)
    def _queue_loaded(self, message: QueueLoaded) -> None:
        if self._closing_view():
            return
        self.facts = message.facts
        self._facts_read = max(self._facts_read, message.facts_asked)
        pane = self.queue_pane
        if message.entries is not None:
            pane.set_entries(message.entries)
        if message.error:
            pane.border_subtitle = message.error
            if message.error != self._queue_error:  # once per problem, not per reload
                self.notify(message.error, severity="error", timeout=8)
        self._queue_error = message.error
        self._update_status()
        # The changed rows go out first: a reader thread started now would hold the interpreter
        # while the queue paints, and the key line rebuilds every key when asked to refresh, so
        # the patch, the overview and the keys follow that frame.
        self.queue_pane.table.after_paint(
            partial(self._after_queue_painted, message.entries is not None)
        )

    def _after_queue_painted(self, rows_changed: bool) -> None:
        if self._closing_view():
            return
        if rows_changed:
            # Files may change without their recorded hash (a hand edit): always re-read.
            self._show_entry(self.queue_pane.selected, reread=True)  # refreshes the keys too
        else:
            self.refresh_bindings()
        if self._overview_waits:
            self._overview_waits = False
            self.overview_pane.reload()
        if not self._heap_frozen:
            # The widgets and the first thousand candidates live as long as the workbench: the
            # cyclic collector need not walk them again (until on_unmount). Its full passes over
            # them took 70 ms of the UI thread now and then, in the middle of a refresh.
            self._heap_frozen = True
            gc.freeze()

    @on(QueuePane.Highlighted)
    def _candidate_highlighted(self, message: QueuePane.Highlighted) -> None:
        if self._closing_view():
            return
        self._show_entry(message.entry, reread=False)

    def _show_entry(self, entry: QueueEntry | None, *, reread: bool) -> None:
        self.refresh_bindings()
        gates = self.query_one(GatesPane)
        if entry is None:
            self._shown_patch = None
            empty = (
                "No candidate matches the filter."
                if self.queue_pane.query_text
                else ("No candidates in the queue.")
            )
            self.diff_pane.show_message(empty)
            if self._round_gates is not None:  # a rejected round left no candidate to select
                gates.show_gates(*self._round_gates)
            else:
                gates.show_message(empty)
            return
        c = entry.candidate
        gates.show_gates(f"{c.id} · {c.skill} · {c.status}", entry.gates)
        if reread or (entry.id, str(c.content_hash)) != self._shown_patch:
            self._load_patch(entry)

    @work(thread=True, exclusive=True, group="patch-load", exit_on_error=False)
    def _load_patch(self, entry: QueueEntry) -> None:
        candidate = entry.candidate
        try:
            patch = candidate.patch_text()
            if not patch.strip():
                patch = self._patch_from_texts(candidate)
            error = None
        except (SkillsmithError, OSError) as exc:
            patch, error = None, str(exc)
        if not get_current_worker().is_cancelled:
            self.post_message(PatchLoaded(entry, patch, error))

    def _patch_from_texts(self, candidate: Any) -> str:
        """A candidate without patch.diff: diff its SKILL.md against the active one."""
        from engine.core.store import unified_diff

        active = self.workspace.skill_path(candidate.skill)
        old = active.read_text(encoding="utf-8") if active.is_file() else ""
        return unified_diff(old, candidate.skill_text())

    @on(PatchLoaded)
    def _patch_loaded(self, message: PatchLoaded) -> None:
        if self._closing_view():
            return
        selected = self.queue_pane.selected
        if selected is None or selected.id != message.entry.id:
            return
        c = message.entry.candidate
        if message.patch is None:
            self.diff_pane.show_message(message.error or "The patch could not be read.")
            self._shown_patch = None
            return
        parent = c.parent_version or "new"
        self.diff_pane.show_candidate(f"{c.id} · {c.skill} {parent} · {c.operation}", message.patch)
        self._shown_patch = (message.entry.id, str(c.content_hash))

    # -- watching ------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="watch", exit_on_error=False)
    def _watch(self) -> None:
        """Watch the workspace from a thread: the recursive inotify set-up of a big workspace
        and the filtering of each batch never hold up the event loop (nor the first paint)."""
        from watchfiles import watch

        from tui.watch import WorkspaceFilter, areas_of, candidates_of

        root = self.workspace.root
        try:
            for changes in watch(
                root,
                watch_filter=WorkspaceFilter(root),
                debounce=WATCH_DEBOUNCE_MS,
                step=WATCH_STEP_MS,
                stop_event=self._watch_stop,
                yield_on_timeout=False,
            ):
                paths = [Path(path) for _, path in changes]
                # The watcher names what changed: the queue re-reads those candidates only.
                self._candidates.touched(candidates_of(root, paths))
                areas = areas_of(root, paths)
                if areas:
                    self.call_from_thread(self.reload_areas, areas, incremental=True)
        except Exception as exc:  # inotify limits, a vanished folder: say so, keep working
            if not self._watch_stop.is_set():
                self.call_from_thread(self._watch_failed, exc)

    def _watch_failed(self, exc: Exception) -> None:
        self.watching = False
        self._update_status()
        self.notify(f"Live refresh stopped: {exc}", severity="warning", timeout=10)

    def reload_areas(self, areas: Iterable[Area], *, incremental: bool = False) -> None:
        """Reload the panes showing ``areas`` (lazy panes only once they have been opened);
        ``incremental`` when the watcher noted which candidates changed."""
        areas = set(areas)
        if areas - {"queue"}:
            self._facts_asked += 1
        queue = bool(areas & {"queue", "config", "skills", "scoreboard"})
        if queue:
            self._load_queue(incremental)
        if areas & {"queue", "config", "skills", "scoreboard", "sessions"}:
            # Read beside the queue, the overview would compete with it for the interpreter:
            # the queue's rows come first and the overview follows them (_queue_loaded).
            if queue:
                self._overview_waits = True
            else:
                self.overview_pane.reload()
        skills, sessions, scoreboard = self.skills_pane, self.sessions_pane, self.scoreboard_pane
        if areas & {"skills", "snapshots"} and skills is not None and skills.loaded:
            skills.reload()
        if "sessions" in areas and sessions is not None and sessions.loaded:
            sessions.reload()
        if "scoreboard" in areas and scoreboard is not None and scoreboard.loaded:
            scoreboard.reload()
        if "config" in areas:
            self._reload_keymap()
        if areas & {"snapshots", "config"}:
            from tui.snapshots_screen import SnapshotsScreen

            for screen in self.screen_stack:
                if isinstance(screen, SnapshotsScreen):
                    screen.reload()

    @work(thread=True, exclusive=True, group="keymap-load", exit_on_error=False)
    def _reload_keymap(self) -> None:
        try:
            keymap = dict(self.workspace.load_config().keymap)
        except SkillsmithError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        if keymap != self._keymap:
            self.call_from_thread(self._apply_keymap, keymap)

    def _apply_keymap(self, keymap: dict[str, str]) -> None:
        self._keymap = keymap
        self.set_keymap(keymap)
        self._check_keymap()

    @on(TabbedContent.TabActivated)
    async def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        await self._open_tab(event.pane.id or "")

    # -- keys: which apply now -----------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """True: the key works. None: shown dimmed (does not apply now). False: hidden."""
        if not self._mounted:
            return True
        if action in ("next_pane", "previous_pane") and isinstance(self.screen, ModalScreen):
            return False  # a dialog's tab moves between its own fields
        applies = self._applies(action)
        if applies is None:
            return True
        if action == "cancel_job":
            return applies
        return True if applies else None

    def _applies(self, action: str) -> bool | None:
        """Whether ``action`` applies to what is selected now (None: it always does)."""
        selected = self.queue_pane.selected
        status = str(selected.candidate.status) if selected is not None else None
        job_running = self._job_token is not None
        if action in ("approve", "reject"):
            return selected is not None  # on a decided candidate the key says why it can't
        if action == "mark":
            return status in OPEN_STATUSES
        if action in ("approve_marked", "reject_marked"):
            return bool(self.queue_pane.marked)
        if action == "undo":
            return (
                bool(self._moves)
                or self.facts.has_decisions
                or any(str(e.candidate.status) in DECIDED_STATUSES for e in self.queue_pane.entries)
            )
        if action == "queue_eval":
            return status == "pending_eval" and bool(self.facts.benchmarks) and not job_running
        from tui.loops import LAUNCHERS  # imported once, at the first paint's key checks

        if action in LAUNCHERS:
            have = {"bench": bool(self.facts.benchmarks), "skill": bool(self.facts.skills)}
            return all(have[need] for need in LAUNCHERS[action].needs) and not job_running
        if action == "cancel_job":
            return job_running
        if action == "rollback":
            return self._rollback_target() is not None
        return None

    def _rollback_target(self) -> tuple[str, str, str | None] | None:
        pane = self.skills_pane
        if pane is None or not pane.loaded:
            return None
        skill, version = pane.selected_skill, pane.selected_version
        if skill is None or version is None or version == skill.current:
            return None
        return skill.name, version, skill.current

    # -- writes through the engine -------------------------------------------------------------
    def engine_call(self, call: Callable[[], str], areas: set[Area], *, timeout: float = 6) -> None:
        """Run one engine write off the UI thread; its one-line result becomes a toast."""
        self._engine_worker(call, areas, timeout)

    @work(thread=True, group="engine", exit_on_error=False)
    def _engine_worker(self, call: Callable[[], str], areas: set[Area], timeout: float) -> None:
        with self._write_lock:
            try:
                done = EngineDone(call(), ok=True, areas=areas, timeout=timeout)
            except SkillsmithError as exc:
                done = EngineDone(str(exc), ok=False, areas=areas | {"queue"}, timeout=10)
            except Exception as exc:  # an engine bug: show it, keep the workbench alive
                done = EngineDone(
                    f"{type(exc).__name__}: {exc}", ok=False, areas=areas, crashed=True
                )
        self.post_message(done)

    @on(EngineDone)
    def _engine_done(self, message: EngineDone) -> None:
        if self._closing_view():
            return
        if message.crashed:
            self.push_screen(ErrorScreen("The engine failed", message.text))
        else:
            severity: SeverityLevel = "information" if message.ok else "error"
            self.notify(message.text, severity=severity, timeout=message.timeout, markup=False)
        self.reload_areas(message.areas)

    def _refuse_decision(self, entry: QueueEntry, verb: str) -> bool:
        """Say why ``verb`` does not apply to this candidate (True: it does not)."""
        c = entry.candidate
        status = str(c.status)
        ok = status == "pending_approval" if verb == "approve" else status in OPEN_STATUSES
        from engine.evaluation.gates.stale import stale_against

        behind = stale_against(self.workspace, c) if verb == "approve" and ok else None
        if behind is not None:
            self.notify(
                f"Cannot approve: {c.id} was made against {c.parent_version}, but {c.skill} is "
                f"now at {behind}. p re-proposes its patch on {behind}; x dismisses it.",
                severity="warning",
                markup=False,
            )
            return True
        if ok:
            return False
        why = {
            "published": f"{c.id} is already published; to take it back, z undoes the last "
            "decision, or b in 6 Skills & history rolls the skill back",
            "approved": f"{c.id} is already approved; z undoes the last decision",
            "rejected": f"{c.id} is already rejected; z undoes the last decision",
            "dismissed": f"{c.id} is dismissed; z undoes the last decision",
            "superseded": f"{c.id} was {c.reason or 'superseded'}: decide the newer one",
            "pending_eval": f"{c.id} waits for evidence (not every gate passed): it cannot be "
            "approved yet; r rejects it",
            "proposed": f"{c.id} is only proposed: its gates have not run, so it cannot be "
            "approved yet; r rejects it",
        }.get(status, f"{c.id} is {status}")
        self.notify(f"Cannot {verb}: {why}.", severity="warning", markup=False)
        return True

    def _moved(self, move: Move) -> None:
        self._moves.append(move)

    def action_approve(self) -> None:
        entry = self.queue_pane.selected
        if entry is None or self._refuse_decision(entry, "approve"):
            return
        c = entry.candidate

        def approve() -> str:
            from engine.core.queue import CandidateQueue

            version = CandidateQueue(self.workspace).approve(
                c.id, expected_hash=str(c.content_hash), why=DECISION_WHY
            )
            self._moved(Move("decision"))
            if c.operation == "delete":
                return f"Approved {c.id}: {c.skill} ({version}) archived, snapshot first. z undoes."
            return f"Approved {c.id}: {c.skill} is now {version}, snapshot taken. z undoes."

        self.engine_call(approve, {"queue", "skills", "snapshots"}, timeout=10)

    def action_reject(self) -> None:
        entry = self.queue_pane.selected
        if entry is None or self._refuse_decision(entry, "reject"):
            return
        c = entry.candidate

        def rejected(reason: str | None) -> None:
            if reason is None:
                return

            def reject() -> str:
                from engine.core.queue import CandidateQueue

                CandidateQueue(self.workspace).reject(
                    c.id, why=reason, expected_hash=str(c.content_hash)
                )
                self._moved(Move("decision"))
                return f"Rejected {c.id}; its patch is on {c.skill}'s taboo list. z undoes."

            self.engine_call(reject, {"queue", "skills"}, timeout=10)

        self.push_screen(
            ReasonScreen(f"Reject {c.id}?", f"{c.skill}: {c.summary}", "why (kept in taboo)"),
            rejected,
        )

    def action_repropose(self) -> None:
        entry = self.queue_pane.selected
        if entry is None:
            return
        from engine.evaluation.gates.stale import repropose, stale_against

        c = entry.candidate
        if stale_against(self.workspace, c) is None:
            self.notify(
                f"Nothing to re-propose: {c.id} is {c.status} and not behind {c.skill}'s "
                "current version.",
                severity="warning",
                markup=False,
            )
            return

        def again() -> str:
            new, _ = repropose(self.workspace, c.id)
            self._moved(Move("decision"))
            return (
                f"Re-proposed {c.id} on {new.parent_version} as {new.id} ({new.status}); "
                f"{c.id} is dismissed. z brings it back."
            )

        self.engine_call(again, {"queue", "skills"}, timeout=10)

    def action_dismiss(self) -> None:
        entry = self.queue_pane.selected
        if entry is None or self._refuse_decision(entry, "dismiss"):
            return
        c = entry.candidate

        def set_aside() -> str:
            from engine.evaluation.gates.stale import dismiss

            why = dismiss(self.workspace, c.id)
            self._moved(Move("decision"))
            return f"Dismissed {c.id} ({why}); no taboo entry. z undoes."

        self.engine_call(set_aside, {"queue"}, timeout=10)

    def action_undo(self) -> None:
        """Undo this session's last move (a rollback, a restore), else the last decision."""
        move = self._moves[-1] if self._moves else Move("decision")

        def undo() -> str:
            from engine.core.queue import CandidateQueue
            from engine.core.store import SkillStore

            if move.kind == "rollback":
                store = SkillStore(self.workspace, move.skill)
                if store.current() != move.to:
                    raise SkillsmithError(
                        f"cannot undo the rollback of {move.skill}: it moved from {move.to} to "
                        f"{store.current()} since"
                    )
                store.rollback(move.frm, why=f"undid the rollback to {move.to} in the workbench")
                text = f"Undid the rollback: {move.skill} is back at {move.frm}."
            elif move.kind == "restore":
                from engine.core.snapshots import restore

                restore(self.workspace, self.workspace.snapshots_dir / move.frm, yes=True)
                text = f"Undid the restore: the workspace is back as it was ({move.frm})."
            else:
                text = CandidateQueue(self.workspace).undo_last().capitalize()
            if self._moves:
                self._moves.pop()
            return text

        self.engine_call(undo, {"queue", "skills", "snapshots"}, timeout=10)

    def action_mark(self) -> None:
        self.queue_pane.toggle_mark()
        self.refresh_bindings()

    def _batch(self, entries: list[QueueEntry], verb: str, reason: str | None) -> Callable[[], str]:
        def run() -> str:
            from engine.core.queue import CandidateQueue

            queue = CandidateQueue(self.workspace)
            done, failed = [], []
            for entry in entries:
                c = entry.candidate
                try:
                    if reason is None:
                        queue.approve(c.id, expected_hash=str(c.content_hash), why=DECISION_WHY)
                    else:
                        queue.reject(c.id, why=reason, expected_hash=str(c.content_hash))
                    done.append(c.id)
                except SkillsmithError as exc:
                    failed.append(str(exc))
            text = f"{verb} {len(done)} of {len(entries)} marked candidates."
            if failed:
                raise SkillsmithError(f"{text} Refused: {' | '.join(failed)}")
            return text

        return run

    def action_approve_marked(self) -> None:
        entries = self.queue_pane.marked_entries()
        if not entries:
            return
        ids = "\n".join(f"  {e.id}  {e.candidate.skill}: {e.candidate.summary}" for e in entries)

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.queue_pane.clear_marks()
                self.engine_call(
                    self._batch(entries, "Approved", None), {"queue", "skills", "snapshots"}
                )

        self.push_screen(
            ConfirmScreen(f"Approve {len(entries)} marked candidates?", ids, yes="Approve"),
            confirmed,
        )

    def action_reject_marked(self) -> None:
        entries = self.queue_pane.marked_entries()
        if not entries:
            return
        ids = "\n".join(f"  {e.id}  {e.candidate.skill}: {e.candidate.summary}" for e in entries)

        def reasoned(reason: str | None) -> None:
            if reason is not None:
                self.queue_pane.clear_marks()
                self.engine_call(self._batch(entries, "Rejected", reason), {"queue", "skills"})

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.push_screen(
                    ReasonScreen(f"Why reject these {len(entries)}?", ids, "why (kept in taboo)"),
                    reasoned,
                )

        self.push_screen(
            ConfirmScreen(
                f"Reject {len(entries)} marked candidates?", ids, yes="Reject", danger=True
            ),
            confirmed,
        )

    def action_snapshot(self) -> None:
        def snapshot() -> str:
            from engine.core.snapshots import create_snapshot

            path = create_snapshot(self.workspace, note="taken in the workbench")
            return f"Snapshot written: snapshots/{path.name}"

        self.engine_call(snapshot, {"snapshots"})

    def action_snapshots(self) -> None:
        from tui.snapshots_screen import SnapshotsScreen

        self.push_screen(SnapshotsScreen(self.workspace))

    def on_snapshots_screen_restore(self, message: SnapshotsScreen.Restore) -> None:
        snapshot = message.snapshot

        def run() -> str:
            from engine.core.snapshots import finish_pending, restore

            before = restore(self.workspace, snapshot.path, yes=True)
            finish_pending(self.workspace)  # the replaced state's archive, off the event loop
            self._moved(Move("restore", frm=before.name))
            return f"Restored {snapshot.path.name}; the state before it is {before.name}; z undoes."

        self.engine_call(run, {"queue", "skills", "snapshots", "config", "scoreboard"}, timeout=10)

    def action_rollback(self) -> None:
        target = self._rollback_target()
        if target is None:
            return
        skill, version, current = target

        def rollback() -> str:
            from engine.core.store import SkillStore

            SkillStore(self.workspace, skill).rollback(
                version, why=f"rolled back in the workbench from {current}"
            )
            if current is not None:
                self._moved(Move("rollback", skill=skill, frm=current, to=version))
            return (
                f"Rolled {skill} back to {version} (was {current}); nothing was deleted. z undoes."
            )

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.engine_call(rollback, {"skills", "queue"})

        body = (
            f"skills/{skill}/SKILL.md becomes {version}. {current} and every other version stay "
            f"in history; z undoes this (back to {current})."
        )
        self.push_screen(
            ConfirmScreen(f"Roll {skill} back from {current} to {version}?", body, yes="Roll back"),
            confirmed,
        )

    # -- jobs ----------------------------------------------------------------------------------
    def _job_bench(self, *, built: bool = False) -> str | None:
        """The benchmark a job runs on: the one used (run or built) last, else the one the
        scoreboard shows, else the first; ``built``: only one with a Formal Baseline (the agent
        optimizer starts from it)."""
        from engine.core.runs import benchmarks_by_use

        choices = list(self.facts.benchmarks)
        if built:
            from engine.loops.builder.baseline import has_formal_baseline

            choices = [b for b in choices if has_formal_baseline(self.workspace, b)]
        used = [b for b in benchmarks_by_use(self.workspace.runs_dir) if b in choices]
        scoreboard = self.scoreboard_pane
        if not used and scoreboard is not None and scoreboard.bench in choices:
            return scoreboard.bench
        return next(iter(used or choices), None)

    def _job_skill(self) -> str | None:
        """The skill a job works on: the highlighted candidate's, the highlighted skill's, or
        the only one there is."""
        entry = self.queue_pane.selected
        if entry is not None and str(entry.candidate.skill) in self.facts.skills:
            return str(entry.candidate.skill)
        skill = self.skills_pane.selected_skill if self.skills_pane is not None else None
        if skill is not None and skill.name in self.facts.skills:
            return skill.name
        return self.facts.skills[0] if self.facts.skills else None

    def action_evaluate(self) -> None:
        bench = self._job_bench()
        if bench is None:
            return
        self._size_evaluation(bench)

    @work(thread=True, exclusive=True, group="eval-size", exit_on_error=False)
    def _size_evaluation(self, bench: str) -> None:
        from engine.views.overview import evaluation_size

        try:
            text, ok = evaluation_size(self.workspace, bench).describe(), True
        except SkillsmithError as exc:
            text, ok = str(exc), False
        self.post_message(EvalSized(bench, text, ok))

    @on(EvalSized)
    def _eval_sized(self, message: EvalSized) -> None:
        if self._closing_view():
            return
        if not message.ok:
            title = f"Evaluate {message.bench} failed"
            self.activity.add("error", f"{title}: {message.text}")
            self.push_screen(ErrorScreen(title, message.text))
            return

        body = f"{message.text}\nc cancels it; finished units are kept and the same key resumes."
        self._open_loop("evaluate", body, title=f"Evaluate {message.bench}?")

    def action_queue_eval(self) -> None:
        entry = self.queue_pane.selected
        if entry is None:
            return
        c = entry.candidate

        def settle(reporter: Callable[[Event], None], cancel: CancelToken) -> str:
            from engine.evaluation.gates.queued import (
                evaluate_queued,  # runs the agent: loads lazily
            )

            done = evaluate_queued(self.workspace, c.id, reporter=reporter, cancel=cancel)
            return f"{c.id}: {done.line()} → {done.status}"

        self.start_job(Job(f"Evaluate {c.id}", settle))

    def action_evolve(self) -> None:
        self._open_loop("evolve")

    def action_optimize(self) -> None:
        self._open_loop("optimize")

    def action_optimize_agent(self) -> None:
        self._open_loop("optimize_agent")

    def action_build(self) -> None:
        self._open_loop("build")

    def action_review(self) -> None:
        self._open_loop("review")

    def action_curate(self) -> None:
        self._open_loop("curate")

    def action_tune_description(self) -> None:
        self._open_loop("tune_description")

    def _open_loop(self, action: str, body: str = "", *, title: str = "") -> None:
        """The loop's form; what it returns is the job to start."""
        from tui.loop_form import LoopForm
        from tui.loops import LAUNCHERS
        from tui.loops import Context as LoopContext

        launcher = LAUNCHERS[action]
        bench = self._job_bench(built=action == "optimize_agent")
        ctx = LoopContext(self.workspace, bench, self._job_skill())

        def chosen(job: Job | None) -> None:
            if job is not None:
                self.start_job(job)

        fields = launcher.fields(ctx)
        form = LoopForm(title or launcher.title, body, fields, partial(launcher.job, ctx))
        self.push_screen(form, chosen)

    def start_job(self, job: Job) -> None:
        if self._job_token is not None:
            self.notify("A job is already running (c cancels it).", severity="warning")
            return
        from engine.core.events import CancelToken

        self._job_token = CancelToken()
        self.query_one(JobBar).start(job.title)
        self.overview_pane.set_job(job.title)
        self.refresh_bindings()
        self._run_job(job, self._job_token)

    @work(thread=True, group="job", exit_on_error=False)
    def _run_job(self, job: Job, token: CancelToken) -> None:
        from engine.core.events import Cancelled

        def report(event: Event) -> None:
            self.post_message(JobEvent(event))

        try:
            done = job.run(reporter=report, cancel=token)
            outcome = done if isinstance(done, JobOutcome) else JobOutcome(done)
            ended = JobEnded(job.title, outcome.summary, outcome=outcome)
        except Cancelled:
            ended = JobEnded(
                job.title, f"{job.title}: cancelled; finished work is kept.", cancelled=True
            )
        except SkillsmithError as exc:
            ended = JobEnded(job.title, "", error=str(exc))
        except Exception as exc:  # a crash in the job must not take the workbench down
            ended = JobEnded(job.title, "", error=f"{type(exc).__name__}: {exc}", crashed=True)
        self.post_message(ended)

    @on(JobEvent)
    def _job_event(self, message: JobEvent) -> None:
        if self._closing_view():
            return
        if self._job_token is not None:
            self.query_one(JobBar).show_event(message.event)

    @on(JobEnded)
    def _job_ended(self, message: JobEnded) -> None:
        if self._closing_view():
            return
        self._job_token = None
        self.query_one(JobBar).stop()
        self.overview_pane.set_job(None)
        self.refresh_bindings()
        if message.error is not None:
            title = f"{message.title} crashed" if message.crashed else f"{message.title} failed"
            self.activity.add("error", f"{title}: {message.error}")
            self.push_screen(ErrorScreen(title, message.error))
            self.overview_pane.set_last(f"{title}: {message.error}")
        else:
            outcome = message.outcome
            self.report(outcome.kind, outcome.summary, outcome.link)
            self.overview_pane.set_last(outcome.summary)
            if outcome.gates is not None:
                self._round_gates = (outcome.gates_title, outcome.gates)
                if self.queue_pane.selected is None:
                    self.query_one(GatesPane).show_gates(*self._round_gates)
        self.reload_areas({"queue", "skills", "sessions", "scoreboard"})

    def action_cancel_job(self) -> None:
        if self._job_token is not None:
            self._job_token.cancel()
            self.query_one(JobBar).cancelling()

    # -- panes ---------------------------------------------------------------------------------
    async def action_pane(self, number: int) -> None:
        tab, selector = PANES[number]
        if tab is not None:
            if self.query_one_optional(f"#{tab}", TabPane) is None:
                return  # a key typed ahead of the first frame: the tab is added just after it
            await self._open_tab(tab)
            # Blur first: hiding the focused pane would otherwise drop the focus we set next.
            self.set_focus(None)
            self.query_one(TabbedContent).active = tab
        self.call_after_refresh(self._focus_pane, selector)

    def _focus_pane(self, selector: str) -> None:
        widget = self.query_one_optional(selector)
        if widget is not None and widget.focusable:
            widget.focus()

    def _current_pane(self) -> int:
        """The pane holding the focus (the queue when nothing in a tab has it)."""
        focused = self.focused
        if focused is not None:
            for number, (tab, _) in PANES.items():
                if tab is not None and any(
                    isinstance(a, TabPane) and a.id == tab for a in focused.ancestors
                ):
                    return number
        return 1

    async def action_next_pane(self) -> None:
        order = sorted(PANES)
        await self.action_pane(order[(order.index(self._current_pane()) + 1) % len(order)])

    async def action_previous_pane(self) -> None:
        order = sorted(PANES)
        await self.action_pane(order[(order.index(self._current_pane()) - 1) % len(order)])

    def action_filter(self) -> None:
        self.queue_pane.start_filter()

    def _show_diff_tab(self) -> DiffPane | None:
        """Diff keys act on the diff: bring it up when another tab (the overview) is showing.
        None for a key typed ahead of the first frame (the diff tab is added just after it)."""
        pane = self.query_one_optional("#diff-pane")
        if pane is None:
            return None
        tabs = self.query_one(TabbedContent)
        if tabs.active != "tab-diff":
            tabs.active = "tab-diff"
        return cast("DiffPane", pane)

    def action_diff_mode(self) -> None:
        pane = self._show_diff_tab()
        if pane is not None:
            pane.toggle_mode()

    def action_diff_scroll(self, lines: int) -> None:
        pane = self._show_diff_tab()
        if pane is not None:
            self.call_after_refresh(pane.view.scroll_relative, y=lines, animate=False)

    def action_refresh(self) -> None:
        self.reload_areas({"queue", "skills", "sessions", "scoreboard", "snapshots", "config"})

    @on(DataTable.RowSelected, "#queue")
    async def _queue_enter(self, event: DataTable.RowSelected) -> None:
        await self.action_pane(2)

    @on(ActivityPane.Follow)
    async def _follow_link(self, message: ActivityPane.Follow) -> None:
        """Enter on an activity entry: the candidate in the queue, or the session's events."""
        link = message.link
        if link.kind == "candidate":
            await self.action_pane(1)
            self.queue_pane.table.move_to_key(link.id)
            await self.action_pane(3)
            return
        await self.action_pane(4)
        sessions = self.sessions_pane
        if sessions is not None:
            sessions.show_session(link.id)  # an evaluation's session is named after its run

    def on_sessions_pane_open_transcript(self, message: SessionsPane.OpenTranscript) -> None:
        from tui.transcript_screen import TranscriptScreen  # the trace parser: when first asked

        self.push_screen(
            TranscriptScreen(
                self.workspace,
                message.run_id,
                message.case_id,
                message.run_index,
                message.variant,
            )
        )

    # -- help and palette ----------------------------------------------------------------------
    def _key_groups(self) -> list[KeyGroup]:
        from tui.help_screen import KeyGroup
        from tui.navigation import SCROLL_BINDINGS, TABLE_BINDINGS, ListsPane
        from tui.scoreboard_pane import ScoreboardPane
        from tui.snapshots_screen import SnapshotsScreen

        palette = Binding("ctrl+p", "command_palette", "Command palette: every action by name")
        open_row = Binding("enter", "select", "Open: candidate → diff, event → transcript")
        lists = "Lists (queue, sessions, records, skills, versions)"
        return [
            KeyGroup("Everywhere", [*APP_BINDINGS, palette, Binding("ctrl+q", "quit", "Quit")]),
            KeyGroup(lists, [*TABLE_BINDINGS, open_row]),
            KeyGroup("Diff, gates, details", SCROLL_BINDINGS),
            KeyGroup("Sessions and skills panes", ListsPane.BINDINGS),
            KeyGroup("Queue filter", QueuePane.BINDINGS),
            KeyGroup("Scoreboard", ScoreboardPane.BINDINGS),
            KeyGroup("Activity log", ActivityPane.BINDINGS),
            KeyGroup("Snapshots screen", SnapshotsScreen.BINDINGS),
            KeyGroup("Dialogs", [*ConfirmScreen.BINDINGS[:2], *ReasonScreen.BINDINGS]),
        ]

    def _all_bindings(self) -> list[Binding]:
        return [b for g in self._key_groups() for b in g.bindings if isinstance(b, Binding)]

    def action_help(self) -> None:
        from tui.help_screen import HelpScreen

        self.push_screen(HelpScreen(self._key_groups(), self._normalize_keymap(self._keymap)))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for name in THEMES:
            yield SystemCommand(
                f"Theme: {name}",
                "Switch the colour theme (remembered)",
                partial(setattr, self, "theme", name),
            )
        seen: set[str] = set()
        for binding in APP_BINDINGS:
            assert isinstance(binding, Binding)
            if binding.action in seen or binding.action in ("help", "quit"):
                continue
            seen.add(binding.action)
            key = binding.key.split(",")[0]
            yield SystemCommand(
                binding.description,
                f"{binding.tooltip or binding.description} (key: {key})",
                partial(self._palette_run, binding.action),
            )

    def _palette_run(self, action: str) -> None:
        _, name, params = parse_action(action)
        if not self.check_action(name, params):
            self.notify(f"{name.replace('_', ' ')}: does not apply right now", severity="warning")
            return
        self.call_later(self.run_action, action)

    # -- theme persistence ---------------------------------------------------------------------
    def watch_theme(self, theme: str) -> None:
        if getattr(self, "_theme_ready", False):
            self._save_theme(theme)

    @work(thread=True, exclusive=True, group="user-config", exit_on_error=False)
    def _save_theme(self, theme: str) -> None:
        config = UserConfig(theme=theme)
        try:
            save_user_config(config)
            self._user_config = config
        except (SkillsmithError, OSError) as exc:
            self.notify(f"Could not save the theme choice: {exc}", severity="warning")

    # -- quitting ------------------------------------------------------------------------------
    async def action_quit(self) -> None:
        self._stop_background()
        self.exit()

    def on_unmount(self) -> None:
        self._stop_background()
        if self._heap_frozen:  # what this workbench held is collectable again (tests run many)
            gc.unfreeze()

    def _stop_background(self) -> None:
        if self._job_token is not None:
            self._job_token.cancel()
        self._watch_stop.set()


def make_app(
    workspace: Workspace, *, theme: str | None = None, watch: bool = True
) -> SkillsmithApp:
    """The app for ``workspace`` (tests and benchmarks build it here, without running it)."""
    return SkillsmithApp(workspace, theme=theme, watch=watch)


def run_app(workspace: Workspace, theme: str | None = None) -> int:
    """Open the workbench on ``workspace``; returns the process exit code."""
    app = make_app(workspace, theme=theme)
    app.run()
    return app.return_code or 0
