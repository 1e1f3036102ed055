"""The workbench's report key: write the HTML report of what a pane has selected.

The Sessions pane (a session) and the Scoreboard pane (an evaluation's run) share it. The report
is rendered off the UI thread — reading transcripts takes a moment on a big session — and the
toast (and the activity log) says where the file went, so it can be opened or attached.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.widget import Widget

from engine.core.errors import SkillsmithError
from engine.core.workspace import Workspace

REPORT_BINDING = Binding(
    "H",
    "write_report",
    "Write report",
    id="write_report",
    tooltip="Write the selection's HTML report to reports/ and show its path",
)


def write_report_of(widget: Widget, workspace: Workspace, ref: str | None) -> None:
    """Write the report of ``ref`` in a thread; the outcome is a toast naming the file."""
    if ref is None:
        widget.notify("nothing selected to report on", severity="warning")
        return

    def run() -> None:
        from engine.share.write import write_report  # the renderers load with the first report

        try:
            path = write_report(workspace, ref)
        except SkillsmithError as exc:
            widget.app.call_from_thread(widget.notify, str(exc), severity="error", markup=False)
            return
        widget.app.call_from_thread(
            widget.notify, f"report of {ref} written: {path}", markup=False, timeout=15
        )

    widget.run_worker(run, thread=True, group="report", exit_on_error=False)
