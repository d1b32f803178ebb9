"""AnthropicModel through the real ``anthropic`` SDK against FakeProvider."""

from __future__ import annotations

import asyncio
import json
import pickle
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agenteval import ConfigError
from agenteval._errors import (
    ProviderAuthError,
    ProviderQuotaError,
    ProviderRequestError,
    ProviderUnavailableError,
)
from agenteval._usage import Usage
from agenteval.llm import AnthropicModel, ModelRequest, RetryPolicy, ToolSpec
from agenteval.testing import FakeProvider, FakeReply
from agenteval.trajectory._messages import Message, ToolCall

KEY = "sk-ant-test-0123456789abcdef"
HI = ModelRequest(messages=[Message.user("Hi")])
SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reasoning": {"type": "string"}},
    "required": ["score", "reasoning"],
}

MakeModel = Callable[..., AnthropicModel]


@pytest.fixture
def waits() -> list[float]:
    return []


@pytest.fixture
def make(fake_provider: FakeProvider, waits: list[float]) -> Iterator[MakeModel]:
    built: list[AnthropicModel] = []

    async def record(delay: float) -> None:
        waits.append(delay)

    def _make(**kwargs: Any) -> AnthropicModel:
        policy = kwargs.pop("retry", None) or RetryPolicy(
            jitter=False, sleep=waits.append, async_sleep=record
        )
        kwargs.setdefault("api_key", KEY)
        model = AnthropicModel(
            "claude-test", base_url=fake_provider.anthropic_base_url, retry=policy, **kwargs
        )
        built.append(model)
        return model

    yield _make
    for model in built:
        model.close()


def test_anthropic_model_text_reply(fake_provider: FakeProvider, make: MakeModel) -> None:
    fake_provider.add(FakeProvider.text("Hello!"))
    request = ModelRequest(
        messages=[Message.user("Hi")], system="Be brief.", max_tokens=50, temperature=0.0
    )

    reply = make().complete(request)

    assert (reply.text, reply.model, reply.stop_reason, reply.retries) == (
        "Hello!",
        "claude-test",
        "end_turn",
        0,
    )
    body = fake_provider.requests[0].json
    assert body == {
        "model": "claude-test",
        "max_tokens": 50,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "stream": True,
    }


def test_anthropic_model_sends_the_key_as_a_bearer_token(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add("ok")

    make().complete(HI)

    assert fake_provider.requests[0].api_key == KEY


def test_anthropic_model_usage_maps_cache_tokens(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(
        FakeProvider.text(
            "ok", input_tokens=100, output_tokens=20, cache_read_tokens=30, cache_write_tokens=40
        )
    )

    reply = make().complete(HI)

    assert reply.usage == Usage(
        input_tokens=100, output_tokens=20, cache_read_tokens=30, cache_write_tokens=40
    )


def test_anthropic_model_parses_tool_use_blocks(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(
        FakeProvider.tool_calls(
            [("search_orders", {"order_id": "123"}), ("refund", {"amount": 5})],
            text="Let me check.",
            ids=["toolu_1", "toolu_2"],
        )
    )
    request = ModelRequest(
        messages=[Message.user("Where is order 123?")],
        tools=[ToolSpec(name="search_orders", description="Find an order")],
    )

    reply = make().complete(request)

    assert reply.text == "Let me check."
    assert reply.stop_reason == "tool_use"
    assert reply.tool_calls == [
        ToolCall(id="toolu_1", name="search_orders", inputs={"order_id": "123"}),
        ToolCall(id="toolu_2", name="refund", inputs={"amount": 5}),
    ]
    assert fake_provider.requests[0].json["tools"] == [
        {
            "name": "search_orders",
            "description": "Find an order",
            "input_schema": {"type": "object", "properties": {}},
        }
    ]


def test_anthropic_model_sends_tool_calls_and_merged_tool_results(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add("Refunded.")
    calls = [
        ToolCall(id="toolu_1", name="search_orders", inputs={"order_id": "123"}),
        ToolCall(id="toolu_2", name="refund", inputs={"amount": 5}),
    ]
    request = ModelRequest(
        system="You are support.",
        messages=[
            Message(role="system", content="Be polite."),
            Message.user("Refund order 123"),
            Message.assistant("Checking.", calls),
            Message.tool("toolu_1", "found"),
            Message.tool("toolu_2", "card declined", is_error=True),
            Message.user("Thanks"),
        ],
    )

    make().complete(request)

    body = fake_provider.requests[0].json
    assert body["system"] == "You are support.\n\nBe polite."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Refund order 123"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "search_orders",
                    "input": {"order_id": "123"},
                },
                {"type": "tool_use", "id": "toolu_2", "name": "refund", "input": {"amount": 5}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "found"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "card declined",
                    "is_error": True,
                },
                {"type": "text", "text": "Thanks"},
            ],
        },
    ]


