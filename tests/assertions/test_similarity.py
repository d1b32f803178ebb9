from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agenteval import _cache_settings
from agenteval._cache_settings import CacheSettings
from agenteval._context import enter_item, exit_item
from agenteval.assertions._similarity import StringSimilarity
from agenteval.llm import _cache

REFERENCE = "The parcel was delivered yesterday."


class FakeEmbeddings:
    """Returns the vector given for each text; records every batch it was asked to embed."""

    def __init__(self, vectors: Mapping[str, list[float]], name: str = "fake:embed") -> None:
        self.vectors = dict(vectors)
        self.calls: list[list[str]] = []
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self.vectors[t] for t in texts]


@pytest.fixture(autouse=True)
def _cache_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_cache_settings, "_settings", CacheSettings())
    yield
    _cache.close_connections()


def similarity(output_vector: list[float], threshold: float = 0.6, **more: list[float]) -> Any:
    embeddings = FakeEmbeddings({REFERENCE: [2.0, 0.0, 0.0, 0.0], "out": output_vector, **more})
    return StringSimilarity(REFERENCE, embeddings, threshold=threshold), embeddings


def test_string_similarity_passes_identical_meaning_with_score_one() -> None:
    assertion, _ = similarity([4.0, 0.0, 0.0, 0.0])

    result = assertion.evaluate("out")

    assert (result.passed, result.score, result.message) == (True, 1.0, "")
    assert result.context == {"threshold": 0.6, "reference": REFERENCE, "similarity": 1.0}


def test_string_similarity_passes_when_score_equals_threshold() -> None:
    assertion, _ = similarity([1.0, 1.0, 1.0, 1.0], threshold=0.5)  # cosine exactly 0.5

    result = assertion.evaluate("out")

    assert (result.passed, result.score) == (True, 0.5)


def test_string_similarity_passes_at_a_threshold_it_equals_but_for_rounding() -> None:
    # cos([1,1,1], [1,1,0]) is sqrt(2/3), which floating point computes a hair below it
    embeddings = FakeEmbeddings({REFERENCE: [1.0, 1.0, 1.0], "out": [1.0, 1.0, 0.0]})
    assertion = StringSimilarity(REFERENCE, embeddings, threshold=(2 / 3) ** 0.5)

    assert assertion.evaluate("out").passed


def test_string_similarity_empty_vectors_are_an_error_not_a_failure() -> None:
    embeddings = FakeEmbeddings({REFERENCE: [], "out": []})

    with pytest.raises(ValueError, match=r"returned an empty vector"):
        StringSimilarity(REFERENCE, embeddings).evaluate("out")


def test_string_similarity_fails_below_threshold_with_the_score() -> None:
    assertion, _ = similarity([1.0, 1.0, 1.0, 1.0], threshold=0.6)

    result = assertion.evaluate("out")

    assert (result.passed, result.score) == (False, 0.5)
    assert result.message == "Expected similarity >= 0.6, got 0.500"


def test_string_similarity_clips_negative_cosine_to_zero() -> None:
    assertion, _ = similarity([-1.0, 0.0, 0.0, 0.0])

    result = assertion.evaluate("out")

    assert (result.passed, result.score, result.message) == (
        False,
        0.0,
        "Expected similarity >= 0.6, got 0.000",
    )


def test_string_similarity_zero_vector_scores_zero() -> None:
    assertion, _ = similarity([0.0, 0.0, 0.0, 0.0])

    assert assertion.evaluate("out").score == 0.0


def test_string_similarity_embeds_both_texts_in_one_call_then_only_the_output() -> None:
    assertion, embeddings = similarity([1.0, 0.0, 0.0, 0.0], other=[0.0, 1.0, 0.0, 0.0])

    first = assertion.evaluate("out")
    second = assertion.evaluate("other")

    assert (first.score, second.score) == (1.0, 0.0)
    assert embeddings.calls == [[REFERENCE, "out"], ["other"]]


def test_string_similarity_different_dimensions_is_a_clear_error() -> None:
    assertion, _ = similarity([1.0, 0.0, 0.0])

    with pytest.raises(ValueError) as excinfo:
        assertion.evaluate("out")

    assert str(excinfo.value) == (
        "StringSimilarity: embedding dimensions differ: reference has 4, output has 3; use the "
        "same embedding model for both texts"
    )


def test_string_similarity_non_finite_embedding_is_an_error() -> None:
    assertion, _ = similarity([float("nan"), 0.0, 0.0, 0.0])

    with pytest.raises(ValueError, match=r"an embedding contains NaN or infinite values"):
        assertion.evaluate("out")


