"""Snapshots: what goes in, restoring an older version, import, and hostile archives."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cli import main
from engine.core.errors import SkillsmithError
from engine.core.snapshots import (
    AmbiguousSnapshot,
    create_snapshot,
    finish_pending,
    import_snapshot,
    list_snapshots,
    restore,
)
from engine.core.store import SkillStore
from engine.core.workspace import Workspace
from tests.store_helpers import (
    REPO,
    cli,
    leftovers,
    make_skill,
    state,
    tar_members,
    tree,
    untar,
)

SECRET = "sk-vault-value-0123456789abcdef"
NAME = re.compile(r"v\d+-\d{8}T\d{6}Z(-\d+)?\.tar\.gz")


def _three_versions(ws: Workspace) -> None:
    """v1..v3 of a workspace with a snapshot at each, plus vault, runs and caches around them."""
    (ws.vault_dir / "anthropic_api_key").write_text(SECRET)
    (ws.runs_dir / "run-1").mkdir()
    (ws.runs_dir / "run-1" / "results.jsonl").write_text("{}\n")
    ws.pending_round_path.write_text("{}")
    make_skill(ws, "alpha", "---\nname: alpha\n---\nv0\n")
    make_skill(ws, "beta", "---\nname: beta\n---\nstays\n")
    (ws.skills_dir / "alpha" / "scripts").mkdir()
    (ws.skills_dir / "alpha" / "scripts" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (ws.skills_dir / "alpha" / "scripts" / "run.sh").chmod(0o755)
    (ws.skills_dir / "alpha" / "scripts" / "__pycache__").mkdir()
    (ws.skills_dir / "alpha" / "scripts" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    store = SkillStore(ws, "alpha")
    for n in (1, 2, 3):
        if n == 1:
            ws.agents_md.write_text("# Agent rules v1\n")
        else:
            ws.agents_md.unlink(missing_ok=True)
        store.publish(f"---\nname: alpha\n---\nv{n}\n", why=f"round {n}")
        create_snapshot(ws, note=f"after round {n}")


def _of_version(ws: Workspace, version: int) -> Path:
    (snapshot,) = [s.path for s in list_snapshots(ws) if s.version == version]
    return snapshot


def _no_caches(found: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in found.items() if "__pycache__" not in k}


def test_snapshot_holds_the_agent_state_and_nothing_else(
    workspace: Workspace, tmp_path: Path
) -> None:
    _three_versions(workspace)
    snaps = list_snapshots(workspace)
    assert [(s.version, s.note) for s in snaps] == [
        (1, "after round 1"),
        (2, "after round 2"),
        (3, "after round 3"),
    ]
    # each name says what it holds: the workspace version and the time the state was taken
    for s in snaps:
        stamp = s.created_at.replace("-", "").replace(":", "")
        assert s.path.name == f"v{s.version}-{stamp}.tar.gz" and NAME.fullmatch(s.path.name)
    members = tar_members(snaps[0].path)
    assert members[0] == ".skillsmith-snapshot.json"
    tops = {m.split("/", 1)[0] for m in members[1:]}
    assert tops == {"skillsmith.yaml", "AGENTS.md", "skills", "history"}
    assert not any("__pycache__" in m or m.endswith(".pyc") for m in members)
    assert not any(
        m.startswith(("vault", "runs", ".skillsmith.lock", ".pending_round")) for m in members
    )
    unpacked = untar(snaps[2].path, tmp_path / "v3")
    assert all(SECRET.encode() not in p.read_bytes() for p in unpacked.rglob("*") if p.is_file())
    # deterministic order: sorted depth-first within a fixed order of the four items
    tops = ["skillsmith.yaml", "AGENTS.md", "skills", "history"]
    order = [m.split("/") for m in members[1:]]
    assert order == sorted(order, key=lambda parts: (tops.index(parts[0]), parts[1:]))
    again = create_snapshot(workspace, note="again")
    assert NAME.fullmatch(again.name) and again.name.startswith("v3-")
    assert again != snaps[2].path
    assert tar_members(again) == tar_members(snaps[2].path)
    # the executable bit survives
    with tarfile.open(snaps[0].path) as tar:
        assert tar.getmember("skills/alpha/scripts/run.sh").mode & 0o111
        # whole-second times, as tar keeps them: no PAX header per member for a restore to parse
        assert [m.name for m in tar.getmembers() if m.pax_headers] == []
    # every skill's timeline records the snapshot
    ops = [t for t in SkillStore(workspace, "alpha").timeline() if t["op"] == "snapshot"]
    assert [t["file"] for t in ops] == [
        f"snapshots/{p.name}" for p in (*(s.path for s in snaps), again)
    ]


@pytest.mark.parametrize(
    ("where", "content"),
    [
        ("skills/leaky/SKILL.md", f"use {SECRET} here\n"),  # a vault value
        ("AGENTS.md", "token ghp_" + "a1B2c3D4" * 5 + "\n"),  # a key-shaped string
        ("skills/leaky/references/big.md", "x " * 50_000 + "sk-ant-api03-" + "Zq9" * 30),
        ("history/leaky/notes.md", "the env key: env-key-value-123456\n"),  # $ANTHROPIC_API_KEY
    ],
)
def test_snapshot_refuses_to_carry_a_secret(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, where: str, content: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key-value-123456")
    (workspace.vault_dir / "token").write_text(SECRET + "\n")
    make_skill(workspace, "leaky", "---\nname: leaky\n---\nclean\n")
    create_snapshot(workspace)  # clean so far
    path = workspace.root / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    with pytest.raises(SkillsmithError, match=f"{where}:1: holds a secret"):
        create_snapshot(workspace)
    (kept,) = workspace.snapshots_dir.iterdir()
    assert NAME.fullmatch(kept.name) and kept.name.startswith("v0-")


def test_restore_older_needs_yes_then_equals_that_snapshot(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _three_versions(workspace)
    with workspace.lock():  # the lock file exists before we fingerprint the tree
        pass
    before = tree(workspace.root)
    with pytest.raises(SkillsmithError, match="holds version 1, older than the current version 3"):
        restore(workspace, "v1")
    assert main(["restore", "v1", "-w", str(workspace.root)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "older than the current version 3; pass --yes" in err
    assert tree(workspace.root) == before

    vault = tree(workspace.vault_dir)
    runs = tree(workspace.runs_dir)
    replaced = _no_caches(state(workspace.root))
    pre = restore(workspace, "v1", yes=True)

    expected = state(untar(_of_version(workspace, 1), tmp_path / "v1"))
    assert state(workspace.root) == expected
    assert expected["skills/alpha/SKILL.md"] != replaced["skills/alpha/SKILL.md"]
    assert workspace.agents_md.read_text() == "# Agent rules v1\n"
    assert workspace.version() == 1
    assert SkillStore(workspace, "alpha").current() == "v1"
    assert workspace.skill_path("alpha").read_text().endswith("v1\n")
    assert tree(workspace.vault_dir) == vault and tree(workspace.runs_dir) == runs
    assert workspace.pending_round_path.read_text() == "{}"
    assert leftovers(workspace) == []

    # the replaced state was kept, whole, by a rename, and becomes the snapshot that undoes the
    # restore once it is archived (after the restore returned)
    assert NAME.fullmatch(pre.name) and pre.name.startswith("v3-")
    pending = workspace.snapshots_dir / f".pending-{pre.name.removesuffix('.tar.gz')}"
    assert not pre.exists() and _no_caches(state(pending)) == replaced
    assert finish_pending(workspace) == [pre] and not pending.exists()
    assert state(untar(pre, tmp_path / "pre")) == replaced
    log = [json.loads(line) for line in (workspace.snapshots_dir / "restores.jsonl").open()]
    assert log[-1]["pre_restore"] == f"snapshots/{pre.name}" and log[-1]["replaced_version"] == 3
    done = cli(workspace, "restore", str(pre))  # newer than 1: no --yes needed
    assert done.returncode == 0, done.stderr
    assert state(workspace.root) == replaced
    assert not workspace.agents_md.exists()


def test_import_a_snapshot_from_another_workspace(workspace: Workspace, tmp_path: Path) -> None:
    _three_versions(workspace)
    other = Workspace.init(tmp_path / "other")
    source = _of_version(workspace, 2)
    imported = import_snapshot(other, source)
    assert imported == other.snapshots_dir / source.name  # named for the state, not the copy
    assert imported.read_bytes() == source.read_bytes()
    restore(other, "v2")
    assert state(other.root) == state(untar(imported, tmp_path / "v2"))
    done = cli(other, "snapshot", "--import", str(source))
    assert done.returncode == 0
    assert done.stdout.strip().endswith(source.name.replace(".tar.gz", "-2.tar.gz"))


def test_restore_of_a_version_several_snapshots_hold_names_them_and_takes_a_name(
    workspace: Workspace, tmp_path: Path
) -> None:
    _three_versions(workspace)
    first = _of_version(workspace, 3)
    make_skill(workspace, "gamma", "---\nname: gamma\n---\nnew\n")
    second = create_snapshot(workspace, note="with gamma")
    before = tree(workspace.root)
    with pytest.raises(AmbiguousSnapshot) as info:
        restore(workspace, "v3", yes=True)
    assert [m.path for m in info.value.matches] == [first, second]
    done = cli(workspace, "restore", "v3", "--yes")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    for path, note in ((first, "after round 3"), (second, "with gamma")):
        assert f"{path.name.removesuffix('.tar.gz')} ({note})" in done.stderr
    assert f"name one (skillsmith restore {second.name.removesuffix('.tar.gz')})" in done.stderr
    assert tree(workspace.root) == before  # nothing restored, nothing snapshotted
    listing = cli(workspace, "snapshot", "--list").stdout
    assert first.name.removesuffix(".tar.gz") in listing
    done = cli(workspace, "restore", first.name.removesuffix(".tar.gz"), "--yes")
    assert done.returncode == 0, done.stderr
    assert not workspace.skill_path("gamma").exists()
    assert state(workspace.root) == state(untar(first, tmp_path / "first"))


# -- hostile archives ------------------------------------------------------------------------------
Adder = Callable[[tarfile.TarFile], None]


def _file(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _special(name: str, kind: bytes, linkname: str = "") -> Adder:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = linkname
        if kind == tarfile.CHRTYPE:
            info.devmajor, info.devminor = 1, 3
        tar.addfile(info)

    return add


def _file_under_pointer(tar: tarfile.TarFile) -> None:
    _special("history/alpha/current", tarfile.SYMTYPE, "v1")(tar)
    _file(tar, "history/alpha/current/evil", b"x")


def _many(tar: tarfile.TarFile) -> None:
    for n in range(5):
        _file(tar, f"skills/big/part{n}", b"y" * 3000)


HOSTILE: dict[str, tuple[Adder, str]] = {
    "absolute": (lambda t: _file(t, "/tmp/evil", b"x"), "'/tmp/evil' has an absolute path"),
    "dotdot": (lambda t: _file(t, "skills/../../evil", b"x"), "climbs out with '..'"),
    "symlink": (
        _special("skills/alpha/link", tarfile.SYMTYPE, "/etc/passwd"),
        "is a symbolic link to '/etc/passwd'",
    ),
    "pointer_escape": (
        _special("history/alpha/current", tarfile.SYMTYPE, "../../../../etc"),
        "is a symbolic link to '../../../../etc'",
    ),
    "hardlink": (
        _special("skills/alpha/hard", tarfile.LNKTYPE, "../../../etc/passwd"),
        "is a hard link",
    ),
    "device": (_special("skills/alpha/null", tarfile.CHRTYPE), "is a device file"),
    "fifo": (_special("skills/alpha/pipe", tarfile.FIFOTYPE), "is a FIFO"),
    "oversized": (lambda t: _file(t, "skills/alpha/huge.bin", b"z" * 5000), "over the cap of 4096"),
    "total": (_many, "over the total cap of 12000"),
    "outside": (lambda t: _file(t, "vault/anthropic_api_key", b"k"), "outside the agent state"),
    "under_a_link": (
        _file_under_pointer,
        "lies under 'history/alpha/current', which is not a folder",
    ),
}


def _hostile_archive(path: Path, add_bad: Adder) -> Path:
    """A plausible snapshot whose bad member comes LAST: refusing must precede any extraction."""
    with tarfile.open(path, "w:gz") as tar:
        _file(tar, "skillsmith.yaml", b"version: 99\n")
        _file(tar, "skills/alpha/SKILL.md", b"---\nname: alpha\n---\npwned\n")
        _file(tar, "AGENTS.md", b"pwned\n")
        add_bad(tar)
    return path


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archive_is_refused_and_nothing_changes(
    workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    make_skill(workspace, "alpha", "---\nname: alpha\n---\nmine\n")
    (workspace.vault_dir / "anthropic_api_key").write_text(SECRET)
    cfg = workspace.load_config()
    cfg.limits.snapshot_max_member_bytes = 4096
    cfg.limits.snapshot_max_total_bytes = 12000
    workspace.save_config(cfg)
    create_snapshot(workspace)
    add_bad, message = HOSTILE[case]
    archive = _hostile_archive(tmp_path / f"{case}.tar.gz", add_bad)
    before = tree(workspace.root)

    with pytest.raises(SkillsmithError) as info:
        restore(workspace, archive, yes=True)
    text = str(info.value)
    assert "\n" not in text and "refused" in text and message in text, text
    assert tree(workspace.root) == before
    with pytest.raises(SkillsmithError, match="refused"):
        import_snapshot(workspace, archive)
    assert main(["restore", str(archive), "--yes", "-w", str(workspace.root)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and message in err
    assert tree(workspace.root) == before
    assert not (tmp_path / "evil").exists() and not Path("/tmp/evil").exists()


def test_unreadable_and_foreign_archives_are_refused(workspace: Workspace, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"\x1f\x8b\x08\x00 this is not gzip at all")
    foreign = tmp_path / "foreign.tar.gz"
    with tarfile.open(foreign, "w:gz") as tar:
        _file(tar, "skills/alpha/SKILL.md", b"x")
    bad_config = tmp_path / "cfg.tar.gz"
    with tarfile.open(bad_config, "w:gz") as tar:
        _file(tar, "skillsmith.yaml", b"version: 2\nlimits: {max_rounds: many}\n")
    with workspace.lock():  # the lock file exists before we fingerprint the tree
        pass
    before = tree(workspace.root)
    with pytest.raises(SkillsmithError, match=r"not a readable tar\.gz snapshot"):
        restore(workspace, garbage, yes=True)
    with pytest.raises(SkillsmithError, match=r"no skillsmith\.yaml inside"):
        restore(workspace, foreign, yes=True)
    with pytest.raises(
        SkillsmithError, match=r"cfg.tar.gz:skillsmith.yaml: field 'limits.max_rounds'"
    ):
        restore(workspace, bad_config, yes=True)
    with pytest.raises(SkillsmithError, match="no snapshot of v4"):
        restore(workspace, "v4")
    assert tree(workspace.root) == before


def test_restore_on_a_full_disk_says_so_and_changes_nothing(
    workspace: Workspace, tmp_path: Path
) -> None:
    """The workspace on a small tmpfs (bubblewrap): the snapshot is readable, the disk is not big
    enough to unpack it. The error names the disk, not the archive, and the workspace opens."""
    folder = make_skill(
        workspace, "bulky", "---\nname: bulky\ndescription: x\n---\n# Bulky\n"
    ).parent
    (folder / "assets").mkdir()
    (folder / "assets" / "blob.bin").write_bytes(os.urandom(2 * 1024 * 1024))  # incompressible
    assert cli(workspace, "snapshot").returncode == 0
    shutil.rmtree(folder)
    used = sum(p.stat().st_size for p in workspace.root.rglob("*") if p.is_file())
    small = tmp_path / "small"
    small.mkdir()
    inner = small / "ws"
    script = (
        f"cp -a {workspace.root} {inner} && cd {REPO} && "
        f"{sys.executable} -m engine.cli -w {inner} restore v0 --yes; echo restore-rc=$?; "
        f"{sys.executable} -m engine.cli -w {inner} snapshot --list >/dev/null; echo open-rc=$?"
    )
    tmpfs = ["--size", str(used + 1024 * 1024), "--tmpfs", str(small)]
    proc = subprocess.run(
        [
            "bwrap",
            "--bind",
            "/",
            "/",
            *tmpfs,
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "sh",
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert "restore-rc=1" in proc.stdout and "open-rc=0" in proc.stdout, proc.stdout + proc.stderr
    assert "cannot write the restored files (No space left on device)" in proc.stderr
    assert "not a readable" not in proc.stderr


@pytest.mark.parametrize(
    ("skill_md", "problem"),
    [
        (b"---\nname: latin\ndescription: caf\xe9\n---\n# Latin-1\n", "is not UTF-8 text"),
        (
            b"---\nname: deep\ndescription: " + b"[" * 3000 + b"]" * 3000 + b"\n---\n# Deep\n",
            "does not parse",
        ),
    ],
    ids=["not-utf8", "deeply-nested"],
)
def test_snapshot_refuses_what_restore_would_refuse(
    workspace: Workspace, tmp_path: Path, skill_md: bytes, problem: str
) -> None:
    """A snapshot that restore refuses looks like a way back and is not: snapshot refuses it
    first, with the same judgement restore applies to the same archive."""
    path = workspace.skill_path("odd")
    path.parent.mkdir(parents=True)
    path.write_bytes(skill_md)

    made = cli(workspace, "snapshot")

    assert made.returncode == 1 and len(made.stderr.strip().splitlines()) == 1, made.stderr
    assert f"{path}: {problem}" in made.stderr and "none was written" in made.stderr
    assert [p.name for p in workspace.snapshots_dir.glob("*")] == []
    # the same state packed by hand: restore refuses it too
    archive = tmp_path / "by-hand.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(workspace.config_path, "skillsmith.yaml")
        tar.add(path, "skills/odd/SKILL.md")
    refused = cli(workspace, "restore", str(archive), "--yes")
    assert refused.returncode == 1 and "refused" in refused.stderr
