"""Nothing of the agent's is followed: links it leaves in its run folder stay links to the
harness, which never reads through one (real agent process, real files)."""

from __future__ import annotations

import os
from pathlib import Path

from engine.core.unfollowed import read_inside
from engine.evaluation.runner import run_evaluation
from tests.runner_helpers import LINK_AGENT, command_workspace, holding, linked_host_files


def test_an_answer_linked_to_a_host_file_is_not_graded_from_it_nor_stored(
    tmp_path: Path,
) -> None:
    ws = command_workspace(tmp_path / "ws", LINK_AGENT, env_allow=())
    tokens = linked_host_files(ws, tmp_path / "host")

    result = run_evaluation(ws, "b")

    (row,) = result.rows
    # graded from the agent's own last message, not from the host file the link names
    assert (row["pass_fail"], row["judge_verdict"]) == ("pass", "safe")
    assert holding(ws.root, tokens) == []


def test_a_file_is_read_inside_a_folder_only_when_no_link_stands_on_the_way(
    tmp_path: Path,
) -> None:
    folder, host = tmp_path / "room", tmp_path / "host"
    (folder / "sub").mkdir(parents=True)
    host.mkdir()
    (host / "secret").write_text("host")
    (folder / "sub" / "own.txt").write_text("mine")
    (folder / "link.txt").symlink_to(host / "secret")
    (folder / "hop").symlink_to(host)
    os.mkfifo(folder / "pipe")
    assert read_inside(folder, "sub/own.txt") == b"mine"
    assert read_inside(folder, "sub/own.txt", limit=2) == b"mi"
    for rel in ("link.txt", "hop/secret", "pipe", "sub", "../host/secret", "missing"):
        assert read_inside(folder, rel) is None, rel
