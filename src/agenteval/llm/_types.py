"""The small ``Model`` protocol every provider, judge, simulator and agent speaks."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from .._usage import Usage
from ..trajectory._messages import Message, ToolCall


class ToolSpec(BaseModel):
    """A tool the model may call: a name, a description and a JSON schema for its inputs."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ModelRequest(BaseModel):
    """Everything a model call depends on; its JSON form is the response-cache key.

    ``json_schema`` asks for structured output matching that schema (``schema_name`` names
    it for providers that want a name).
    """

    model_config = ConfigDict(frozen=True)

    messages: list[Message]
    system: str | None = None
    tools: list[ToolSpec] = Field(default_factory=list)
    json_schema: dict[str, Any] | None = None
    schema_name: str = "response"
    temperature: float | None = None
    max_tokens: int | None = None


class ModelResponse(BaseModel):
    """An assistant turn: text, tool calls, token usage and how it was obtained.

    ``structured`` holds the parsed object when structured output was requested and the
    reply was a JSON object (``None`` otherwise; ``text`` keeps the raw reply).
    """

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    structured: dict[str, Any] | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    stop_reason: str | None = None
    retries: int = 0
    cached: bool = False

    def to_message(self) -> Message:
        """This response as an assistant message of the conversation."""
        return Message.assistant(self.text, list(self.tool_calls), self.usage)


@runtime_checkable
class Model(Protocol):
    """What agenteval needs from a language model.

    ``name`` identifies provider and model (``"anthropic:claude-..."``); it is part of the
    cache key. Implement both methods; ``acomplete`` may simply run ``complete`` in a thread.

    An optional ``cacheable`` attribute (default True when absent) lets a model opt out of
    the response cache: set it to False when the replies depend on something the cache key
    (``name`` and the request) does not capture, as for in-process doubles such as
    :class:`~agenteval.testing.ScriptedModel`, whose script can change between runs.
    """

    @property
    def name(self) -> str:
        """Provider and model, e.g. ``"openai:gpt-4o-mini"``."""
        ...

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one request and return the assistant's reply."""
        ...

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        """Async form of :meth:`complete`."""
        ...


@runtime_checkable
class Embeddings(Protocol):
    """What agenteval needs from an embedding model: texts in, one vector per text out.

    Optional extras: a ``cacheable`` attribute (False keeps the embeddings out of the
    response cache, as for :class:`Model`) and an ``embed_with_usage(texts)`` method
    returning an :class:`EmbeddingsResult`, whose usage and retries are then recorded.
    """

    @property
    def name(self) -> str:
        """Provider and model, e.g. ``"openai:text-embedding-3-small"``; part of cache keys."""
        ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per input text, in order."""
        ...


@dataclass(frozen=True)
class EmbeddingsResult:
    """What ``embed_with_usage`` returns: the vectors, their token usage and the retries."""

    vectors: list[list[float]]
    usage: Usage = field(default_factory=Usage)
    retries: int = 0


def reply_text(response: ModelResponse) -> str:
    """What the model replied, for an error message or a corrective retry: the text, else
    the structured object as JSON, else ``(empty reply)``."""
    if response.text.strip():
        return response.text
    if response.structured is not None:
        return json.dumps(response.structured, ensure_ascii=False)
    return "(empty reply)"
