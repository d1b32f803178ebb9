"""A model used before a fork builds its own client in the child (the parallel executor forks)."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable

import pytest

from agenteval.llm import AnthropicModel, ModelRequest, OpenAIEmbeddings, OpenAIModel, _openai
from agenteval.llm._client import ForkSafeClient
from agenteval.testing import FakeProvider
from agenteval.trajectory._messages import Message

HI = ModelRequest(messages=[Message.user("Hi")])


def _check_in_child(models: list[AnthropicModel | OpenAIModel], parent: list[object]) -> int:
    for model, parent_client in zip(models, parent, strict=True):
        if model.complete(HI).text != "ok":
            return 1
        if model._clients.get() is parent_client or model._clients.pid != os.getpid():
            return 2
    return 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_models_rebuild_their_client_in_a_forked_child(fake_provider: FakeProvider) -> None:
    fake_provider.respond_with(lambda request: "ok")
    models: list[AnthropicModel | OpenAIModel] = [
        AnthropicModel(
            "c", api_key="sk-ant-test-123456", base_url=fake_provider.anthropic_base_url
        ),
        OpenAIModel("g", api_key="sk-test-123456", base_url=fake_provider.openai_base_url),
    ]
    for model in models:
        model.complete(HI)
    parent = [model._clients.get() for model in models]

    with warnings.catch_warnings():
        # Python 3.12+ warns about fork() while the server thread runs; the child only
        # makes HTTP calls and leaves with os._exit.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 3
        try:
            code = _check_in_child(models, parent)
        finally:
            sys.stdout.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert [model._clients.get() for model in models] == parent
    assert len(fake_provider.requests) == 4
    for model in models:
        model.close()


def test_fork_safe_client_builds_once_per_process() -> None:
    built: list[object] = []

    class Client:
        def close(self) -> None:
            built.append("closed")

    def factory() -> Client:
        client = Client()
        built.append(client)
        return client

    holder = ForkSafeClient(factory)
    assert holder.pid is None
    first = holder.get()

    assert holder.get() is first
    holder.close()
    assert built == [first, "closed"]


@pytest.mark.parametrize(
    ("sdk", "build"),
    [
        ("anthropic", lambda: AnthropicModel("c", api_key="sk-ant-test")),
        ("openai", lambda: OpenAIModel("g", api_key="sk-test")),
        ("openai", lambda: OpenAIEmbeddings("e", api_key="sk-test")),
    ],
)
def test_models_import_their_sdk_when_built_not_at_the_first_call(
    sdk: str, build: Callable[[], object], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A parent that builds its models in set_up thus passes the imported SDK to every child
    # it forks (sys.modules is inherited), instead of each child importing it (about a
    # second) at its first call. With the SDK made unimportable, building must fail.
    monkeypatch.setitem(sys.modules, sdk, None)

    with pytest.raises(ImportError, match=f"import of {sdk} halted"):
        build()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_openai_fallback_learned_by_the_parent_is_used_by_forked_children(
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_openai, "_json_in_prompt_servers", set())
    fake_provider.add(FakeProvider.error(400, "response_format is not supported"))
    fake_provider.respond_with(lambda request: '{"score": 1}')
    request = ModelRequest(messages=[Message.user("Judge")], json_schema={"type": "object"})
    model = OpenAIModel("g", api_key="sk-test-123456", base_url=fake_provider.openai_base_url)
    model.complete(request)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 3
        try:
            code = 0 if model.complete(request).structured == {"score": 1} else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    model.close()

    assert os.waitstatus_to_exitcode(status) == 0
    assert ["response_format" in r.json for r in fake_provider.requests] == [True, False, False]
