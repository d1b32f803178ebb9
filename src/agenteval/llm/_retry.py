"""The one layer that retries provider calls: backoff, ``retry-after``, and fail-fast errors.

The SDKs are built with ``max_retries=0`` so that attempts never multiply; every provider
call goes through :func:`call_with_retries` (or its async twin). A provider module supplies
a *classifier* that turns an SDK exception into a :class:`Failure` saying whether the error
is transient (retry it) or final (auth, request, quota: raise at once).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from .._errors import (
    ProviderAuthError,
    ProviderError,
    ProviderQuotaError,
    ProviderRequestError,
    ProviderUnavailableError,
    UsageError,
)
from .._redact import Redactor

T = TypeVar("T")

FailureKind = Literal["transient", "auth", "request", "quota"]


@dataclass(frozen=True)
class RetryPolicy:
    """How transient provider errors are retried: attempts, backoff and a total wait budget.

    Retried: HTTP 429 (rate limits), 5xx, Anthropic 529 / ``overloaded_error`` (also inside
    a 200 stream), timeouts and connection errors. The wait before retry *n* is
    ``base_delay * 2**(n-1)`` capped at ``max_delay`` (times a random factor in [0.5, 1]
    with ``jitter``), unless the server sent ``retry-after-ms`` / ``retry-after``: that is
    the server's instruction and is honoured in full, even beyond ``max_delay``. Waits
    never add up to more than ``max_total_wait``; when the server asks for a wait longer
    than what is left of it, the call gives up at once (retrying earlier would only fail
    again). Never retried: 400/401/403/404 and quota errors.

    ``sleep`` / ``async_sleep`` do the waiting; tests inject recorders::

        waits: list[float] = []
        policy = RetryPolicy(max_attempts=3, sleep=waits.append)
        assert policy.max_attempts == 3
    """

    max_attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_total_wait: float = 120.0
    jitter: bool = True
    sleep: Callable[[float], object] = field(default=time.sleep, compare=False, repr=False)
    async_sleep: Callable[[float], Awaitable[object]] = field(
        default=asyncio.sleep, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise UsageError(
                f"RetryPolicy(max_attempts={self.max_attempts!r}) is invalid: use 1 or more"
            )
        for name in ("base_delay", "max_delay", "max_total_wait"):
            value = getattr(self, name)
            if value < 0:
                raise UsageError(f"RetryPolicy({name}={value!r}) is invalid: use 0 or more")

    def backoff(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1 for the first) without a server hint."""
        delay = min(self.max_delay, self.base_delay * 2.0 ** min(retry - 1, 60))
        if self.jitter:
            delay *= random.uniform(0.5, 1.0)
        return delay

    def wait_before(self, retry: int, retry_after: float | None) -> float:
        """The wait before retry ``retry``: the server's ``retry_after`` in full, else backoff."""
        if retry_after is not None:
            return max(retry_after, 0.0)
        return self.backoff(retry)


@dataclass(frozen=True)
class Failure:
    """What a classifier decided about one failed attempt.

    ``summary`` is a short, one-line description of the error (status, type, message) that
    goes into the final exception message; ``retry_after`` is the server's hint in seconds.
    ``explained``, for a final error that is not the server's verdict on the request (a
    URL that cannot be called, a reply of the wrong kind), is the message after the
    model's name, in place of the kind's usual one.
    """

    kind: FailureKind
    summary: str
    retry_after: float | None = None
    explained: str | None = None


Classifier = Callable[[BaseException], "Failure | None"]
"""Maps an exception to a :class:`Failure`, or ``None`` for errors that are not the provider's."""


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait according to ``retry-after-ms`` or ``retry-after`` (seconds or date)."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None and (seconds := _seconds(raw_ms)) is not None:
        return max(seconds / 1000.0, 0.0)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    if (seconds := _seconds(raw)) is not None:
        return max(seconds, 0.0)
    parsed = email.utils.parsedate_tz(raw)
    if parsed is None:
        return None
    current = time.time() if now is None else now
    return max(float(email.utils.mktime_tz(parsed)) - current, 0.0)


