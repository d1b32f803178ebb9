"""Rehearsing, in the parent of forked items, the calls each item's models will make.

A forked child runs the SDK's request path cold: the SDK resolves the type hints of its
request parameters (``eval`` of string annotations, cached, but in the child's own copy
of the cache), CPython specialises the bytecode of every function on the path (writing
to the code objects, so every page they sit on is copied), and the connection pool, the
HTTP parser and the response models meet their first request. Measured here, a judge's
call cost a forked child about 29 ms of CPU and 2,700 page faults, against about 6 ms for
the same call in a warm process.

So before the first fork, each SDK-backed model class makes a few calls of the kinds
items make (plain text, structured output, tools, a tool result) through a model of
agenteval's own class with the same settings (``SdkClients._twin``), pointed at a
:class:`~agenteval.testing.FakeProvider` on ``127.0.0.1`` that is stopped again before
anything is forked. The children inherit the warm caches and code: the same
call then costs them about 13 ms and 1,650 faults. A rehearsal never reaches a provider,
is not counted in any usage or report, runs none of the user's code, and one that fails
only leaves its children cold. It is skipped where a tracing package instrumented the SDK
(it would report the rehearsal's calls as the user's) and with ``AGENTEVAL_REHEARSAL=0``.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import types
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _loops

if TYPE_CHECKING:
    from ..testing._fake_provider import FakeReply, RecordedRequest
    from ._client import SdkClients

ROUNDS = 3
"""Calls of each kind per model class: CPython specialises a function after a few calls."""

TIMEOUT = 2.0
"""Seconds a rehearsal call may take (the local server answers in milliseconds)."""

BUDGET = 3.0
"""Seconds after which a model's rehearsal starts no further round (a machine under load)."""

KEY = "sk-agenteval-rehearsal"
"""The API key a rehearsal sends (to the local fake provider only)."""

SWITCH = "AGENTEVAL_REHEARSAL"
"""Set to ``0`` to turn rehearsals off."""

_TEXT, _STRUCTURED, _TOOL = "[rehearsal:text]", "[rehearsal:structured]", "[rehearsal:tool]"
_TOOL_NAME = "rehearsal_lookup"
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "score": {"type": "number"}},
    "required": ["reasoning", "score"],
    "additionalProperties": False,
}

# What the rehearsal goes through, per SDK: a tracing package that instruments the SDK
# replaces one of these, and would report the rehearsal's calls as the user's own.
_ENTRY_POINTS = {
    "openai": (
        "resources.chat.completions.Completions.create",
        "resources.chat.completions.AsyncCompletions.create",
        "resources.embeddings.Embeddings.create",
        "_base_client.SyncAPIClient.request",
        "_base_client.AsyncAPIClient.request",
    ),
    "anthropic": (
        "resources.messages.Messages.create",
        "resources.messages.Messages.stream",
        "resources.messages.AsyncMessages.create",
        "resources.messages.AsyncMessages.stream",
        "_base_client.SyncAPIClient.request",
        "_base_client.AsyncAPIClient.request",
    ),
}
# Tracing packages that patch below those (the HTTP client, say), or at first use.
_TRACERS = (
    "agentops",
    "braintrust",
    "ddtrace",
    "langfuse",
    "langsmith.wrappers",
    "logfire",
    "openinference.instrumentation",
    "openlit",
    "opentelemetry.instrumentation",
    "sentry_sdk.integrations.anthropic",
    "sentry_sdk.integrations.openai",
    "traceloop",
    "weave",
)

_rehearsed: set[tuple[type, bool]] = set()


def rehearse(models: list[SdkClients], asynchronous: bool = False) -> dict[str, str | None]:
    """Rehearse the calls of each class of ``models`` not rehearsed in this process yet:
    the sync calls, and the async ones (``acomplete``, on a loop as agenteval runs one)
    too if ``asynchronous``.

    Returns each rehearsed class's name with ``None``, or why its rehearsal ended or did
    not happen (the run goes on either way: its children start cold).
    """
    todo: dict[type[SdkClients], tuple[SdkClients, list[bool]]] = {}
    for model in models:
        cls = own_class(model)
        kinds = [kind for kind in (False, asynchronous) if (cls, kind) not in _rehearsed]
        if kinds and cls not in todo:
            todo[cls] = (model, sorted(set(kinds)))
    if not todo:
        return {}
    for cls in todo:
        _rehearsed.update((cls, kind) for kind in todo[cls][1])
    why = _reason_not_to(todo)
    if why is not None:
        return dict.fromkeys((cls.__name__ for cls in todo), why)
    from ..testing._fake_provider import FakeProvider

    outcome: dict[str, str | None] = {}
    try:
        with FakeProvider(responder=_reply) as fake:
            for cls, (model, kinds) in todo.items():
                outcome[cls.__name__] = _rehearse_one(cls, model, fake.base_url, kinds)
    except Exception as exc:  # no local server (no loopback, no threads left, ...)
        return dict.fromkeys((cls.__name__ for cls in todo), _failure(exc))
    return outcome


