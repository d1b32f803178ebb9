"""What an item's process learns that the items forked after it should know too.

A forked child that learns something about the world — that a server rejects
``response_format``, say — would otherwise take it to its grave, and every later child
would pay to learn it again. The child tells the parent instead (``learned``), which takes
the lesson in (``take``), so that the children it forks next start out knowing it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_takers: dict[str, Callable[[Any], None]] = {}
tell: Callable[[str, Any], None] | None = None
"""Where this process reports its lessons (a forked child: to its parent), if anywhere."""


def taught_by(kind: str, taker: Callable[[Any], None]) -> None:
    """``taker(value)`` takes in a lesson of ``kind`` learned in a child (JSON data)."""
    _takers[kind] = taker


def learned(kind: str, value: Any) -> None:
    """This process learned ``value`` (JSON data): tell whoever listens."""
    if tell is not None:
        tell(kind, value)


def take(kind: str, value: Any) -> None:
    """Take in a lesson a child learned (one of an unknown kind is dropped)."""
    taker = _takers.get(kind)
    if taker is not None:
        taker(value)
