"""Language models and embeddings: the ``Model`` protocol and its provider implementations.

Provider SDKs are imported only when a model is built, and the names here on first use
(PEP 562), so importing this module, or a model type from it, is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .._cache_settings import configure_cache, using_cache
    from ._anthropic import AnthropicModel
    from ._cache import clear_cache
    from ._embeddings import OpenAIEmbeddings
    from ._factory import default_agent_model, default_judge_model, model
    from ._openai import OpenAIModel
    from ._retry import RetryPolicy
    from ._types import (
        Embeddings,
        EmbeddingsResult,
        Model,
        ModelRequest,
        ModelResponse,
        ToolSpec,
    )

_WHERE = {
    "AnthropicModel": "._anthropic",
    "Embeddings": "._types",
    "EmbeddingsResult": "._types",
    "Model": "._types",
    "ModelRequest": "._types",
    "ModelResponse": "._types",
    "OpenAIEmbeddings": "._embeddings",
    "OpenAIModel": "._openai",
    "RetryPolicy": "._retry",
    "ToolSpec": "._types",
    "clear_cache": "._cache",
    "configure_cache": ".._cache_settings",
    "default_agent_model": "._factory",
    "default_judge_model": "._factory",
    "model": "._factory",
    "using_cache": ".._cache_settings",
}

__all__ = [
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


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
