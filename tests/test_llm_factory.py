"""make_llm picks the provider and finds the key; OfflineLLM accounts like the real client."""

from __future__ import annotations

import pytest

from engine.core.config import ModelConfig
from engine.core.errors import SkillsmithError
from engine.core.vault import write_secret
from engine.core.workspace import Workspace
from engine.evaluation.llm import AnthropicLLM, Messages, OfflineLLM, make_llm
from tests.llm_server import MessagesServer

ENV_KEY = "sk-ant-api03-fromTHEenvironment000000000000000"
VAULT_KEY = "sk-ant-api03-fromTHEvault11111111111111111111111"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def anthropic_cfg() -> ModelConfig:
    return ModelConfig(provider="anthropic", model="claude-haiku-4-5", max_retries=0)


def echo_reviewer(system: str, messages: Messages) -> str:
    return f"{system} / {messages[-1]['content']}".upper()


def test_offline_answers_and_accounts() -> None:
    llm = OfflineLLM(echo_reviewer)
    seen: list[str] = []

    first = llm.complete("rules", [{"role": "user", "content": "case one"}], on_text=seen.append)
    llm.complete("rules", [{"role": "user", "content": [{"type": "text", "text": "two"}]}])

    assert first.text == "RULES / CASE ONE"
    assert seen == ["RULES / CASE ONE"]
    assert first.cost_usd == 0.0
    assert first.model == "offline"
    assert first.usage.input_tokens == len("rulescase one") // 4 + 1
    assert first.usage.output_tokens > 0
    assert llm.calls == 2
    assert llm.total_cost_usd == 0.0
    assert llm.total_usage.input_tokens > first.usage.input_tokens


def test_make_llm_offline_uses_the_given_answerer() -> None:
    llm = make_llm(ModelConfig(provider="offline"), offline=echo_reviewer)
    assert isinstance(llm, OfflineLLM)
    assert llm.complete("a", [{"role": "user", "content": "b"}]).text == "A / B"


def test_make_llm_offline_without_answerer_is_refused() -> None:
    with pytest.raises(
        SkillsmithError, match="has no offline model; set its provider to anthropic"
    ):
        make_llm(ModelConfig(provider="offline"))


def test_make_llm_anthropic_prefers_the_environment(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secret(workspace, "anthropic_api_key", VAULT_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_KEY)
    with MessagesServer(api_key=ENV_KEY) as server:
        server.reply("from env")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        llm = make_llm(anthropic_cfg(), workspace)
        assert isinstance(llm, AnthropicLLM)
        assert llm.complete("s", [{"role": "user", "content": "q"}]).text == "from env"


def test_make_llm_anthropic_falls_back_to_the_vault(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secret(workspace, "anthropic_api_key", VAULT_KEY)
    with MessagesServer(api_key=VAULT_KEY) as server:
        server.reply("from vault")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        llm = make_llm(anthropic_cfg(), workspace)
        assert llm.complete("s", [{"role": "user", "content": "q"}]).text == "from vault"
        assert server.message_requests[0].has_credentials


def test_make_llm_anthropic_without_any_key(workspace: Workspace) -> None:
    with pytest.raises(SkillsmithError) as err:
        make_llm(anthropic_cfg(), workspace)
    assert str(err.value) == (
        "anthropic: no API key; set ANTHROPIC_API_KEY or write it to "
        "vault/anthropic_api_key in the workspace"
    )
