"""Offline doubles for tests: a scripted in-process model and a fake provider HTTP server.

Names are imported on first use (PEP 562): an evaluator that only needs
:class:`ScriptedModel` does not load the HTTP server, nor pytest for the fixture.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._fake_provider import FakeProvider, FakeReply, RecordedRequest
    from ._pytest_fixture import fake_provider
    from ._scripted import ScriptedModel, ScriptExhaustedError

_WHERE = {
    "FakeProvider": "_fake_provider",
    "FakeReply": "_fake_provider",
    "RecordedRequest": "_fake_provider",
    "ScriptExhaustedError": "_scripted",
    "ScriptedModel": "_scripted",
    "fake_provider": "_pytest_fixture",
}

__all__ = [
    "FakeProvider",
    "FakeReply",
    "RecordedRequest",
    "ScriptExhaustedError",
    "ScriptedModel",
    "fake_provider",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'agenteval.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
