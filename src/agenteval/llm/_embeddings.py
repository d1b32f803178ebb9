"""``OpenAIEmbeddings``: the ``Embeddings`` protocol over the ``openai`` SDK."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import ProviderError, ProviderRequestError
from .._usage import Usage
from ._client import ForkSafeClient, SdkClients, openai_name, resolve_api_key, resolve_base_url
from ._openai import DEFAULT_BASE_URL, ENV_KEY, KEY_HINT, classify_openai_error
from ._retry import Failure, RetryPolicy, call_with_retries
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
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise ProviderRequestError(
                f"{self.name} returned {len(data)} embeddings for {len(texts)} texts: check "
                "that the server implements the OpenAI embeddings API"
            )
        tokens = getattr(response.usage, "prompt_tokens", None) or 0
        vectors = [[float(x) for x in item.embedding] for item in data]
        return vectors, Usage(input_tokens=tokens), retries
