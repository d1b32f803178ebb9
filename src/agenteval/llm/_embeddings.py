"""``OpenAIEmbeddings``: the ``Embeddings`` protocol over the ``openai`` SDK."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import ProviderError, ProviderRequestError
from .._usage import Usage
from ._client import ForkSafeClient, SdkClients, openai_name, resolve_api_key, resolve_base_url
from ._openai import DEFAULT_BASE_URL, ENV_KEY, KEY_HINT, classify_openai_error
from ._retry import Failure, RetryPolicy, call_with_retries, one_line
from ._types import EmbeddingsResult

if TYPE_CHECKING:
    import openai

_BATCH = 2048  # the API's limit of inputs per request


class OpenAIEmbeddings(SdkClients):
    """An :class:`~agenteval.llm.Embeddings` model over OpenAI's embeddings endpoint.

    Use it with :class:`~agenteval.assertions.StringSimilarity`; ``base_url`` points it at
    any OpenAI-compatible server (vLLM, Ollama, ...). Transient errors are retried with the
    same :class:`~agenteval.llm.RetryPolicy` as chat models. Example::

        embeddings = OpenAIEmbeddings("text-embedding-3-small")
        vectors = embeddings.embed(["refund issued", "money returned"])
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._model = model
        self._base_url = resolve_base_url(base_url, "OPENAI_BASE_URL", "OpenAIEmbeddings")
        self._name = openai_name(model, self._base_url)
        self._api_key = resolve_api_key(api_key, ENV_KEY, "OpenAIEmbeddings", self._base_url)
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        # Import the SDK now rather than at the first call: forked children inherit it.
        import openai

        self._client_class = openai.OpenAI
        self._clients: ForkSafeClient[openai.OpenAI] = ForkSafeClient(self._new_client)

    _sdk_name = "openai"
    _default_base_url = DEFAULT_BASE_URL

    def __repr__(self) -> str:
        return f"OpenAIEmbeddings({self._model!r})"

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order (no request for an empty list)."""
        return self.embed_with_usage(texts).vectors

    def embed_with_usage(self, texts: list[str]) -> EmbeddingsResult:
        """:meth:`embed`, with the tokens the server counted and the retries it took.

        The response cache calls this (rather than :meth:`embed`) so that reports show
        embedding usage. A :class:`~agenteval.ProviderError` carries the retries of every
        batch sent so far.
        """
        vectors: list[list[float]] = []
        usage, retries = Usage(), 0
        for start in range(0, len(texts), _BATCH):
            try:
                batch, batch_usage, batch_retries = self._embed_batch(texts[start : start + _BATCH])
            except ProviderError as exc:
                exc.retries += retries
                raise
            vectors.extend(batch)
            usage = usage + batch_usage
            retries += batch_retries
        return EmbeddingsResult(vectors, usage, retries)

    def _twin(self, server: str) -> OpenAIEmbeddings:
        from . import _rehearsal

        return OpenAIEmbeddings(
            self._model,
            api_key=_rehearsal.KEY,
            base_url=f"{server}/v1",
            timeout=_rehearsal.TIMEOUT,
            retry=RetryPolicy(max_attempts=1),
        )

    def _rehearse(self, asynchronous: bool) -> None:
        from ._rehearsal import rounds

        if asynchronous:
            return  # embeddings have no async path
        for _ in rounds():
            self.embed_with_usage(["a rehearsal", "of an embeddings call"])

    def _embed_batch(self, texts: list[str]) -> tuple[list[list[float]], Usage, int]:
        client = self._clients.get()
        timeout = self._timeout

        def classify(exc: BaseException) -> Failure | None:
            return classify_openai_error(exc, timeout)

        response, retries = call_with_retries(
            lambda: client.embeddings.create(
                model=self._model, input=texts, encoding_format="float"
            ),
            classify=classify,
            policy=self._retry,
            label=self.name,
            secrets=[self._api_key],
            key_hint=KEY_HINT,
        )
        return self._read(response, len(texts)), _input_tokens(response), retries

    def _read(self, response: object, count: int) -> list[list[float]]:
        """The vectors of an embeddings response, in the order of the texts sent."""
        from openai.types import CreateEmbeddingResponse

        if not isinstance(response, CreateEmbeddingResponse):  # a web page, say
            raise ProviderRequestError(
                f"{self.name} answered with {one_line(repr(response), 80)}, not an embeddings "
                "response: check that base_url points at an OpenAI-compatible API (its /v1)"
            )
        data = response.data
        if not isinstance(data, list):
            raise self._malformed(f"its data is {one_line(repr(data), 60)}, not a list")
        vectors: dict[int, list[float]] = {}
        for item in data:
            index = getattr(item, "index", None)
            if isinstance(index, bool) or not isinstance(index, int):
                raise self._malformed(f"an embedding has the index {index!r}")
            vectors[index] = self._vector(getattr(item, "embedding", None), index)
        if len(data) != count:
            raise ProviderRequestError(
                f"{self.name} returned {len(data)} embeddings for {count} texts: check that "
                "the server implements the OpenAI embeddings API"
            )
        if sorted(vectors) != list(range(count)):
            indexes = [item.index for item in data]
            raise self._malformed(
                f"the indexes of {count} embeddings are {one_line(repr(indexes), 60)}, not 0 "
                f"to {count - 1}"
            )
        return [vectors[i] for i in range(count)]

    def _vector(self, embedding: object, index: int) -> list[float]:
        if isinstance(embedding, str):  # base64, though encoding_format="float" was sent
            raise self._malformed(
                f"embedding {index} is text, not a list of numbers (base64? "
                "encoding_format='float' was asked for)"
            )
        if not isinstance(embedding, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in embedding
        ):
            raise self._malformed(
                f"embedding {index} is {one_line(repr(embedding), 60)}, not a list of numbers"
            )
        return [float(x) for x in embedding]

    def _malformed(self, what: str) -> ProviderRequestError:
        return ProviderRequestError(
            f"{self.name} returned a malformed embeddings response ({what}): check that the "
            "server implements the OpenAI embeddings API"
        )


def _input_tokens(response: object) -> Usage:
    """The tokens the server counted; what is not a count is 0 (the vectors are still good)."""
    tokens = getattr(getattr(response, "usage", None), "prompt_tokens", None)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        tokens = 0
    return Usage(input_tokens=tokens)
