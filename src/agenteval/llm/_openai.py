"""``OpenAIModel``: the ``Model`` protocol over the ``openai`` SDK's chat completions.

Also serves any OpenAI-compatible server (vLLM, Ollama, llama.cpp server, ...) through
``base_url``.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Literal, get_args

from .. import _lessons
from .._errors import ProviderError, ProviderRequestError, UsageError
from .._usage import Usage
from ..trajectory._messages import ToolCall, json_arguments
from ._client import (
    ForkSafeClient,
    SdkClients,
    openai_name,
    resolve_api_key,
    resolve_base_url,
    shown_url,
)
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
from ._structured import extract_json_object, json_instruction
from ._types import ModelRequest, ModelResponse

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion

ENV_KEY = "OPENAI_API_KEY"
KEY_HINT = f"{ENV_KEY} or the api_key= argument"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})

StructuredOutput = Literal["auto", "json_schema", "prompt"]
"""How :class:`OpenAIModel` asks for structured output (see its ``structured_output``)."""

_STRUCTURED_OUTPUT = get_args(StructuredOutput)

_json_in_prompt_servers: set[tuple[str | None, str]] = set()
"""``(base_url, model)`` pairs that rejected ``response_format`` in this process.

Module-level, not per model: every model of that server and name skips the 400 round trip,
and so does every child the parallel executor forks after the parent learned it.
"""


def _learn_json_in_prompt(base_url: str | None, model: str) -> None:
    """This server rejects ``response_format`` for this model: from now on, and in the
    items forked after this one (``_lessons``), the schema goes in the prompt."""
    _json_in_prompt_servers.add((base_url, model))
    _lessons.learned(_LESSON, [base_url, model])


_LESSON = "openai-json-in-prompt"
_lessons.taught_by(_LESSON, lambda pair: _json_in_prompt_servers.add((pair[0], pair[1])))


class _ResponseFormatRejected(Exception):
    """The server answered 400 to a request with ``response_format``."""


class OpenAIModel(SdkClients):
    """A :class:`~agenteval.llm.Model` over OpenAI chat completions or a compatible server.

    Use it for OpenAI models, or with ``base_url`` for vLLM, Ollama, llama.cpp server and
    other OpenAI-compatible endpoints (no key is needed there). The key comes from
    ``api_key`` or ``OPENAI_API_KEY``.

    ``structured_output`` says how a request's JSON schema is sent: ``"json_schema"`` always
    uses ``response_format`` (a 400 is an error), ``"prompt"`` always asks for JSON in the
    system prompt, and ``"auto"`` (the default) uses ``response_format`` until the server
    rejects it with a 400, then asks in the prompt instead and remembers that for this
    server and model name, in this process, the children it forks, and (learned in one of
    those) the children forked after that. Declare it when you
    know the server, to save that first rejected request. Example::

        local = OpenAIModel(
            "llama3.1:8b", base_url="http://localhost:11434/v1", structured_output="prompt"
        )
        reply = local.complete(ModelRequest(messages=[Message.user("Hi")]))
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
        structured_output: StructuredOutput = "auto",
    ) -> None:
        if structured_output not in _STRUCTURED_OUTPUT:
            raise UsageError(
                f"OpenAIModel(structured_output={structured_output!r}) is invalid: use "
                "'auto', 'json_schema' or 'prompt'"
            )
        self._model = model
        self._base_url = resolve_base_url(base_url, "OPENAI_BASE_URL", "OpenAIModel")
        self._name = openai_name(model, self._base_url)
        self._api_key = resolve_api_key(api_key, ENV_KEY, "OpenAIModel", self._base_url)
        self._max_tokens = max_tokens
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._structured_output: StructuredOutput = structured_output
        # Import the SDK now rather than at the first call: the parallel executor forks one
        # child per item after set_up built the model, and children inherit the parent's
        # imports instead of each paying about a second for them.
        import openai

        self._client_class = openai.OpenAI
        self._async_client_class = openai.AsyncOpenAI
        self._clients: ForkSafeClient[openai.OpenAI] = ForkSafeClient(self._new_client)

    _sdk_name = "openai"
    _default_base_url = DEFAULT_BASE_URL

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy of this model."""
        return self._retry

    @property
    def structured_output(self) -> StructuredOutput:
        """How structured output is asked for: ``"auto"``, ``"json_schema"`` or ``"prompt"``."""
        return self._structured_output

    @property
    def json_in_prompt(self) -> bool:
        """Whether structured output is asked for in the prompt (declared, or learned)."""
        if self._structured_output == "auto":
            return (self._base_url, self._model) in _json_in_prompt_servers
        return self._structured_output == "prompt"

    def __repr__(self) -> str:
        if self._base_url:
            return f"OpenAIModel({self._model!r}, base_url={shown_url(self._base_url)!r})"
        return f"OpenAIModel({self._model!r})"

    def _twin(self, server: str) -> OpenAIModel:
        from . import _rehearsal

        return OpenAIModel(
            self._model,
            api_key=_rehearsal.KEY,
            base_url=f"{server}/v1",
            max_tokens=self._max_tokens,
            timeout=_rehearsal.TIMEOUT,
            retry=RetryPolicy(max_attempts=1),
            structured_output=self._structured_output,
        )

    def _rehearse(self, asynchronous: bool) -> None:
        from ._rehearsal import rehearse_chat

        rehearse_chat(self, asynchronous)

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the reply, retrying transient errors."""
        client = self._clients.get()
        fallback = self._structured_output == "auto"
        attempts = 0  # of the first request: its retries count when it is rejected

        def send(params: dict[str, Any]) -> tuple[ChatCompletion, int]:
            def attempt() -> ChatCompletion:
                nonlocal attempts
                attempts += 1
                return _create(client, params, fallback)

            return call_with_retries(
                attempt,
                classify=self._classifier(),
                policy=self._retry,
                label=self.name,
                secrets=[self._api_key],
                key_hint=KEY_HINT,
            )

        try:
            completion, retries = send(self._params(request, self.json_in_prompt))
        except _ResponseFormatRejected:
            earlier = attempts - 1
            try:
                completion, retries = send(self._params(request, json_in_prompt=True))
            except ProviderError as exc:
                exc.retries += earlier
                raise
            retries += earlier
            _learn_json_in_prompt(self._base_url, self._model)
        return self._to_response(completion, request, retries)

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        """Async form of :meth:`complete`, over the SDK's async client."""
        fallback = self._structured_output == "auto"
        attempts = 0  # of the first request: its retries count when it is rejected
        async with self._async_client() as client:

            async def send(params: dict[str, Any]) -> tuple[ChatCompletion, int]:
                async def attempt() -> ChatCompletion:
                    nonlocal attempts
                    attempts += 1
                    return await _acreate(client, params, fallback)

                return await acall_with_retries(
                    attempt,
                    classify=self._classifier(),
                    policy=self._retry,
                    label=self.name,
                    secrets=[self._api_key],
                    key_hint=KEY_HINT,
                )

            try:
                completion, retries = await send(self._params(request, self.json_in_prompt))
            except _ResponseFormatRejected:
                earlier = attempts - 1
                try:
                    completion, retries = await send(self._params(request, json_in_prompt=True))
                except ProviderError as exc:
                    exc.retries += earlier
                    raise
                retries += earlier
                _learn_json_in_prompt(self._base_url, self._model)
        return self._to_response(completion, request, retries)

    def _params(self, request: ModelRequest, json_in_prompt: bool) -> dict[str, Any]:
        system = request.system or ""
        if request.json_schema is not None and json_in_prompt:
            instruction = json_instruction(request.json_schema)
            system = f"{system}\n\n{instruction}" if system else instruction
        params: dict[str, Any] = {
            "model": self._model,
            "messages": to_openai_messages(request, system),
            tokens_key(self._model, self._base_url): request.max_tokens or self._max_tokens,
        }
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
        if request.json_schema is not None and not json_in_prompt:
            described: dict[str, Any] = {"name": request.schema_name, "schema": request.json_schema}
            if _strict_ok(request.json_schema):  # the reply is then held to the schema
                described["strict"] = True
            params["response_format"] = {"type": "json_schema", "json_schema": described}
        return params

    def _classifier(self) -> Classifier:
        timeout = self._timeout

        def classify(exc: BaseException) -> Failure | None:
            return classify_openai_error(exc, timeout)

        return classify

    def _to_response(
        self, completion: ChatCompletion, request: ModelRequest, retries: int
    ) -> ModelResponse:
        try:
            return self._read(completion, request, retries)
        except (
            AttributeError,
            LookupError,
            TypeError,
            ValueError,
        ) as exc:  # a field missing or null, say
            raise ProviderRequestError(
                f"{self.name} returned a malformed chat completion ({type(exc).__name__}: "
                f"{one_line(str(exc), 120)}): check that the server implements the OpenAI chat "
                "completions API"
            ) from None

    def _read(
        self, completion: ChatCompletion, request: ModelRequest, retries: int
    ) -> ModelResponse:
        from openai.types.chat import ChatCompletion

        if not isinstance(completion, ChatCompletion):  # a web page behind a wrong URL, say
            raise ProviderRequestError(
                f"{self.name} answered with {one_line(repr(completion), 80)}, not a chat "
                "completion: check that base_url points at an OpenAI-compatible API (its /v1)"
            )
        if not completion.choices:
            raise ProviderRequestError(
                f"{self.name} returned a completion without choices: check that the server "
                "implements the OpenAI chat completions API"
            )
        choice = completion.choices[0]
        message = choice.message
        # a refusal says why there is no content: the judge's error then shows it
        text = message.content or getattr(message, "refusal", None) or ""
        if not isinstance(text, str):
            raise ProviderRequestError(
                f"{self.name} returned a message whose content is {type(text).__name__} "
                f"{one_line(repr(text), 60)}, not text: check that the server implements the "
                "OpenAI chat completions API"
            )
        calls = [self._tool_call(call) for call in message.tool_calls or []]
        structured = (
            extract_json_object(text, request.json_schema)
            if request.json_schema is not None
            else None
        )
        return ModelResponse(
            text=text,
            tool_calls=calls,
            structured=structured,
            usage=openai_usage(completion.usage),
            model=completion.model or self._model,
            stop_reason=choice.finish_reason,
            retries=retries,
        )

    def _tool_call(self, call: Any) -> ToolCall:
        """One of the reply's tool calls. Compatible servers may leave out its ``type`` and
        its ``id`` (the agent then gives one): a call with a function name is read whatever
        its type says, as only function tools are ever sent; any other call would be lost,
        so it is an error."""
        kind = getattr(call, "type", None)
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        if kind not in (None, "function"):
            raise ProviderRequestError(
                f"{self.name} returned a tool call of type {kind!r} "
                f"({one_line(repr(call), 120)}), but agenteval sends function tools only: "
                "check that the server implements the OpenAI chat completions API"
            )
        if not isinstance(name, str) or not name:
            raise ProviderRequestError(
                f"{self.name} returned a tool call without a function name "
                f"({one_line(repr(call), 120)}): check that the server implements the OpenAI "
                "chat completions API"
            )
        arguments = getattr(function, "arguments", None)
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):  # an object where JSON text belongs, say
            arguments = json.dumps(arguments)
        return ToolCall(
            id=getattr(call, "id", None) or "", name=name, inputs=json_arguments(arguments)
        )


