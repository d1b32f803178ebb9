"""The event loops agenteval runs and closes itself, and what their calls may share.

An async SDK client (its connection pool) belongs to the event loop it was first used
in. On a loop a caller made, a model call therefore builds a client for that call only:
the caller may run every call in a fresh loop, and nobody would close a shared client
before its loop goes. The loops agenteval makes (the async executor's, and the one that
drives async evaluators in sequential and forked runs) are closed by agenteval, which
first closes what was bound to them (:func:`release`), so calls on them share one
client per model: no client to build and, above all, no new connection per call.
"""

from __future__ import annotations

import os
import sys
import weakref
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop

L = TypeVar("L", bound="AbstractEventLoop")

_owned: weakref.WeakKeyDictionary[AbstractEventLoop, int] = weakref.WeakKeyDictionary()


def own(loop: L) -> L:
    """Mark ``loop`` as one agenteval closes (after :func:`release`); returns it."""
    _owned[loop] = os.getpid()
    return loop


def owned(loop: AbstractEventLoop) -> bool:
    """Whether this process made ``loop`` and will :func:`release` it (a forked child's
    copy of its parent's loop is not: what is bound to it belongs to the parent)."""
    return _owned.get(loop) == os.getpid()


async def release() -> None:
    """Close what calls bound to the running loop, before agenteval closes the loop."""
    clients = sys.modules.get("agenteval.llm._client")
    if clients is not None:
        await clients.close_loop_clients()
