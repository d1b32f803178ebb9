"""``ScriptedModel``: an in-process model double that replays scripted replies."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..llm._types import ModelRequest, ModelResponse
from ..trajectory._messages import ToolCall

_M = TypeVar("_M", bound=BaseModel)

ScriptedReply = str | ModelResponse | Mapping[str, Any] | Callable[[ModelRequest], Any]
"""A scripted reply: assistant text, a response, a dict of response fields, or a callable."""


class ScriptExhaustedError(AssertionError):
    """A :class:`ScriptedModel` received more requests than it has replies."""


class ScriptedModel:
    """A :class:`~agenteval.llm.Model` that returns scripted replies in order, offline.

    For fast unit tests of agents, judges and simulated users::

        model = ScriptedModel([
            {"tool_calls": [{"name": "search_orders", "inputs": {"order_id": "123"}}]},
            "Order 123 was delivered yesterday.",
        ])

    Each reply is a string (assistant text), a :class:`~agenteval.llm.ModelResponse`, a dict
    of its fields (``text``, ``tool_calls``, ``structured``, ``usage``, ...; tool calls may
    omit ``id``), or a callable that receives the request and returns any of these.
    Replies are checked when the model is built: an unknown key (``tool_call`` for
    ``tool_calls``) is a ``ValueError`` naming the reply, not a silently empty reply.
    Running out of replies raises :class:`ScriptExhaustedError`. ``requests`` holds every
    request received.

    It is never served from (nor stored in) the response cache: the script is not part of
    the cache key, so a re-run with a changed script would replay old replies.
    ``cacheable=True`` opts in, for tests of the cache itself.
    """

    def __init__(
        self,
        replies: Iterable[ScriptedReply],
        *,
        name: str = "scripted:model",
        cacheable: bool = False,
    ) -> None:
        self._replies = [
            reply if callable(reply) else _to_response(reply, name, n)
            for n, reply in enumerate(replies)
        ]
        self._name = name
        self.cacheable = cacheable
        self._lock = threading.Lock()
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        """The name given at construction (part of cache keys)."""
        return self._name

    @property
    def remaining(self) -> int:
        """Replies not yet consumed."""
        return len(self._replies) - len(self.requests)

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Return the next scripted reply for ``request``."""
        with self._lock:
            n = len(self.requests)
            self.requests.append(request)
            if n >= len(self._replies):
                raise ScriptExhaustedError(
                    f"ScriptedModel {self._name!r} ran out of replies: request #{n + 1} "
                    f"but only {len(self._replies)} scripted (one built in set_up serves "
                    f"every item of a run that runs them one after another: script a reply "
                    f"for each, or build it in run)"
                )
            reply: Any = self._replies[n]
        if callable(reply) and not isinstance(reply, ModelResponse):
            reply = reply(request)
        return _to_response(reply, self._name, n)

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        """Async form of :meth:`complete`."""
        return self.complete(request)


def _to_response(reply: Any, model: str, n: int) -> ModelResponse:
    if isinstance(reply, ModelResponse):
        return reply
    if isinstance(reply, str):
        return ModelResponse(text=reply, model=model, stop_reason="end_turn")
    if isinstance(reply, Mapping):
        where = f"ScriptedModel reply #{n + 1}"
        fields = dict(reply)
        _check_keys(where, fields, ModelResponse.model_fields)
        calls = []
        for i, call in enumerate(fields.pop("tool_calls", []) or []):
            if isinstance(call, ToolCall):
                calls.append(call)
                continue
            if not isinstance(call, Mapping):
                raise TypeError(
                    f"{where}: tool call #{i + 1} must be a dict or ToolCall, "
                    f"got {type(call).__name__}"
                )
            call = dict(call)
            call_where = f"{where}, tool call #{i + 1}"
            _check_keys(call_where, call, ToolCall.model_fields)
            call.setdefault("id", f"call_{n}_{i}")
            calls.append(_build(call_where, ToolCall, call))
        fields.setdefault("model", model)
        fields.setdefault("stop_reason", "tool_use" if calls else "end_turn")
        return _build(where, ModelResponse, {"tool_calls": calls, **fields})
    raise TypeError(
        f"ScriptedModel reply #{n + 1} must be a str, dict, ModelResponse or callable, "
        f"got {type(reply).__name__}"
    )


def _check_keys(where: str, fields: Mapping[str, Any], known: Iterable[str]) -> None:
    unknown = [key for key in fields if key not in known]
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} (known keys: {', '.join(known)})")


def _build(where: str, cls: type[_M], fields: dict[str, Any]) -> _M:

    try:
        return cls(**fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise ValueError(f"{where}: {field}: {error['msg']}") from None
