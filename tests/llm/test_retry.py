"""RetryPolicy and the retry loop, with a scripted classifier (no HTTP)."""

from __future__ import annotations

import asyncio
import email.utils
from collections.abc import Callable

import pytest

from agenteval._errors import (
    ProviderAuthError,
    ProviderQuotaError,
    ProviderRequestError,
    ProviderUnavailableError,
    UsageError,
)
from agenteval.llm import RetryPolicy
from agenteval.llm._retry import (
    Failure,
    acall_with_retries,
    call_with_retries,
    one_line,
    parse_retry_after,
)


class Flaky(Exception):
    """A scripted provider failure."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.summary)
        self.failure = failure


def classify(exc: BaseException) -> Failure | None:
    return exc.failure if isinstance(exc, Flaky) else None


def script(*outcomes: Failure | str) -> Callable[[], str]:
    remaining = list(outcomes)

    def call() -> str:
        outcome = remaining.pop(0)
        if isinstance(outcome, Failure):
            raise Flaky(outcome)
        return outcome

    return call


BUSY = Failure("transient", "HTTP 429 rate_limit_error: slow down")


def test_retry_policy_defaults() -> None:
    policy = RetryPolicy()

    assert (
        policy.max_attempts,
        policy.base_delay,
        policy.max_delay,
        policy.max_total_wait,
        policy.jitter,
    ) == (5, 0.5, 30.0, 120.0, True)


def test_retry_policy_backoff_doubles_up_to_max_delay() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=False)

    assert [policy.backoff(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_retry_policy_jitter_stays_within_half_to_full_backoff() -> None:
    policy = RetryPolicy(base_delay=2.0)

    delays = [policy.backoff(2) for _ in range(200)]

    assert all(2.0 <= d <= 4.0 for d in delays)
    assert len(set(delays)) > 1


def test_retry_policy_server_hint_wins_even_beyond_max_delay() -> None:
    policy = RetryPolicy(max_delay=10.0)

    assert (policy.wait_before(1, 3.5), policy.wait_before(1, 99.0)) == (3.5, 99.0)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_attempts", 0, "RetryPolicy(max_attempts=0) is invalid: use 1 or more"),
        ("base_delay", -1, "RetryPolicy(base_delay=-1) is invalid: use 0 or more"),
        ("max_total_wait", -0.5, "RetryPolicy(max_total_wait=-0.5) is invalid: use 0 or more"),
    ],
)
def test_retry_policy_rejects_bad_values(field: str, value: float, message: str) -> None:
    with pytest.raises(UsageError) as info:
        RetryPolicy(**{field: value})  # type: ignore[arg-type]

    assert str(info.value) == message


def test_parse_retry_after_prefers_milliseconds() -> None:
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5


def test_parse_retry_after_reads_seconds_and_dates() -> None:
    date = email.utils.formatdate(1_000_030, usegmt=True)

    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": date}, now=1_000_000) == 30.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_one_line_collapses_and_cuts() -> None:
    assert one_line("a\n  b\tc") == "a b c"
    assert one_line("x" * 20, limit=10) == "xxxxxxx..."


def test_call_with_retries_counts_retries_and_records_waits() -> None:
    waits: list[float] = []
    policy = RetryPolicy(jitter=False, sleep=waits.append)

    result = call_with_retries(
        script(BUSY, Failure("transient", "x", retry_after=4.0), BUSY, "done"),
        classify=classify,
        policy=policy,
        label="fake:model",
    )

    assert result == ("done", 3)
    assert waits == [0.5, 4.0, 2.0]


def test_call_with_retries_stops_at_the_total_wait_budget() -> None:
    waits: list[float] = []
    policy = RetryPolicy(base_delay=0.8, max_total_wait=1.0, jitter=False, sleep=waits.append)

    with pytest.raises(ProviderUnavailableError) as info:
        call_with_retries(
            script(BUSY, BUSY, BUSY, "never"), classify=classify, policy=policy, label="fake:m"
        )

    assert waits == [0.8, pytest.approx(0.2)]
    assert str(info.value) == (
        "fake:m still failing after 3 attempts and 1.0s of waiting (HTTP 429 "
        "rate_limit_error: slow down): retry later or raise RetryPolicy(max_attempts=..., "
        "max_total_wait=...)"
    )


def test_call_with_retries_single_attempt_message_is_singular() -> None:
    policy = RetryPolicy(max_attempts=1)

    with pytest.raises(ProviderUnavailableError, match=r"after 1 attempt and 0\.0s"):
        call_with_retries(script(BUSY), classify=classify, policy=policy, label="fake:m")


@pytest.mark.parametrize(
    ("kind", "error"),
    [("auth", ProviderAuthError), ("request", ProviderRequestError), ("quota", ProviderQuotaError)],
)
def test_call_with_retries_final_errors_are_not_retried(kind: str, error: type) -> None:
    waits: list[float] = []
    failure = Failure(kind, "HTTP 4xx")  # type: ignore[arg-type]

    with pytest.raises(error):
        call_with_retries(
            script(failure, "never"),
            classify=classify,
            policy=RetryPolicy(sleep=waits.append),
            label="fake:m",
        )

    assert waits == []


def test_call_with_retries_redacts_secrets_from_messages() -> None:
    secret = "sk-very-secret-value"
    failure = Failure("auth", f"HTTP 401: bad key {secret}")

    with pytest.raises(ProviderAuthError) as info:
        call_with_retries(
            script(failure),
            classify=classify,
            policy=RetryPolicy(),
            label="fake:m",
            secrets=[secret, None],
            key_hint="FAKE_KEY",
        )

    assert str(info.value) == (
        "fake:m rejected the credentials (HTTP 401: bad key [REDACTED]): check FAKE_KEY; "
        "authentication errors are not retried"
    )


def test_call_with_retries_lets_other_exceptions_through() -> None:
    def boom() -> str:
        raise KeyError("not a provider error")

    with pytest.raises(KeyError):
        call_with_retries(boom, classify=classify, policy=RetryPolicy(), label="fake:m")


def test_acall_with_retries_waits_with_async_sleep() -> None:
    waits: list[float] = []

    async def record(delay: float) -> None:
        waits.append(delay)

    outcomes = script(BUSY, "done")

    async def call() -> str:
        return outcomes()

    result = asyncio.run(
        acall_with_retries(
            call,
            classify=classify,
            policy=RetryPolicy(jitter=False, async_sleep=record),
            label="fake:m",
        )
    )

    assert (result, waits) == (("done", 1), [0.5])


def test_call_with_retries_honours_a_retry_after_longer_than_max_delay() -> None:
    waits: list[float] = []
    policy = RetryPolicy(max_delay=30.0, max_total_wait=120.0, sleep=waits.append)

    result = call_with_retries(
        script(Failure("transient", "HTTP 429", retry_after=60.0), "done"),
        classify=classify,
        policy=policy,
        label="fake:m",
    )

    assert (result, waits) == (("done", 1), [60.0])


def test_call_with_retries_gives_up_at_once_when_retry_after_exceeds_the_budget() -> None:
    waits: list[float] = []
    policy = RetryPolicy(max_total_wait=30.0, jitter=False, sleep=waits.append)

    with pytest.raises(ProviderUnavailableError) as info:
        call_with_retries(
            script(BUSY, Failure("transient", "HTTP 429 rate_limit_error", 60.0), "never"),
            classify=classify,
            policy=policy,
            label="fake:m",
        )

    assert waits == [0.5]
    assert info.value.retries == 1
    assert str(info.value) == (
        "fake:m gave up after 2 attempts (HTTP 429 rate_limit_error): the server asked to "
        "wait 60s, beyond the retry budget (29.5s left of max_total_wait=30s); retry later "
        "or raise RetryPolicy(max_total_wait=...)"
    )


def test_call_with_retries_records_its_retries_on_the_final_error() -> None:
    policy = RetryPolicy(max_attempts=3, sleep=lambda _: None)

    with pytest.raises(ProviderUnavailableError) as exhausted:
        call_with_retries(script(BUSY, BUSY, BUSY), classify=classify, policy=policy, label="m")
    with pytest.raises(ProviderAuthError) as auth:
        call_with_retries(
            script(BUSY, Failure("auth", "HTTP 401")), classify=classify, policy=policy, label="m"
        )

    assert (exhausted.value.retries, auth.value.retries) == (2, 1)


def test_acall_with_retries_records_its_retries_on_the_final_error() -> None:
    async def no_wait(delay: float) -> None:
        return None

    outcomes = script(BUSY, BUSY)

    async def call() -> str:
        return outcomes()

    with pytest.raises(ProviderUnavailableError) as info:
        asyncio.run(
            acall_with_retries(
                call,
                classify=classify,
                policy=RetryPolicy(max_attempts=2, async_sleep=no_wait),
                label="fake:m",
            )
        )

    assert info.value.retries == 1


def test_a_url_the_sdk_cannot_call_is_a_request_error_at_once() -> None:
    import openai

    from agenteval.llm._openai import classify_openai_error

    client = openai.OpenAI(api_key="sk-test", base_url="ftp://127.0.0.1/v1", max_retries=0)
    sleeps: list[float] = []

    def call() -> object:
        return client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )

    with pytest.raises(ProviderRequestError) as info:
        call_with_retries(
            call,
            classify=lambda exc: classify_openai_error(exc, 60.0),
            policy=RetryPolicy(sleep=sleeps.append),
            label="openai-compatible:m@ftp://127.0.0.1/v1",
        )
    client.close()

    assert str(info.value) == (
        "openai-compatible:m@ftp://127.0.0.1/v1 cannot call its base URL (UnsupportedProtocol: "
        "Request URL has an unsupported protocol 'ftp://'.): check base_url (or the *_BASE_URL "
        "variable) for an http:// or https:// URL with a valid host and port; configuration "
        "errors are not retried"
    )
    assert (info.value.retries, sleeps) == (0, [])
