"""The base class of every assertion."""

from __future__ import annotations

from typing import Any

from .._results import AssertionResult


class Assertion:
    """Checks one value and returns an :class:`~agenteval.AssertionResult`.

    Subclass it for a custom check (Neuron's ``AbstractAssertion``). ``evaluate`` must
    *return* a failing result for a value that does not satisfy the check — raise only when
    the check itself cannot run (the item then becomes an error)::

        class GreaterThan(Assertion):
            def __init__(self, threshold: float) -> None:
                self.threshold = threshold

            def evaluate(self, actual: object) -> AssertionResult:
                if not isinstance(actual, (int, float)):
                    return AssertionResult.fail(0.0, f"Expected a number, got {type(actual).__name__}")
                if actual > self.threshold:
                    return AssertionResult.pass_()
                return AssertionResult.fail(0.0, f"Expected {actual} to be greater than {self.threshold}")

    Built-in assertions are frozen dataclasses whose fields are their configuration.
    """

    @property
    def name(self) -> str:
        """Name shown in reports: the class name."""
        return type(self).__name__

    def evaluate(self, actual: Any) -> AssertionResult:
        """Check ``actual``; return a passing or failing result."""
        raise NotImplementedError(f"{type(self).__name__} must implement evaluate(actual)")

    async def aevaluate(self, actual: Any) -> AssertionResult:
        """Async form, used by ``await self.aassert_that(...)``; defaults to ``evaluate``.

        Assertions that call a model (judges, similarity) override it so that async
        evaluators do not block their event loop.
        """
        return self.evaluate(actual)


def type_name(value: object) -> str:
    """Python's name for the type of ``value`` (``int``, ``NoneType``, ``list``, ...)."""
    return type(value).__name__
