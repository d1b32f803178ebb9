"""Custom assertions used by the example evaluators.

They show how to write your own check: subclass :class:`~agenteval.assertions.Assertion`
(here as a frozen dataclass, like the built-in ones), implement ``evaluate(actual)`` and
*return* a failing :class:`~agenteval.AssertionResult` — never raise — when the value does
not satisfy the check. Their name in reports is the class name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agenteval import AssertionResult
from agenteval.assertions import Assertion


@dataclass(frozen=True)
class ToolsUsed(Assertion):
    """Passes when the agent called exactly ``expected`` tools, in that order.

    ``actual`` is the list of tool names the agent called. A wrong route still earns partial
    credit: the score is the share of tool names the two lists have in common (Jaccard
    index over the sets), and 1.0 only for the exact sequence.

    Example::

        self.assert_that(ToolsUsed(["lookup_order", "track_shipment"]), reply.tools)
    """

    expected: Sequence[str]

    def evaluate(self, actual: object) -> AssertionResult:
        """Compare the tools called with the expected sequence."""
        if not isinstance(actual, (list, tuple)) or not all(isinstance(t, str) for t in actual):
            return AssertionResult.fail(
                0.0, f"Expected a list of tool names, got {type(actual).__name__}"
            )
        called, expected = list(actual), list(self.expected)
        if called == expected:
            return AssertionResult.pass_()
        union = set(called) | set(expected)
        score = len(set(called) & set(expected)) / len(union)
        return AssertionResult.fail(
            score,
            f"Expected tools {expected} in this order, got {called}",
            {"expected": expected, "called": called},
        )


@dataclass(frozen=True)
class WordCount(Assertion):
    """Passes when a text has between ``min_words`` and ``max_words`` words (inclusive).

    Words are runs of non-space characters. Use it to keep answers short enough to read on
    a phone without being curt.

    Example::

        self.assert_that(WordCount(max_words=60), reply.text, soft=True)
    """

    max_words: int
    min_words: int = 1

    def __post_init__(self) -> None:
        if self.min_words > self.max_words:
            raise ValueError(
                f"WordCount: min_words ({self.min_words}) must not exceed "
                f"max_words ({self.max_words})"
            )

    def evaluate(self, actual: object) -> AssertionResult:
        """Count the words of ``actual``."""
        if not isinstance(actual, str):
            return AssertionResult.fail(
                0.0, f"Expected actual value to be a string, got {type(actual).__name__}"
            )
        words = len(actual.split())
        if self.min_words <= words <= self.max_words:
            return AssertionResult.pass_(context={"words": words})
        return AssertionResult.fail(
            0.0,
            f"Expected between {self.min_words} and {self.max_words} words, got {words}",
            {"words": words},
        )
