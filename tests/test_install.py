"""Acceptance, as the README tells a new user: install once with ``uv tool install .``, then, from
a folder that has nothing to do with the checkout, ``skillsmith --help``, ``skillsmith demo`` and
every command of the README's tour, exactly as the README writes them.

The commands are read from README.md itself, so a tour line that stops working, or a new one
that never worked, fails here. uv installs into folders of the test's own (``UV_TOOL_DIR``,
``UV_TOOL_BIN_DIR``), never the machine's tools, and the tour runs under a home folder of its own,
so ``~/ss-demo`` is the test's.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_e2e_tmux import tmux, tmux_session, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
__all__ = ["tmux_session"]  # the fixture, used by name below


def _block(after: str) -> list[str]:
    """The lines of the first ```sh block after the heading ``after``."""
    section = README.split(f"\n{after}\n", 1)[1]
    body = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    return body.splitlines()


def _commands(after: str) -> list[str]:
    """A block's commands, their trailing comments and continuation-comment lines dropped."""
    found = []
    for line in _block(after):
        command = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()
        if command and not command.startswith("#"):
            found.append(command)
    return found


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"{shlex.join(argv)} in {cwd}: {done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_install_then_the_tour_works_from_any_folder(tmp_path: Path, tmux_session: str) -> None:
    uv = shutil.which("uv")
    assert uv is not None, "uv is the project's installer (README: prerequisites)"
    assert "uv tool install .        # from the clone" in README
    tools, bin_dir, home, elsewhere = (tmp_path / n for n in ("tools", "bin", "home", "elsewhere"))
    home.mkdir()
    elsewhere.mkdir()
    # The user's environment, minus anything pointing at this checkout's virtual environment.
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "UV_"))}
    venv_bin = str(Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin")
    path = [p for p in base.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    install_env = {**base, "UV_TOOL_DIR": str(tools), "UV_TOOL_BIN_DIR": str(bin_dir)}
    _run([uv, "tool", "install", "."], REPO, install_env)
    env = {**base, "HOME": str(home), "PATH": os.pathsep.join([str(bin_dir), *path])}
    for key in [k for k in env if k.startswith(("ANTHROPIC_", "SKILLSMITH_"))]:
        del env[key]
    found = shutil.which("skillsmith", path=env["PATH"])
    assert found == str(bin_dir / "skillsmith"), found

    # `skillsmith --help` works from any folder and lists the commands the tour uses (the tour
    # itself runs in order in tests/test_readme_tour.py).
    help_text = _run(["skillsmith", "--help"], elsewhere, env).stdout
    for name in ("demo", "eval", "diagnose", "evolve", "queue", "report", "check"):
        assert re.search(rf"^\s+{name}\s", help_text, re.M), name
    cwd = home / "ss-demo"
    out = _run(["skillsmith", "demo", "--no-tui", str(cwd)], elsewhere, env).stdout
    assert out.strip() == str(cwd)  # the demo's path, printed

    # The last line opens the workbench, in a real terminal.
    tmux(
        "new-session", "-d", "-s", tmux_session, "-x", "160", "-y", "45", "-c", str(cwd),
        "-e", f"HOME={home}", "-e", f"PATH={env['PATH']}",
        "env", "-u", "COLUMNS", "-u", "LINES", "-u", "VIRTUAL_ENV", "skillsmith",
    )  # fmt: skip

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", tmux_session)

    wait_for(lambda: "skillsmith · ss-demo · security-audit" in screen(), "the workbench",
             timeout=60, show=tmux_session)  # fmt: skip