@pytest.mark.parametrize(
    ("actual", "type_name"), [(None, "NoneType"), (42, "int"), (["x"], "list")]
)
def test_string_similarity_non_string_fails_without_embedding(actual: Any, type_name: str) -> None:
    assertion, embeddings = similarity([1.0, 0.0, 0.0, 0.0])

    result = assertion.evaluate(actual)

    assert (result.passed, result.score) == (False, 0.0)
    assert result.message == f"Expected actual value to be a string, got {type_name}"
    assert embeddings.calls == []


def test_string_similarity_empty_output_fails_without_embedding() -> None:
    assertion, embeddings = similarity([1.0, 0.0, 0.0, 0.0])

    result = assertion.evaluate("  ")

    assert (result.passed, result.score, result.message) == (False, 0.0, "empty output")
    assert embeddings.calls == []


def test_string_similarity_accounts_embedding_calls_to_the_item() -> None:
    assertion, _ = similarity([1.0, 0.0, 0.0, 0.0], other=[0.0, 1.0, 0.0, 0.0])
    ctx, token = enter_item()
    try:
        assertion.evaluate("out")
        assertion.evaluate("other")
    finally:
        exit_item(token)

    assert (ctx.judge_calls, ctx.cached_calls) == (2, 0)


def test_string_similarity_uses_the_disk_cache_when_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cache_settings, "_settings", CacheSettings(True, tmp_path))
    _, embeddings = similarity([1.0, 0.0, 0.0, 0.0])

    StringSimilarity(REFERENCE, embeddings).evaluate("out")
    result = StringSimilarity(REFERENCE, embeddings).evaluate("out")

    assert result.score == 1.0
    assert embeddings.calls == [[REFERENCE, "out"]]


def test_string_similarity_aevaluate_gives_the_same_result_and_accounts_it() -> None:
    assertion, embeddings = similarity([1.0, 1.0, 1.0, 1.0])

    async def run() -> Any:
        ctx, token = enter_item()
        try:
            return await assertion.aevaluate("out"), ctx
        finally:
            exit_item(token)

    result, ctx = asyncio.run(run())

    assert (result.passed, result.score, ctx.judge_calls) == (False, 0.5, 1)
    assert embeddings.calls == [[REFERENCE, "out"]]


def test_string_similarity_memo_is_not_part_of_equality_or_repr() -> None:
    embeddings = FakeEmbeddings({REFERENCE: [1.0], "out": [1.0]})
    used = StringSimilarity(REFERENCE, embeddings)
    used.evaluate("out")

    assert used == StringSimilarity(REFERENCE, embeddings)
    assert "_memo" not in repr(used)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"reference": 3},
            TypeError,
            "StringSimilarity: reference must be a string, got int (3)",
        ),
        (
            {"threshold": 1.2},
            ValueError,
            "StringSimilarity: threshold must be a number from 0 to 1, got 1.2",
        ),
        (
            {"embeddings": None},
            TypeError,
            "StringSimilarity: embeddings must be an embeddings model (an `embed(texts)` method "
            "and a `name`), such as OpenAIEmbeddings('text-embedding-3-small'); got None",
        ),
    ],
)
def test_string_similarity_rejects_bad_arguments(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    arguments: dict[str, Any] = {"reference": REFERENCE, "embeddings": FakeEmbeddings({}), **kwargs}

    with pytest.raises(error) as excinfo:
        StringSimilarity(**arguments)

    assert str(excinfo.value) == message


def test_an_embedding_that_is_not_a_flat_list_of_numbers_is_a_clear_error() -> None:
    from agenteval.assertions._similarity import _cosine

    with pytest.raises(ValueError, match=r"an embedding must be a flat list of numbers"):
        _cosine([[1.0, 0.0]], [[1.0, 0.0]])  # type: ignore[list-item]
    assert _cosine([3.0, 4.0], [3.0, 4.0]) == pytest.approx(1.0)
    assert _cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
    assert _cosine([1.0, 0.0], [-1.0, 0.0]) == 0.0  # clamped
    assert _cosine([1.0, 1.0], [1.0, 0.0]) == pytest.approx(2**-0.5)


@pytest.mark.parametrize("size", [1e200, 1e-200])
def test_cosine_of_very_large_or_small_vectors_is_still_right(size: float) -> None:
    # their squares overflowed or vanished: identical vectors scored 0.0
    from agenteval.assertions._similarity import _cosine

    assert _cosine([size, size], [size, size]) == pytest.approx(1.0)
    assert _cosine([size, 0.0], [0.0, size]) == 0.0
