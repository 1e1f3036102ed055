"""`S`: the workspace snapshots, newest first, with restore behind a confirmation.

Restoring replaces the agent state (skills/, AGENTS.md, skillsmith.yaml, history/), so the
dialog opens with "No" focused and says when the snapshot is older than the current version;
the engine snapshots the current state first, and the toast names that file so a restore can
itself be undone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from engine.core.errors import SkillsmithError
from engine.core.workspace import Workspace
from tui.dialogs import ConfirmScreen
from tui.navigation import VimTable
from tui.skills_pane import human_size

if TYPE_CHECKING:
    from engine.core.snapshots import SnapshotInfo


def restore_prompt(snapshot: SnapshotInfo, current: int | None) -> tuple[str, str]:
    """Title and body of the restore confirmation."""
    title = f"Restore snapshot v{snapshot.version}?"
    lines = []
    if current is not None and snapshot.version < current:
        lines.append(
            f"v{snapshot.version} is OLDER than the current workspace version v{current}: "
            "restoring goes back to an earlier agent state."
        )
    elif current is not None and snapshot.version == current:
        lines.append(
            f"v{snapshot.version} is the current workspace version: restoring returns to the "
            "state saved in this snapshot, replacing changes made since."
        )
    lines.append(
        "skills/, AGENTS.md, skillsmith.yaml and history/ are replaced by the snapshot's; "
        "the current state is snapshotted first, so this can be undone."
    )
    return title, "\n\n".join(lines)


class SnapshotsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "restore", "Restore", id="restore", priority=True),
        Binding("escape,q", "app.pop_screen", "Back", id="close_snapshots"),
    ]
    DEFAULT_CSS = """
    SnapshotsScreen > #snapshots-title { height: 1; padding: 0 1; background: $panel; }
    SnapshotsScreen > VimTable { height: 1fr; }
    """

    class _Listed(Message):
        def __init__(self, snapshots: list[SnapshotInfo], current: int | None, error: str | None):
            super().__init__()
            self.snapshots = snapshots
            self.current = current
            self.error = error

    class Restore(Message):
        """Ask the app to restore ``snapshot`` (the app runs it and reloads every pane)."""

        def __init__(self, snapshot: SnapshotInfo) -> None:
            super().__init__()
            self.snapshot = snapshot

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self.snapshots: list[SnapshotInfo] = []
        self.current: int | None = None
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield Static("Snapshots · enter restores · esc back", id="snapshots-title", markup=False)
        table = VimTable(id="snapshot-list")
        table.add_column("version", key="version")
        table.add_column("created", key="created")
        table.add_column("size", key="size")
        table.add_column("note", key="note")
        table.add_column("file", key="file")
        yield table
        yield Footer()

    def on_mount(self) -> None:
        # the list takes the keys at once: up/down (j/k) choose the snapshot enter restores
        self.query_one(VimTable).focus()
        self.reload()

    def reload(self) -> None:
        self._list()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def _list(self) -> None:
        try:
            from engine.core.snapshots import list_snapshots  # tarfile, zlib: when first shown

            snapshots, error = list_snapshots(self.workspace), None
            current: int | None = self.workspace.version()
        except SkillsmithError as exc:
            snapshots, current, error = [], None, str(exc)
        if not get_current_worker().is_cancelled:
            self.post_message(self._Listed(snapshots, current, error))

    @on(_Listed)
    def _listed(self, message: _Listed) -> None:
        self.snapshots, self.current = message.snapshots, message.current
        table = self.query_one(VimTable)
        previous = table.highlighted_key
        table.clear()
        for snap in reversed(message.snapshots):
            table.add_row(
                f"v{snap.version}",
                snap.created_at,
                human_size(snap.size),
                snap.note,
                snap.path.name,
                key=snap.path.name,
            )
        table.move_to_key(previous)
        version = "?" if message.current is None else f"v{message.current}"
        title = f"Snapshots · workspace {version} · enter restores · esc back"
        if message.error:
            title = message.error
        self.query_one("#snapshots-title", Static).update(title)
        self.loaded = True

    @property
    def selected(self) -> SnapshotInfo | None:
        key = self.query_one(VimTable).highlighted_key
        return next((s for s in self.snapshots if s.path.name == key), None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "restore":
            return self.selected is not None
        return True

    def action_restore(self) -> None:
        snapshot = self.selected
        if snapshot is None:
            return
        title, body = restore_prompt(snapshot, self.current)

        def answered(yes: bool | None) -> None:
            if yes:
                self.post_message(self.Restore(snapshot))

        self.app.push_screen(
            ConfirmScreen(title, body, yes="Restore", no="No", danger=True), answered
        )
