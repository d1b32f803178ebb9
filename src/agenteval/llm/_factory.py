"""Building a model from a ``"provider:name"`` string, and the default models from the env."""

from __future__ import annotations

import os
import re
from typing import Any

from .._errors import ConfigError
from ._anthropic import AnthropicModel
from ._openai import OpenAIModel
from ._types import Model

JUDGE_MODEL_ENV = "AGENTEVAL_JUDGE_MODEL"
AGENT_MODEL_ENV = "AGENTEVAL_AGENT_MODEL"
_FORMS = "use 'anthropic:MODEL', 'openai:MODEL' or 'openai-compatible:MODEL@http://host:port/v1'"
_COMPATIBLE = re.compile(r"^(?P<name>.+)@(?P<url>https?://\S+)$")


def model(spec: str, **kwargs: Any) -> Model:
    """Build a model from a spec string; ``kwargs`` go to the model's constructor.

    Use it to pick a model from configuration: ``"anthropic:claude-haiku-4-5"``,
    ``"openai:gpt-4o-mini"`` or ``"openai-compatible:llama3.1:8b@http://localhost:11434/v1"``
    (vLLM, Ollama, llama.cpp server, ...); ``"anthropic:MODEL@https://gateway:8443"`` sends
    a Claude model to a proxy, as the model's name shows it. Example::

        judge = model("openai:gpt-4o-mini", timeout=30.0)

    Raises:
        ConfigError: the spec names no known provider, a server twice (in the spec and as
            ``base_url``) or one for ``openai:``, or no API key is available.
    """
    return _build(spec, repr(spec), kwargs)


def default_judge_model() -> Model | None:
    """The model named by ``AGENTEVAL_JUDGE_MODEL``, or ``None`` when it is not set."""
    return _from_env(JUDGE_MODEL_ENV)


def default_agent_model() -> Model | None:
    """The model named by ``AGENTEVAL_AGENT_MODEL``, or ``None`` when it is not set."""
    return _from_env(AGENT_MODEL_ENV)


_from_env_built: dict[tuple[str, str], Model] = {}


def _from_env(variable: str) -> Model | None:
    # one model (and so one HTTP client) per setting, however many judges ask for it
    spec = os.environ.get(variable, "").strip()
    if not spec:
        return None
    built = _from_env_built.get((variable, spec))
    if built is None:
        built = _from_env_built[(variable, spec)] = _build(spec, f"{variable}={spec!r}", {})
    return built


def _build(spec: str, origin: str, kwargs: dict[str, Any]) -> Model:
    provider, sep, name = spec.strip().partition(":")
    name = name.strip()
    if not sep or not name:
        raise ConfigError(f"{origin} is not a model spec: {_FORMS}")
    # a server in the spec, as a model's name shows it: "NAME@http://host:port"
    match = _COMPATIBLE.match(name)
    if match is not None and "base_url" in kwargs:
        raise ConfigError(
            f"{origin} names a server and base_url={kwargs['base_url']!r} another: give one"
        )
    if provider == "anthropic":
        if match is not None:
            return AnthropicModel(match["name"], base_url=match["url"], **kwargs)
        return AnthropicModel(name, **kwargs)
    if provider == "openai":
        if match is not None:
            raise ConfigError(
                f"{origin} names a server: use 'openai-compatible:{name}' for a model there"
            )
        return OpenAIModel(name, **kwargs)
    if provider == "openai-compatible":
        if match is None:
            raise ConfigError(
                f"{origin} has no server URL: use 'openai-compatible:MODEL@http://host:port/v1'"
            )
        return OpenAIModel(match["name"], base_url=match["url"], **kwargs)
    raise ConfigError(f"{origin} names unknown provider {provider!r}: {_FORMS}")
