"""``skillsmith report``: the page a reviewer opens, checked in a real browser with the network off.

One demo evolve session (seed fixed, see share_helpers.evolve_session) is reported; headless
Chromium loads the file in a network namespace of its own, a small script (added to a copy of
the page, never to the report) measures the verdict table, the diff and the first transcript
after layout, and a screenshot tall enough for all three must show drawn rows where each lies.
The PNG is kept under tests/artifacts/ and its path printed.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.core.results import read_results
from engine.core.workspace import Workspace
from tests.evolve_helpers import env
from tests.share_helpers import (
    ARTIFACTS,
    ROOT,
    SECRET,
    cli,
    drawn_rows,
    evolve_session,
    plant_secret,
    png_rows,
    run_chromium,
)

pytestmark = pytest.mark.slow

MEASURE = """<script>
window.addEventListener('load', () => {
  const box = (el) => {
    if (!el) return null;
    const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return {top: Math.round(r.top + scrollY), height: Math.round(r.height),
            width: Math.round(r.width), shown: s.display !== 'none' && s.visibility !== 'hidden'};
  };
  const first = document.querySelector('section.transcript');
  document.title = 'MEASURED ' + JSON.stringify({
    verdicts: box(document.getElementById('verdicts')),
    diff: box(document.getElementById('diff')),
    transcript: box(first),
    transcript_id: first ? first.id : null,
    linked: !!document.querySelector('a[href="#' + (first ? first.id : '') + '"]'),
    height: document.documentElement.scrollHeight,
  });
});
</script>"""


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, str]:
    ws, session_id = evolve_session(tmp_path_factory.mktemp("report") / "ws")
    return ws, session_id


def failing_unit(ws: Workspace, session_id: str) -> tuple[str, str]:
    """A run and case of the session whose unit failed (the report shows its transcript)."""
    events = [json.loads(line) for line in (ws.sessions_dir / f"{session_id}.jsonl").open()]
    for run_id in dict.fromkeys(e["run_id"] for e in events if "run_id" in e):
        for row in read_results(ws.runs_dir / run_id / "results.jsonl"):
            if row["pass_fail"] == "fail":
                return run_id, str(row["case_id"])
    raise AssertionError("the session has no failing unit")


def measure(page: Path, tmp: Path) -> dict[str, Any]:
    probe = tmp / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"))
    done = run_chromium(probe.as_uri(), "--window-size=1200,900", "--dump-dom")
    found = re.search(r"<title>MEASURED (.*?)</title>", done.stdout)
    assert found, f"chromium did not lay the page out: {done.stderr[-500:]}"
    figures: dict[str, Any] = json.loads(found.group(1).replace("&amp;", "&"))
    return figures


def test_the_html_report_of_an_evolve_session_shows_verdicts_diff_and_transcripts_offline(
    session: tuple[Workspace, str], tmp_path: Path
) -> None:
    ws, session_id = session
    plant_secret(ws, *failing_unit(ws, session_id))
    out = tmp_path / "report.html"
    done = cli(ws, "report", session_id, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    page = out.read_text(encoding="utf-8")
    # self-contained: nothing to fetch, no script at all
    assert not re.search(r"<(link|script|img|iframe)\b", page)
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    # redaction: the planted vault value never reaches the page
    assert SECRET not in page and "[REDACTED]" in page
    # what the page must say: the gates' verdict lines with their meaning, the candidate's diff
    summary = json.loads((ws.experiments_dir / session_id / "summary.json").read_text())
    gates = json.loads(Path(ws.root / summary["rounds"][0]["folder"] / "gates.json").read_text())
    target = next(g for g in gates if g["gate"] == "target")
    assert html.escape(target["figures"]["line"]) in page
    assert "lies above zero" in page or "contains zero" in page
    patch = (ws.root / summary["rounds"][0]["folder"] / "patch.diff").read_text()
    added = next(
        line[1:]
        for line in patch.splitlines()
        if line.startswith("+") and not line.startswith("+++") and len(line) > 20
    )
    assert html.escape(added.split("`")[0].strip()) in page
    assert '<svg id="chart"' in page and "<circle" in page

    figures = measure(out, tmp_path)
    for name in ("verdicts", "diff", "transcript"):
        box = figures[name]
        assert box and box["shown"] and box["height"] > 20 and box["width"] > 300, (name, box)
    assert figures["linked"], "the cases table links to the first transcript"
    bottom = figures["transcript"]["top"] + figures["transcript"]["height"]
    height = min(bottom + 40, 16000)
    ARTIFACTS.mkdir(exist_ok=True)
    png = ARTIFACTS / "report-evolve-session.png"
    png.unlink(missing_ok=True)
    shot = run_chromium(out.as_uri(), f"--window-size=1200,{height}", f"--screenshot={png}")
    assert png.is_file(), shot.stderr[-500:]
    print(f"\nreport screenshot: {png}")
    width, tall, rows = png_rows(png)
    assert (width, tall) == (1200, height)
    for name in ("verdicts", "diff", "transcript"):
        box = figures[name]
        drawn = drawn_rows(rows, box["top"], box["top"] + box["height"])
        assert drawn > box["height"] // 4, f"{name}: {drawn} drawn rows of {box['height']}"


def test_the_markdown_report_is_a_pull_request_comment_without_secrets(
    session: tuple[Workspace, str],
) -> None:
    ws, session_id = session
    plant_secret(ws, *failing_unit(ws, session_id))
    done = cli(ws, "report", session_id, "--format", "md", "-o", "-")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith(f"### Evolve session {session_id}")
    assert "| decision | outcome | verdict | what it means |" in text
    assert "```diff" in text and "**fixed**" in text
    assert SECRET not in text
    default = cli(ws, "report", session_id, "--format", "md")
    assert Path(default.stdout.strip()) == ws.root / "reports" / f"{session_id}.md"


def test_a_run_with_a_baseline_is_reported_as_two_versions(
    session: tuple[Workspace, str], tmp_path: Path
) -> None:
    ws, _ = session
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", "eval", "vuln-detect", "--baseline", "none",
         "--cases", "deser-py-pickle,path-js-root", "--runs", "1", "--seed", "3",
         "-w", str(ws.root), "--json"],
        capture_output=True, text=True, env=env(), cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    out = tmp_path / "run.html"
    assert cli(ws, "report", run_id, "-o", str(out)).returncode == 0
    page = out.read_text(encoding="utf-8")
    assert "without security-audit" in page and "security-audit v0" in page
    assert "paired cases" in page  # the skill-vs-baseline verdict line


def test_a_reference_that_names_nothing_is_one_line(session: tuple[Workspace, str]) -> None:
    ws, _ = session
    done = cli(ws, "report", "no-such-thing")
    assert done.returncode == 1
    assert done.stderr.startswith("skillsmith: error: no-such-thing: not a run")
    assert "Traceback" not in done.stderr
