"""Rehearsing, in the parent of forked items, the calls each item's models will make.

A forked child runs the SDK's request path cold: the SDK resolves the type hints of its
request parameters (``eval`` of string annotations, cached, but in the child's own copy
of the cache), CPython specialises the bytecode of every function on the path (writing
to the code objects, so every page they sit on is copied), and the connection pool, the
HTTP parser and the response models meet their first request. Measured here, a judge's
call cost a forked child about 29 ms of CPU and 2,700 page faults, against about 6 ms for
the same call in a warm process.

So before the first fork, each SDK-backed model class makes a few calls of the kinds
items make (plain text, structured output, tools, a tool result) through a copy of a
model pointed at a :class:`~agenteval.testing.FakeProvider` on ``127.0.0.1``, stopped
again before anything is forked. The children inherit the warm caches and code: the same
call then costs them about 13 ms and 1,650 faults. A rehearsal never reaches a provider,
is not counted in any usage or report, and one that fails only leaves its children cold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..testing._fake_provider import FakeReply, RecordedRequest
    from ._client import SdkClients

ROUNDS = 3
"""Calls of each kind per model class: CPython specialises a function after a few calls."""

TIMEOUT = 2.0
"""Seconds a rehearsal call may take (the local server answers in milliseconds)."""

_TEXT, _STRUCTURED, _TOOL = "[rehearsal:text]", "[rehearsal:structured]", "[rehearsal:tool]"
_TOOL_NAME = "rehearsal_lookup"
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "score": {"type": "number"}},
    "required": ["reasoning", "score"],
    "additionalProperties": False,
}

_rehearsed: set[tuple[type, bool]] = set()


def rehearse(models: list[SdkClients], asynchronous: bool = False) -> dict[str, str | None]:
    """Rehearse the calls of each class of ``models`` not rehearsed in this process yet:
    the async calls (``acomplete``, on a loop as agenteval runs one) if ``asynchronous``.

    Returns each rehearsed class's name with ``None``, or the error that ended its
    rehearsal (the run goes on either way).
    """
    todo: dict[type, SdkClients] = {}
    for model in models:
        if (own_class(model), asynchronous) not in _rehearsed:
            todo.setdefault(own_class(model), model)
    if not todo:
        return {}
    from ..testing._fake_provider import FakeProvider

    outcome: dict[str, str | None] = {}
    with FakeProvider(responder=_reply) as fake:
        for cls, model in todo.items():
            _rehearsed.add((cls, asynchronous))
            try:
                model._rehearse(fake.base_url, asynchronous)
                outcome[cls.__name__] = None
            except Exception as exc:  # the children stay cold, nothing else
                outcome[cls.__name__] = f"{type(exc).__name__}: {exc}"
    return outcome


def own_class(model: SdkClients) -> type[SdkClients]:
    """agenteval's class ``model`` is an instance of: a subclass of yours is rehearsed as
    that class, so a rehearsal runs none of your code (your overrides, say, that log)."""
    return next(c for c in type(model).__mro__ if c.__module__.startswith("agenteval."))


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
