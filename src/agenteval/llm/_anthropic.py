"""``AnthropicModel``: the ``Model`` protocol over the official ``anthropic`` SDK."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._usage import Usage
from ..trajectory._messages import INVALID_JSON, ToolCall
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


class _Unreadable(Exception):
    """A 200 reply that is no Messages API reply (a web page, a stream of something else):
    never retried, as a wrong URL or proxy answers so every time. The message is what the
    final error says after the model's name."""


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

        def attempt() -> _Reply:
            with client.messages.create(**params, stream=True) as stream:
                if not _is_event_stream(stream.response):
                    whole = _whole_reply(stream.response, stream.response.read())
                    if whole is not None:
                        return whole
                reply = _Reply()  # (events read from the body read, should it have been)
                for event in stream:
                    reply.add(event)
                return reply.finished()

        reply, retries = call_with_retries(
            attempt,
            classify=self._classifier(),
            policy=self._retry,
            label=self.name,
            secrets=[self._api_key],
            key_hint=_KEY_HINT,
        )
        return reply.to_response(request, retries, self._model)

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        """Async form of :meth:`complete`, over the SDK's async client."""
        params = self._params(request)
        async with self._async_client() as client:

            async def attempt() -> _Reply:
                async with await client.messages.create(**params, stream=True) as stream:
                    if not _is_event_stream(stream.response):
                        whole = _whole_reply(stream.response, await stream.response.aread())
                        if whole is not None:
                            return whole
                    reply = _Reply()
                    async for event in stream:
                        reply.add(event)
                    return reply.finished()

            reply, retries = await acall_with_retries(
                attempt,
                classify=self._classifier(),
                policy=self._retry,
                label=self.name,
                secrets=[self._api_key],
                key_hint=_KEY_HINT,
            )
        return reply.to_response(request, retries, self._model)

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


def _is_event_stream(response: Any) -> bool:
    """Whether a 200 reply is a server-sent-events stream (a reply without a Content-Type
    is read as one)."""
    content_type = str(response.headers.get("content-type", "")).lower()
    return not content_type or content_type.startswith("text/event-stream")


def _whole_reply(response: Any, body: bytes) -> _Reply | None:
    """A 200 reply not labelled a stream: a whole Message, as a proxy that ignores
    ``stream: true`` sends it, is read; an event stream under another label (a gateway
    that mislabels it) is ``None``, to be read as one; anything else is
    :class:`_Unreadable`."""
    if body.lstrip().startswith((b"event:", b"data:", b":")):
        return None
    from anthropic.types import Message as AnthropicMessage
    from pydantic import ValidationError

    content_type = response.headers.get("content-type", "")
    try:
        data = json.loads(body)
        if isinstance(data, dict) and data.get("type") == "message":
            return _Reply.of_message(AnthropicMessage.model_validate(data))
    except json.JSONDecodeError as exc:
        if body.lstrip()[:1] == b"{":  # a Message cut short, say: retried, as OpenAI's are
            raise _IncompleteStream(
                f"the reply was not valid JSON ({exc.msg} at character {exc.pos})"
            ) from None
    except (ValueError, ValidationError):
        pass
    text = body.decode("utf-8", "replace")
    raise _Unreadable(
        f"answered with {content_type} {one_line(repr(text), 80)}, not a Messages API "
        "event stream: check that base_url points at an Anthropic-compatible API"
    )


@dataclass
class _Block:
    """One content block of a reply, as it came: a tool's input as the JSON text streamed
    (``json``), or as an object when the whole block came at once (``input``)."""

    type: str
    text: str = ""
    id: str = ""
    name: str = ""
    input: Any = None
    json: str | None = None

    def tool_input(self) -> tuple[Any, str]:
        """The tool input (``_INVALID`` when it is not JSON) and its JSON text."""
        if self.json is None:
            value = {} if self.input is None else self.input
            return value, json.dumps(value)
        try:
            return (json.loads(self.json) if self.json.strip() else {}), self.json
        except ValueError:
            return _INVALID, self.json


_INVALID = object()
"""A tool input that is not JSON."""


