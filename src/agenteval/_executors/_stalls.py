"""Whose code held the async executor's event loop, and for how long (``--timeout``).

An item that runs blocking code in ``async def run`` (a ``time.sleep``, a sync client,
CPU-bound work) holds the loop: no other item runs meanwhile, and their deadlines pass.
With ``--timeout`` the loop beats every ``BEAT`` seconds; a beat that comes more than
``STALL`` seconds late means the loop was held. ``time_loop`` times every callback of an
item's code (its tasks' steps, its timers, its futures' callbacks), so a stall is charged
to the items whose callbacks ran in it, for as long as each ran; one running still (code
that never gives the loop back) is seen by the main thread (``holding``).

When an item's deadline comes, it gets back the time it was kept waiting — ready to run
(a timer of its own that came due, a task of its own woken) while other items' code ran,
as ``time_loop`` measures it — or, if more, the time others held the loop since it
started (what it waited on may have come meanwhile: a socket's reply, a thread's result).
Held up, not slow; the time its own code ran is its own.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import Any

from .._item import ItemTask

BEAT = 0.05
"""Seconds between the loop's beats."""

STALL = 0.2
"""A beat this much later than due means the loop was held."""

ITEM: contextvars.ContextVar[int] = contextvars.ContextVar("agenteval_async_item")
"""The key of the item a task works for (set while the item runs, inherited by its tasks)."""

_MOST = 5
"""Items named in the notices; the others are counted."""

_SMALLEST = 0.01
"""Seconds of waiting too few to move a deadline for (each item waits a little)."""

_CHARGED_FROM = 0.05
"""Seconds an item's callbacks must run in one stall to be charged with it: many items
running a little each (a busy loop) hold it up together, and none of them is to blame."""


def time_loop(loop: asyncio.AbstractEventLoop, stalls: Stalls) -> None:
    """Have ``loop`` tell ``stalls`` how long each item was kept waiting by other items'
    code: while one of its callbacks waited to run (a task's step from the moment it was
    woken, a timer from the moment it came due), the time other items' callbacks ran. Each
    item's code runs in a context where :data:`ITEM` is its key."""
    call_soon, call_at = loop.call_soon, loop.call_at
    clock = time.monotonic

    def timed(key: int, callback: Any, since: float, due: float | None) -> Any:
        def run(*args: Any) -> Any:
            started = clock()
            if due is None or started > due:
                stalls.kept_waiting(key, since, None if due is None else started - due)
            stalls.running[key] = started
            try:
                return callback(*args)
            finally:
                stalls.running.pop(key, None)
                stalls.ran(key, clock() - started)

        return run

    def timed_soon(callback: Any, *args: Any, context: contextvars.Context | None = None) -> Any:
        key = context.get(ITEM) if context is not None else ITEM.get(None)
        if key is None:
            return call_soon(callback, *args, context=context)
        return call_soon(timed(key, callback, stalls.others(key), None), *args, context=context)

    def timed_at(
        when: float, callback: Any, *args: Any, context: contextvars.Context | None = None
    ) -> Any:
        key = context.get(ITEM) if context is not None else ITEM.get(None)
        if key is None:
            return call_at(when, callback, *args, context=context)
        run = timed(key, callback, stalls.others(key), when)
        return call_at(when, run, *args, context=context)

    # (an instance attribute: what asyncio's tasks and timers call, its C code included)
    setattr(loop, "call_soon", timed_soon)  # noqa: B010
    setattr(loop, "call_at", timed_at)  # noqa: B010


