"""The vault keeps secrets on disk only, and redact() keeps them out of everything written."""

from __future__ import annotations

import stat

import pytest

from engine.core.errors import FormatError, SkillsmithError
from engine.core.vault import (
    MASK,
    anthropic_api_key,
    has_secret,
    read_secret,
    redact,
    remember_vault,
    secret_names,
    write_secret,
)
from engine.core.workspace import Workspace


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_write_then_read_is_private_and_stripped(workspace: Workspace) -> None:
    path = write_secret(workspace, "github_token", "  plain-value-one  \n")
    assert path == workspace.vault_dir / "github_token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == "plain-value-one\n"
    assert read_secret(workspace, "github_token") == "plain-value-one"
    assert read_secret(workspace, "absent") is None
    assert secret_names(workspace) == ["github_token"]


def test_a_hand_written_secret_file_is_read(workspace: Workspace) -> None:
    (workspace.vault_dir / "anthropic_api_key").write_text("sk-ant-handwritten-1234567890\n\n")
    assert anthropic_api_key(workspace) == "sk-ant-handwritten-1234567890"


def test_empty_secret_file_names_the_file(workspace: Workspace) -> None:
    (workspace.vault_dir / "anthropic_api_key").write_text("\n")
    with pytest.raises(FormatError) as err:
        read_secret(workspace, "anthropic_api_key")
    assert str(err.value).startswith(str(workspace.vault_dir / "anthropic_api_key"))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", ["../skillsmith.yaml", "a/b", ".hidden", ""])
def test_secret_names_cannot_escape_the_vault(workspace: Workspace, name: str) -> None:
    with pytest.raises(SkillsmithError, match="invalid secret name"):
        read_secret(workspace, name)
    with pytest.raises(SkillsmithError, match="invalid secret name"):
        write_secret(workspace, name, "value-xyz")
    assert (workspace.root / "skillsmith.yaml").read_text().startswith("#")


def test_refuses_to_store_an_empty_secret(workspace: Workspace) -> None:
    with pytest.raises(SkillsmithError, match="refusing to store an empty secret"):
        write_secret(workspace, "token", "   ")
    assert not (workspace.vault_dir / "token").exists()


def test_environment_key_wins_over_the_vault(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secret(workspace, "anthropic_api_key", "sk-ant-vault-side-000000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-side-1111111111")
    assert anthropic_api_key(workspace) == "sk-ant-env-side-1111111111"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "  ")
    assert anthropic_api_key(workspace) == "sk-ant-vault-side-000000000"
    assert anthropic_api_key(None) is None


def test_redact_masks_vault_values_once_read(workspace: Workspace) -> None:
    (workspace.vault_dir / "db_password").write_text("correct-horse-battery-17\n")
    text = "connecting with correct-horse-battery-17 to db"
    assert redact(text) == text  # unknown until the vault is read
    remember_vault(workspace)
    assert redact(text) == f"connecting with {MASK} to db"
    assert has_secret(text)


def test_redact_masks_environment_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "opaque_token_value_42")
    assert redact("auth=opaque_token_value_42;") == f"auth={MASK};"


def test_redact_masks_extra_values_given_by_the_caller() -> None:
    assert redact("pw is hunter2-long", secrets=["hunter2-long", "abc"]) == f"pw is {MASK}"


@pytest.mark.parametrize(
    "secret",
    [
        "sk-ant-api03-AbCdEf0123456789_-xyz",
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_" + "a1B2c3D4e5" * 4,
        "github_pat_" + "11ABCDEFG0" * 4,
        "xoxb-1234567890-abcdefghij",
        "AIza" + "SyA-bcdefghijklmnopqrstuvwxyz012345",
    ],
)
def test_redact_masks_key_shaped_strings(secret: str) -> None:
    out = redact(f"export TOKEN={secret} # set by ci")
    assert secret not in out
    assert out == f"export TOKEN={MASK} # set by ci"


def test_redact_masks_bearer_tokens_and_private_keys() -> None:
    header = "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig"
    assert redact(header) == f"Authorization: Bearer {MASK}"
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----"
    assert redact(f"key:\n{pem}\nend") == f"key:\n{MASK}\nend"


@pytest.mark.parametrize(
    "text",
    [
        "run `grep -n sk- src/` then read the skill",
        "password = request.args['pw']  # vulnerable: compared in plain text",
        "the task-queue uses sk-1 and ask-for-approval",
        "Bearer short",
    ],
)
def test_redact_leaves_ordinary_text_alone(text: str) -> None:
    assert redact(text) == text
    assert not has_secret(text)
