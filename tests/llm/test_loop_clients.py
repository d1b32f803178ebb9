"""Async calls share one client per model on the loops agenteval runs, and only there."""

from __future__ import annotations

import asyncio
import os
import warnings
from typing import Any

import pytest

from agenteval import _loops
from agenteval.llm import AnthropicModel, ModelRequest, OpenAIModel, _client
from agenteval.testing import FakeProvider
from agenteval.trajectory._messages import Message

HI = ModelRequest(messages=[Message.user("Hi")])


def _models(fake: FakeProvider) -> list[AnthropicModel | OpenAIModel]:
    return [
        AnthropicModel("c", api_key="sk-ant-test-123456", base_url=fake.anthropic_base_url),
        OpenAIModel("g", api_key="sk-test-123456", base_url=fake.openai_base_url),
    ]


def _count_clients(model: Any, built: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    new = model._new_async_client

    def counting() -> Any:
        client = new()
        built.append(client)
        return client

    monkeypatch.setattr(model, "_new_async_client", counting)


async def _calls(models: list[AnthropicModel | OpenAIModel], n: int) -> list[str]:
    replies = await asyncio.gather(*[m.acomplete(HI) for m in models for _ in range(n)])
    return [r.text for r in replies]


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_calls_on_an_agenteval_loop_share_one_client_closed_with_the_loop(
    kind: str, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_provider.respond_with(lambda request: "ok")
    model = {"anthropic": 0, "openai": 1}[kind]
    models = [_models(fake_provider)[model]]
    built: list[Any] = []
    _count_clients(models[0], built, monkeypatch)

    loop = _loops.own(asyncio.new_event_loop())
    try:
        first = loop.run_until_complete(_calls(models, 5))
        second = loop.run_until_complete(_calls(models, 5))
        assert len(built) == 1 and not built[0].is_closed()
        loop.run_until_complete(_loops.release())
    finally:
        loop.close()

    assert first == second == ["ok"] * 5
    assert built[0].is_closed()
    assert len(fake_provider.requests) == 10


def test_many_calls_in_flight_spread_over_clients_and_models_never_share_one(
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Alike(OpenAIModel):  # equal by value, and unhashable: no matter
        def __eq__(self, other: object) -> bool:
            return isinstance(other, Alike)

    fake_provider.respond_with(lambda request: "ok")
    mine = Alike("g", api_key="sk-test-mine", base_url=fake_provider.openai_base_url)
    theirs = Alike("g", api_key="sk-test-theirs", base_url=fake_provider.openai_base_url)
    built: list[Any] = []
    _count_clients(mine, built, monkeypatch)
    n = 2 * _client.SHARED_CALLS + 1

    loop = _loops.own(asyncio.new_event_loop())
    try:
        replies = loop.run_until_complete(_calls([mine], n))
        loop.run_until_complete(_calls([theirs], 1))
        loop.run_until_complete(_loops.release())
    finally:
        loop.close()

    assert replies == ["ok"] * n
    assert len(built) == 3 and all(client.is_closed() for client in built)
    keys = [r.api_key for r in fake_provider.requests]
    assert keys.count("sk-test-mine") == n and keys[-1] == "sk-test-theirs"


def test_calls_on_a_loop_of_the_callers_own_get_a_client_each_closed_after_it(
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    # asyncio.run() makes a loop per call, and nobody would close a client shared on it
    fake_provider.respond_with(lambda request: "ok")
    models = _models(fake_provider)
    built: list[Any] = []
    for model in models:
        _count_clients(model, built, monkeypatch)

    assert asyncio.run(_calls(models, 3)) == ["ok"] * 6
    assert len(built) == 6
    assert all(client.is_closed() for client in built)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_use_the_clients_of_its_parents_loop(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.respond_with(lambda request: "ok")
    models = _models(fake_provider)
    loop = _loops.own(asyncio.new_event_loop())
    loop.run_until_complete(_calls(models, 1))  # the parent's clients, bound to its loop

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the fake server's thread
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 3
        try:
            code = 0 if not _loops.owned(loop) else 1
            if code == 0:
                child = asyncio.new_event_loop()
                code = 0 if child.run_until_complete(_calls(models, 2)) == ["ok"] * 4 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    loop.run_until_complete(_loops.release())
    loop.close()

    assert os.waitstatus_to_exitcode(status) == 0
    assert len(fake_provider.requests) == 6
