"""Acceptance (issue 29): the tests need nothing beside the checkout. A fresh clone has no
``../shared`` folder, so a test that reads outside the clone passes on a developer's machine and
fails on a user's. Here the skill and lint tests run in a child pytest with an audit hook on
every ``open`` (installed by a ``sitecustomize`` so the CLI processes those tests start carry it
too); any path outside the checkout, the Python installation, the temporary folder and the
system's own folders fails the test, named."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKILL_TESTS = (
    "test_skill_lint.py",
    "test_skill_model.py",
    "test_skill_verify.py",
    "test_skill_cli.py",
)
HOOK = """
import os, sys

_ALLOWED = tuple(p for p in os.environ["SKILLSMITH_ALLOWED_ROOTS"].split(os.pathsep) if p)
_LOG = os.environ["SKILLSMITH_OUTSIDE_LOG"]


def _outside(event, args):
    if event != "open" or not args or not isinstance(args[0], (str, bytes)):
        return
    path = os.fsdecode(args[0])
    full = os.path.realpath(os.path.join(os.getcwd(), path) if not os.path.isabs(path) else path)
    if full == _LOG or any(full == a or full.startswith(a + os.sep) for a in _ALLOWED):
        return
    with open(_LOG, "a", encoding="utf-8") as log:
        log.write(full + "\\n")


sys.addaudithook(_outside)
"""


def _allowed() -> list[str]:
    """The checkout, the Python installation (venv and base), the temporary folder, and the
    system folders every process reads (/proc, /dev, /etc, /sys, /usr …)."""
    paths = {
        ROOT,
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.exec_prefix),
        Path(tempfile.gettempdir()),
        *(Path(p) for p in sysconfig.get_paths().values()),
        *(Path(p) for p in ("/proc", "/dev", "/etc", "/sys", "/usr", "/lib", "/lib64", "/bin")),
    }
    return sorted({os.path.realpath(p) for p in paths})


def _run(tmp_path: Path, argv: list[str]) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    log = tmp_path / "outside.log"
    log.write_text("")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "SKILLSMITH_ALLOWED_ROOTS": os.pathsep.join(_allowed()),
        "SKILLSMITH_OUTSIDE_LOG": os.path.realpath(log),
    }
    done = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    return done, sorted(set(log.read_text(encoding="utf-8").splitlines()))


def test_the_hook_catches_a_read_beside_the_checkout(tmp_path: Path) -> None:
    """The check itself works: opening a ``shared/`` folder outside the checkout is reported
    (beside it when that is outside every allowed folder, else at the file system's root)."""
    beside = ROOT.parent / "shared" / "fixtures" / "probe.md"
    if any(str(beside).startswith(a + os.sep) for a in _allowed()):  # a clone under /tmp
        beside = Path("/skillsmith-outside-probe/shared/fixtures/probe.md")
    code = f"import contextlib\nwith contextlib.suppress(OSError):\n    open({str(beside)!r})\n"
    done, outside = _run(tmp_path, ["-c", code])
    assert done.returncode == 0, done.stderr
    assert outside == [os.path.realpath(beside)]


def test_the_skill_and_lint_tests_open_nothing_outside_the_checkout(tmp_path: Path) -> None:
    argv = ["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
    done, outside = _run(tmp_path, [*argv, *(f"tests/{name}" for name in SKILL_TESTS)])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
    assert outside == []
