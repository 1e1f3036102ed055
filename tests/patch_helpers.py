"""Shared material for the patch-engine tests: a small skill, diffs of it, a diagnosis."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from engine.core.config import LimitsConfig
from engine.core.store import unified_diff
from engine.core.taboo import TabooEntry
from engine.core.workspace import Workspace
from engine.evaluation.patches import FilterReport, run_filters

DEMO_WORKSPACE = (
    Path(__file__).resolve().parents[1] / "engine" / "evaluation" / "demo" / "workspace"
)
DEMO_SKILL = "security-audit"
DEMO_BENCH = "vuln-detect"

SKILL = """\
---
name: audit
description: Audit one file for vulnerabilities. Use when asked whether a file is vulnerable.
---

# Audit

## Steps

1. List the files: `list`.
2. Read the file: `read <file>`.
3. Flag shell calls: `grep -nE "system\\(" *.py`
4. Confirm with `read -n <file>`.

## Pitfalls

- `shlex.quote(` around every argument — not a finding.
"""


def patch_of(anchor: str, replacement: str, text: str = SKILL) -> str:
    assert anchor in text, anchor
    return unified_diff(text, text.replace(anchor, replacement, 1))


def check(
    diff: str,
    text: str = SKILL,
    *,
    taboo: list[TabooEntry] | None = None,
    limits: LimitsConfig | None = None,
    slim: bool = False,
    rule_id: str = "progress_mismatch",
    direction: str = "FN",
) -> FilterReport:
    return run_filters(
        diff,
        text,
        taboo=taboo or [],
        rule_id=rule_id,
        direction=direction,
        limits=limits or LimitsConfig(),
        slim=slim,
    )


def filters_hit(report: FilterReport) -> set[str]:
    return {f.filter for f in report.fatal}


def diagnosis(*causes: dict[str, Any], failing: int = 10) -> dict[str, Any]:
    """A diagnosis in engine.evaluation.diagnosis JSON form with the given root causes."""
    return {
        "run_id": "run-test",
        "min_share": 0.3,
        "failing_cases": failing,
        "failing_case_ids": [c for rc in causes for c in rc["case_ids"]],
        "undiagnosed_case_ids": [],
        "triggers_evolution": any(rc.get("worth_patch") for rc in causes),
        "direction": causes[0]["direction"] if causes else None,
        "root_causes": [
            {
                "id": f"{rc['direction']} + {rc['rule_id']}",
                "count": len(rc["case_ids"]),
                "share": len(rc["case_ids"]) / failing,
                "worth_patch": True,
                "explanation": "claims skill steps that no tool call evidences",
                "evidence": [],
                **rc,
            }
            for rc in causes
        ],
        "low_priority": {},
        "cases": [],
    }


def demo_workspace(tmp_path: Path) -> Workspace:
    """A private copy of the bundled demo workspace, with the deterministic agent.

    The proposer tests assert which cases one patch flips and which it breaks, an exact outcome
    per case run, so the agent's run-to-run slips are switched off (``agent.noise: 0``).
    """
    root = tmp_path / "demo"
    shutil.copytree(DEMO_WORKSPACE, root)
    ws = Workspace.at(root)
    cfg = ws.load_config()
    cfg.agent.noise = 0.0
    ws.save_config(cfg)
    return ws