def _seconds(raw: str) -> float | None:
    """A header's number, if it is a finite one ("nan" and "inf" are not waits)."""
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def root_cause(exc: BaseException) -> str:
    """``"Type: message"`` of the innermost cause of ``exc``, on one short line."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return one_line(f"{type(exc).__name__}: {exc}", 160)


def classify_sdk_error(
    exc: BaseException,
    sdk: Any,
    timeout: float,
    status: Callable[[Any], Failure],
    reading: str,
) -> Failure | None:
    """The part of classifying that the ``anthropic`` and ``openai`` SDKs share: their
    ``APIStatusError`` goes to ``status``; their timeouts and connection errors, and
    httpx's while ``reading`` the body, are transient; anything else is not theirs."""
    import httpx2

    if isinstance(exc, sdk.APIStatusError):
        return status(exc)
    if isinstance(exc, sdk.APITimeoutError):
        return Failure("transient", f"timed out after {timeout:g}s")
    if _bad_url(exc, httpx2):
        return Failure(
            "request",
            root_cause(exc),
            explained=(
                f"cannot call its base URL ({root_cause(exc)}): check base_url (or the "
                "*_BASE_URL variable) for an http:// or https:// URL with a valid host and port; "
                "configuration errors are not retried"
            ),
        )
    if isinstance(exc, sdk.APIConnectionError):
        return Failure("transient", f"connection error: {root_cause(exc)}")
    if isinstance(exc, httpx2.TimeoutException):
        return Failure("transient", f"timed out after {timeout:g}s while reading {reading}")
    if isinstance(exc, httpx2.TransportError):
        return Failure("transient", f"connection error while reading {reading}: {root_cause(exc)}")
    if isinstance(exc, json.JSONDecodeError):
        if exc.doc.lstrip()[:1] == "<":  # a web page: what a wrong base URL often answers
            return Failure("request", f"{reading} is a web page, not JSON: check the base_url")
        return Failure(  # a 200 whose JSON was cut short, say
            "transient", f"{reading} was not valid JSON ({exc.msg} at character {exc.pos})"
        )
    return None


