"""FakeProvider: the wire formats, scripting, recording, faults and a clean shutdown."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from agenteval._errors import ProviderRequestError
from agenteval.llm import ModelRequest, OpenAIModel
from agenteval.testing import FakeProvider, RecordedRequest
from agenteval.trajectory._messages import Message

HI = ModelRequest(messages=[Message.user("Hi")])


def _post(url: str, body: Any, timeout: float = 5.0) -> tuple[int, dict[str, str], Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), json.loads(error.read())


def _model(fake: FakeProvider) -> OpenAIModel:
    return OpenAIModel("gpt-test", api_key="sk-test-123456", base_url=fake.openai_base_url)


def test_fake_provider_urls_point_at_loopback() -> None:
    with FakeProvider() as fake:
        assert fake.base_url == f"http://127.0.0.1:{fake.port}"
        assert fake.anthropic_base_url == fake.base_url
        assert fake.openai_base_url == f"{fake.base_url}/v1"


def test_fake_provider_port_outside_the_context_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="FakeProvider is not running"):
        FakeProvider().port  # noqa: B018


def test_fake_provider_records_requests(fake_provider: FakeProvider) -> None:
    fake_provider.add("ok")

    _post(f"{fake_provider.openai_base_url}/chat/completions", {"model": "m", "stream": False})

    [recorded] = fake_provider.requests
    assert (recorded.index, recorded.method, recorded.path, recorded.api) == (
        0,
        "POST",
        "/v1/chat/completions",
        "openai",
    )
    assert (recorded.json, recorded.stream, recorded.api_key) == (
        {"model": "m", "stream": False},
        False,
        None,
    )


def test_recorded_request_reads_both_key_headers() -> None:
    bearer = RecordedRequest(0, "POST", "/v1/messages", {"authorization": "Bearer k1"}, b"")
    header = RecordedRequest(0, "POST", "/v1/messages", {"x-api-key": "k2"}, b"not json")

    assert (bearer.api_key, header.api_key, header.json, header.api) == (
        "k1",
        "k2",
        None,
        "anthropic",
    )


def test_fake_provider_serves_the_queue_in_order_then_the_responder(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.add("first", lambda request: f"second #{request.index}")
    fake_provider.respond_with(lambda request: f"echo {request.json['messages'][-1]['content']}")
    model = _model(fake_provider)

    texts = [model.complete(HI).text for _ in range(3)]
    model.close()

    assert texts == ["first", "second #1", "echo Hi"]
    assert fake_provider.pending == 0


def test_fake_provider_without_a_reply_fails_fast_saying_so(fake_provider: FakeProvider) -> None:
    model = _model(fake_provider)

    with pytest.raises(ProviderRequestError) as info:
        model.complete(HI)

    assert "FakeProvider has no scripted reply for request #1 (POST /v1/chat/completions): " in (
        str(info.value)
    )
    assert len(fake_provider.requests) == 1


def test_fake_provider_reports_a_failing_responder(fake_provider: FakeProvider) -> None:
    def broken(request: RecordedRequest) -> str:
        raise ValueError("no idea")

    fake_provider.respond_with(broken)

    status, _, body = _post(f"{fake_provider.base_url}/v1/messages", {"model": "m"})

    assert (status, body["error"]["message"]) == (
        418,
        "FakeProvider responder raised ValueError: no idea",
    )
    assert fake_provider.server_errors == ["ValueError: no idea"]


def test_fake_provider_unknown_path_is_404(fake_provider: FakeProvider) -> None:
    status, _, body = _post(f"{fake_provider.base_url}/v1/files", {})

    assert (status, body) == (404, {"error": {"message": "FakeProvider: no API at /v1/files"}})


def test_fake_provider_renders_anthropic_messages_without_streaming(
    fake_provider: FakeProvider,
) -> None:
    import anthropic

    fake_provider.add(FakeProvider.tool_call("lookup", {"q": "x"}, id="toolu_9", text="Hmm"))
    with anthropic.Anthropic(
        api_key="sk-ant-test-123456", base_url=fake_provider.anthropic_base_url, max_retries=0
    ) as client:
        message = client.messages.create(
            model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
        )

    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert (message.content[1].id, message.content[1].input) == ("toolu_9", {"q": "x"})
    assert (message.stop_reason, message.usage.input_tokens, message.usage.output_tokens) == (
        "tool_use",
        10,
        5,
    )


def test_fake_provider_tool_call_ids_are_unique_per_reply(fake_provider: FakeProvider) -> None:
    reply = FakeProvider.tool_calls([("lookup", {"q": "x"}), ("lookup", {"q": "y"})])
    fake_provider.add(reply, reply, FakeProvider.tool_call("lookup", id="mine"))
    openai_url = f"{fake_provider.openai_base_url}/chat/completions"

    _, _, first = _post(openai_url, {"model": "m"})
    _, _, second = _post(f"{fake_provider.base_url}/v1/messages", {"model": "m"})
    _, _, third = _post(openai_url, {"model": "m"})

    assert [c["id"] for c in first["choices"][0]["message"]["tool_calls"]] == [
        "call_fake_1_0",
        "call_fake_1_1",
    ]
    assert [b["id"] for b in second["content"]] == ["call_fake_2_0", "call_fake_2_1"]
    assert [c["id"] for c in third["choices"][0]["message"]["tool_calls"]] == ["mine"]


def test_fake_provider_anthropic_errors_carry_type_and_code(fake_provider: FakeProvider) -> None:
    import anthropic

    fake_provider.add(FakeProvider.error(429, "slow down", code="ramp_limit_exceeded"))
    with (
        anthropic.Anthropic(
            api_key="sk-ant-test-123456", base_url=fake_provider.anthropic_base_url, max_retries=0
        ) as client,
        pytest.raises(anthropic.RateLimitError) as info,
    ):
        client.messages.create(
            model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
        )

    assert (info.value.type, info.value.error_code, info.value.api_message) == (
        "rate_limit_error",
        "ramp_limit_exceeded",
        "slow down",
    )


def test_fake_provider_streams_openai_chunks_with_usage(fake_provider: FakeProvider) -> None:
    import openai

    fake_provider.add(FakeProvider.text("Hello stream", input_tokens=3, output_tokens=2))
    with openai.OpenAI(
        api_key="sk-test-123456", base_url=fake_provider.openai_base_url, max_retries=0
    ) as client:
        chunks = list(
            client.chat.completions.create(
                model="gpt-test",
                messages=[{"role": "user", "content": "Hi"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
    assert (text, finish, chunks[-1].usage.prompt_tokens) == ("Hello stream", "stop", 3)


def test_fake_provider_streams_openai_tool_calls(fake_provider: FakeProvider) -> None:
    import openai

    fake_provider.add(FakeProvider.tool_call("lookup", {"q": "x"}, id="call_7"))
    with openai.OpenAI(
        api_key="sk-test-123456", base_url=fake_provider.openai_base_url, max_retries=0
    ) as client:
        chunks = list(
            client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "Hi"}], stream=True
            )
        )

    calls = [call for c in chunks for call in (c.choices[0].delta.tool_calls or [])]
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("call_7", "lookup", '{"q": "x"}')
    ]


def test_fake_provider_openai_stream_error_after_200(fake_provider: FakeProvider) -> None:
    import openai

    fake_provider.add(FakeProvider.stream_error("server_error", "boom", text="par"))
    with openai.OpenAI(
        api_key="sk-test-123456", base_url=fake_provider.openai_base_url, max_retries=0
    ) as client:
        stream = client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        with pytest.raises(openai.APIError, match="boom"):
            list(stream)


def test_fake_provider_stream_error_without_a_stream_is_an_http_error(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.add(FakeProvider.stream_error(), FakeProvider.stream_error())

    anthropic_status, _, anthropic_body = _post(f"{fake_provider.base_url}/v1/messages", {})
    openai_status, _, _ = _post(f"{fake_provider.openai_base_url}/chat/completions", {})

    assert (anthropic_status, anthropic_body["error"]["type"], openai_status) == (
        529,
        "overloaded_error",
        503,
    )


def test_fake_provider_sends_retry_after_headers(fake_provider: FakeProvider) -> None:
    fake_provider.add(FakeProvider.rate_limited(retry_after=2, retry_after_ms=1500))

    status, headers, body = _post(f"{fake_provider.openai_base_url}/chat/completions", {})

    assert (status, headers["retry-after"], headers["retry-after-ms"]) == (429, "2", "1500")
    assert body == {
        "error": {
            "message": "Rate limit exceeded",
            "type": "requests",
            "param": None,
            "code": None,
        }
    }


def test_fake_provider_embeddings_in_base64(fake_provider: FakeProvider) -> None:
    import openai

    fake_provider.add(FakeProvider.embeddings([[0.5, -0.25]]))
    with openai.OpenAI(
        api_key="sk-test-123456", base_url=fake_provider.openai_base_url, max_retries=0
    ) as client:
        response = client.embeddings.create(model="emb", input="hello")  # base64 by default

    assert fake_provider.requests[0].json["encoding_format"] == "base64"
    assert list(response.data[0].embedding) == [0.5, -0.25]


def test_fake_provider_default_embeddings_are_deterministic_unit_vectors(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.add(FakeProvider.embeddings(), FakeProvider.embeddings())
    url = f"{fake_provider.openai_base_url}/embeddings"

    _, _, first = _post(url, {"model": "e", "input": ["a", "b"], "encoding_format": "float"})
    _, _, again = _post(url, {"model": "e", "input": ["a"], "encoding_format": "float"})

    vectors = [item["embedding"] for item in first["data"]]
    assert vectors[0] == again["data"][0]["embedding"] != vectors[1]
    assert [round(sum(x * x for x in v), 9) for v in vectors] == [1.0, 1.0]


def test_fake_provider_delays_a_reply(fake_provider: FakeProvider) -> None:
    fake_provider.add(FakeProvider.text("late").delayed(0.2))

    started = time.monotonic()
    status, _, _ = _post(f"{fake_provider.openai_base_url}/chat/completions", {})

    assert (status, time.monotonic() - started >= 0.2) == (200, True)


def test_fake_provider_stop_releases_a_hung_request_promptly() -> None:
    outcome: list[str] = []
    fake = FakeProvider([FakeProvider.hang()]).start()

    def call() -> None:
        try:
            _post(f"{fake.openai_base_url}/chat/completions", {}, timeout=30)
        except Exception as exc:
            outcome.append(type(exc).__name__)

    client = threading.Thread(target=call)
    client.start()
    while not fake.requests:
        time.sleep(0.01)
    started = time.monotonic()
    fake.stop()
    client.join(5)

    assert time.monotonic() - started < 2
    assert not client.is_alive() and outcome
    assert [t.name for t in threading.enumerate() if t.name == "agenteval-fake-provider"] == []


def test_fake_provider_stop_is_idempotent() -> None:
    fake = FakeProvider().start()
    fake.stop()
    fake.stop()

    with pytest.raises(RuntimeError):
        fake.port  # noqa: B018


def test_fake_provider_rejects_unknown_reply_types(fake_provider: FakeProvider) -> None:
    fake_provider.add(42)  # type: ignore[arg-type]

    status, _, body = _post(f"{fake_provider.openai_base_url}/chat/completions", {})

    assert (status, body["error"]["message"]) == (
        418,
        "FakeProvider responder raised TypeError: reply for request #1 must be a FakeReply, "
        "str, dict or callable, got int",
    )
