"""The agenteval.llm facade: its names, and that importing it loads no provider SDK."""

from __future__ import annotations

import subprocess
import sys

import agenteval.llm as llm
from agenteval.llm import AnthropicModel, Model, OpenAIModel
from agenteval.testing import ScriptedModel


def test_llm_facade_exports_exactly_its_names() -> None:
    assert llm.__all__ == [
        "AnthropicModel",
        "Embeddings",
        "EmbeddingsResult",
        "Model",
        "ModelRequest",
        "ModelResponse",
        "OpenAIEmbeddings",
        "OpenAIModel",
        "RetryPolicy",
        "ToolSpec",
        "clear_cache",
        "configure_cache",
        "default_agent_model",
        "default_judge_model",
        "model",
        "using_cache",
    ]


def test_llm_models_implement_the_protocol() -> None:
    models = [
        AnthropicModel("claude-test", api_key="sk-ant-test-123456"),
        OpenAIModel("gpt-test", api_key="sk-test-123456"),
        ScriptedModel([]),
    ]

    assert [isinstance(m, Model) for m in models] == [True, True, True]


def test_llm_import_loads_no_sdk() -> None:
    # Building a model does import its SDK (see test_fork_safety): only importing is free.
    code = (
        "import sys\n"
        "import agenteval.llm, agenteval.testing\n"
        "print(sorted(m for m in ('anthropic', 'openai', 'httpx', 'httpx2') if m in sys.modules))\n"
    )

    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout

    assert out.strip() == "[]"
