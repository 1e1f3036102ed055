"""Decisions from the keyboard: a, r, z, space, A, X — each asserted on the files on disk."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from textual.pilot import Pilot

from engine.core.queue import CandidateQueue
from engine.core.snapshots import list_snapshots
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from tests.tui_pilot import SIZE, settle, toasts, user_config_home
from tests.tui_workspace import BENCH, SKILL, build_workspace
from tui.app import SkillsmithApp, make_app
from tui.dialogs import ConfirmScreen, ReasonScreen

__all__ = ["user_config_home"]


def status_on_disk(ws: Workspace, candidate_id: str) -> str:
    data = yaml.safe_load((ws.candidates_dir / candidate_id / "candidate.yaml").read_text())
    return str(data["status"])


def pending(ws: Workspace) -> list[str]:
    return sorted(c.id for c in CandidateQueue(ws).list() if c.status == "pending_approval")


async def select(pilot: Pilot[None], candidate_id: str) -> None:
    """Move the queue cursor onto ``candidate_id`` with the keys a user would press."""
    app = pilot.app
    assert isinstance(app, SkillsmithApp)
    await pilot.press("1", "g")
    for _ in range(len(app.queue_pane.entries)):
        selected = app.queue_pane.selected
        if selected is not None and selected.id == candidate_id:
            await settle(pilot)
            return
        await pilot.press("j")
    raise AssertionError(f"{candidate_id} is not in the queue")


async def test_a_approves_publishes_and_snapshots(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    target = pending(ws)[0]
    proposed = CandidateQueue(ws).get(target).skill_text()
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, target)
        await pilot.press("a")
        await settle(pilot)
        store = SkillStore(ws, SKILL)
        assert store.current() == "v2"
        assert ws.skill_path(SKILL).read_text() == proposed
        assert status_on_disk(ws, target) == "published"
        assert any(target in snap.note for snap in list_snapshots(ws))
        assert any("z undoes" in t and "v2" in t for t in toasts(pilot))
        # The queue shows the new status without a reload key.
        entry = app.queue_pane.entry(target)
        assert entry is not None and entry.candidate.status == "published"


async def test_z_undoes_the_last_approval(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    target = pending(ws)[0]
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, target)
        await pilot.press("a")
        await settle(pilot)
        assert SkillStore(ws, SKILL).current() == "v2"
        await pilot.press("z")
        await settle(pilot)
        assert SkillStore(ws, SKILL).current() == "v1"
        assert status_on_disk(ws, target) == "pending_approval"
        assert any(t.startswith("Undid the approval") for t in toasts(pilot))


async def test_r_asks_the_reason_and_writes_taboo(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    target = pending(ws)[0]
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, target)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ReasonScreen)
        await pilot.press("enter")  # an empty reason is not accepted
        assert isinstance(app.screen, ReasonScreen)
        await pilot.press(*"misreads comments")
        await pilot.press("enter")
        await settle(pilot)
        assert status_on_disk(ws, target) == "rejected"
        taboo = json.loads((ws.history_dir / SKILL / "taboo.json").read_text())
        assert [entry["reason"] for entry in taboo] == ["misreads comments"]
        assert SkillStore(ws, SKILL).current() == "v1"


async def test_r_then_escape_changes_nothing(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    target = pending(ws)[0]
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, target)
        await pilot.press("r", "escape")
        await settle(pilot)
        assert not isinstance(app.screen, ReasonScreen)
        assert status_on_disk(ws, target) == "pending_approval"
        assert not (ws.history_dir / SKILL / "taboo.json").exists()


async def test_a_on_a_candidate_waiting_for_evidence_says_why_it_cannot(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    held = next(c.id for c in CandidateQueue(ws).list() if c.status == "pending_eval")
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, held)
        await pilot.press("a")
        await settle(pilot)
        assert status_on_disk(ws, held) == "pending_eval"
        assert SkillStore(ws, SKILL).current() == "v1"
        assert f"Cannot approve: {held} waits for evidence" in toasts(pilot)[-1]


async def test_r_on_a_published_candidate_says_why_it_cannot(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    first, _ = pending(ws)
    CandidateQueue(ws).approve(first)
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, first)
        await pilot.press("r")
        await settle(pilot)
        assert not isinstance(app.screen, ReasonScreen)  # no reason asked for a no-op
        assert status_on_disk(ws, first) == "published"
        assert f"Cannot reject: {first} is already published" in toasts(pilot)[-1]
        assert "b in 6 Skills & history rolls the skill back" in toasts(pilot)[-1]


async def test_space_marks_and_X_rejects_the_marked_after_confirming(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    first, second = pending(ws)
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, first)
        await pilot.press("space")
        await select(pilot, second)
        await pilot.press("space")
        assert app.queue_pane.marked == {first, second}
        await pilot.press("X")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert app.focused is not None and app.focused.id == "no"
        await pilot.press("enter")  # "No" is focused: nothing happens
        await settle(pilot)
        assert pending(ws) == sorted([first, second])
        await pilot.press("X", "y")
        await pilot.pause()
        assert isinstance(app.screen, ReasonScreen)
        await pilot.press(*"both too vague", "enter")
        await settle(pilot)
        assert status_on_disk(ws, first) == status_on_disk(ws, second) == "rejected"
        taboo = json.loads((ws.history_dir / SKILL / "taboo.json").read_text())
        assert len(taboo) == 2
        assert app.queue_pane.marked == set()


async def test_A_approves_the_marked_and_reports_the_stale_one(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    first, second = pending(ws)
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for candidate_id in (first, second):
            await select(pilot, candidate_id)
            await pilot.press("space")
        await pilot.press("A", "y")
        await settle(pilot)
        # Both were made against v1: the first publishes v2, the second is now stale.
        statuses = sorted([status_on_disk(ws, first), status_on_disk(ws, second)])
        assert statuses == ["pending_approval", "published"]
        assert SkillStore(ws, SKILL).current() == "v2"
        assert any("Approved 1 of 2" in t and "stale" in t for t in toasts(pilot))


async def test_a_candidate_changed_on_disk_since_shown_is_refused(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    target = pending(ws)[0]
    app = make_app(ws, watch=False)  # no watcher: the screen really is stale
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, target)
        shown_patch = (ws.candidates_dir / target / "patch.diff").read_text()
        (ws.candidates_dir / target / "patch.diff").write_text(shown_patch + "+sneaky line\n")
        await pilot.press("a")
        await settle(pilot)
        assert SkillStore(ws, SKILL).current() == "v1"
        assert status_on_disk(ws, target) == "pending_approval"
        assert any("changed on disk" in t for t in toasts(pilot))
        # The queue was reloaded after the refusal (the gate summary and diff show disk state).
        assert "+sneaky line" in (ws.candidates_dir / target / "patch.diff").read_text()
        assert any(row.text == "sneaky line" for row in app.diff_pane.view.rows)


async def press_on(pilot: Pilot[None], candidate_id: str, *keys: str) -> None:
    """Select ``candidate_id``, press each key and let the engine write land after each."""
    await select(pilot, candidate_id)
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def test_a_stale_candidate_says_p_or_x_and_p_reproposes_it(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    first, second = pending(ws)
    async with make_app(ws, watch=False).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press_on(pilot, first, "a")
        await press_on(pilot, second, "a")  # made against v1 too: now behind v2
        assert status_on_disk(ws, second) == "pending_approval"
        assert any(
            "now at v2. p re-proposes its patch on v2; x dismisses it" in t for t in toasts(pilot)
        )
        await press_on(pilot, second, "p")
        assert status_on_disk(ws, second) == "dismissed"
        (new,) = [c for c in CandidateQueue(ws).list() if c.parent_version == "v2"]
        assert new.status == "pending_approval" and new.unproven
        # both pitfall lines: v2's and the re-proposed candidate's
        assert "Candidate 1:" in new.skill_text() and "Candidate 2:" in new.skill_text()
        assert SkillStore(ws, SKILL).taboo().entries() == []
        assert any(f"as {new.id}" in t and "z brings it back" in t for t in toasts(pilot))


async def test_x_dismisses_without_taboo_and_z_brings_it_back(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    target = pending(ws)[0]
    async with make_app(ws, watch=False).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press_on(pilot, target, "x")
        assert status_on_disk(ws, target) == "dismissed"
        assert SkillStore(ws, SKILL).taboo().entries() == []
        assert any(f"Dismissed {target} (set aside); no taboo entry" in t for t in toasts(pilot))
        await press_on(pilot, target, "z")
        assert status_on_disk(ws, target) == "pending_approval"
        await press_on(pilot, target, "x", "x")
        assert any(f"{target} is dismissed; z undoes" in t for t in toasts(pilot))


async def test_a_stale_candidate_is_marked_in_the_queue(tmp_path: Path) -> None:
    """The skill moved on (a version published elsewhere): its open candidates, made against
    the old version, say they are stale and that p re-proposes them."""
    from tui.queue_pane import QueueTable

    ws = build_workspace(tmp_path / "ws")
    open_ids = [c.id for c in CandidateQueue(ws).list() if c.status == "pending_approval"]
    store = SkillStore(ws, SKILL)
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.query_one(QueueTable)
        assert not any("stale" in str(table.get_row(i)[-1]) for i in open_ids)
        store.publish(store.read("v1") + "\nPublished by hand.\n", why="elsewhere")
        app.reload_areas({"queue"})
        await settle(pilot)
        for cid in open_ids:
            assert str(table.get_row(cid)[-1]).startswith("stale: skill at v2, p re-proposes · ")


async def test_forms_offer_the_benchmark_used_last_and_o_only_a_built_one(tmp_path: Path) -> None:
    """Not the alphabetically first benchmark: the one the last run was of; the agent
    optimizer's form never offers one without a Formal Baseline (its job would only fail)."""
    import shutil

    from textual.widgets import Input

    ws = build_workspace(tmp_path / "ws")
    shutil.copytree(ws.benchmarks_dir / BENCH, ws.benchmarks_dir / "aaa-first")
    (ws.benchmarks_dir / "aaa-first" / "scoreboard.yaml").unlink(missing_ok=True)
    run = ws.runs_dir / "run-20261201-120000-abcdef"  # a run of BENCH, the newest
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"benchmark": BENCH, "run_id": run.name}))
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key, wanted in (("v", BENCH), ("O", "")):
            await pilot.press(key)
            await settle(pilot)
            assert app.screen.query_one("#f-bench", Input).value == wanted, key
            await pilot.press("escape")
            await settle(pilot)
