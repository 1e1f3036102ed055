"""Writing a report where people find it: the one function the CLI and the workbench share."""

from __future__ import annotations

import sys
from pathlib import Path

from engine.core.errors import SkillsmithError
from engine.core.fsutil import atomic_write_text
from engine.core.workspace import Workspace
from engine.share.html import render_html
from engine.share.markdown import render_markdown
from engine.share.report import build_report, redactor

REPORTS = "reports"  # <workspace>/reports/<ref>.html: where a report goes by default


def report_path(ws: Workspace | None, ref: str, fmt: str) -> Path:
    """Where a report of ``ref`` goes by default: the workspace's reports/, else the current
    folder."""
    name = f"{Path(ref).name}.{fmt}"
    return ws.root / REPORTS / name if ws is not None else Path(name)


def write_report(
    ws: Workspace | None, ref: str, fmt: str = "html", output: str | None = None
) -> Path | None:
    """Render the report of ``ref`` and write it atomically (``output`` "-": to stdout, and
    None is returned)."""
    report = build_report(ws, ref)
    redact = redactor(ws)
    text = render_markdown(report, redact) if fmt == "md" else render_html(report, redact)
    if output == "-":
        sys.stdout.write(text)
        return None
    path = Path(output) if output else report_path(ws, ref, fmt)
    if path.is_dir():
        raise SkillsmithError(f"{path}: is a folder; name the report file")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)
    return path
