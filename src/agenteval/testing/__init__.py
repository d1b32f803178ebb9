"""Offline doubles for tests: a scripted in-process model and a fake provider HTTP server.

Names are imported on first use (PEP 562): an evaluator that only needs
:class:`ScriptedModel` does not load the HTTP server, nor pytest for the fixture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._fake_provider import FakeProvider, FakeReply, RecordedRequest
    from ._pytest_fixture import fake_provider
    from ._scripted import ScriptedModel, ScriptExhaustedError

_WHERE = {
    "FakeProvider": "._fake_provider",
    "FakeReply": "._fake_provider",
    "RecordedRequest": "._fake_provider",
    "ScriptExhaustedError": "._scripted",
    "ScriptedModel": "._scripted",
    "fake_provider": "._pytest_fixture",
}

__all__ = [
    "FakeProvider",
    "FakeReply",
    "RecordedRequest",
    "ScriptExhaustedError",
    "ScriptedModel",
    "fake_provider",
]


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
