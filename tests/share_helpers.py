"""Shared helpers of the report / export / check tests: a demo evolve session, headless Chromium,
and PNG pixels read with zlib alone."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from engine.core.workspace import Workspace
from tests.evolve_helpers import SMALL_FAMILIES, demo, env, run_evolve

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"  # kept for a person to look at; in .gitignore
SECRET = "sk-ant-api03-" + "Q" * 24 + "report-test"


def evolve_session(dest: Path) -> tuple[Workspace, str]:
    """A demo workspace (a third of the cases) after one offline evolve round.

    The seed is fixed (11) because the test reads its figures: with it the round queues a
    candidate (a diff to show) and some cases change fate between the versions.
    """
    ws = demo(dest, SMALL_FAMILIES)
    result = run_evolve(ws, "--rounds", "1", "--seed", "11")
    return ws, str(result["session_id"])


def plant_secret(ws: Workspace, run_id: str, case_id: str) -> None:
    """Put a vault value into the final answer of a unit's transcript, as a leaky agent would."""
    (ws.vault_dir / "report_token").write_text(SECRET + "\n", encoding="utf-8")
    session = next((ws.runs_dir / run_id / "sessions").glob(f"{case_id}.*.jsonl"))
    line = {"type": "assistant", "content": f"the token is {SECRET}\nVERDICT: safe"}
    with session.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")


def cli(ws: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    """``skillsmith ARGS -w WS`` as a subprocess, from the checkout."""
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args, "-w", str(ws.root)],
        capture_output=True,
        text=True,
        env=env(),
        cwd=ROOT,
        timeout=300,
    )


def chromium() -> str:
    """The headless browser: skipped without it on a developer's machine, failed in CI."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is not None:
        return found
    if os.environ.get("SKILLSMITH_REQUIRE_E2E") == "1" or os.environ.get("CI") == "true":
        pytest.fail("chromium is not installed; CI and SKILLSMITH_REQUIRE_E2E=1 need it")
    pytest.skip("chromium is not installed")


def offline(argv: list[str]) -> list[str]:
    """``argv`` in a network namespace of its own (no interface but loopback: the network is
    off), where unshare can make one (root, as CI runs); the browser's own flags below also
    refuse every remote host."""
    unshare = shutil.which("unshare")
    if unshare is not None and os.geteuid() == 0:
        return [unshare, "--net", *argv]
    return argv


def run_chromium(url: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    argv = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--proxy-server=127.0.0.1:9",  # nothing listens there: any fetch would fail
        "--host-resolver-rules=MAP * ~NOTFOUND",
        *args,
        url,
    ]
    return subprocess.run(offline(argv), capture_output=True, text=True, timeout=timeout)


def png_rows(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and the rows of an 8-bit RGB/RGBA PNG (what Chromium writes), each as its
    filtered bytes: enough to tell drawn rows from blank ones without undoing the filters — a
    blank row filters to a handful of byte values under every PNG filter, text and lines to
    dozens."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), f"unexpected PNG format {depth}/{colour}"
    stride = width * (3 if colour == 2 else 4) + 1
    raw = zlib.decompress(idat)
    return width, height, [raw[y * stride + 1 : (y + 1) * stride] for y in range(height)]


def drawn_rows(rows: list[bytes], top: int, bottom: int) -> int:
    """How many rows of ``rows[top:bottom]`` hold something drawn (many distinct bytes)."""
    return sum(1 for row in rows[max(0, top) : bottom] if len(set(row)) > 12)
