"""The ``fake_provider`` pytest fixture (a plain generator function when pytest is absent)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ._fake_provider import FakeProvider


def _fake_provider() -> Iterator[FakeProvider]:
    """A running :class:`FakeProvider`, stopped after the test.

    Import it in ``conftest.py`` to use it as a fixture::

        from agenteval.testing import fake_provider as fake_provider
    """
    with FakeProvider() as fake:
        yield fake


fake_provider: Any
try:
    import pytest
except ModuleNotFoundError:  # agenteval.testing also serves tests that do not use pytest
    fake_provider = _fake_provider
else:
    fake_provider = pytest.fixture(name="fake_provider")(_fake_provider)
