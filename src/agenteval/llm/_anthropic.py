"""``AnthropicModel``: the ``Model`` protocol over the official ``anthropic`` SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .._usage import Usage
from ..trajectory._messages import ToolCall
from ._client import ForkSafeClient, SdkClients, resolve_api_key, resolve_base_url, shown_url
from ._retry import (
    Classifier,
    Failure,
    RetryPolicy,
    acall_with_retries,
    by_status,
    call_with_retries,
    classify_sdk_error,
    one_line,
    parse_retry_after,
)
from ._structured import extract_json_object
from ._types import ModelRequest, ModelResponse

if TYPE_CHECKING:
    import anthropic
    from anthropic.types import Message as AnthropicMessage

_ENV_KEY = "ANTHROPIC_API_KEY"
_KEY_HINT = f"{_ENV_KEY} or the api_key= argument"
_SPEND_LIMIT_CODES = frozenset(
    {
        "contract_spend_limit_reached",
        "enforced_spend_limit_reached",
        "linked_organization_spend_limit_reached",
        "linked_organization_billing_unavailable",
    }
)
_TRANSIENT_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})


class _IncompleteStream(Exception):
    """The response stream ended before ``message_stop``: retried like a dropped connection."""


class AnthropicModel(SdkClients):
    """A :class:`~agenteval.llm.Model` backed by Anthropic's Messages API.

    Use it for judges, simulated users and agents running on Claude. The key comes from
    ``api_key`` or ``ANTHROPIC_API_KEY``; ``base_url`` points it at a proxy or a compatible
    server (then a missing key is allowed). Replies are streamed, so an ``overloaded_error``
    that arrives inside a 200 stream is retried like a 529. Structured output is a forced
    tool call whose input becomes ``response.structured``. The current API rejects sampling
    parameters, so ``request.temperature`` is not sent. Example::

        judge = AnthropicModel("claude-haiku-4-5", retry=RetryPolicy(max_attempts=3))
        reply = judge.complete(ModelRequest(messages=[Message.user("Hi")]))
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 1024,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._model = model
        self._api_key = resolve_api_key(api_key, _ENV_KEY, "AnthropicModel", base_url)
        self._base_url = resolve_base_url(base_url, "ANTHROPIC_BASE_URL", "AnthropicModel")
        # another server than the provider's own (its variable included) names its own
        server = self._base_url
        self._name = f"anthropic:{model}@{shown_url(server)}" if server else f"anthropic:{model}"
        self._max_tokens = max_tokens
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        # Import the SDK now rather than at the first call: the parallel executor forks one
        # child per item after set_up built the model, and children inherit the parent's
        # imports instead of each paying about a second for them.
        import anthropic

        self._client_class = anthropic.Anthropic
        self._async_client_class = anthropic.AsyncAnthropic
        self._clients: ForkSafeClient[anthropic.Anthropic] = ForkSafeClient(self._new_client)

    _sdk_name = "anthropic"
    _default_base_url = "https://api.anthropic.com"

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy of this model."""
        return self._retry

    def __repr__(self) -> str:
        return f"AnthropicModel({self._model!r})"

    def _twin(self, server: str) -> AnthropicModel:
        from . import _rehearsal

        return AnthropicModel(
            self._model,
            api_key=_rehearsal.KEY,
            base_url=server,
            max_tokens=self._max_tokens,
            timeout=_rehearsal.TIMEOUT,
            retry=RetryPolicy(max_attempts=1),
        )

    def _rehearse(self, asynchronous: bool) -> None:
        from ._rehearsal import rehearse_chat

        rehearse_chat(self, asynchronous)

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the reply, retrying transient errors."""
        params = self._params(request)
        client = self._clients.get()

        def attempt() -> AnthropicMessage:
            with client.messages.stream(**params) as stream:
                return _final_message(stream)

        message, retries = call_with_retries(
            attempt,
            classify=self._classifier(),
            policy=self._retry,
            label=self.name,
            secrets=[self._api_key],
            key_hint=_KEY_HINT,
        )
        return _to_response(message, request, retries)

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        """Async form of :meth:`complete`, over the SDK's async client."""
        params = self._params(request)
        async with self._async_client() as client:

            async def attempt() -> AnthropicMessage:
                async with client.messages.stream(**params) as stream:
                    return await _afinal_message(stream)

            message, retries = await acall_with_retries(
                attempt,
                classify=self._classifier(),
                policy=self._retry,
                label=self.name,
                secrets=[self._api_key],
                key_hint=_KEY_HINT,
            )
        return _to_response(message, request, retries)

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        system, messages = to_anthropic_messages(request)
        params: dict[str, Any] = {
            "model": self._model,
            "max_tokens": request.max_tokens or self._max_tokens,
            "messages": messages,
        }
        if system:
            params["system"] = system
        tools: list[dict[str, Any]] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        if request.json_schema is not None:
            tools.append(
                {
                    "name": request.schema_name,
                    "description": "Give your answer by calling this tool.",
                    "input_schema": request.json_schema,
                }
            )
            params["tool_choice"] = {"type": "tool", "name": request.schema_name}
        if tools:
            params["tools"] = tools
        return params

    def _classifier(self) -> Classifier:
        timeout = self._timeout

        def classify(exc: BaseException) -> Failure | None:
            return classify_anthropic_error(exc, timeout)

        return classify