@dataclass
class _Reply:
    """A reply assembled from its stream events. Read here rather than by the SDK's
    ``messages.stream``, which takes a tool's input cut off at ``max_tokens`` for a whole
    one (its partial JSON), and raises on a tool input that is not JSON."""

    model: str = ""
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    blocks: dict[int, _Block] = field(default_factory=dict)
    stopped: bool = False

    @classmethod
    def of_message(cls, message: AnthropicMessage) -> _Reply:
        reply = cls(model=message.model, stop_reason=message.stop_reason, stopped=True)
        reply._count(message.usage)
        for index, block in enumerate(message.content):
            reply._start(index, block)
        return reply

    def add(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            message = event.message
            self.model = getattr(message, "model", None) or ""
            self._count(getattr(message, "usage", None))
        elif kind == "content_block_start":
            self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            block = self.blocks.get(event.index)
            if block is None:
                raise _Unreadable(
                    f"sent a content_block_delta for block {event.index!r}, which never "
                    "started: check that base_url points at an Anthropic-compatible API"
                )
            delta = event.delta
            if delta.type == "text_delta":
                block.text += delta.text or ""
            elif delta.type == "input_json_delta":
                block.json = (block.json or "") + (delta.partial_json or "")
        elif kind == "message_delta":
            self.stop_reason = getattr(event.delta, "stop_reason", None)
            self._count(getattr(event, "usage", None))  # (totals so far, not increments)
        elif kind == "message_stop":
            self.stopped = True

    def finished(self) -> _Reply:
        if not self.stopped:
            raise _IncompleteStream("the response stream ended before message_stop")
        return self

    def _start(self, index: int, block: Any) -> None:
        self.blocks[index] = _Block(
            type=getattr(block, "type", None) or "",
            text=getattr(block, "text", None) or "",
            id=getattr(block, "id", None) or "",
            name=getattr(block, "name", None) or "",
            input=getattr(block, "input", None),
        )

    def _count(self, usage: Any) -> None:
        """Take the counts ``usage`` gives (none when it is null): what is not a count is
        skipped, as the reply itself is still good."""
        for name in _USAGE_FIELDS:
            value = getattr(usage, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                self.usage[name] = value

    def to_response(self, request: ModelRequest, retries: int, model: str) -> ModelResponse:
        texts: list[str] = []
        calls: list[ToolCall] = []
        answer: tuple[Any, str] | None = None  # the structured-output tool's input
        for _, block in sorted(self.blocks.items()):
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                value, raw = block.tool_input()
                if request.json_schema is not None and block.name == request.schema_name:
                    answer = answer or (value, raw)
                else:
                    calls.append(ToolCall(id=block.id, name=block.name, inputs=_inputs(value, raw)))
        text = "".join(texts)
        structured: dict[str, Any] | None = None
        if answer is not None:
            value, raw = answer
            # cut off at max_tokens, the input is JSON only because it was cut at a good
            # place, or the SDK's partial JSON: no verdict, however it reads
            if isinstance(value, dict) and self.stop_reason != "max_tokens":
                structured, text = value, json.dumps(value)
            else:
                text = raw
        elif request.json_schema is not None:
            structured = extract_json_object(text, request.json_schema)
        usage = self.usage
        return ModelResponse(
            text=text,
            tool_calls=calls,
            structured=structured,
            usage=Usage(
                input_tokens=usage.get("input_tokens", 0),
                output_tokens=usage.get("output_tokens", 0),
                cache_read_tokens=usage.get("cache_read_input_tokens", 0),
                cache_write_tokens=usage.get("cache_creation_input_tokens", 0),
            ),
            model=self.model or model,
            stop_reason=self.stop_reason,
            retries=retries,
        )


_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _inputs(value: Any, raw: str) -> dict[str, Any]:
    """A tool call's inputs, kept visible as OpenAI's are when they are not a JSON object
    (``json_arguments``)."""
    if value is _INVALID:
        return {INVALID_JSON: raw}
    return dict(value) if isinstance(value, dict) else {"_arguments": value}


def classify_anthropic_error(exc: BaseException, timeout: float) -> Failure | None:
    """Whether an exception from the ``anthropic`` SDK is worth retrying, and how to report it."""
    import anthropic

    if isinstance(exc, _IncompleteStream):
        return Failure("transient", str(exc))
    if isinstance(exc, _Unreadable):
        return Failure("request", str(exc), explained=str(exc))
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