def _bad_url(exc: BaseException, httpx2: Any) -> bool:
    """Whether ``exc`` (or what caused it) says the URL cannot be called at all: a scheme
    other than http(s), or no valid host or port. Retrying would fail the same way."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (httpx2.UnsupportedProtocol, httpx2.InvalidURL)):
            return True
        seen = seen.__cause__
    return False


def by_status(status: int, summary: str, retry_after: float | None) -> Failure:
    """The verdict an HTTP status alone gives, once provider-specific codes are ruled out."""
    if status in (401, 403):
        return Failure("auth", summary)
    if status == 402:
        return Failure("quota", summary)
    if status in (408, 429) or status >= 500:
        return Failure("transient", summary, retry_after)
    return Failure("request", summary)


@dataclass
class _Attempts:
    """The state of one retried call: how many retries and how long it waited so far."""

    label: str
    policy: RetryPolicy
    redact: Redactor
    key_hint: str
    retries: int = 0
    waited: float = 0.0

    def next_wait(self, failure: Failure) -> float | ProviderError:
        """The wait before the next attempt, or the final error to raise."""
        if failure.kind != "transient":
            return self._final(failure)
        if self.retries + 1 >= self.policy.max_attempts:
            return self._exhausted(failure)
        delay = self.policy.wait_before(self.retries + 1, failure.retry_after)
        remaining = max(self.policy.max_total_wait - self.waited, 0.0)
        if failure.retry_after is not None and delay > remaining:
            return self._beyond_budget(failure, delay, remaining)
        if remaining <= 0 and self.policy.max_total_wait > 0:
            return self._exhausted(failure)
        delay = min(delay, remaining)
        self.retries += 1
        self.waited += delay
        return delay

    def _final(self, failure: Failure) -> ProviderError:
        summary = failure.summary
        if failure.explained is not None:
            final = {"auth": ProviderAuthError, "quota": ProviderQuotaError}.get(
                failure.kind, ProviderRequestError
            )
            return final(self.redact(f"{self.label} {failure.explained}"))
        if failure.kind == "auth":
            return ProviderAuthError(
                self.redact(
                    f"{self.label} rejected the credentials ({summary}): check {self.key_hint}; "
                    "authentication errors are not retried"
                )
            )
        if failure.kind == "quota":
            return ProviderQuotaError(
                self.redact(
                    f"{self.label} is out of quota ({summary}): add credit or raise the "
                    "account's spend limit; quota errors are not retried"
                )
            )
        return ProviderRequestError(
            self.redact(
                f"{self.label} rejected the request ({summary}): check the model name and the "
                "request; client errors are not retried"
            )
        )

    def _beyond_budget(
        self, failure: Failure, asked: float, remaining: float
    ) -> ProviderUnavailableError:
        attempts = self.retries + 1
        budget = self.policy.max_total_wait
        return ProviderUnavailableError(
            self.redact(
                f"{self.label} gave up after {attempts} attempt{'s' if attempts > 1 else ''} "
                f"({failure.summary}): the server asked to wait {asked:g}s, beyond the retry "
                f"budget ({remaining:.1f}s left of max_total_wait={budget:g}s); "
                "retry later or raise RetryPolicy(max_total_wait=...)"
            )
        )

    def _exhausted(self, failure: Failure) -> ProviderUnavailableError:
        attempts = self.retries + 1
        return ProviderUnavailableError(
            self.redact(
                f"{self.label} still failing after {attempts} "
                f"attempt{'s' if attempts > 1 else ''} and {self.waited:.1f}s of waiting "
                f"({failure.summary}): retry later or raise "
                "RetryPolicy(max_attempts=..., max_total_wait=...)"
            )
        )


def _attempts(
    label: str, policy: RetryPolicy, secrets: Iterable[str | None], key_hint: str
) -> _Attempts:
    return _Attempts(label, policy, Redactor([s for s in secrets if s]), key_hint)


def call_with_retries(
    call: Callable[[], T],
    *,
    classify: Classifier,
    policy: RetryPolicy,
    label: str,
    secrets: Iterable[str | None] = (),
    key_hint: str = "the API key",
) -> tuple[T, int]:
    """Run ``call`` until it succeeds, a final error occurs, or the policy gives up.

    Returns the result and the number of retries it took. Exceptions the classifier does
    not recognise propagate unchanged; provider errors become :class:`ProviderError`
    subclasses whose messages never contain any of ``secrets`` and whose ``retries`` say
    how many retries were made before giving up.
    """
    state = _attempts(label, policy, secrets, key_hint)
    while True:
        try:
            return call(), state.retries
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            delay = state.next_wait(failure)
        if isinstance(delay, ProviderError):
            delay.retries = state.retries
            # Never chain the SDK exception: it carries the request, auth header included.
            raise delay from None
        policy.sleep(delay)


async def acall_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    classify: Classifier,
    policy: RetryPolicy,
    label: str,
    secrets: Iterable[str | None] = (),
    key_hint: str = "the API key",
) -> tuple[T, int]:
    """Async form of :func:`call_with_retries` (waits with ``policy.async_sleep``)."""
    state = _attempts(label, policy, secrets, key_hint)
    while True:
        try:
            return await call(), state.retries
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            delay = state.next_wait(failure)
        if isinstance(delay, ProviderError):
            delay.retries = state.retries
            # Never chain the SDK exception: it carries the request, auth header included.
            raise delay from None
        await policy.async_sleep(delay)
