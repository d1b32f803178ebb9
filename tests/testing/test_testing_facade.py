"""The agenteval.testing facade."""

from __future__ import annotations

import agenteval.testing as testing


def test_testing_facade_exports_its_names() -> None:
    assert testing.__all__ == [
        "FakeProvider",
        "FakeReply",
        "RecordedRequest",
        "ScriptExhaustedError",
        "ScriptedModel",
        "fake_provider",
    ]


def test_fake_provider_fixture_is_registered_for_this_repo(
    fake_provider: testing.FakeProvider,
) -> None:
    fake_provider.add("ok")

    assert fake_provider.pending == 1
    assert fake_provider.base_url.startswith("http://127.0.0.1:")
