"""The workbench writes reports: H in the Sessions pane (4) and in the Scoreboard pane (5)."""

from __future__ import annotations

import re
from pathlib import Path

from engine.evaluation.runner import run_evaluation
from tests.tui_pilot import SIZE, settle, toasts, user_config_home, wait_until
from tests.tui_workspace import BENCH, CASES, build_workspace
from tui.app import make_app

__all__ = ["user_config_home"]


def written(pilot_toasts: list[str], ref: str) -> Path | None:
    for text in pilot_toasts:
        found = re.match(rf"report of {re.escape(ref)} written: (.+)$", text)
        if found:
            return Path(found.group(1))
    return None


async def test_h_writes_the_report_of_the_selected_session_and_evaluation(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws")
    # a real evaluation (the demo agent, a fixed seed only so the run is the same each time):
    # its session in the Sessions pane, its record in the Scoreboard pane
    result = run_evaluation(ws, BENCH, runs=1, case_ids=list(CASES), baseline="none", seed=3)
    app = make_app(ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("H")
        await wait_until(
            pilot, lambda: written(toasts(pilot), result.run_id) is not None, what="toast"
        )
        path = written(toasts(pilot), result.run_id)
        assert path == ws.root / "reports" / f"{result.run_id}.html"
        page = path.read_text(encoding="utf-8")
        assert f"run {result.run_id}" in page and 'id="verdicts"' in page
        path.unlink()
        await pilot.press("5")
        await settle(pilot)
        await pilot.press("H")
        await wait_until(pilot, lambda: path.is_file(), what="the scoreboard's report")
        assert "without security-audit" in path.read_text(encoding="utf-8")
