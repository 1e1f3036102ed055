"""The engine/TUI split and the lean start, checked on the real interpreter.

A static import graph cannot tell a module-level import from one deferred into the function
that needs it, so each check runs in a fresh subprocess and reads ``sys.modules`` afterwards:
the only proof that a deferral defers.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "engine"

# The engine is headless: a loop, the CLI or a CI job imports it without a terminal UI.
NOT_IN_ENGINE = ("tui", "themes", "textual")
# What a quick command must not pay for: the GEPA optimizer, the model SDK, the workbench.
NOT_AT_START = ("gepa", "anthropic", "textual", "tui.app")


def engine_files() -> dict[str, Path]:
    """Every module of the engine by name (the demo workspace's sample code is data, not engine)."""
    files = {}
    for path in sorted(ENGINE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        if rel.parts[:4] == ("engine", "evaluation", "demo", "workspace"):
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        if parts[-1] == "__main__":
            continue
        files[".".join(parts)] = path
    return files


def engine_modules() -> list[str]:
    return list(engine_files())


def loaded_after(code: str) -> set[str]:
    """The names in ``sys.modules`` once ``code`` ran in a fresh interpreter (SystemExit, as
    from ``--help``, still reports)."""
    script = (
        "import sys\n"
        "try:\n" + "".join(f"    {line}\n" for line in code.splitlines()) + "except SystemExit:\n"
        "    pass\n"
        "sys.__stdout__.write('\\n@@' + ','.join(sorted(sys.modules)) + '\\n')\n"
    )
    return set(reported([script], f"{code!r} did not finish").split(","))


def reported(args: list[str], failure: str) -> str:
    """What a fresh interpreter running ``python -c ARGS…`` printed after its last ``@@``."""
    proc = subprocess.run(
        [sys.executable, "-c", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    marker = [line for line in proc.stdout.splitlines() if line.startswith("@@")]
    assert marker, f"{failure}: {proc.stderr.strip()[-400:]}"
    return marker[-1][2:]


def leaked(modules: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        name for name in forbidden if any(m == name or m.startswith(name + ".") for m in modules)
    )


# Run in one fresh interpreter: the third-party libraries the engine builds on are imported
# once (and must themselves load nothing forbidden), then each engine module is imported in a
# forked child of its own, whose sys.modules starts from that clean state.
_EACH_IN_A_CHILD = """
import json, os, sys
forbidden, modules = json.loads(sys.argv[1]), json.loads(sys.argv[2])
import anthropic, gepa, platformdirs, rich.console, unidiff, watchfiles, yaml

def leaked():
    return [f for f in forbidden if any(m == f or m.startswith(f + ".") for m in sys.modules)]

print(json.dumps({"(third-party libraries)": leaked()}), flush=True)
for module in modules:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            __import__(module)
            found = leaked()
        except BaseException as exc:
            found = ["failed: " + repr(exc)[:200]]
        os.write(write, json.dumps({module: found}).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        print(fh.read(), flush=True)
    os.waitpid(pid, 0)
"""


def test_no_engine_module_loads_the_tui() -> None:
    modules = engine_modules()
    proc = subprocess.run(
        [sys.executable, "-c", _EACH_IN_A_CHILD, json.dumps(NOT_IN_ENGINE), json.dumps(modules)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    found: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        found.update(json.loads(line))
    assert set(found) == {"(third-party libraries)", *modules}, proc.stderr[-400:]
    offenders = {module: names for module, names in found.items() if names}
    assert not offenders, f"engine modules that load {NOT_IN_ENGINE}: {offenders}"


@pytest.mark.parametrize(
    ("argv", "runs"),
    [(["--help"], None), (["queue", "--help"], "queue_cmd"), (["queue"], "queue_cmd")],
)
def test_quick_commands_load_only_what_they_run(
    argv: list[str], runs: str | None, tmp_path: Path
) -> None:
    from engine.cli import COMMANDS

    code = (
        f"sys.argv = ['skillsmith', '-w', {str(tmp_path)!r}, *{argv!r}]\n"
        "from engine.core.workspace import Workspace\n"
        f"Workspace.init({str(tmp_path)!r})\n"
        "import tui.launch\n"
        "tui.launch.main()"
    )
    modules = loaded_after(code)
    assert "tui.launch" in modules
    assert not leaked(modules, NOT_AT_START), (
        f"skillsmith {argv} loaded {leaked(modules, NOT_AT_START)}"
    )
    commands = {f"engine.cli.{module}" for module, _ in COMMANDS.values()}
    expected = {f"engine.cli.{runs}"} if runs else set()
    assert commands & modules == expected


def test_listing_the_queue_loads_none_of_its_decisions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`skillsmith queue` reads the listing index and each skill's current pointer: the
    decisions' machinery (the queue's decisions, the version store with its SKILL.md parser,
    the vault's secret scanner) would cost more than listing thousands of candidates. Both the
    run that builds the index and the one that reads it go without it, stale flags included;
    and once skillsmith.yaml has its parsed twin, a listing of nothing new loads no YAML parser
    at all (importing it is a fifth of the command's own start)."""
    from engine.core import fsutil
    from engine.core.candidates import rows
    from engine.core.store import SkillStore
    from engine.core.workspace import CONFIG_TWIN
    from tests.tui_workspace import SKILL, build_workspace, edited, skill_text

    ws = build_workspace(tmp_path / "ws", candidates=1)
    SkillStore(ws, SKILL).publish(edited(skill_text(), "moved on"), why="the skill moved on")
    code = (
        f"sys.argv = ['skillsmith', '-w', {str(ws.root)!r}, 'queue']\n"
        "import tui.launch\n"
        "tui.launch.main()"
    )
    heavy = ("engine.core.queue", "engine.core.store", "engine.core.skill", "engine.core.vault")
    for _ in ("builds the index", "reads it"):
        modules = loaded_after(code)
        assert "engine.cli.queue_cmd" in modules and "engine.core.candidates" in modules
        assert not leaked(modules, heavy), leaked(modules, heavy)
    assert (ws.candidates_dir / ".index.jsonl").is_file()
    # skillsmith.yaml was written a moment ago: no twin yet (an edit within the same timestamp
    # tick could go unseen). Settled, it is twinned by the next read, and then read from there.
    # (The candidates were just written too: the index re-reads them until they settle.)
    assert not (ws.runs_dir / CONFIG_TWIN).exists()
    monkeypatch.setattr(fsutil, "SETTLED_AFTER_S", 0.0)
    ws.load_config()
    rows(ws.candidates_dir)
    assert (ws.runs_dir / CONFIG_TWIN).is_file()
    modules = loaded_after(code)
    assert "engine.cli.queue_cmd" in modules
    assert not leaked(modules, ("yaml", *heavy)), leaked(modules, ("yaml", *heavy))


def test_opening_a_workspace_reads_no_yaml(tmp_path: Path) -> None:
    """The workbench and quick commands open a workspace before they read any YAML file: the
    parser (a tenth of a second on a busy machine) is imported by the first read or write."""
    from engine.core.workspace import Workspace

    Workspace.init(tmp_path / "ws")
    modules = loaded_after(
        f"from engine.core.workspace import Workspace\nWorkspace.at({str(tmp_path / 'ws')!r}).root"
    )
    assert "engine.core.workspace" in modules
    assert not leaked(modules, ("yaml", "engine.core.config")), leaked(
        modules, ("yaml", "engine.core.config")
    )


# What the workbench's first frame does without: the YAML parser (the keymap is read after the
# frame, the theme file is JSON) and the event machinery (no job runs yet).
NOT_BEFORE_PAINT = ("yaml", "engine.core.events", "engine.core.config")

# The real app, headless, with its watcher: the modules loaded when Textual hands the first
# frame to the terminal (App._display outside a batch, as benchmarks/bench_tui.py times it).
_FIRST_FRAME = """
import json, os, sys
os.environ["XDG_CONFIG_HOME"] = sys.argv[2]
from engine.core.workspace import Workspace
from tui.app import make_app

app = make_app(Workspace.at(sys.argv[1]), watch=True)
seen = {}
display = app._display

def timed(screen, renderable):
    display(screen, renderable)
    if renderable is not None and not app._batch_count and "modules" not in seen:
        seen["modules"] = sorted(sys.modules)
        seen["theme"] = app.theme

async def pilot(p):
    while "modules" not in seen:
        await p.pause(0.01)
    await p.pause(0.5)  # the loaders have started: a clean exit from a running app
    p.app.exit()

app._display = timed
app.run(headless=True, size=(100, 30), auto_pilot=pilot)
print("@@" + json.dumps(seen))
"""


def test_the_workbench_paints_its_first_frame_without_yaml_or_events(tmp_path: Path) -> None:
    from engine.core.workspace import Workspace

    Workspace.init(tmp_path / "ws")
    config_home = tmp_path / "xdg"
    (config_home / "skillsmith").mkdir(parents=True)
    # The theme saved by an earlier session, in the form the workbench writes it.
    (config_home / "skillsmith" / "config.yaml").write_text('{"theme": "skillsmith-light"}\n')
    args = [_FIRST_FRAME, str(tmp_path / "ws"), str(config_home)]
    seen = json.loads(reported(args, "the workbench did not paint"))
    assert seen["theme"] == "skillsmith-light"  # the saved theme was read for the first frame
    modules = set(seen["modules"])
    assert "tui.app" in modules
    assert not leaked(modules, NOT_BEFORE_PAINT), (
        f"the workbench loaded {leaked(modules, NOT_BEFORE_PAINT)} before its first frame"
    )


def test_the_command_table_names_what_each_module_registers() -> None:
    """``--help`` shows the table without importing the modules, so it must say what they do."""
    import argparse
    import importlib

    from engine.cli import COMMANDS, common_parser

    package = ROOT / "engine" / "cli"
    listed = {module for module, _ in COMMANDS.values()}
    unlisted = [
        source.stem
        for source in sorted(package.glob("*.py"))
        if source.stem not in listed and "def register(" in source.read_text(encoding="utf-8")
    ]
    assert unlisted == [], f"command modules missing from engine.cli.COMMANDS: {unlisted}"
    registered: dict[str, tuple[str, str]] = {}
    for module in sorted({module for module, _ in COMMANDS.values()}):
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"engine.cli.{module}").register(sub, common_parser())
        for action in sub._choices_actions:
            registered[action.dest] = (module, str(action.help))
    assert registered == COMMANDS


# The engine's floors, bottom up: file formats and stores, evaluation, then the loops and the
# read models beside each other, then the command line. Each floor may import its own and the
# ones listed for it, never one above: a store that needs a loop, or a grader that needs the
# Builder, is code on the wrong floor.
FLOORS: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "evaluation": frozenset({"core"}),
    "loops": frozenset({"core", "evaluation"}),
    "views": frozenset({"core", "evaluation"}),
    "share": frozenset({"core", "evaluation"}),  # reports, exports and check read results
    "cli": frozenset({"core", "evaluation", "loops", "views", "share"}),
}


def engine_imports(path: Path) -> list[tuple[int, str]]:
    """Every engine module a source file names in an import, at any depth (line, module)."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((node.lineno, module))
    return [(line, module) for line, module in found if module.startswith("engine.")]


def floor_breaches(root: Path) -> list[str]:
    """``file:line: module`` for each import of a floor above (or beside) the importing file's."""
    breaches = []
    for path in sorted((root / "engine").rglob("*.py")):
        parts = path.relative_to(root).parts
        if (
            len(parts) < 3
            or parts[1] not in FLOORS
            or parts[1:4] == ("evaluation", "demo", "workspace")
        ):
            continue
        allowed = FLOORS[parts[1]] | {parts[1]}
        for line, module in engine_imports(path):
            floor = module.split(".")[1]
            if floor in FLOORS and floor not in allowed:
                breaches.append(f"{path.relative_to(root)}:{line}: {module}")
    return breaches


def test_every_engine_module_sits_on_a_floor() -> None:
    """A new top-level engine package would escape the floors contract below."""
    packages = {p.name for p in ENGINE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(FLOORS)


def test_no_floor_imports_a_floor_above() -> None:
    """Read from the source, not sys.modules: an import deferred into a function still reaches up
    a floor, and the runtime check above cannot see it until that function runs."""
    breaches = floor_breaches(ROOT)
    assert not breaches, "imports across the engine's floors:\n" + "\n".join(breaches)


def module_level_imports(path: Path) -> set[str]:
    """The engine modules a file imports when it is loaded (deferred imports left out)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return {name for name in found if name.startswith("engine.")}


@pytest.mark.parametrize("floor", ["core", "evaluation"])
def test_the_lower_floors_load_without_an_import_circle(floor: str) -> None:
    """A circle makes the import order matter (the store and snapshots once needed each other,
    so opening a store ran a workspace restore); the lower floors are meant to stack."""
    graph = {
        name: module_level_imports(path)
        for name, path in engine_files().items()
        if name == f"engine.{floor}" or name.startswith(f"engine.{floor}.")
    }
    circles = [circle for circle in (_circle_from(graph, name) for name in graph) if circle]
    assert not circles, f"import circles in engine.{floor}: {circles[0]}"


def _circle_from(graph: dict[str, set[str]], start: str) -> list[str]:
    """A chain of module-level imports that leads from ``start`` back to it, or []."""
    stack, seen = [(start, [start])], set()
    while stack:
        name, chain = stack.pop()
        for nxt in sorted(graph.get(name, ())):
            if nxt == start:
                return [*chain, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*chain, nxt]))
    return []