def own_class(model: SdkClients) -> type[SdkClients]:
    """agenteval's class ``model`` is an instance of: a subclass of yours is rehearsed as
    that class, so a rehearsal runs none of your code (your overrides, say, that log)."""
    return next(c for c in type(model).__mro__ if c.__module__.startswith("agenteval."))


def _rehearse_one(
    cls: type[SdkClients], model: SdkClients, server: str, kinds: list[bool]
) -> str | None:
    twin = cls._twin(model, server)  # agenteval's own class, with the model's settings
    twin._trust_env = False  # no proxy between it and 127.0.0.1
    try:
        for asynchronous in kinds:
            twin._rehearse(asynchronous)
    except Exception as exc:
        return _failure(exc)
    finally:
        twin.close()
    return None


class Failure(str):
    """Why a rehearsal failed (the other reasons are choices: turned off, a tracer)."""


def _failure(exc: Exception) -> Failure:
    return Failure(f"{type(exc).__name__}: {exc}")


def _reason_not_to(todo: dict[type[SdkClients], tuple[SdkClients, list[bool]]]) -> str | None:
    """Why not to rehearse now (``None``: go ahead)."""
    if os.environ.get(SWITCH, "").strip() == "0":
        return f"turned off ({SWITCH}=0)"
    for name in _TRACERS:
        if name in sys.modules:
            return f"skipped: {name} is loaded, and would trace the rehearsal"
    for cls in todo:
        sdk = sys.modules.get(cls._sdk_name)
        patched = _patched(sdk) if sdk is not None else None
        if patched is not None:
            return f"skipped: {patched} is not the SDK's own (instrumented?)"
    return None


def _patched(sdk: types.ModuleType) -> str | None:
    """The first of ``sdk``'s entry points that something replaced, if any."""
    root = Path(sdk.__file__ or "").parent
    for path in _ENTRY_POINTS.get(sdk.__name__, ()):
        *owner_path, attr = path.split(".")
        owner: Any = sdk
        try:
            for part in owner_path:
                owner = getattr(owner, part)
            fn = inspect.getattr_static(owner, attr)
        except AttributeError:
            continue  # another SDK version: nothing to compare
        code = getattr(fn, "__code__", None)
        if type(fn) is not types.FunctionType or code is None:
            return f"{sdk.__name__}.{path}"
        if not Path(code.co_filename).is_relative_to(root):
            return f"{sdk.__name__}.{path}"
    return None


def rehearse_chat(model: Any, asynchronous: bool) -> None:
    """A chat model's rehearsal: :data:`ROUNDS` of :func:`chat_requests`, through
    ``complete``, or ``acomplete`` on a loop agenteval owns."""
    if asynchronous:
        _run_on_own_loop(lambda: _arehearse_chat(model))
        return
    for _ in rounds():
        for request in chat_requests():
            model.complete(request)


async def _arehearse_chat(model: Any) -> None:
    for _ in rounds():
        for request in chat_requests():
            await model.acomplete(request)


def rounds() -> Iterator[int]:
    """:data:`ROUNDS` rounds, fewer once :data:`BUDGET` seconds have gone."""
    end = time.monotonic() + BUDGET
    for i in range(ROUNDS):
        if i and time.monotonic() > end:
            return
        yield i


def _run_on_own_loop(calls: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``calls()`` on a loop agenteval owns, as items' async calls run, then close it."""
    import asyncio

    loop = _loops.own(asyncio.new_event_loop())
    try:
        loop.run_until_complete(calls())
    finally:
        loop.run_until_complete(_loops.release())
        loop.close()


def chat_requests() -> list[Any]:
    """The requests a chat model rehearses: the kinds judges, simulators and agents send."""
    from ..trajectory._messages import Message, ToolCall
    from ._types import ModelRequest, ToolSpec

    tool = ToolSpec(
        name=_TOOL_NAME,
        description="Look an order up.",
        parameters={"type": "object", "properties": {"order_id": {"type": "string"}}},
    )
    call = ToolCall(id="call_rehearsal", name=_TOOL_NAME, inputs={"order_id": "1"})
    system = "You are rehearsing."
    return [
        ModelRequest(messages=[Message.user(_TEXT)], system=system, temperature=0.0),
        ModelRequest(
            messages=[Message.user(_STRUCTURED)],
            system=system,
            json_schema=_SCHEMA,
            schema_name="verdict",
        ),
        ModelRequest(messages=[Message.user(_TOOL)], system=system, tools=[tool]),
        ModelRequest(
            messages=[
                Message.user(_TOOL),
                Message.assistant("", [call]),
                Message.tool(call.id, _TEXT),
            ],
            system=system,
            tools=[tool],
        ),
    ]


def _reply(request: RecordedRequest) -> FakeReply:
    from ..testing._fake_provider import FakeProvider

    if request.api == "embeddings":
        return FakeProvider.embeddings()
    body = request.body
    last = max((_TEXT, _STRUCTURED, _TOOL), key=lambda marker: body.rfind(marker.encode()))
    if last == _STRUCTURED:
        return FakeProvider.structured({"reasoning": "Rehearsed.", "score": 1.0})
    if last == _TOOL:
        return FakeProvider.tool_call(_TOOL_NAME, {"order_id": "1"})
    return FakeProvider.text("Rehearsed.")
