"""OpenAIEmbeddings through the real ``openai`` SDK against FakeProvider."""

from __future__ import annotations

import pytest

from agenteval import ConfigError, _cache_settings
from agenteval._cache_settings import CacheSettings
from agenteval._context import enter_item, exit_item
from agenteval._errors import ProviderAuthError, ProviderRequestError, ProviderUnavailableError
from agenteval._usage import Usage
from agenteval.llm import Embeddings, OpenAIEmbeddings, RetryPolicy
from agenteval.llm._cache import embed_cached
from agenteval.testing import FakeProvider

KEY = "sk-openai-test-0123456789abcdef"


def _embeddings(fake: FakeProvider, waits: list[float] | None = None) -> OpenAIEmbeddings:
    sleep = waits.append if waits is not None else (lambda _: None)
    return OpenAIEmbeddings(
        api_key=KEY, base_url=fake.openai_base_url, retry=RetryPolicy(jitter=False, sleep=sleep)
    )


def test_openai_embeddings_returns_one_vector_per_text(fake_provider: FakeProvider) -> None:
    fake_provider.add(FakeProvider.embeddings([[1.0, 0.0], [0.5, 0.5]]))
    embeddings = _embeddings(fake_provider)

    vectors = embeddings.embed(["refund issued", "money returned"])
    embeddings.close()

    assert vectors == [[1.0, 0.0], [0.5, 0.5]]
    assert fake_provider.requests[0].path == "/v1/embeddings"
    assert fake_provider.requests[0].json == {
        "model": "text-embedding-3-small",
        "input": ["refund issued", "money returned"],
        "encoding_format": "float",
    }


def test_openai_embeddings_implements_the_protocol(fake_provider: FakeProvider) -> None:
    embeddings = _embeddings(fake_provider)

    assert isinstance(embeddings, Embeddings)
    assert (
        embeddings.name
        == f"openai-compatible:text-embedding-3-small@{fake_provider.openai_base_url}"
    )
    assert OpenAIEmbeddings(api_key=KEY).name == "openai:text-embedding-3-small"


def test_openai_embeddings_of_nothing_makes_no_request(fake_provider: FakeProvider) -> None:
    assert _embeddings(fake_provider).embed([]) == []
    assert fake_provider.requests == []


def test_openai_embeddings_retries_rate_limits(fake_provider: FakeProvider) -> None:
    waits: list[float] = []
    fake_provider.add(FakeProvider.rate_limited(retry_after=1), FakeProvider.embeddings([[1.0]]))
    embeddings = _embeddings(fake_provider, waits)

    vectors = embeddings.embed(["a"])
    embeddings.close()

    assert (vectors, waits, len(fake_provider.requests)) == ([[1.0]], [1.0], 2)


def test_openai_embeddings_fails_fast_on_401(fake_provider: FakeProvider) -> None:
    fake_provider.add(FakeProvider.unauthorized(f"bad key {KEY}"))

    with pytest.raises(ProviderAuthError) as info:
        _embeddings(fake_provider).embed(["a"])

    assert KEY not in str(info.value)
    assert len(fake_provider.requests) == 1


def test_openai_embeddings_count_mismatch_is_an_error(fake_provider: FakeProvider) -> None:
    fake_provider.add(FakeProvider.embeddings([[1.0]]))
    embeddings = _embeddings(fake_provider)

    with pytest.raises(ProviderRequestError) as info:
        embeddings.embed(["a", "b"])

    assert str(info.value) == (
        f"{embeddings.name} returned 1 embeddings for 2 texts: check that the server "
        "implements the OpenAI embeddings API"
    )


def test_openai_embeddings_missing_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    with pytest.raises(ConfigError) as info:
        OpenAIEmbeddings()

    assert str(info.value) == (
        "No API key for OpenAIEmbeddings: set OPENAI_API_KEY or pass api_key="
    )


def test_openai_embeddings_reports_usage_and_retries(fake_provider: FakeProvider) -> None:
    fake_provider.add(FakeProvider.rate_limited(retry_after=0), FakeProvider.embeddings())
    embeddings = _embeddings(fake_provider)

    result = embeddings.embed_with_usage(["refund issued now", "money returned"])
    embeddings.close()

    assert (len(result.vectors), result.usage, result.retries) == (
        2,
        Usage(input_tokens=5),
        1,
    )


