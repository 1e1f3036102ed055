"""Skills & history: each skill's versions and current pointer, its timeline and taboo list,
and the workspace snapshots.

Everything is read through ``engine.core.store.SkillStore`` and ``engine.core.snapshots`` in a
thread
worker; the pane only lays it out. The highlighted skill and version are what ``b`` (roll back)
acts on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from engine.core.errors import SkillsmithError
from engine.core.store import SkillStore, TabooEntry, VersionInfo, stores_of, version_label
from engine.core.workspace import Workspace
from tui.navigation import SCROLL_BINDINGS, ListsPane, VimTable

if TYPE_CHECKING:
    from engine.core.snapshots import SnapshotInfo

_TIMELINE_SHOWN = 40


@dataclass(frozen=True)
class SkillHistory:
    name: str
    current: str | None = None
    versions: list[VersionInfo] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    taboo: list[TabooEntry] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True)
class HistorySnapshot:
    skills: list[SkillHistory]
    snapshots: list[SnapshotInfo]
    snapshot_error: str | None
    workspace_version: int | None


def load_history(ws: Workspace) -> HistorySnapshot:
    """Every skill with a SKILL.md or a history, and the snapshot list (one bad file each)."""
    names = set(ws.skill_names()) | {store.name for store in stores_of(ws)}
    skills: list[SkillHistory] = []
    for name in sorted(names):
        try:
            store = SkillStore(ws, name)
            skills.append(
                SkillHistory(
                    name,
                    store.current(),
                    store.versions(),
                    store.timeline(),
                    store.taboo().entries(),
                )
            )
        except SkillsmithError as exc:
            skills.append(SkillHistory(name, error=str(exc)))
    try:
        from engine.core.snapshots import list_snapshots  # tarfile, zlib: when first shown

        snapshots, snapshot_error = list_snapshots(ws), None
    except SkillsmithError as exc:
        snapshots, snapshot_error = [], str(exc)
    try:
        version: int | None = ws.version()
    except SkillsmithError:
        version = None
    return HistorySnapshot(skills, snapshots, snapshot_error, version)


def rollback_default(skill: SkillHistory) -> str | None:
    """Where the version cursor starts: the version before the current one, the usual target of
    a rollback (starting on the oldest made one keypress drop every later version)."""
    names = [v.version for v in skill.versions]
    if skill.current not in names:
        return skill.current
    index = names.index(skill.current)
    return names[index - 1] if index > 0 else skill.current


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def render_details(skill: SkillHistory | None, history: HistorySnapshot) -> Content:
    parts: list[tuple[str, str] | str] = []
    if skill is not None:
        if skill.error:
            parts.append((f"{skill.error}\n\n", "$text-error"))
        parts.append((f"Timeline of {skill.name}\n", "bold $text-primary"))
        if not skill.timeline:
            parts.append(("  (empty)\n", "$text-muted"))
        for entry in list(reversed(skill.timeline))[:_TIMELINE_SHOWN]:
            when = str(entry.get("when", ""))
            op = str(entry.get("op", "?"))
            moved = ""
            if entry.get("to"):
                branch = entry.get("branch")  # a branch's v1 is not main's v1: exp1/v1
                frm = entry.get("from")
                frm = "–" if not frm else version_label(branch, str(frm))
                moved = f" {frm}→{version_label(branch, str(entry['to']))}"
            why = entry.get("why") or entry.get("reason") or ""
            parts.append((f"  {when} ", "$text-muted"))
            parts.append((f"{op}{moved}", "bold"))
            parts.append(f"  {why}\n" if why else "\n")
        parts.append((f"\nTaboo ({len(skill.taboo)})\n", "bold $text-primary"))
        if not skill.taboo:
            parts.append(("  (none)\n", "$text-muted"))
        for taboo in skill.taboo:
            parts.append((f"  {taboo.rule_id} ", "$gate-fail"))
            parts.append((f"{taboo.diff_hash} ", "$text-muted"))
            parts.append(f"{taboo.reason}\n")
    version = "?" if history.workspace_version is None else str(history.workspace_version)
    parts.append((f"\nSnapshots (workspace v{version})\n", "bold $text-primary"))
    if history.snapshot_error:
        parts.append((f"  {history.snapshot_error}\n", "$text-error"))
    elif not history.snapshots:
        parts.append(("  (none; s takes one)\n", "$text-muted"))
    for snap in reversed(history.snapshots):
        parts.append((f"  v{snap.version:<4}", "bold"))
        parts.append((f" {snap.created_at}  {human_size(snap.size):>9}", "$text-muted"))
        parts.append(f"  {snap.note}\n" if snap.note else "\n")
    return Content.assemble(*parts)


class DetailScroll(VerticalScroll, can_focus=True):
    BINDINGS = SCROLL_BINDINGS


class SkillsPane(ListsPane, Horizontal):
    """Skills | versions of the highlighted skill | timeline, taboo, snapshots."""

    DEFAULT_CSS = """
    SkillsPane > #skill-list { width: 24%; }
    SkillsPane > #version-list { width: 38%; }
    SkillsPane > DetailScroll { width: 1fr; padding: 0 1; background: $surface; }
    """

    class _Loaded(Message):
        def __init__(self, history: HistorySnapshot) -> None:
            super().__init__()
            self.history = history

    class _Failed(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(self, workspace: Workspace, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.workspace = workspace
        self.history: HistorySnapshot | None = None
        self._shown_skill: str | None = None
        self._shown_current: str | None = None
        self.loaded = False

    def compose(self) -> ComposeResult:
        skills = VimTable(id="skill-list")
        skills.add_column("skill", key="name")
        skills.add_column("current", key="current")
        skills.add_column("#v", key="count")
        yield skills
        versions = VimTable(id="version-list")
        versions.add_column(" ", key="mark", width=1)
        versions.add_column("version", key="version", width=7)
        versions.add_column("created", key="created")
        versions.add_column("why", key="why")
        yield versions
        with DetailScroll(id="skill-detail"):
            yield Static("", id="skill-detail-body")

    # -- selection (what `b` acts on) ----------------------------------------------------------
    @property
    def selected_skill(self) -> SkillHistory | None:
        key = self.query_one("#skill-list", VimTable).highlighted_key
        if self.history is None or key is None:
            return None
        return next((s for s in self.history.skills if s.name == key), None)

    @property
    def selected_version(self) -> str | None:
        return self.query_one("#version-list", VimTable).highlighted_key

    # -- loading -------------------------------------------------------------------------------
    def reload(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="skills-load", exit_on_error=False)
    def _load(self) -> None:
        try:
            history = load_history(self.workspace)
        except SkillsmithError as exc:
            if not get_current_worker().is_cancelled:
                self.post_message(self._Failed(str(exc)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self._Loaded(history))

    @on(_Failed)
    def _failed(self, message: _Failed) -> None:
        self.query_one("#skill-detail-body", Static).update(
            Content.styled(message.error, "$text-error")
        )

    @on(_Loaded)
    def _loaded(self, message: _Loaded) -> None:
        self.history = message.history
        table = self.query_one("#skill-list", VimTable)
        previous = table.highlighted_key
        table.clear()
        for skill in message.history.skills:
            current = skill.current or ("error" if skill.error else "–")
            table.add_row(skill.name, current, str(len(skill.versions)), key=skill.name)
        table.move_to_key(previous)
        self.loaded = True
        self._show_skill()

    def _show_skill(self) -> None:
        assert self.history is not None
        skill = self.selected_skill
        versions = self.query_one("#version-list", VimTable)
        previous = versions.highlighted_key
        versions.clear()
        if skill is not None:
            for info in reversed(skill.versions):
                is_current = info.version == skill.current
                versions.add_row(
                    Content.styled("●", "bold $gate-pass") if is_current else Content(" "),
                    Content.styled(info.version, "bold" if is_current else ""),
                    info.created_at,
                    info.why,
                    key=info.version,
                )
            # the cursor stays where the user put it until the skill moves to another version
            # (a job published one): then it starts again on the version before the new one
            same = skill.name == self._shown_skill and skill.current == self._shown_current
            versions.move_to_key(previous if same and previous else rollback_default(skill))
        self._shown_skill = skill.name if skill is not None else None
        self._shown_current = skill.current if skill is not None else None
        self.query_one("#skill-detail-body", Static).update(render_details(skill, self.history))

    @on(DataTable.RowHighlighted, "#skill-list")
    def _skill_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if self.history is not None:
            self._show_skill()
