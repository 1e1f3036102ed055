"""Which pane a changed file concerns, and which changes never reach Python."""

from __future__ import annotations

from pathlib import Path

from watchfiles import Change

from tui.watch import WorkspaceFilter, areas_of

ROOT = Path("/ws")


def test_each_folder_maps_to_its_pane() -> None:
    cases = {
        "candidates/c1/candidate.yaml": {"queue"},
        "history/s/timeline.jsonl": {"skills"},
        "skills/s/SKILL.md": {"skills"},
        "sessions/eval-1.jsonl": {"sessions"},
        "benchmarks/b/scoreboard.yaml": {"scoreboard"},
        "snapshots/v3.tar.gz": {"snapshots", "skills"},
        "skillsmith.yaml": {"config", "skills"},
    }
    for relative, areas in cases.items():
        assert areas_of(ROOT, [ROOT / relative]) == areas, relative


def test_noise_is_ignored() -> None:
    noise = [
        ".skillsmith.lock",
        "runs/r1/results.jsonl",
        "vault/anthropic_api_key",
        "candidates/.candidate.yaml.abc123.tmp",
        "history/s/.tmp-publish-1234",
        "history/s/.current.ab12",
        "/elsewhere/file",
    ]
    assert areas_of(ROOT, [ROOT / n if not n.startswith("/") else Path(n) for n in noise]) == set()
    keep = WorkspaceFilter(ROOT)
    assert not keep(Change.modified, str(ROOT / "runs/r1/results.jsonl"))
    assert not keep(Change.added, str(ROOT / "skills/s/.SKILL.md.x1.tmp"))
    assert keep(Change.added, str(ROOT / "candidates/c1/candidate.yaml"))
