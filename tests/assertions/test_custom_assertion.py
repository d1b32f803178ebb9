from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from agenteval.assertions import Assertion, AssertionResult
from agenteval.assertions._base import type_name


@dataclass(frozen=True)
class GreaterThan(Assertion):
    """Passes when the value is a number greater than ``threshold``."""

    threshold: float

    def evaluate(self, actual: object) -> AssertionResult:
        if isinstance(actual, bool) or not isinstance(actual, (int, float)):
            return AssertionResult.fail(0.0, f"Expected numeric value, got {type_name(actual)}")
        if actual > self.threshold:
            return AssertionResult.pass_(1.0)
        return AssertionResult.fail(0.0, f"Expected {actual} to be greater than {self.threshold}")


class NoEvaluate(Assertion):
    pass


def test_custom_assertion_passes() -> None:
    assert GreaterThan(10).evaluate(11) == AssertionResult(passed=True, score=1.0)


def test_custom_assertion_fails_with_its_message() -> None:
    assert GreaterThan(10).evaluate(10) == AssertionResult(
        passed=False, score=0.0, message="Expected 10 to be greater than 10"
    )


def test_custom_assertion_reports_wrong_type() -> None:
    assert GreaterThan(10).evaluate("11").message == "Expected numeric value, got str"


def test_custom_assertion_name_is_class_name() -> None:
    assert GreaterThan(1).name == "GreaterThan"


def test_custom_assertion_async_form_defaults_to_evaluate() -> None:
    result = asyncio.run(GreaterThan(1).aevaluate(2))

    assert result == AssertionResult(passed=True, score=1.0)


def test_custom_assertion_without_evaluate_raises_naming_class() -> None:
    with pytest.raises(NotImplementedError) as info:
        NoEvaluate().evaluate("x")

    assert str(info.value) == "NoEvaluate must implement evaluate(actual)"
