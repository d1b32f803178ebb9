"""Assertions: checks of one value that return an :class:`~agenteval.AssertionResult`.

Use them in an evaluator's ``evaluate`` with ``self.assert_that(assertion, output)``.
Subclass :class:`Assertion` for a custom check.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agenteval._results import AssertionResult
from agenteval.assertions._base import Assertion
from agenteval.assertions._distance import StringDistance
from agenteval.assertions._json import IsValidJson
from agenteval.assertions._regex import MatchesRegex
from agenteval.assertions._similarity import StringSimilarity
from agenteval.assertions._strings import (
    StringContains,
    StringContainsAll,
    StringContainsAny,
    StringEndsWith,
    StringLengthBetween,
    StringStartsWith,
)

if TYPE_CHECKING:
    # imported on first use (PEP 562, below): they load the trajectory models, which an
    # evaluator that checks only text does not need (a forked child then copies less)
    from agenteval.assertions._trajectory import (
        MaxSteps,
        MaxToolCalls,
        Mode,
        StepCount,
        ToolWasApproved,
        ToolWasCalled,
        ToolWasNotCalled,
        ToolWasRejected,
        TotalTokensAtMost,
        TrajectoryMatches,
    )

__all__ = [
    "Assertion",
    "AssertionResult",
    "IsValidJson",
    "MatchesRegex",
    "MaxSteps",
    "MaxToolCalls",
    "Mode",
    "StepCount",
    "StringContains",
    "StringContainsAll",
    "StringContainsAny",
    "StringDistance",
    "StringEndsWith",
    "StringLengthBetween",
    "StringSimilarity",
    "StringStartsWith",
    "ToolWasApproved",
    "ToolWasCalled",
    "ToolWasNotCalled",
    "ToolWasRejected",
    "TotalTokensAtMost",
    "TrajectoryMatches",
]


def __getattr__(name: str) -> Any:
    # every exported name not imported above is a trajectory assertion
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("agenteval.assertions._trajectory"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