_REASONING_MODEL = re.compile(r"(?:^|/)(?:o[134]|gpt-5)(?:$|[-_.:])", re.IGNORECASE)
"""OpenAI's o-series and gpt-5 names (``o3-mini``, ``gpt-5.1``, ``openai/o4-mini`` through
a router): models that reject ``max_tokens``, wherever they are served from."""


def tokens_key(model: str, base_url: str | None) -> str:
    """The parameter that carries the token limit: ``max_completion_tokens`` for OpenAI's
    own API and its reasoning models behind any URL (they reject ``max_tokens``),
    ``max_tokens`` for other compatible servers (many know no other)."""
    if base_url is None or _REASONING_MODEL.search(model):
        return "max_completion_tokens"
    from urllib.parse import urlsplit

    host = urlsplit(base_url).hostname or ""
    return "max_completion_tokens" if host == "api.openai.com" else "max_tokens"


def to_openai_messages(request: ModelRequest, system: str) -> list[dict[str, Any]]:
    """OpenAI chat ``messages`` for a request, the system prompt first."""
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    for message in request.messages:
        if message.role in ("system", "user"):
            messages.append({"role": message.role, "content": message.content})
        elif message.role == "assistant":
            # OpenAI wants content unless tool_calls carry the turn: "" for an empty reply
            content = message.content or (None if message.tool_calls else "")
            entry: dict[str, Any] = {"role": "assistant", "content": content}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.inputs)},
                    }
                    for call in message.tool_calls
                ]
            messages.append(entry)
        else:
            content = f"Error: {message.content}" if message.is_error else message.content
            messages.append(
                {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": content}
            )
    return messages


def openai_usage(usage: Any) -> Usage:
    """Our :class:`Usage` from an OpenAI ``usage`` object (``None`` gives zeros).

    ``input_tokens`` counts uncached input only, as Anthropic reports it: OpenAI's
    ``prompt_tokens`` include the cached ones.
    """
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = _tokens(details, "cached_tokens")
    written = _tokens(details, "cache_write_tokens")
    return Usage(
        input_tokens=max(_tokens(usage, "prompt_tokens") - cached - written, 0),
        output_tokens=_tokens(usage, "completion_tokens"),
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


def _tokens(counts: Any, name: str) -> int:
    """A token count as a whole number; what a server sent that is not a count is 0 (the
    reply itself is still good)."""
    value = getattr(counts, name, None) if counts is not None else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value) if 0 <= value < 1e12 else 0  # (no reply has a trillion tokens)


_NOT_IN_STRICT_MODE = frozenset(
    {
        "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
        "uniqueItems", "patternProperties", "minProperties", "maxProperties",
    }
)  # fmt: skip


_SCHEMA_MAPS = ("properties", "$defs", "definitions")
"""Keywords whose value maps names to schemas (its keys are names, not keywords)."""

_NOT_SCHEMAS = ("enum", "const", "required", "default", "examples")
"""Keywords whose value is data, not a schema."""


def _strict_ok(schema: Any) -> bool:
    """Whether OpenAI's strict structured output takes ``schema`` as it is: every object
    (in ``$defs`` and ``definitions`` too, where ``$ref`` points) requires all its
    properties and allows no others, and no keyword strict mode may refuse is used
    (refused, the 400 would turn structured output off for the model). The judges' and
    the simulator's schemas are."""
    if isinstance(schema, dict):
        if _NOT_IN_STRICT_MODE & schema.keys():
            return False
        if schema.get("type") == "object":
            properties = schema.get("properties")
            if not isinstance(properties, dict) or schema.get("additionalProperties") is not False:
                return False
            if sorted(schema.get("required") or []) != sorted(properties):
                return False
        for key, value in schema.items():
            if key in _NOT_SCHEMAS:
                continue
            named = key in _SCHEMA_MAPS and isinstance(value, dict)
            if not all(_strict_ok(v) for v in (value.values() if named else [value])):
                return False
        return True
    if isinstance(schema, list):
        return all(_strict_ok(v) for v in schema)
    return True


def _create(client: openai.OpenAI, params: dict[str, Any], fallback: bool) -> ChatCompletion:
    import openai

    try:
        completion: ChatCompletion = client.chat.completions.create(**params)
    except openai.BadRequestError as exc:
        if fallback and "response_format" in params and _may_reject_response_format(exc):
            raise _ResponseFormatRejected() from None
        raise
    return completion


async def _acreate(
    client: openai.AsyncOpenAI, params: dict[str, Any], fallback: bool
) -> ChatCompletion:
    import openai

    try:
        completion: ChatCompletion = await client.chat.completions.create(**params)
    except openai.BadRequestError as exc:
        if fallback and "response_format" in params and _may_reject_response_format(exc):
            raise _ResponseFormatRejected() from None
        raise
    return completion


_TOKEN_LIMIT_KEYS = ("max_tokens", "max_completion_tokens")


def _may_reject_response_format(exc: openai.BadRequestError) -> bool:
    """Whether a 400 to a request with ``response_format`` may be about it: not when it
    names another parameter (OpenAI's ``param``, or a token limit key in its message: a
    reasoning model's "use max_completion_tokens"), which the prompt fallback would only
    send again. Servers that say nothing about why are given the benefit of the doubt."""
    body = exc.body if isinstance(exc.body, dict) else {}
    message = str(body.get("message") or exc.message).lower()
    if "response_format" in message or "json_schema" in message:
        return True
    param = body.get("param")
    if isinstance(param, str) and param:
        return param.startswith("response_format")
    return not any(key in message for key in _TOKEN_LIMIT_KEYS)


def classify_openai_error(exc: BaseException, timeout: float) -> Failure | None:
    """Whether an exception from the ``openai`` SDK is worth retrying, and how to report it."""
    import openai

    return classify_sdk_error(exc, openai, timeout, _classify_status, "the response")


def _classify_status(exc: openai.APIStatusError) -> Failure:
    status = exc.status_code
    body = exc.body
    raw_message = body.get("message") if isinstance(body, dict) else body
    message = one_line(str(raw_message or exc.message))
    label = exc.code or exc.type or "error"
    summary = f"HTTP {status} {label}: {message}"
    if exc.code in _QUOTA_CODES or exc.type in _QUOTA_CODES:
        return Failure("quota", summary)
    return by_status(status, summary, parse_retry_after(exc.response.headers))
