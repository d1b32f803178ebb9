"""``StringSimilarity``: semantic closeness of two texts, by embedding cosine similarity."""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._results import AssertionResult
from ._base import Assertion, type_name
from ._common import not_a_string

if TYPE_CHECKING:  # the model layer is imported when an embedding is asked for
    from ..llm._types import Embeddings


@dataclass(frozen=True)
class StringSimilarity(Assertion):
    """Passes when the output means roughly the same as ``reference``, by embeddings.

    Use it when wording may vary freely but the meaning should not (summaries, paraphrased
    answers), and an LLM judge would be overkill. The score is the cosine similarity of the
    two embeddings, clipped to [0, 1]; the assertion passes at ``score >= threshold``::

        from agenteval.llm import OpenAIEmbeddings

        similar = StringSimilarity(
            reference="The parcel was delivered yesterday.",
            embeddings=OpenAIEmbeddings("text-embedding-3-small"),
            threshold=0.8,
        )
        self.assert_that(similar, output)

    The reference is embedded once per assertion instance (and both texts in a single call
    when neither is known yet); embeddings go through the response cache when it is on.
    Thresholds depend on the embedding model: calibrate on a few known-good and known-bad
    outputs.
    """

    reference: str
    embeddings: Embeddings
    threshold: float = 0.6
    _memo: dict[str, list[float]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.reference, str):
            raise TypeError(
                f"StringSimilarity: reference must be a string, got "
                f"{type_name(self.reference)} ({self.reference!r})"
            )
        threshold = self.threshold
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float))
            or not math.isfinite(threshold)
            or not 0 <= threshold <= 1
        ):
            raise ValueError(
                f"StringSimilarity: threshold must be a number from 0 to 1, got {threshold!r}"
            )
        embed = getattr(self.embeddings, "embed", None)
        if not callable(embed) or not isinstance(getattr(self.embeddings, "name", None), str):
            raise TypeError(
                f"StringSimilarity: embeddings must be an embeddings model (an `embed(texts)` "
                f"method and a `name`), such as OpenAIEmbeddings('text-embedding-3-small'); "
                f"got {self.embeddings!r:.80}"
            )

    def evaluate(self, actual: Any) -> AssertionResult:
        """Embed ``actual`` (and the reference, the first time) and compare them.

        Raises:
            ValueError: the two embeddings have different dimensions, or are not finite.
        """
        if not isinstance(actual, str):
            return not_a_string(actual)
        context: dict[str, Any] = {"threshold": self.threshold, "reference": self.reference}
        if not actual.strip():
            return AssertionResult.fail(0.0, "empty output", context)
        reference, output = self._vectors(actual)
        score = _cosine(reference, output)
        context["similarity"] = score
        # (at the threshold, within rounding: cos = sqrt(2/3) computes a hair below it)
        if score >= self.threshold or math.isclose(score, self.threshold, rel_tol=1e-9):
            return AssertionResult.pass_(score, "", context)
        return AssertionResult.fail(
            score, f"Expected similarity >= {self.threshold}, got {score:.3f}", context
        )

    async def aevaluate(self, actual: Any) -> AssertionResult:
        """Async :meth:`evaluate`: the embedding call runs in a worker thread."""
        import asyncio

        # to_thread copies the context, so the call is still accounted to this item.
        return await asyncio.to_thread(self.evaluate, actual)

    def _vectors(self, actual: str) -> tuple[list[float], list[float]]:
        from ..llm._cache import embed_cached

        cached = self._memo.get(self.reference)
        if cached is not None:
            return cached, embed_cached(self.embeddings, [actual])[0]
        reference, output = embed_cached(self.embeddings, [self.reference, actual])
        self._memo[self.reference] = reference
        return reference, output


def _cosine(reference: list[float], output: list[float]) -> float:
    """Cosine similarity, clamped to [0, 1], in plain Python: a few thousand products cost
    less than a millisecond, and importing numpy in each forked child cost 0.2 s."""
    a, b = _floats(reference), _floats(output)
    if len(a) != len(b):
        raise ValueError(
            f"StringSimilarity: embedding dimensions differ: reference has {len(a)}, output "
            f"has {len(b)}; use the same embedding model for both texts"
        )
    if not a:
        raise ValueError("StringSimilarity: the embeddings model returned an empty vector")
    if not all(map(math.isfinite, a)) or not all(map(math.isfinite, b)):
        raise ValueError("StringSimilarity: an embedding contains NaN or infinite values")
    # each scaled by its largest value first: squares of 1e200 overflow, of 1e-200 vanish
    a, b = _scaled(a), _scaled(b)
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if norms == 0.0:
        return 0.0
    return min(1.0, max(0.0, math.fsum(map(operator.mul, a, b)) / norms))


def _scaled(vector: list[float]) -> list[float]:
    largest = max(map(abs, vector))
    return vector if largest == 0.0 or 1e-100 < largest < 1e100 else [x / largest for x in vector]


def _floats(vector: list[float]) -> list[float]:
    try:
        return [float(x) for x in vector]
    except (TypeError, ValueError):
        raise ValueError("StringSimilarity: an embedding must be a flat list of numbers") from None
