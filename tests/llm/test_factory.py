"""model("provider:name") and the default models read from the environment."""

from __future__ import annotations

import pytest

from agenteval import ConfigError
from agenteval.llm import AnthropicModel, OpenAIModel, default_judge_model, model
from agenteval.llm._factory import default_agent_model

FORMS = "use 'anthropic:MODEL', 'openai:MODEL' or 'openai-compatible:MODEL@http://host:port/v1'"


def test_model_builds_an_anthropic_model() -> None:
    built = model("anthropic:claude-haiku-4-5", api_key="sk-ant-test-123456")

    assert isinstance(built, AnthropicModel)
    assert built.name == "anthropic:claude-haiku-4-5"


def test_model_builds_an_openai_model_passing_kwargs() -> None:
    built = model("openai:gpt-4o-mini", api_key="sk-test-123456", timeout=5.0)

    assert isinstance(built, OpenAIModel)
    assert (built.name, built._timeout) == ("openai:gpt-4o-mini", 5.0)


def test_model_builds_an_openai_compatible_model_without_a_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    built = model("openai-compatible:llama3.1:8b@http://localhost:11434/v1")

    assert isinstance(built, OpenAIModel)
    assert built.name == "openai-compatible:llama3.1:8b@http://localhost:11434/v1"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4o", f"'gpt-4o' is not a model spec: {FORMS}"),
        ("openai:", f"'openai:' is not a model spec: {FORMS}"),
        ("gemini:pro", f"'gemini:pro' names unknown provider 'gemini': {FORMS}"),
        (
            "openai-compatible:llama3",
            "'openai-compatible:llama3' has no server URL: "
            "use 'openai-compatible:MODEL@http://host:port/v1'",
        ),
    ],
)
def test_model_rejects_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        model(spec)

    assert str(info.value) == message


def test_default_judge_model_is_none_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTEVAL_JUDGE_MODEL", raising=False)

    assert default_judge_model() is None


def test_default_judge_model_is_none_when_blank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTEVAL_JUDGE_MODEL", "  ")

    assert default_judge_model() is None


def test_default_judge_model_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTEVAL_JUDGE_MODEL", "anthropic:claude-haiku-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-123456")

    judge = default_judge_model()

    assert judge is not None and judge.name == "anthropic:claude-haiku-4-5"


def test_default_judge_model_names_the_variable_in_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTEVAL_JUDGE_MODEL", "claude")

    with pytest.raises(ConfigError) as info:
        default_judge_model()

    assert str(info.value) == f"AGENTEVAL_JUDGE_MODEL='claude' is not a model spec: {FORMS}"


def test_default_judge_model_without_a_key_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTEVAL_JUDGE_MODEL", "openai:gpt-4o-mini")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    with pytest.raises(ConfigError) as info:
        default_judge_model()

    assert str(info.value) == "No API key for OpenAIModel: set OPENAI_API_KEY or pass api_key="


def test_default_agent_model_reads_its_own_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTEVAL_JUDGE_MODEL", raising=False)
    monkeypatch.setenv("AGENTEVAL_AGENT_MODEL", "openai-compatible:qwen@http://127.0.0.1:8000/v1")

    agent = default_agent_model()

    assert agent is not None and agent.name == "openai-compatible:qwen@http://127.0.0.1:8000/v1"
    monkeypatch.delenv("AGENTEVAL_AGENT_MODEL")
    assert default_agent_model() is None


def test_model_sends_an_anthropic_model_to_the_server_its_spec_names() -> None:
    built = model("anthropic:claude-x@http://gw:1", api_key="sk-ant-test-123456")

    assert isinstance(built, AnthropicModel)
    assert (built.name, built._model, built._base_url) == (
        "anthropic:claude-x@http://gw:1",
        "claude-x",
        "http://gw:1",
    )
    # a Vertex-style version after "@" is part of the model's id, not a server
    assert model("anthropic:claude-x@20241022", api_key="sk-ant-test-123456")._model == (  # type: ignore[attr-defined]
        "claude-x@20241022"
    )


@pytest.mark.parametrize(
    ("spec", "kwargs", "message"),
    [
        (
            "openai:gpt-x@http://gw:1/v1",
            {},
            "'openai:gpt-x@http://gw:1/v1' names a server: use "
            "'openai-compatible:gpt-x@http://gw:1/v1' for a model there",
        ),
        (
            "anthropic:claude-x@http://gw:1",
            {"base_url": "http://other:2"},
            "'anthropic:claude-x@http://gw:1' names a server and base_url='http://other:2' "
            "another: give one",
        ),
        (
            "openai-compatible:m@http://gw:1/v1",
            {"base_url": "http://other:2/v1"},
            "'openai-compatible:m@http://gw:1/v1' names a server and "
            "base_url='http://other:2/v1' another: give one",
        ),
    ],
)
def test_model_a_server_it_cannot_honour_is_a_config_error(
    spec: str, kwargs: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        model(spec, api_key="sk-test-123456", **kwargs)

    assert str(info.value) == message
