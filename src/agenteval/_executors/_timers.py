"""An event loop selector that wakes for timers on time (the async executor's loop).

Waiting for the next timer, asyncio asks the selector to sleep until it is due. epoll
counts that sleep in whole milliseconds, rounded up, and an idle virtual CPU can take
another millisecond or so to be woken: ``asyncio.sleep(0.1)`` returns 1-2 ms late on the
machines we measured. Items that wait on timers then start each next step that much late,
and a run whose items sleep in rounds loses it every round (``bench/README.md``).

So the selector sleeps until shortly before the deadline and polls the rest. Polling
keeps a CPU busy, so it may take at most a tenth of the time: a loop whose timers fall
due every moment (thousands of staggered sleeps) mostly sleeps as before.
"""

from __future__ import annotations

import math
import selectors
import time
from typing import Any

POLL_BEFORE = 0.001
"""Seconds before a timer's deadline from which the selector polls instead of sleeping."""

POLL_SHARE = 0.1
"""At most this share of the wall time goes to polling ..."""

POLL_BURST = 0.005
"""... saved up to at most this many seconds."""


class PromptSelector(selectors.DefaultSelector):
    """``selectors.DefaultSelector`` that polls the last moment before a timed wait ends."""

    def __init__(self) -> None:
        super().__init__()
        self._credit = POLL_BURST  # seconds of polling allowed now
        self._last = time.monotonic()

    def select(self, timeout: float | None = None) -> list[Any]:
        if timeout is None or timeout <= 0:  # block until I/O, or just look
            return super().select(timeout)
        now = time.monotonic()
        self._credit = min(POLL_BURST, self._credit + (now - self._last) * POLL_SHARE)
        self._last = now
        poll = max(0.0, min(POLL_BEFORE, self._credit, timeout))
        # epoll would round a sleep up to the next millisecond: round it down instead
        sleep = math.floor((timeout - poll) * 1000) / 1000 if poll > 0 else timeout
        ready: list[Any] = super().select(sleep) if sleep > 0 else []
        if ready or poll <= 0:
            return ready
        deadline = now + timeout
        polling = time.monotonic()
        while not ready and time.monotonic() < deadline:
            ready = super().select(0)
        self._credit -= time.monotonic() - polling
        return ready
