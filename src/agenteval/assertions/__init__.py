"""Assertions: checks of one value that return an :class:`~agenteval.AssertionResult`.

Use them in an evaluator's ``evaluate`` with ``self.assert_that(assertion, output)``.
Subclass :class:`Assertion` for a custom check.
"""

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