def test_openai_embeddings_usage_and_retries_are_accounted_to_the_item(
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cache_settings, "_settings", CacheSettings())
    fake_provider.add(
        FakeProvider.server_error(503),
        FakeProvider.embeddings(),
        FakeProvider.server_error(503),
        FakeProvider.server_error(503),
    )
    embeddings = OpenAIEmbeddings(
        api_key=KEY,
        base_url=fake_provider.openai_base_url,
        retry=RetryPolicy(max_attempts=2, sleep=lambda _: None),
    )
    ctx, token = enter_item()
    try:
        embed_cached(embeddings, ["three word text"])
        with pytest.raises(ProviderUnavailableError):
            embed_cached(embeddings, ["again"])
    finally:
        exit_item(token)
        embeddings.close()

    assert (ctx.judge_calls, ctx.retries) == (2, 2)
    assert ctx.judge_by_model == {embeddings.name: Usage(input_tokens=3)}


def test_openai_embeddings_an_empty_base_url_variable_is_the_default_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "")
    embeddings = OpenAIEmbeddings(api_key=KEY)

    assert (embeddings.name, str(embeddings._clients.get().base_url)) == (
        "openai:text-embedding-3-small",
        "https://api.openai.com/v1/",
    )
    embeddings.close()


def test_openai_embeddings_a_base_url_without_a_scheme_is_a_config_error_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        OpenAIEmbeddings(api_key=KEY, base_url="localhost:11434/v1")

    assert str(info.value) == (
        "OpenAIEmbeddings(base_url='localhost:11434/v1') does not start with http:// or "
        "https://: write the whole URL, like 'http://localhost:11434/v1'"
    )


def _embeddings_body(data: str) -> str:
    return (
        '{"object": "list", "model": "e", "usage": {"prompt_tokens": 3, "total_tokens": 3}, '
        f'"data": {data}}}'
    )


@pytest.mark.parametrize(
    ("body", "content_type", "error"),
    [
        (
            "<html>app</html>",
            "text/html",
            "answered with '<html>app</html>', not an embeddings response: check that base_url "
            "points at an OpenAI-compatible API (its /v1)",
        ),
        (
            _embeddings_body("null"),
            "application/json",
            "returned a malformed embeddings response (its data is None, not a list): check "
            "that the server implements the OpenAI embeddings API",
        ),
        (
            _embeddings_body('[{"embedding": [1, 0]}, {"embedding": [0, 1]}]'),
            "application/json",
            "returned a malformed embeddings response (an embedding has the index None): "
            "check that the server implements the OpenAI embeddings API",
        ),
        (
            _embeddings_body(
                '[{"index": 0, "embedding": "AAAAAAAAgD8="}, {"index": 1, "embedding": "AA=="}]'
            ),
            "application/json",
            "returned a malformed embeddings response (embedding 0 is text, not a list of "
            "numbers (base64? encoding_format='float' was asked for)): check that the server "
            "implements the OpenAI embeddings API",
        ),
        (
            _embeddings_body('[{"index": 0, "embedding": null}, {"index": 1, "embedding": [1]}]'),
            "application/json",
            "returned a malformed embeddings response (embedding 0 is None, not a list of "
            "numbers): check that the server implements the OpenAI embeddings API",
        ),
        (
            _embeddings_body(
                '[{"index": 0, "embedding": [[1, 0]]}, {"index": 1, "embedding": [[0, 1]]}]'
            ),
            "application/json",
            "returned a malformed embeddings response (embedding 0 is [[1, 0]], not a list of "
            "numbers): check that the server implements the OpenAI embeddings API",
        ),
        (
            _embeddings_body('[{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [0]}]'),
            "application/json",
            "returned a malformed embeddings response (the indexes of 2 embeddings are [0, 0], "
            "not 0 to 1): check that the server implements the OpenAI embeddings API",
        ),
    ],
)
def test_openai_embeddings_a_malformed_reply_is_one_line_at_once(
    fake_provider: FakeProvider, body: str, content_type: str, error: str
) -> None:
    fake_provider.add(FakeProvider.raw(body, content_type=content_type))
    embeddings = _embeddings(fake_provider)

    with pytest.raises(ProviderRequestError) as info:
        embeddings.embed(["a", "b"])
    embeddings.close()

    assert str(info.value) == f"{embeddings.name} {error}"
    assert len(fake_provider.requests) == 1
