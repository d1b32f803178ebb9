"""``IsValidJson``: the output parses as standard JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import NoReturn

from agenteval._results import AssertionResult
from agenteval.assertions._base import Assertion
from agenteval.assertions._common import not_a_string


def _reject_constant(name: str) -> NoReturn:
    # json.loads accepts NaN, Infinity and -Infinity by default; they are not JSON.
    raise ValueError(f"{name} is not valid JSON (NaN and Infinity are not part of JSON)")


@dataclass(frozen=True)
class IsValidJson(Assertion):
    """Passes when the output is a valid JSON document (``json.loads`` succeeds).

    Stricter than ``json.loads``: the ``NaN``, ``Infinity`` and ``-Infinity`` literals that
    Python accepts are rejected, because other JSON parsers reject them. Leading and trailing
    whitespace is allowed; a byte-order mark is not.

    Example::

        self.assert_that(IsValidJson(), output)

    Failure message: ``Expected valid JSON response: {parser error}``, with the full output
    in ``context["actual"]``.
    """

    def evaluate(self, actual: object) -> AssertionResult:
        """Parse ``actual`` as JSON."""
        if not isinstance(actual, str):
            return not_a_string(actual)
        try:
            # (integers kept as text: one of 5,000 digits is JSON, whatever Python's limit
            # on turning text into an int)
            json.loads(actual, parse_constant=_reject_constant, parse_int=str)
        except ValueError as exc:  # JSONDecodeError, rejected constants
            error = str(exc)
        except RecursionError:
            error = "nesting too deep to parse"
        else:
            return AssertionResult.pass_()
        return AssertionResult(
            passed=False,
            score=0.0,
            message=f"Expected valid JSON response: {error}",
            context={"actual": actual},
        )
