"""``StringDistance``: the output is within a Levenshtein distance of a reference."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from agenteval._errors import MissingDependencyError
from agenteval._results import AssertionResult
from agenteval.assertions._base import Assertion, type_name
from agenteval.assertions._common import not_a_string, require_str, shorten


@functools.cache
def _levenshtein() -> Callable[[str, str], int]:
    # rapidfuzz is imported on first use only, so that `import agenteval` stays light.
    try:
        from rapidfuzz.distance import Levenshtein
    except ImportError as exc:
        raise MissingDependencyError(
            "StringDistance needs the 'rapidfuzz' package: pip install rapidfuzz"
        ) from exc
    distance: Callable[[str, str], int] = Levenshtein.distance
    return distance


@dataclass(frozen=True)
class StringDistance(Assertion):
    """Passes when the output is close to ``reference`` in Levenshtein (edit) distance.

    Use it for answers that must be nearly a fixed text, tolerating typos and small edits.
    The distance ``d`` counts single-character insertions, deletions and substitutions
    (characters are Unicode code points; the comparison is case-sensitive):

    - ``d <= max_distance``: score = ``1 - d / max_distance`` (1.0 when ``max_distance`` is 0
      and the strings are equal); fails when the score is below ``threshold`` (a score equal
      to the threshold passes).
    - ``d > max_distance``: fails with score 0.0.

    Example::

        self.assert_that(StringDistance("Your order has shipped", threshold=0.8), output)

    Failure messages: ``Expected '{actual}' to be similar to '{reference}' (distance: {d},
    threshold: {threshold}, max_accepted: {max_distance})``, and over the maximum
    ``Expected '{actual}' to be similar to '{reference}' (distance: {d}, max_accepted:
    {max_distance})``. ``context["distance"]`` holds ``d``.
    """

    reference: str
    threshold: float = 0.5
    max_distance: int = 50

    def __post_init__(self) -> None:
        owner = type(self).__name__
        require_str(owner, "reference", self.reference)
        threshold = self.threshold
        if not isinstance(threshold, (int, float)) or isinstance(threshold, bool):
            raise TypeError(
                f"{owner}: threshold must be a number between 0 and 1, "
                f"got {type_name(threshold)} ({threshold!r})"
            )
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"{owner}: threshold must be between 0 and 1, got {threshold!r}")
        max_distance = self.max_distance
        if not isinstance(max_distance, int) or isinstance(max_distance, bool):
            raise TypeError(
                f"{owner}: max_distance must be an int, "
                f"got {type_name(max_distance)} ({max_distance!r})"
            )
        if max_distance < 0:
            raise ValueError(f"{owner}: max_distance must be 0 or more, got {max_distance!r}")

    def evaluate(self, actual: object) -> AssertionResult:
        """Score ``actual`` by its edit distance to the reference."""
        if not isinstance(actual, str):
            return not_a_string(actual)
        distance = _levenshtein()(actual, self.reference)
        max_distance = self.max_distance
        context = {"distance": distance}
        if distance > max_distance:
            return AssertionResult(
                passed=False,
                score=0.0,
                message=(
                    f"Expected '{shorten(actual)}' to be similar to "
                    f"'{shorten(self.reference)}' "
                    f"(distance: {distance}, max_accepted: {max_distance})"
                ),
                context=context,
            )
        score = 1.0 - distance / max_distance if max_distance else 1.0
        # 1 - 9/10 is 0.09999999999999998: a score equal to the threshold must pass.
        if score >= self.threshold or math.isclose(score, self.threshold):
            return AssertionResult(passed=True, score=score, context=context)
        return AssertionResult(
            passed=False,
            score=score,
            message=(
                f"Expected '{shorten(actual)}' to be similar to '{shorten(self.reference)}' "
                f"(distance: {distance}, threshold: {self.threshold}, "
                f"max_accepted: {max_distance})"
            ),
            context=context,
        )
