"""``MatchesRegex``: the output matches a regular expression."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agenteval._results import AssertionResult
from agenteval.assertions._base import Assertion, type_name
from agenteval.assertions._common import not_a_string, shorten


@dataclass(frozen=True)
class MatchesRegex(Assertion):
    """Passes when ``re.search(pattern, output, flags)`` finds a match.

    ``re.search`` looks anywhere in the output: anchor with ``^`` / ``$`` (or ``\\A`` /
    ``\\Z``) to match the whole of it. The pattern is compiled once, when the assertion is
    built, so a typo raises a ``ValueError`` naming the pattern instead of silently failing
    every item. ``pattern`` may also be an already compiled ``re.Pattern``.

    Unlike PHP, Python patterns have no delimiters: Neuron's ``'/^\\d{3}$/'`` is
    ``r'^\\d{3}$'`` here.

    Example::

        self.assert_that(MatchesRegex(r"^\\d{3}-\\d{2}-\\d{4}$"), output)

    Failure message: ``Expected '{actual}' to match pattern '{pattern}'``.
    """

    pattern: str | re.Pattern[str]
    flags: int = 0
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        pattern = self.pattern
        source = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
        if not isinstance(source, str):
            raise TypeError(
                f"{owner}: pattern must be a str or a compiled str pattern, "
                f"got {type_name(source)} ({source!r})"
            )
        if isinstance(self.flags, bool) or not isinstance(self.flags, int):
            raise TypeError(
                f"{owner}: flags must be re flags, such as re.IGNORECASE or "
                f"re.I | re.M, got {type_name(self.flags)} ({self.flags!r})"
            )
        try:
            compiled = re.compile(pattern, self.flags)
        except re.error as exc:
            raise ValueError(
                f"{owner}: invalid regular expression {source!r}: {exc}; fix the pattern "
                f"(write it as a raw string, r'...', so backslashes reach the regex engine)"
            ) from exc
        except ValueError as exc:  # flags given together with a compiled pattern
            raise ValueError(f"{owner}: {exc} (pattern {source!r})") from exc
        object.__setattr__(self, "_compiled", compiled)

    def evaluate(self, actual: object) -> AssertionResult:
        """Search ``actual`` for the pattern."""
        if not isinstance(actual, str):
            return not_a_string(actual)
        if self._compiled.search(actual) is not None:
            return AssertionResult.pass_()
        return AssertionResult(
            passed=False,
            score=0.0,
            message=(f"Expected '{shorten(actual)}' to match pattern '{self._compiled.pattern}'"),
        )
