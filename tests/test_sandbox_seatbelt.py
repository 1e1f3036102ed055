"""The macOS sandbox: Seatbelt's profile keeps bubblewrap's contract (checked here as text; a
Mac runs it through sandbox-exec, Linux runs bubblewrap)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.core.errors import SkillsmithError
from engine.evaluation.agents import sandbox as sandbox_module
from engine.evaluation.agents import seatbelt
from engine.evaluation.agents.limits import UnitLimits
from engine.evaluation.agents.sandbox import make_sandbox, seatbelt_command


def _rules(text: str) -> list[str]:
    return text.strip().splitlines()


def test_the_profile_denies_everything_but_reading_the_system_and_writing_the_room() -> None:
    room = Path("/private/var/folders/x/skillsmith-runs/unit-1")
    rules = _rules(
        seatbelt.profile(
            room=room,
            read_only=[Path("/usr"), Path('/opt/odd "name"')],
            writable=[Path("/Users/me/cache")],
            network=False,
            ports=[],
        )
    )
    assert rules[:2] == ["(version 1)", "(deny default)"]
    assert "(allow default)" not in rules
    assert '(allow file-read* (subpath "/usr"))' in rules
    assert '(allow file-read* (subpath "/opt/odd \\"name\\""))' in rules  # quoted, not broken
    writes = [r for r in rules if "file-write*" in r]
    assert writes == [
        f'(allow file-read* file-write* (subpath "{room}"))',
        '(allow file-read* file-write* (subpath "/Users/me/cache"))',
    ]
    assert "(deny network*)" in rules and not any("network-outbound" in r for r in rules)


def test_the_network_is_the_proxy_and_the_allowed_loopback_ports_or_all_when_asked() -> None:
    common = {"room": Path("/r"), "read_only": [], "writable": []}
    proxied = _rules(seatbelt.profile(**common, network=False, ports=[41000, 8123, 8123]))
    outbound = [r for r in proxied if "network" in r]
    assert outbound == [
        "(deny network*)",
        '(allow network-outbound (remote ip "localhost:8123"))',
        '(allow network-outbound (remote ip "localhost:41000"))',
    ]
    everything = _rules(seatbelt.profile(**common, network=True, ports=[]))
    assert "(allow network*)" in everything and "(deny network*)" not in everything


def test_a_seatbelt_run_is_sandbox_exec_with_its_limits_and_proxy_set_first(
    tmp_path: Path,
) -> None:
    box = sandbox_module.Sandbox(
        kind="seatbelt",
        read_only=(Path("/usr"),),
        limits=UnitLimits(memory_mb=256, max_processes=32, disk_mb=8),
        allow=("127.0.0.1:8123", "api.anthropic.com:443"),
    )
    argv = seatbelt_command(box, ["claude", "-p", "hi"], tmp_path)
    assert argv[:2] == [seatbelt.SANDBOX_EXEC, "-p"]
    rules = _rules(argv[2])
    port = int(argv[5].split("http://127.0.0.1:")[1].split()[0])  # the proxy this process runs
    assert f'(allow network-outbound (remote ip "localhost:{port}"))' in rules
    assert '(allow network-outbound (remote ip "localhost:8123"))' in rules
    assert argv[3:5] == ["/bin/sh", "-c"]
    assert argv[5].startswith("ulimit -d 262144 -u 32 -f 16384 && export HTTP_PROXY=")
    assert argv[5].endswith(' && exec "$@"') and argv[6:] == ["sh", "claude", "-p", "hi"]


def test_the_platform_picks_the_backend_and_seatbelt_off_a_mac_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    assert seatbelt.backend("darwin") == "seatbelt"
    assert seatbelt.backend("linux") == "bwrap"
    if sys.platform == "darwin":
        pytest.skip("off a Mac only")
    with pytest.raises(SkillsmithError, match=r"Seatbelt cannot run here") as caught:
        make_sandbox("seatbelt", network=False, command=["true"], workspace=tmp_path)
    assert "\n" not in str(caught.value)