def to_anthropic_messages(request: ModelRequest) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and Anthropic ``messages`` for a request.

    System messages join the system prompt; assistant tool calls become ``tool_use`` blocks;
    ``tool`` messages become ``tool_result`` blocks of a user turn (consecutive ones merged,
    as the API wants all results of one assistant turn in the next user turn).
    """
    system_parts = [request.system] if request.system else []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for message in request.messages:
        if message.role == "system":
            if message.content:
                system_parts.append(message.content)
        elif message.role == "user":
            # The API rejects empty text blocks.
            if message.content:
                add("user", [{"type": "text", "text": message.content}])
        elif message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.inputs}
                for call in message.tool_calls
            )
            add("assistant", blocks)
        else:
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
            if message.is_error:
                result["is_error"] = True
            add("user", [result])
    # Tool results must come first in a user turn.
    for turn in turns:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    return "\n\n".join(system_parts), turns


def _final_message(stream: Any) -> AnthropicMessage:
    stopped = False
    for event in stream:
        if event.type == "message_stop":
            stopped = True
    if not stopped:
        raise _IncompleteStream("the response stream ended before message_stop")
    message: AnthropicMessage = stream.get_final_message()
    return message


async def _afinal_message(stream: Any) -> AnthropicMessage:
    stopped = False
    events: AsyncIterator[Any] = stream.__aiter__()
    async for event in events:
        if event.type == "message_stop":
            stopped = True
    if not stopped:
        raise _IncompleteStream("the response stream ended before message_stop")
    message: AnthropicMessage = await stream.get_final_message()
    return message


def _to_response(message: AnthropicMessage, request: ModelRequest, retries: int) -> ModelResponse:
    texts: list[str] = []
    calls: list[ToolCall] = []
    structured: dict[str, Any] | None = None
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            inputs = dict(block.input)
            if request.json_schema is not None and block.name == request.schema_name:
                structured = structured if structured is not None else inputs
            else:
                calls.append(ToolCall(id=block.id, name=block.name, inputs=inputs))
    text = "".join(texts)
    if structured is not None:
        text = json.dumps(structured)
    elif request.json_schema is not None:
        structured = extract_json_object(text)
    usage = message.usage
    return ModelResponse(
        text=text,
        tool_calls=calls,
        structured=structured,
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
        ),
        model=message.model,
        stop_reason=message.stop_reason,
        retries=retries,
    )


def classify_anthropic_error(exc: BaseException, timeout: float) -> Failure | None:
    """Whether an exception from the ``anthropic`` SDK is worth retrying, and how to report it."""
    import anthropic

    if isinstance(exc, _IncompleteStream):
        return Failure("transient", str(exc))
    return classify_sdk_error(exc, anthropic, timeout, _classify_status, "the stream")


def _classify_status(exc: anthropic.APIStatusError) -> Failure:
    status = exc.status_code
    error_type = exc.type or "error"
    message = one_line(exc.api_message or str(exc.body or "") or exc.message)
    where = "inside a 200 stream" if status == 200 else f"HTTP {status}"
    summary = f"{where} {error_type}: {message}"
    retry_after = parse_retry_after(exc.response.headers)
    if error_type == "billing_error" or exc.error_code in _SPEND_LIMIT_CODES:
        return Failure("quota", summary)
    if status == 400 and "credit balance" in message.lower():
        return Failure("quota", summary)
    if status == 200:
        if error_type in _TRANSIENT_TYPES:
            return Failure("transient", summary, retry_after)
        if error_type in ("authentication_error", "permission_error"):
            return Failure("auth", summary)
        return Failure("request", summary)
    return by_status(status, summary, retry_after)
