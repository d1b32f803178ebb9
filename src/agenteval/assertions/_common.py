"""Helpers shared by the built-in assertions: the non-string failure, message shortening and
construction-time argument checks.

Construction errors are plain ``TypeError`` / ``ValueError``: assertions are usually built
inside a user's ``evaluate``, so a bad argument makes that item an error whose message names
the assertion, the argument and the bad value.
"""

from __future__ import annotations

from collections.abc import Sequence

from agenteval._results import AssertionResult
from agenteval.assertions._base import type_name

MAX_SHOWN_CHARS = 200
"""Longer values are cut to this many characters (plus ``…``) in failure messages."""


def shorten(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` itself, or its first ``limit`` characters followed by ``…`` when longer."""
    if len(text) <= limit:
        return text
    return text[:limit] + "…"


def not_a_string(actual: object) -> AssertionResult:
    """The failure every string assertion returns for a value that is not a ``str``."""
    return AssertionResult(
        passed=False,
        score=0.0,
        message=f"Expected actual value to be a string, got {type_name(actual)}",
    )


def require_str(owner: str, argument: str, value: object) -> str:
    """Return ``value`` if it is a ``str``; otherwise raise a ``TypeError`` naming it."""
    if not isinstance(value, str):
        raise TypeError(f"{owner}: {argument} must be a string, got {type_name(value)} ({value!r})")
    return value


def require_keywords(owner: str, value: object) -> tuple[str, ...]:
    """Return ``value`` as a tuple of strings, or raise a ``TypeError`` naming the bad entry."""
    if isinstance(value, str):
        # A bare string is iterable, and would silently become one keyword per character.
        raise TypeError(
            f"{owner}: keywords must be a list of strings, got str ({value!r}); "
            f"wrap a single keyword in a list: [{value!r}]"
        )
    if isinstance(value, (bytes, bytearray)):
        raise TypeError(
            f"{owner}: keywords must be a list of strings, got {type_name(value)} ({value!r}); "
            f"decode it and wrap it in a list: [{value.decode(errors='replace')!r}]"
        )
    if not isinstance(value, Sequence):
        raise TypeError(
            f"{owner}: keywords must be a list of strings, got {type_name(value)} ({value!r})"
        )
    for index, keyword in enumerate(value):
        require_str(owner, f"keywords[{index}]", keyword)
    return tuple(value)