def test_anthropic_model_structured_output_is_a_forced_tool_call(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.structured({"score": 0.9, "reasoning": "Correct."}))
    request = ModelRequest(
        messages=[Message.user("Judge this")], json_schema=SCHEMA, schema_name="verdict"
    )

    reply = make().complete(request)

    assert reply.structured == {"score": 0.9, "reasoning": "Correct."}
    assert reply.text == '{"score": 0.9, "reasoning": "Correct."}'
    assert reply.tool_calls == []
    body = fake_provider.requests[0].json
    assert body["tool_choice"] == {"type": "tool", "name": "verdict"}
    assert body["tools"] == [
        {
            "name": "verdict",
            "description": "Give your answer by calling this tool.",
            "input_schema": SCHEMA,
        }
    ]


def test_anthropic_model_structured_request_answered_with_prose_has_no_structured(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add("I think it deserves a 0.9")

    reply = make().complete(ModelRequest(messages=[Message.user("Judge")], json_schema=SCHEMA))

    assert (reply.text, reply.structured) == ("I think it deserves a 0.9", None)


def test_anthropic_model_retries_429s_honouring_retry_after(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(
        FakeProvider.rate_limited(retry_after=2),
        FakeProvider.rate_limited(retry_after_ms=250),
        FakeProvider.rate_limited(),
        "Finally.",
    )

    reply = make().complete(HI)

    assert (reply.text, reply.retries) == ("Finally.", 3)
    assert waits == [2.0, 0.25, 2.0]
    assert len(fake_provider.requests) == 4


def test_anthropic_model_honours_retry_after_http_date(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(FakeProvider.rate_limited("Thu, 01 Jan 2015 00:00:00 GMT"), "ok")

    reply = make().complete(HI)

    assert (reply.text, waits) == ("ok", [0.0])


def test_anthropic_model_waits_for_real_when_told_to(fake_provider: FakeProvider) -> None:
    fake_provider.add(FakeProvider.rate_limited(retry_after_ms=300), "ok")
    model = AnthropicModel("claude-test", api_key=KEY, base_url=fake_provider.anthropic_base_url)

    started = time.monotonic()
    reply = model.complete(HI)
    elapsed = time.monotonic() - started
    model.close()

    assert reply.retries == 1
    assert elapsed >= 0.3


def test_anthropic_model_retries_529_overloaded(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(FakeProvider.overloaded(), FakeProvider.overloaded(), "ok")

    reply = make().complete(HI)

    assert (reply.text, reply.retries, waits) == ("ok", 2, [0.5, 1.0])


def test_anthropic_model_retries_an_overloaded_error_inside_a_200_stream(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.stream_error(text="Partial ans"), "Full answer.")

    reply = make().complete(HI)

    assert (reply.text, reply.retries) == ("Full answer.", 1)


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_anthropic_model_retries_5xx(
    fake_provider: FakeProvider, make: MakeModel, status: int
) -> None:
    fake_provider.add(FakeProvider.server_error(status), "ok")

    assert make().complete(HI).retries == 1


def test_anthropic_model_retries_after_a_timeout(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(FakeProvider.hang(), "ok")

    reply = make(timeout=0.3).complete(HI)

    assert (reply.text, reply.retries, waits) == ("ok", 1, [0.5])


def test_anthropic_model_retries_a_slow_reply_that_timed_out(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.text("too late").delayed(1.0), "ok")

    reply = make(timeout=0.3).complete(HI)

    assert (reply.text, reply.retries) == ("ok", 1)


def test_anthropic_model_retries_a_dropped_connection(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.disconnect(), "ok")

    assert make().complete(HI).retries == 1


def test_anthropic_model_gives_up_after_max_attempts(
    fake_provider: FakeProvider, waits: list[float], make: MakeModel
) -> None:
    fake_provider.add(*[FakeProvider.overloaded()] * 4)
    model = make(retry=RetryPolicy(max_attempts=3, jitter=False, sleep=waits.append))

    with pytest.raises(ProviderUnavailableError) as info:
        model.complete(HI)

    assert str(info.value) == (
        f"anthropic:claude-test@{fake_provider.anthropic_base_url} still failing after 3 attempts and 1.5s of waiting "
        "(HTTP 529 overloaded_error: Overloaded): retry later or raise "
        "RetryPolicy(max_attempts=..., max_total_wait=...)"
    )
    assert len(fake_provider.requests) == 3


def test_anthropic_model_fails_fast_on_401_without_leaking_the_key(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(FakeProvider.unauthorized(f"invalid x-api-key {KEY}"), "never sent")

    with pytest.raises(ProviderAuthError) as info:
        make().complete(HI)

    assert str(info.value) == (
        f"anthropic:claude-test@{fake_provider.anthropic_base_url} rejected the credentials (HTTP 401 authentication_error: "
        "invalid x-api-key [REDACTED]): check ANTHROPIC_API_KEY or the api_key= argument; "
        "authentication errors are not retried"
    )
    assert KEY not in repr(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert (len(fake_provider.requests), waits) == (1, [])


def test_anthropic_model_fails_fast_on_400(fake_provider: FakeProvider, make: MakeModel) -> None:
    fake_provider.add(FakeProvider.error(400, "messages: at least one message is required"))

    with pytest.raises(ProviderRequestError) as info:
        make().complete(HI)

    assert str(info.value) == (
        f"anthropic:claude-test@{fake_provider.anthropic_base_url} rejected the request (HTTP 400 invalid_request_error: "
        "messages: at least one message is required): check the model name and the request; "
        "client errors are not retried"
    )
    assert len(fake_provider.requests) == 1


def test_anthropic_model_fails_fast_on_404(fake_provider: FakeProvider, make: MakeModel) -> None:
    fake_provider.add(FakeProvider.error(404, "model: claude-test"))

    with pytest.raises(ProviderRequestError, match="HTTP 404 not_found_error: model: claude-test"):
        make().complete(HI)

    assert len(fake_provider.requests) == 1


def test_anthropic_model_fails_fast_on_a_billing_error(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.quota_exhausted())

    with pytest.raises(ProviderQuotaError) as info:
        make().complete(HI)

    assert str(info.value) == (
        f"anthropic:claude-test@{fake_provider.anthropic_base_url} is out of quota (HTTP 402 billing_error: You exceeded your "
        "current quota): add credit or raise the account's spend limit; quota errors are not "
        "retried"
    )
    assert len(fake_provider.requests) == 1


def test_anthropic_model_fails_fast_on_a_spend_limit_429(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(
        FakeProvider.error(429, "Spend limit reached", code="enforced_spend_limit_reached")
    )

    with pytest.raises(ProviderQuotaError):
        make().complete(HI)

    assert len(fake_provider.requests) == 1


def test_anthropic_model_acomplete_uses_the_async_client_and_retries(
    fake_provider: FakeProvider, make: MakeModel, waits: list[float]
) -> None:
    fake_provider.add(FakeProvider.rate_limited(retry_after=1), FakeProvider.tool_call("f", {}))

    reply = asyncio.run(make().acomplete(HI))

    assert (reply.tool_calls[0].name, reply.retries, waits) == ("f", 1, [1.0])
    assert fake_provider.requests[0].headers["x-stainless-async"] != "false"


def test_anthropic_model_acomplete_raises_provider_errors(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.unauthorized())

    with pytest.raises(ProviderAuthError):
        asyncio.run(make().acomplete(HI))


def test_anthropic_model_missing_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    with pytest.raises(ConfigError) as info:
        AnthropicModel("claude-test")

    assert str(info.value) == (
        "No API key for AnthropicModel: set ANTHROPIC_API_KEY or pass api_key="
    )


def test_anthropic_model_reads_the_key_from_the_environment(
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-123456")
    fake_provider.add("ok")
    model = AnthropicModel("claude-test", base_url=fake_provider.anthropic_base_url)

    model.complete(HI)
    model.close()

    assert fake_provider.requests[0].api_key == "sk-ant-from-env-123456"


def test_anthropic_model_name_and_repr_hide_the_key() -> None:
    model = AnthropicModel("claude-test", api_key=KEY)

    assert (model.name, repr(model)) == ("anthropic:claude-test", "AnthropicModel('claude-test')")


def test_anthropic_model_survives_pickling(fake_provider: FakeProvider) -> None:
    fake_provider.add("one", "two")
    model = AnthropicModel("claude-test", api_key=KEY, base_url=fake_provider.anthropic_base_url)
    model.complete(HI)
    model.close()

    copy = pickle.loads(pickle.dumps(model))
    reply = copy.complete(HI)
    copy.close()

    assert reply.text == "two"


def test_anthropic_model_an_empty_base_url_variable_is_the_default_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the SDK reads ANTHROPIC_BASE_URL="" as the URL "": every call failed, retried
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "")
    model = AnthropicModel("claude-haiku-4-5", api_key=KEY)

    assert (model.name, str(model._clients.get().base_url)) == (
        "anthropic:claude-haiku-4-5",
        "https://api.anthropic.com",
    )
    model.close()


def test_anthropic_model_a_base_url_without_a_scheme_is_a_config_error_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "gateway.internal:8080")

    with pytest.raises(ConfigError) as info:
        AnthropicModel("claude-haiku-4-5", api_key=KEY)

    assert str(info.value) == (
        "ANTHROPIC_BASE_URL='gateway.internal:8080' does not start with http:// or https://: "
        "write the whole URL, like 'http://gateway.internal:8080'"
    )


def _stream(
    *blocks: tuple[str, str],
    stop_reason: str = "end_turn",
    start_usage: str = '{"input_tokens": 10, "output_tokens": 1}',
    stop: bool = True,
) -> FakeReply:
    """A 200 event stream, as the API sends it: each block ``(tool name or "", text or the
    tool's JSON input)`` in one delta."""

    def event(name: str, data: str) -> str:
        return f"event: {name}\ndata: {data}\n\n"

    frames = [
        event(
            "message_start",
            '{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": '
            '"assistant", "model": "claude-test", "content": [], "stop_reason": null, '
            f'"usage": {start_usage}}}}}',
        )
    ]
    for index, (tool, text) in enumerate(blocks):
        if tool:
            start = (
                f'{{"type": "tool_use", "id": "toolu_{index}", "name": "{tool}", "input": {{}}}}'
            )
            delta = {"type": "input_json_delta", "partial_json": text}
        else:
            start, delta = '{"type": "text", "text": ""}', {"type": "text_delta", "text": text}
        frames += [
            event(
                "content_block_start",
                f'{{"type": "content_block_start", "index": {index}, "content_block": {start}}}',
            ),
            event(
                "content_block_delta",
                json.dumps({"type": "content_block_delta", "index": index, "delta": delta}),
            ),
            event("content_block_stop", f'{{"type": "content_block_stop", "index": {index}}}'),
        ]
    if stop:
        frames += [
            event(
                "message_delta",
                f'{{"type": "message_delta", "delta": {{"stop_reason": "{stop_reason}"}}, '
                '"usage": {"output_tokens": 7}}',
            ),
            event("message_stop", '{"type": "message_stop"}'),
        ]
    return FakeProvider.raw("".join(frames), content_type="text/event-stream")


def test_anthropic_model_a_structured_reply_cut_off_at_max_tokens_is_no_verdict(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    # the SDK's partial JSON of the cut input would read {"reasoning": ..., "score": 0}
    cut = '{"reasoning": "Mostly right.", "score": 0'
    fake_provider.add(_stream(("verdict", cut), stop_reason="max_tokens"))
    request = ModelRequest(
        messages=[Message.user("Judge")], json_schema=SCHEMA, schema_name="verdict"
    )

    reply = make().complete(request)

    assert (reply.structured, reply.text, reply.stop_reason) == (None, cut, "max_tokens")


@pytest.mark.parametrize(
    ("partial_json", "inputs"),
    [
        ("[1, 2]", {"_arguments": [1, 2]}),
        ('"str"', {"_arguments": "str"}),
        ('{"a": 1,}', {"_invalid_json_arguments": '{"a": 1,}'}),
        ("", {}),
    ],
)
def test_anthropic_model_keeps_a_tool_input_that_is_no_json_object_as_openai_does(
    fake_provider: FakeProvider, make: MakeModel, partial_json: str, inputs: dict[str, Any]
) -> None:
    fake_provider.add(_stream(("lookup_order", partial_json), stop_reason="tool_use"))

    reply = make().complete(HI)

    assert reply.tool_calls == [ToolCall(id="toolu_0", name="lookup_order", inputs=inputs)]


def test_anthropic_model_a_structured_input_that_is_no_object_is_no_verdict(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(_stream(("verdict", "[0.8]"), stop_reason="tool_use"))
    request = ModelRequest(
        messages=[Message.user("Judge")], json_schema=SCHEMA, schema_name="verdict"
    )

    reply = make().complete(request)

    assert (reply.structured, reply.text) == (None, "[0.8]")


def test_anthropic_model_usage_null_keeps_the_reply(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(_stream(("", "Hello!"), start_usage="null"))

    reply = make().complete(HI)

    assert (reply.text, reply.usage) == ("Hello!", Usage(output_tokens=7))


@pytest.mark.parametrize("asynchronous", [False, True])
def test_anthropic_model_a_reply_that_is_not_a_stream_is_one_line_at_once(
    fake_provider: FakeProvider, make: MakeModel, asynchronous: bool
) -> None:
    fake_provider.add(FakeProvider.raw("<html>app</html>", content_type="text/html"), "unused")
    model = make()

    with pytest.raises(ProviderRequestError) as info:
        asyncio.run(model.acomplete(HI)) if asynchronous else model.complete(HI)

    assert str(info.value) == (
        f"{model.name} answered with text/html '<html>app</html>', not a Messages API event "
        "stream: check that base_url points at an Anthropic-compatible API"
    )
    assert len(fake_provider.requests) == 1


@pytest.mark.parametrize("asynchronous", [False, True])
def test_anthropic_model_reads_a_whole_message_sent_instead_of_a_stream(
    fake_provider: FakeProvider, make: MakeModel, asynchronous: bool
) -> None:
    # a proxy that ignores "stream": true
    message = (
        '{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", '
        '"content": [{"type": "text", "text": "Whole."}], "stop_reason": "end_turn", '
        '"usage": {"input_tokens": 3, "output_tokens": 2}}'
    )
    fake_provider.add(FakeProvider.raw(message))
    model = make()

    reply = asyncio.run(model.acomplete(HI)) if asynchronous else model.complete(HI)

    assert (reply.text, reply.stop_reason, reply.usage, reply.retries) == (
        "Whole.",
        "end_turn",
        Usage(input_tokens=3, output_tokens=2),
        0,
    )


def test_anthropic_model_a_stream_cut_off_is_still_retried(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(_stream(("", "Hel"), stop=False), "Hello!")

    reply = make().complete(HI)

    assert (reply.text, reply.retries, len(fake_provider.requests)) == ("Hello!", 1, 2)


def test_anthropic_model_a_whole_message_cut_short_is_retried(
    fake_provider: FakeProvider, make: MakeModel
) -> None:
    fake_provider.add(FakeProvider.raw('{"id": "msg_1", "type": "mess'), "Hello!")

    reply = make().complete(HI)

    assert (reply.text, reply.retries) == ("Hello!", 1)


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("content_type", ["text/plain", "application/json"])
def test_anthropic_model_reads_an_event_stream_under_another_label(
    fake_provider: FakeProvider, make: MakeModel, asynchronous: bool, content_type: str
) -> None:
    # a gateway that mislabels the stream: taken for a reply that is no stream
    body = _stream(("", "Hello!")).text
    fake_provider.add(FakeProvider.raw(body, content_type=content_type))
    model = make()

    reply = asyncio.run(model.acomplete(HI)) if asynchronous else model.complete(HI)

    assert (reply.text, reply.retries) == ("Hello!", 0)