class Stalls:
    """The loop's stalls so far, and what each item was charged for and spared.

    The loop's thread calls ``account`` (on each beat), ``just_ended``, ``start``,
    ``finish``, ``give_back``, ``overran_by``, and, from ``time_loop``, ``others``, ``ran``
    and ``kept_waiting``; the main thread calls ``holding`` and, once the loop is given up
    or closed, ``forget`` and ``notices``.
    """

    def __init__(self) -> None:
        self.beat_at = time.monotonic()
        self.total = 0.0  # seconds the loop was held, by anyone
        self.ended_at = 0.0  # when the last stall was counted
        self._begun: dict[int, tuple[float, float]] = {}  # key -> (start, ``total`` then)
        self._given: dict[int, float] = {}  # key -> the time others held the loop, given back
        self._waited: dict[int, float] = {}  # key -> seconds others kept it waiting
        self._ran: dict[int, float] = {}  # key -> seconds its callbacks ran (``time_loop``)
        self._ran_all = 0.0  # the same, of every item
        self._ran_since_beat: dict[int, float] = {}  # key -> the same, since ``beat_at``
        self._owed_up_to: dict[int, float] = {}  # key -> ``others`` when last owed
        self._longest: dict[int, float] = {}  # key -> its longest callback, in seconds
        self.running: dict[int, float] = {}  # key -> when its callback running now began
        self._charged: dict[int, float] = {}  # key -> the seconds its own code held the loop
        self._tasks: dict[int, ItemTask] = {}
        self._named: dict[tuple[str, str | int], float] = {}  # for the notices
        self._unowned = 0.0

    # -- the loop's thread ----------------------------------------------------------------
    def account(self, *, beat: bool = False) -> None:
        """Count a stall, if the loop has not beaten for much longer than it should: each
        item is charged the time its callbacks ran since the last beat."""
        now = time.monotonic()
        gap = now - self.beat_at - BEAT
        if gap > STALL:
            spans = self._ran_since_beat
            for key, began in list(self.running.items()):  # (the one calling this)
                spans[key] = spans.get(key, 0.0) + now - began
            owned = 0.0
            for key, seconds in sorted(spans.items(), key=lambda span: -span[1]):
                if seconds < _CHARGED_FROM or owned >= gap:
                    break
                seconds = min(seconds, gap - owned)
                owned += seconds
                self._charged[key] = self._charged.get(key, 0.0) + seconds
                task = self._tasks.get(key)
                if task is not None:
                    where = (task.evaluator_id, task.id)
                    self._named[where] = self._named.get(where, 0.0) + seconds
            self.total += gap
            self._unowned += gap - owned
            self.ended_at = now
        if beat or gap > STALL:
            self.beat_at = now
            self._ran_since_beat = {}

    def just_ended(self) -> bool:
        """Whether a stall was counted a moment ago: timers that came due while it lasted
        may not have run yet."""
        self.account()
        return time.monotonic() - self.ended_at < STALL

    def start(self, key: int, task: ItemTask) -> None:
        self.account()  # a stall that just ended is not this item's
        self._begun[key] = (time.monotonic(), self.total)
        self._tasks[key] = task

    def finish(self, key: int) -> None:
        self._begun.pop(key, None)
        self._given.pop(key, None)
        self._waited.pop(key, None)
        self._ran.pop(key, None)
        self._owed_up_to.pop(key, None)
        self._longest.pop(key, None)
        self._charged.pop(key, None)
        self._tasks.pop(key, None)

    def _others(self, key: int) -> float:
        """Seconds others held the loop since the item started."""
        self.account()
        _, total_then = self._begun[key]
        return max(0.0, self.total - total_then - self._charged.get(key, 0.0))

    def others(self, key: int) -> float:
        """Seconds the callbacks of items other than ``key`` have run, in all."""
        return self._ran_all - self._ran.get(key, 0.0)

    def ran(self, key: int, seconds: float) -> None:
        """A callback of the item ran for ``seconds``: it keeps others waiting, while the
        item runs (a task it left once recorded keeps no one's deadline away)."""
        if key in self._begun:
            self._ran_all += seconds
            self._ran[key] = self._ran.get(key, 0.0) + seconds
            self._ran_since_beat[key] = self._ran_since_beat.get(key, 0.0) + seconds
            if seconds > self._longest.get(key, 0.0):
                self._longest[key] = seconds

    def kept_waiting(self, key: int, since: float, late: float | None) -> None:
        """A callback of the item, queued when :meth:`others` was ``since`` (a timer:
        ``late`` seconds past due), is about to run: the item is owed what other items ran
        meanwhile (no more than ``late``), but once for waits that overlap."""
        if key not in self._begun:
            return
        now = self.others(key)
        owed = now - max(since, self._owed_up_to.get(key, 0.0))
        if late is not None:
            owed = min(owed, late)
        if owed > 0:
            self._waited[key] = self._waited.get(key, 0.0) + owed
            self._owed_up_to[key] = now

    def give_back(self, key: int) -> float:
        """At the item's deadline: the seconds to move it by, those other items kept it
        waiting or held the loop for since it started, less what was given back."""
        owed = self._held_up(key)
        due = owed - self._given.get(key, 0.0)
        if due <= _SMALLEST:
            return 0.0
        self._given[key] = owed
        return due

    def _held_up(self, key: int) -> float:
        """Seconds other items kept the item waiting (``time_loop``), or held the loop
        since it started, if more (what it waited on may have come meanwhile: a reply on
        its socket, a thread's result)."""
        return max(self._others(key), self._waited.get(key, 0.0))

    def overran_by(self, key: int, timeout: float) -> float:
        """For an item that finished: how long its own code held the loop, if it ran past
        its timeout once what others kept it waiting is taken off (as ``give_back`` takes
        it); else 0."""
        others = self._held_up(key)  # (a stall that just ended is counted)
        blocked = self._charged.get(key, 0.0)
        began = self.running.get(key)  # (its callback running now counts too)
        longest = max(
            self._longest.get(key, 0.0), 0.0 if began is None else time.monotonic() - began
        )
        if longest < STALL:  # none of its code ran that long at once: what ``watch``
            return 0.0  # charged it was others'
        spent = time.monotonic() - self._begun[key][0]
        return blocked if blocked and spent - others > timeout else 0.0

    # -- the main thread ------------------------------------------------------------------
    def holding(self, limit: float) -> tuple[int, float] | None:
        """The item holding the loop now, if its own code has held it for more than
        ``limit`` seconds since it started, with how long."""
        now = time.monotonic()
        for key, began in list(self.running.items()):  # (one call: safe while it changes)
            held = self._charged.get(key, 0.0) + now - began
            if held > limit:
                return key, held
        return None

    def forget(self, key: int) -> None:
        """Name the item in no notice (another says what it did)."""
        task = self._tasks.get(key)
        if task is not None:
            self._named.pop((task.evaluator_id, task.id), None)
        self.finish(key)

    def notices(self) -> list[str]:
        """What to tell the user: which items held the loop, for how long (one still
        holding it included), and how long no one item did."""
        named = dict(self._named)
        now = time.monotonic()
        for key, began in list(self.running.items()):  # a stall not over: held still
            task = self._tasks.get(key)
            if task is not None:
                where = (task.evaluator_id, task.id)
                named[where] = named.get(where, 0.0) + now - began
        advice = "await instead, use asyncio.to_thread, or run with --executor fork"
        held = sorted(((where, s) for where, s in named.items() if s >= STALL), key=lambda x: -x[1])
        lines = [
            f"item {item_id!r} of {evaluator} blocked the event loop for {seconds:.1f} s "
            f"(blocking code in async def run or evaluate); the items it held up were "
            f"given that time on top of their --timeout — {advice}"
            for (evaluator, item_id), seconds in held[:_MOST]
        ]
        if len(held) > _MOST:
            rest = held[_MOST:]
            lines.append(
                f"{len(rest)} more items blocked the event loop, for "
                f"{sum(s for _, s in rest):.1f} s in all"
            )
        if self._unowned >= STALL:
            lines.append(
                f"the event loop ran items' code for {self._unowned:.1f} s in all without a "
                f"break (many items at once, or code that does not await); the items were "
                f"given that time on top of their --timeout — {advice}"
            )
        return lines
