"""Offline doubles for tests: a scripted in-process model and a fake provider HTTP server."""

from ._fake_provider import FakeProvider, FakeReply, RecordedRequest
from ._pytest_fixture import fake_provider
from ._scripted import ScriptedModel, ScriptExhaustedError

__all__ = [
    "FakeProvider",
    "FakeReply",
    "RecordedRequest",
    "ScriptExhaustedError",
    "ScriptedModel",
    "fake_provider",
]
