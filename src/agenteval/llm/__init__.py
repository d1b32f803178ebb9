"""Language models and embeddings: the ``Model`` protocol and its provider implementations.

Provider SDKs are imported only when a model is built, so importing this module is cheap.
"""

from .._cache_settings import configure_cache, using_cache
from ._anthropic import AnthropicModel
from ._cache import clear_cache
from ._embeddings import OpenAIEmbeddings
from ._factory import default_agent_model, default_judge_model, model
from ._openai import OpenAIModel
from ._retry import RetryPolicy
from ._types import Embeddings, EmbeddingsResult, Model, ModelRequest, ModelResponse, ToolSpec

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
