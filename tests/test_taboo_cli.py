"""Taboo entries that can be seen and cleared (issue 25): an entry a gate made records the gate
and its thresholds, stops blocking once those thresholds change, and ``skillsmith taboo`` lists
and clears entries with an audit line in the skill's timeline."""

from __future__ import annotations

import json
import re

import pytest

from engine.core.config import LimitsConfig
from engine.core.fsutil import read_jsonl
from engine.core.store import SkillStore, unified_diff
from engine.core.workspace import Workspace
from engine.evaluation.gates.outcome import Verify
from engine.evaluation.patches.filters import run_filters
from tests.conftest import REAL_STYLE
from tests.store_helpers import make_skill, run

PARENT = (REAL_STYLE / "mcp-server-kit" / "SKILL.md").read_text(encoding="utf-8")
# turning the numbered steps into bullets costs the house-style score: Verify refuses the drop
CHILD = re.sub(r"(?m)^\d\. ", "- ", PARENT)


def _rejected(ws: Workspace) -> tuple[SkillStore, str]:
    """The Verify gate refuses CHILD and the round records it, as evolve's decide stage does."""
    make_skill(ws, "mcp-server-kit", PARENT)
    store = SkillStore(ws, "mcp-server-kit")
    store.ensure_adopted()
    cfg = ws.load_config()
    result = Verify(max_drop=cfg.gates.verify_max_drop).judge(CHILD, PARENT)
    assert result.failed, result.reasons
    diff = unified_diff(PARENT, CHILD)
    reason = f"gate rejected: {result.gate}: {'; '.join(result.reasons)}"
    store.taboo().add("missed_step:FN", diff, reason, gate=result.gate)
    return store, diff


def _blocked(store: SkillStore, diff: str) -> bool:
    report = run_filters(
        diff,
        PARENT,
        taboo=store.taboo(),
        rule_id="missed_step",
        direction="FN",
        limits=LimitsConfig(),
    )
    return any(f.filter == "taboo" for f in report.fatal)


def test_an_entry_stops_blocking_when_its_gates_threshold_changes(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    store, diff = _rejected(workspace)
    [entry] = store.taboo().listed()
    assert (entry.gate, entry.thresholds) == ("verify", {"gates.verify_max_drop": 5.0})
    assert _blocked(store, diff)
    listed = run(workspace, capsys, "taboo", "mcp-server-kit")
    assert listed.returncode == 0, listed.stderr
    assert (
        f"{entry.diff_hash}  missed_step:FN" in listed.stdout
        and "by verify  blocks" in listed.stdout
    )

    cfg = workspace.load_config()
    cfg.gates.verify_max_drop = 40.0
    workspace.save_config(cfg)
    assert not _blocked(store, diff)  # the verdict answered another question
    listed = run(workspace, capsys, "taboo", "mcp-server-kit", "--json")
    [row] = json.loads(listed.stdout)
    assert row["blocks"] is False and row["diff_hash"] == entry.diff_hash
    text = run(workspace, capsys, "taboo", "mcp-server-kit").stdout
    assert "no longer blocks (gates.verify_max_drop 5 → 40)" in text

    # back to the old threshold, the entry blocks again: nothing was forgotten
    cfg.gates.verify_max_drop = 5.0
    workspace.save_config(cfg)
    assert _blocked(store, diff)


def test_taboo_clear_removes_entries_with_an_audit_line(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    store, diff = _rejected(workspace)
    manual = unified_diff(PARENT, PARENT + "\nA note.\n")
    store.taboo().add("manual", manual, "rejected by a person")
    first, second = store.taboo().listed()

    done = run(
        workspace,
        capsys,
        "taboo",
        "clear",
        "mcp-server-kit",
        first.diff_hash[:6],
        "--why",
        "threshold was wrong",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "mcp-server-kit: cleared 1 taboo entry\n"
    assert store.taboo().listed() == [second] and not _blocked(store, diff)
    audit = [r for r in read_jsonl(store.timeline_path) if r.get("op") == "taboo_remove"]
    assert [(r["diff_hash"], r["why"]) for r in audit] == [
        (first.diff_hash, "taboo clear: threshold was wrong")
    ]

    missing = run(workspace, capsys, "taboo", "clear", "mcp-server-kit", "ffffffff")
    assert missing.returncode == 1 and "no taboo entry 'ffffffff'" in missing.stderr
    assert run(workspace, capsys, "taboo", "clear", "mcp-server-kit").returncode == 0
    assert store.taboo().listed() == []
    assert (
        run(workspace, capsys, "taboo", "mcp-server-kit").stdout
        == "mcp-server-kit: no taboo entries\n"
    )
    unknown = run(workspace, capsys, "taboo", "nope")
    assert unknown.returncode == 1 and "no skill 'nope'" in unknown.stderr
