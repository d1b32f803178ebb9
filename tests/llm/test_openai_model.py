"""OpenAIModel through the real ``openai`` SDK against FakeProvider."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agenteval import ConfigError, UsageError
from agenteval._errors import (
    ProviderAuthError,
    ProviderQuotaError,
    ProviderRequestError,
    ProviderUnavailableError,
)
from agenteval._usage import Usage
from agenteval.llm import ModelRequest, OpenAIModel, RetryPolicy, ToolSpec, _openai
from agenteval.llm._openai import openai_usage
from agenteval.llm._retry import parse_retry_after
from agenteval.llm._structured import json_instruction
from agenteval.testing import FakeProvider
from agenteval.trajectory._messages import Message, ToolCall
from agenteval.trajectory._messages import json_arguments as _arguments

KEY = "sk-openai-test-0123456789abcdef"
HI = ModelRequest(messages=[Message.user("Hi")])
SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reasoning": {"type": "string"}},
    "required": ["score", "reasoning"],
}

MakeModel = Callable[..., OpenAIModel]


@pytest.fixture(autouse=True)
def _no_learned_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Fallbacks are remembered per (base_url, model) for the process; ports get reused.
    monkeypatch.setattr(_openai, "_json_in_prompt_servers", set())


@pytest.fixture
def waits() -> list[float]:
    return []


@pytest.fixture
def make(fake_provider: FakeProvider, waits: list[float]) -> Iterator[MakeModel]:
    built: list[OpenAIModel] = []

    async def record(delay: float) -> None:
        waits.append(delay)

    def _make(**kwargs: Any) -> OpenAIModel:
        policy = kwargs.pop("retry", None) or RetryPolicy(
            jitter=False, sleep=waits.append, async_sleep=record
        )
        kwargs.setdefault("api_key", KEY)
        model = OpenAIModel(
            "gpt-test", base_url=fake_provider.openai_base_url, retry=policy, **kwargs
        )
        built.append(model)
        return model

    yield _make
    for model in built:
        model.close()


def test_openai_model_text_reply(fake_provider: FakeProvider, make: MakeModel) -> None:
    fake_provider.add("Hello!")
    request = ModelRequest(
        messages=[Message.user("Hi")], system="Be brief.", max_tokens=50, temperature=0.2
    )

    reply = make().complete(request)

    assert (reply.text, reply.model, reply.stop_reason, reply.retries) == (
        "Hello!",
        "gpt-test",
        "stop",
        0,
    )
    assert fake_provider.requests[0].path == "/v1/chat/completions"
    assert fake_provider.requests[0].json == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "max_tokens": 50,
        "temperature": 0.2,
    }


def test_openai_model_name_says_openai_compatible_with_a_base_url(make: MakeModel) -> None:
    model = make()

    assert model.name == f"openai-compatible:gpt-test@{model._base_url}"
    assert OpenAIModel("gpt-4o-mini", api_key=KEY).name == "openai:gpt-4o-mini"


def test_openai_model_asks_openai_for_max_completion_tokens() -> None:
    params = OpenAIModel("gpt-4o-mini", api_key=KEY)._params(HI, json_in_prompt=False)

    assert (params["max_completion_tokens"], "max_tokens" in params) == (1024, False)


def test_openai_model_usage_separates_cached_tokens(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(
        FakeProvider.text("ok", input_tokens=70, output_tokens=20, cache_read_tokens=30)
    )

    reply = make().complete(HI)

    assert reply.usage == Usage(input_tokens=70, output_tokens=20, cache_read_tokens=30)


def test_openai_usage_of_none_is_zero() -> None:
    assert openai_usage(None) == Usage()


def test_openai_model_parses_tool_calls(fake_provider: FakeProvider, make: MakeModel) -> None:
    fake_provider.add(
        FakeProvider.tool_calls(
            [("search_orders", {"order_id": "123"}), ("refund", {"amount": 5})],
            ids=["call_1", "call_2"],
        )
    )
    request = ModelRequest(
        messages=[Message.user("Where is order 123?")],
        tools=[ToolSpec(name="search_orders", description="Find an order")],
    )

    reply = make().complete(request)

    assert (reply.text, reply.stop_reason) == ("", "tool_calls")
    assert reply.tool_calls == [
        ToolCall(id="call_1", name="search_orders", inputs={"order_id": "123"}),
        ToolCall(id="call_2", name="refund", inputs={"amount": 5}),
    ]
    assert fake_provider.requests[0].json["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "search_orders",
                "description": "Find an order",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]


def test_openai_model_sends_tool_calls_and_tool_results(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add("Refunded.")
    request = ModelRequest(
        messages=[
            Message.user("Refund order 123"),
            Message.assistant("", [ToolCall(id="call_1", name="refund", inputs={"amount": 5})]),
            Message.tool("call_1", "card declined", is_error=True),
        ]
    )

    make().complete(request)

    assert fake_provider.requests[0].json["messages"] == [
        {"role": "user", "content": "Refund order 123"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "refund", "arguments": '{"amount": 5}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Error: card declined"},
    ]


def test_openai_model_structured_output_uses_response_format(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add({"score": 0.4, "reasoning": "Partly right."})
    request = ModelRequest(
        messages=[Message.user("Judge")], json_schema=SCHEMA, schema_name="verdict"
    )

    reply = make().complete(request)

    assert reply.structured == {"score": 0.4, "reasoning": "Partly right."}
    assert fake_provider.requests[0].json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": SCHEMA},
    }


def test_openai_model_asks_for_strict_structured_output_where_the_schema_allows_it(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    # every object requiring all its properties and allowing no others: the judges' and
    # the simulator's schemas; OpenAI then holds the reply to the schema
    closed = {**SCHEMA, "additionalProperties": False}
    fake_provider.add({"score": 0.4, "reasoning": "Partly right."})
    make().complete(ModelRequest(messages=[Message.user("Judge")], json_schema=closed))
    assert fake_provider.requests[0].json["response_format"]["json_schema"]["strict"] is True
    # a keyword strict mode may refuse: sent without it (a 400 would turn structured output
    # off for the model)
    bounded = {
        **closed,
        "properties": {**SCHEMA["properties"], "reasoning": {"type": "string", "maxLength": 80}},
    }
    fake_provider.add({"score": 0.4, "reasoning": "Partly right."})
    make().complete(ModelRequest(messages=[Message.user("Judge")], json_schema=bounded))
    assert "strict" not in fake_provider.requests[1].json["response_format"]["json_schema"]


def test_openai_model_falls_back_to_json_in_the_prompt_and_remembers(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(
        FakeProvider.error(400, "response_format json_schema is not supported"),
        FakeProvider.text('Sure! {"score": 1, "reasoning": "Exact."} Hope that helps.'),
        FakeProvider.text('```json\n{"score": 0, "reasoning": "Wrong."}\n```'),
    )
    model = make()
    request = ModelRequest(messages=[Message.user("Judge")], system="Judge.", json_schema=SCHEMA)

    first = model.complete(request)
    second = model.complete(request)

    assert (first.structured, second.structured) == (
        {"score": 1, "reasoning": "Exact."},
        {"score": 0, "reasoning": "Wrong."},
    )
    assert (first.retries, model.json_in_prompt) == (0, True)
    bodies = [r.json for r in fake_provider.requests]
    assert ["response_format" in b for b in bodies] == [True, False, False]
    assert bodies[1]["messages"][0] == {
        "role": "system",
        "content": "Judge.\n\n" + json_instruction(SCHEMA),
    }


def test_openai_model_remembers_the_fallback_for_every_model_of_that_server(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(
        FakeProvider.error(400, "response_format json_schema is not supported"),
        FakeProvider.text('{"score": 1, "reasoning": "Exact."}'),
        FakeProvider.text('{"score": 0, "reasoning": "Wrong."}'),
    )
    request = ModelRequest(messages=[Message.user("Judge")], json_schema=SCHEMA)
    make().complete(request)

    # Another instance, e.g. built by each item or in a forked child: no second 400.
    other = make()
    reply = other.complete(request)

    assert (reply.structured, other.json_in_prompt) == ({"score": 0, "reasoning": "Wrong."}, True)
    assert ["response_format" in r.json for r in fake_provider.requests] == [True, False, False]


def test_openai_model_structured_output_prompt_never_sends_response_format(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.text('{"score": 1, "reasoning": "Exact."}'))
    model = make(structured_output="prompt")

    reply = model.complete(ModelRequest(messages=[Message.user("Judge")], json_schema=SCHEMA))

    assert (reply.structured, model.json_in_prompt) == ({"score": 1, "reasoning": "Exact."}, True)
    assert "response_format" not in fake_provider.requests[0].json
    assert fake_provider.requests[0].json["messages"][0] == {
        "role": "system",
        "content": json_instruction(SCHEMA),
    }


def test_openai_model_structured_output_json_schema_never_falls_back(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.error(400, "response_format is not supported"), "unused")
    model = make(structured_output="json_schema")

    with pytest.raises(ProviderRequestError, match="response_format is not supported"):
        model.complete(ModelRequest(messages=[Message.user("Judge")], json_schema=SCHEMA))

    assert (len(fake_provider.requests), model.json_in_prompt) == (1, False)
    assert model.structured_output == "json_schema"


def test_openai_model_structured_output_json_schema_ignores_a_learned_fallback(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add({"score": 1})
    _openai._json_in_prompt_servers.add((fake_provider.openai_base_url, "gpt-test"))

    make(structured_output="json_schema").complete(
        ModelRequest(messages=[Message.user("Judge")], json_schema=SCHEMA)
    )

    assert "response_format" in fake_provider.requests[0].json


def test_openai_model_rejects_an_unknown_structured_output() -> None:
    with pytest.raises(UsageError) as info:
        OpenAIModel("gpt-4o-mini", api_key=KEY, structured_output="xml")  # type: ignore[arg-type]

    assert str(info.value) == (
        "OpenAIModel(structured_output='xml') is invalid: use 'auto', 'json_schema' or 'prompt'"
    )


def test_openai_model_fallback_that_fails_too_raises_and_is_not_remembered(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(
        FakeProvider.error(400, "context length exceeded"),
        FakeProvider.error(400, "context length exceeded"),
    )
    model = make()

    with pytest.raises(ProviderRequestError, match="context length exceeded"):
        model.complete(ModelRequest(messages=[Message.user("Judge")], json_schema=SCHEMA))

    assert (len(fake_provider.requests), model.json_in_prompt) == (2, False)


def test_openai_model_structured_reply_without_json_has_no_structured(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add("no json here")

    reply = make().complete(ModelRequest(messages=[Message.user("Judge")], json_schema=SCHEMA))

    assert (reply.text, reply.structured) == ("no json here", None)


def test_openai_model_retries_429s_honouring_retry_after(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(
        FakeProvider.rate_limited(retry_after=3),
        FakeProvider.rate_limited(retry_after_ms=120),
        FakeProvider.rate_limited(),
        "Finally.",
    )

    reply = make().complete(HI)

    assert (reply.text, reply.retries, waits) == ("Finally.", 3, [3.0, 0.12, 2.0])
    assert len(fake_provider.requests) == 4


def test_openai_model_honours_retry_after_beyond_max_delay(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(FakeProvider.rate_limited(retry_after=60), "ok")
    model = make(retry=RetryPolicy(max_delay=30, sleep=waits.append))

    model.complete(HI)

    assert waits == [60.0]


def test_openai_model_gives_up_at_once_when_retry_after_exceeds_the_budget(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(FakeProvider.rate_limited(retry_after=600), "never sent")
    model = make(retry=RetryPolicy(max_total_wait=120, sleep=waits.append))

    with pytest.raises(ProviderUnavailableError) as info:
        model.complete(HI)

    assert (waits, len(fake_provider.requests), info.value.retries) == ([], 1, 0)
    assert "the server asked to wait 600s, beyond the retry budget (120.0s left of " in str(
        info.value
    )


@pytest.mark.parametrize("status", [500, 503])
def test_openai_model_retries_5xx(
    fake_provider: FakeProvider, make: MakeModel, status: int
) -> None:
    fake_provider.add(FakeProvider.server_error(status), "ok")

    assert make().complete(HI).retries == 1


def test_openai_model_retries_after_a_timeout(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(FakeProvider.hang(), "ok")

    reply = make(timeout=0.3).complete(HI)

    assert (reply.text, reply.retries, waits) == ("ok", 1, [0.5])


def test_openai_model_retries_a_dropped_connection(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.disconnect(), "ok")

    assert make().complete(HI).retries == 1


def test_openai_model_gives_up_after_max_attempts_with_timeouts(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(FakeProvider.hang(), FakeProvider.hang())
    model = make(timeout=0.2, retry=RetryPolicy(max_attempts=2, jitter=False, sleep=waits.append))

    with pytest.raises(ProviderUnavailableError) as info:
        model.complete(HI)

    assert str(info.value) == (
        f"{model.name} still failing after 2 attempts and 0.5s of waiting (timed out after "
        "0.2s): retry later or raise RetryPolicy(max_attempts=..., max_total_wait=...)"
    )


def test_openai_model_fails_fast_on_401_without_leaking_the_key(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(
        FakeProvider.error(401, f"Incorrect API key provided: {KEY}", code="invalid_api_key")
    )
    model = make()

    with pytest.raises(ProviderAuthError) as info:
        model.complete(HI)

    assert str(info.value) == (
        f"{model.name} rejected the credentials (HTTP 401 invalid_api_key: Incorrect API key "
        "provided: [REDACTED]): check OPENAI_API_KEY or the api_key= argument; "
        "authentication errors are not retried"
    )
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert (len(fake_provider.requests), waits) == (1, [])


def test_openai_model_fails_fast_on_403(fake_provider: FakeProvider, make: MakeModel) -> None:
    fake_provider.add(FakeProvider.error(403, "Project does not have access"))

    with pytest.raises(ProviderAuthError):
        make().complete(HI)

    assert len(fake_provider.requests) == 1


def test_openai_model_fails_fast_on_400(fake_provider: FakeProvider, make: MakeModel) -> None:
    fake_provider.add(FakeProvider.error(400, "Unsupported value: 'temperature'"))
    model = make()

    with pytest.raises(ProviderRequestError) as info:
        model.complete(HI)

    assert str(info.value) == (
        f"{model.name} rejected the request (HTTP 400 invalid_request_error: Unsupported "
        "value: 'temperature'): check the model name and the request; client errors are not "
        "retried"
    )
    assert len(fake_provider.requests) == 1


def test_openai_model_fails_fast_on_insufficient_quota(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.quota_exhausted())
    model = make()

    with pytest.raises(ProviderQuotaError) as info:
        model.complete(HI)

    assert str(info.value) == (
        f"{model.name} is out of quota (HTTP 429 insufficient_quota: You exceeded your current "
        "quota): add credit or raise the account's spend limit; quota errors are not retried"
    )
    assert len(fake_provider.requests) == 1


def test_openai_model_fails_fast_on_payment_required(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.error(402, "Payment required"))
    model = make()

    with pytest.raises(ProviderQuotaError):
        model.complete(HI)
    assert len(fake_provider.requests) == 1


def test_openai_model_acomplete_uses_the_async_client_and_retries(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(FakeProvider.rate_limited(retry_after_ms=10), "async hello")

    reply = asyncio.run(make().acomplete(HI))

    assert (reply.text, reply.retries, waits) == ("async hello", 1, [0.01])
    assert fake_provider.requests[0].headers["x-stainless-async"] != "false"


def test_openai_model_acomplete_falls_back_to_json_in_the_prompt(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.error(400, "unknown field response_format"), '{"score": 1}')
    model = make()

    reply = asyncio.run(
        model.acomplete(ModelRequest(messages=[Message.user("Judge")], json_schema=SCHEMA))
    )

    assert (reply.structured, model.json_in_prompt) == ({"score": 1}, True)


def test_openai_model_missing_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    with pytest.raises(ConfigError) as info:
        OpenAIModel("gpt-4o-mini")

    assert str(info.value) == "No API key for OpenAIModel: set OPENAI_API_KEY or pass api_key="


def test_openai_model_compatible_server_needs_no_key(
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_provider.add("local reply")
    model = OpenAIModel("llama3.1:8b", base_url=fake_provider.openai_base_url)

    reply = model.complete(HI)
    model.close()

    assert reply.text == "local reply"
    assert fake_provider.requests[0].api_key == "agenteval-no-key"


def test_openai_model_keeps_invalid_tool_arguments_visible() -> None:
    assert _arguments("{not json") == {"_invalid_json_arguments": "{not json"}
    assert _arguments("") == {}
    assert _arguments("[1, 2]") == {"_arguments": [1, 2]}


COMPLETION = (
    '{"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-test", "choices": '
    '[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": %s}}]'
    "%s}"
)


@pytest.mark.parametrize(
    ("body", "content_type", "error"),
    [
        # a web page, as a wrong base URL gets from a single-page app's fallback route
        (
            "<html>app</html>",
            "text/html",
            "answered with '<html>app</html>', not a chat completion",
        ),
        (COMPLETION % ("123", ""), "application/json", "whose content is int 123, not text"),
        # the same page, sent as JSON: not worth a retry either
        ("<!doctype html><html>app</html>", "application/json", "is a web page, not JSON"),
        (
            COMPLETION.replace('{"role": "assistant", "content": %s}', "null") % "",
            "application/json",
            "returned a malformed chat completion (AttributeError",
        ),
    ],
)
def test_openai_model_a_reply_that_is_not_a_completion_is_one_line(
    fake_provider: FakeProvider, make: MakeModel, body: str, content_type: str, error: str
) -> None:
    fake_provider.add(FakeProvider.raw(body, content_type=content_type))
    with pytest.raises(ProviderRequestError, match=re.escape(error)):
        make().complete(HI)
    assert len(fake_provider.requests) == 1  # never retried


def test_openai_model_json_cut_short_is_retried(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    whole = COMPLETION % ('"Hello"', "")
    fake_provider.add(FakeProvider.raw(whole[:40]), FakeProvider.raw(whole))
    reply = make().complete(HI)
    assert (reply.text, reply.retries, len(waits)) == ("Hello", 1, 1)


def test_openai_model_odd_usage_numbers_keep_the_reply(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    usage = ', "usage": {"prompt_tokens": 10.7, "completion_tokens": "5", "total_tokens": -1}'
    fake_provider.add(FakeProvider.raw(COMPLETION % ('"Hello"', usage)))
    reply = make().complete(HI)
    assert (reply.text, reply.usage.input_tokens, reply.usage.output_tokens) == ("Hello", 10, 0)


def test_openai_model_a_refusal_is_the_replys_text(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    refused = (
        '{"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-test", "choices": '
        '[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '
        'null, "refusal": "I cannot grade that."}}]}'
    )
    fake_provider.add(FakeProvider.raw(refused))
    assert make().complete(HI).text == "I cannot grade that."


def test_a_retry_after_that_is_not_a_number_is_no_wait() -> None:
    assert parse_retry_after({"retry-after": "nan"}) is None
    assert parse_retry_after({"retry-after-ms": "inf", "retry-after": "2"}) == 2.0


TOOL_CALLS = (
    '{"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-test", "choices": '
    '[{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": '
    'null, "tool_calls": [%s]}}]}'
)


def test_openai_model_reads_a_tool_call_without_a_type(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    # as some compatible servers send it: no "type" (nor "id"), arguments as an object
    fake_provider.add(
        FakeProvider.raw(
            TOOL_CALLS
            % (
                '{"id": "c1", "function": {"name": "lookup_order", "arguments": '
                '"{\\"order_id\\": \\"123\\"}"}}, '
                '{"function": {"name": "refund", "arguments": {"amount": 5}}}'
            )
        )
    )

    reply = make().complete(HI)

    assert reply.tool_calls == [
        ToolCall(id="c1", name="lookup_order", inputs={"order_id": "123"}),
        ToolCall(id="", name="refund", inputs={"amount": 5}),
    ]


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (
            '{"id": "c1", "type": "custom", "custom": {"name": "grep", "input": "x"}}',
            "returned a tool call of type 'custom' (",
        ),
        (
            '{"id": "c1", "type": "function", "function": null}',
            "returned a tool call without a function name (",
        ),
        (
            '{"id": "c1", "function": {"name": null, "arguments": "{}"}}',
            "returned a tool call without a function name (",
        ),
    ],
)
def test_openai_model_a_tool_call_it_cannot_read_is_an_error(
    fake_provider: FakeProvider, make: MakeModel, call: str, error: str
) -> None:
    fake_provider.add(FakeProvider.raw(TOOL_CALLS % call))
    model = make()

    with pytest.raises(ProviderRequestError) as info:
        model.complete(HI)

    message = str(info.value)
    assert message.startswith(f"{model.name} {error}")
    assert message.endswith("check that the server implements the OpenAI chat completions API")
    assert len(fake_provider.requests) == 1


def test_openai_model_sends_an_empty_assistant_turn_as_empty_text(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    # OpenAI rejects an assistant message whose content is null without tool_calls
    fake_provider.add("ok")
    request = ModelRequest(
        messages=[Message.user("Hi"), Message.assistant(""), Message.user("Still there?")]
    )

    make().complete(request)

    assert fake_provider.requests[0].json["messages"][1] == {"role": "assistant", "content": ""}


def test_openai_model_fallback_keeps_the_retries_of_the_rejected_request(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    request = ModelRequest(messages=[Message.user("Judge")], json_schema=SCHEMA)
    fake_provider.add(
        FakeProvider.rate_limited(retry_after=0),
        FakeProvider.error(400, "response_format is not supported"),
        '{"score": 1}',
    )
    assert make().complete(request).retries == 1

    _openai._json_in_prompt_servers.clear()
    fake_provider.add(
        FakeProvider.rate_limited(retry_after=0),
        FakeProvider.error(400, "response_format is not supported"),
        FakeProvider.rate_limited(retry_after=0),
        '{"score": 1}',
    )
    assert asyncio.run(make().acomplete(request)).retries == 2

    _openai._json_in_prompt_servers.clear()
    fake_provider.add(
        FakeProvider.rate_limited(retry_after=0),
        FakeProvider.error(400, "response_format is not supported"),
        FakeProvider.error(400, "context length exceeded"),
    )
    with pytest.raises(ProviderRequestError) as info:
        make().complete(request)
    assert info.value.retries == 1


def test_openai_model_strict_mode_checks_the_schemas_defs_too() -> None:
    closed = {**SCHEMA, "additionalProperties": False}
    with_ref = {
        "type": "object",
        "properties": {"answer": {"$ref": "#/$defs/A"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    open_def = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    closed_def = {**open_def, "additionalProperties": False}

    assert [
        _openai._strict_ok(schema)
        for schema in (
            {**with_ref, "$defs": {"A": closed_def}},
            {**with_ref, "$defs": {"A": open_def}},
            {**with_ref, "definitions": {"A": {**closed_def, "required": []}}},
            {**with_ref, "$defs": {"A": {"type": "string", "maxLength": 3}}},
            # names of properties are no keywords: a property called "format" is fine
            {**closed, "properties": {"format": {"type": "string"}}, "required": ["format"]},
        )
    ] == [True, False, False, False, True]


@pytest.mark.parametrize(
    ("model", "base_url", "key"),
    [
        ("gpt-4o-mini", None, "max_completion_tokens"),
        ("gpt-4o-mini", "https://api.openai.com/v1", "max_completion_tokens"),
        ("llama3.1:8b", "http://localhost:11434/v1", "max_tokens"),
        ("o3-mini", "https://gateway.example/v1", "max_completion_tokens"),
        ("o1", "https://gateway.example/v1", "max_completion_tokens"),
        ("o4-mini-2025-04-16", "https://gateway.example/v1", "max_completion_tokens"),
        ("gpt-5", "https://gateway.example/v1", "max_completion_tokens"),
        ("gpt-5.1-mini", "https://gateway.example/v1", "max_completion_tokens"),
        ("openai/o3", "https://openrouter.example/api/v1", "max_completion_tokens"),
        ("gpt-4.1", "https://gateway.example/v1", "max_tokens"),
        ("qwen3-o1-distill", "http://localhost:8000/v1", "max_tokens"),
    ],
)
def test_openai_model_sends_the_token_limit_under_the_key_the_model_takes(
    model: str, base_url: str | None, key: str
) -> None:
    params = OpenAIModel(model, api_key=KEY, base_url=base_url)._params(HI, json_in_prompt=False)

    assert (params.get(key), len({"max_tokens", "max_completion_tokens"} & params.keys())) == (
        1024,
        1,
    )


@pytest.mark.parametrize(
    "error",
    [
        # OpenAI's, naming the parameter
        '{"error": {"message": "Unsupported parameter: \'max_tokens\' is not supported with '
        'this model. Use \'max_completion_tokens\' instead.", "type": '
        '"invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}',
        # a gateway's, without a param
        '{"error": {"message": "max_tokens is too large: 99999", "type": "invalid_request_error"}}',
    ],
)
def test_openai_model_a_400_about_the_token_limit_is_no_response_format_rejection(
    fake_provider: FakeProvider, make: MakeModel, error: str
) -> None:
    fake_provider.add(FakeProvider.raw(error, status=400), '{"score": 1}')
    model = make()

    with pytest.raises(ProviderRequestError, match="max_tokens"):
        model.complete(ModelRequest(messages=[Message.user("Judge")], json_schema=SCHEMA))

    assert (len(fake_provider.requests), model.json_in_prompt) == (1, False)


def test_openai_model_an_empty_base_url_variable_is_the_default_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the SDK reads OPENAI_BASE_URL="" as the URL "": every call failed, retried
    monkeypatch.setenv("OPENAI_BASE_URL", "")
    model = OpenAIModel("gpt-4o-mini", api_key=KEY)

    assert (model.name, str(model._clients.get().base_url)) == (
        "openai:gpt-4o-mini",
        "https://api.openai.com/v1/",
    )
    model.close()


@pytest.mark.parametrize(
    ("argument", "variable", "error"),
    [
        (
            "localhost:11434/v1",
            None,
            "OpenAIModel(base_url='localhost:11434/v1') does not start with http:// or "
            "https://: write the whole URL, like 'http://localhost:11434/v1'",
        ),
        (
            None,
            "localhost:11434/v1",
            "OPENAI_BASE_URL='localhost:11434/v1' does not start with http:// or https://: "
            "write the whole URL, like 'http://localhost:11434/v1'",
        ),
        (
            "http://localhost:abc/v1",
            None,
            "OpenAIModel(base_url='http://localhost:abc/v1') is not a valid URL (Port could "
            "not be cast to integer value as 'abc'): check the host and port",
        ),
        (
            "http:///v1",
            None,
            "OpenAIModel(base_url='http:///v1') names no host: write it like "
            "'http://localhost:8000/v1'",
        ),
    ],
)
def test_openai_model_a_base_url_it_cannot_call_is_a_config_error_at_once(
    monkeypatch: pytest.MonkeyPatch, argument: str | None, variable: str | None, error: str
) -> None:
    if variable is not None:
        monkeypatch.setenv("OPENAI_BASE_URL", variable)

    with pytest.raises(ConfigError) as info:
        OpenAIModel("llama3.1:8b", api_key=KEY, base_url=argument)

    assert str(info.value) == error
