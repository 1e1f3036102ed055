"""The workbench's global key bindings, as data.

Every binding has an id, so ``keymap:`` in skillsmith.yaml can move it (``{approve: "enter"}``);
the help screen and the command palette are generated from these lists, so they always show the
keys actually in force.
"""

from __future__ import annotations

from textual.binding import Binding, BindingType

APP_BINDINGS: list[BindingType] = [
    Binding("a", "approve", "Approve", id="approve", tooltip="Publish the candidate and snapshot"),
    Binding("r", "reject", "Reject", id="reject", tooltip="Reject with a reason (goes to taboo)"),
    Binding("z", "undo", "Undo", id="undo", tooltip="Revert the last decision"),
    Binding("space", "mark", "Mark", id="mark", tooltip="Mark for a batch decision"),
    Binding("A", "approve_marked", "Approve marked", id="approve_marked", show=False),
    Binding("X", "reject_marked", "Reject marked", id="reject_marked", show=False),
    Binding(
        "p",
        "repropose",
        "Re-propose stale",
        id="repropose",
        tooltip="A stale candidate's patch on the skill's current version, gated anew",
        show=False,
    ),
    Binding(
        "x",
        "dismiss",
        "Dismiss",
        id="dismiss",
        tooltip="Set the candidate aside without a taboo entry (z undoes)",
        show=False,
    ),
    Binding("e", "evaluate", "Evaluate", id="evaluate", tooltip="Evaluate on the benchmark"),
    Binding(
        "E",
        "queue_eval",
        "Evaluate candidate",
        id="queue_eval",
        tooltip="Paired evaluation of a pending_eval candidate against its parent",
        show=False,
    ),
    Binding("v", "evolve", "Evolve round", id="evolve", tooltip="One outcome-driven round"),
    Binding("o", "optimize", "Optimize", id="optimize", tooltip="GEPA over the skill's sections"),
    Binding(
        "O",
        "optimize_agent",
        "Agent Optimizer",
        id="optimize_agent",
        tooltip="Strict-improvement rounds over AGENTS.md, skills and settings",
        show=False,
    ),
    Binding(
        "B", "build", "Build benchmark", id="build", tooltip="Draft, pilot, freeze", show=False
    ),
    Binding(
        "W",
        "review",
        "Online review",
        id="review",
        tooltip="Review finished sessions' transcripts for skill candidates",
        show=False,
    ),
    Binding("C", "curate", "Curate", id="curate", tooltip="Usage, overlap, staleness", show=False),
    Binding(
        "T",
        "tune_description",
        "Tune description",
        id="tune_description",
        tooltip="Trigger tuning on should / should-not queries",
        show=False,
    ),
    Binding("s", "snapshot", "Snapshot", id="snapshot", show=False),
    Binding("S", "snapshots", "Snapshots", id="snapshots"),
    Binding("b", "rollback", "Roll back", id="rollback", show=False),
    Binding("d", "diff_mode", "Diff mode", id="diff_mode", show=False),
    Binding("J", "diff_scroll(4)", "Scroll diff down", id="diff_down", show=False),
    Binding("K", "diff_scroll(-4)", "Scroll diff up", id="diff_up", show=False),
    Binding("slash", "filter", "Filter", id="filter"),
    # Priority: the screen's own tab (focus the next widget) would otherwise win.
    Binding("tab", "next_pane", "Next pane", id="next_pane", show=False, priority=True),
    Binding(
        "shift+tab", "previous_pane", "Previous pane", id="previous_pane", show=False, priority=True
    ),
    Binding("0", "pane(0)", "Overview", id="pane_0", show=False),
    Binding("1", "pane(1)", "Queue", id="pane_1", show=False),
    Binding("2", "pane(2)", "Diff", id="pane_2", show=False),
    Binding("3", "pane(3)", "Gates", id="pane_3", show=False),
    Binding("4", "pane(4)", "Sessions", id="pane_4", show=False),
    Binding("5", "pane(5)", "Scoreboard", id="pane_5", show=False),
    Binding("6", "pane(6)", "Skills & history", id="pane_6", show=False),
    Binding("7", "pane(7)", "Activity log", id="pane_7", show=False),
    Binding("R", "refresh", "Reload", id="refresh", show=False),
    Binding("c", "cancel_job", "Cancel job", id="cancel_job"),
    Binding("question_mark,f1", "help", "Help", id="help"),
    Binding("q", "quit", "Quit", id="quit"),
]
