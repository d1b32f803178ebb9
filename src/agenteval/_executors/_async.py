"""Many ``async def run`` items in flight in one process (``--executor async``).

For concurrency in the hundreds, where a process per item would be wasteful. Items share
the process, so isolation is weaker than with the fork executor: an item that blocks the
event loop delays the others, and ``--timeout`` can only cancel at an ``await``.

What an item blocking the loop does not do is make the others time out: with
``--timeout``, ``_stalls`` tells whose code held the loop, and the items it held up get
that time back. Nor does it hold the run for good: an item that holds the loop well past
its timeout is recorded ``timeout``, and the items in flight with it run again on a fresh
loop (``_give_up``).

The items run on an event loop in a thread of its own, and only the items do. Everything
else stays in the main thread, as with the other executors: pulling tasks (which runs the
evaluators' ``set_up``, ``get_dataset`` and ``tear_down``), recording results, and the
signal handler. So those hooks may call ``asyncio.run()``, an item that blocks the loop
cannot hold up the grace period, and a second interrupt is raised in the main thread,
never inside an item's code.

Up to N worker coroutines run the items, each one item after another. The main thread
keeps a queue of pulled tasks ahead of them, so a worker that finishes an item starts the
next in the same step of the loop, before the loop turns to anything else. Starting it
from the main thread, or as a task of its own, would wait for every other item finishing
at that moment to be evaluated first: in a run whose items all wait about as long, each
wave of N would then start later than the one before by N evaluations.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import ctypes
import itertools
import os
import queue
import sys
import threading
import time
import weakref
from types import CodeType
from typing import Any

from .. import _loops
from .._errors import described
from .._evaluator import BaseEvaluator
from .._item import (
    CANCELLED,
    HardStop,
    ItemTask,
    ProcessExit,
    aexecute_item,
    closed_with_loop,
    end_forked_copy,
    error_info,
    fault_record,
    guarding_exit,
    recorded_output,
)
from .._results import ErrorInfo, ItemResult, ItemStatus, ItemUsage, Stage
from ._base import Executor, OnResult, StopState, TaskSource, cancelled_record
from ._children import Children
from ._daemon_pool import DaemonPool
from ._stalls import BEAT, ITEM, Stalls, time_loop
from ._timers import PromptSelector

_TOP_UP = 0.005
"""Seconds before the queue is filled up behind the first items started."""

_BACKSTOP = 2.0
"""Seconds beyond the grace period before the signal handler stops the run at once."""

_POLL = 0.1

_CANCEL_WAIT = 1.0
"""Seconds cancelled items get to run their ``finally`` blocks before the run ends anyway
(an item blocking the loop would hold it up for good); less than the backstop."""

_HARD_STOP_WAIT = 0.5
"""The same after a second interrupt."""

_RECANCEL = 2.0
"""Seconds after which an item that caught its timeout's cancellation is cancelled again,
and after as long again, should it catch that one too, left to run on unrecorded."""

_SHUTDOWN_WAIT = 2.0
"""Seconds the tasks still running when the loop closes get to end once cancelled: one
that catches every cancellation must not hold the run's end."""

_CLOSE_LIMIT = _SHUTDOWN_WAIT + 3.0
"""Seconds the end of a run waits for the loop to close: a task left blocking it (code that
never awaits) must not hold the run's end for good."""

_HEAR_ENDS = 0.05
"""Seconds the loop stays open after killing what tasks items left started, for the news
of their end (asyncio's child watcher tells the loop)."""

_CLOSE_MARGIN = 0.25
"""Seconds of a shorter wait for the loop to close (an interrupted run's) kept for what
comes after the tasks' end: closing async generators, the threads of ``to_thread``."""

_GIVE_UP = 2.0
"""Seconds past its timeout an item may hold the loop before the loop is given up, as a
child that ignores SIGTERM gets SIGKILL."""

_MOST_GIVEN_UP = 32
"""Loops given up in one run, at most: each one's thread (and its file descriptors) stays."""

_THREADS = min(32, (os.cpu_count() or 1) + 4)
"""Threads for the items' ``asyncio.to_thread`` calls, at most (asyncio's own default)."""

Pulled = tuple[BaseEvaluator, ItemTask]


class _Abandoned(BaseException):
    """Raised in the thread of a loop given up, to free it from Python code that never
    awaits (blocking C code it cannot free)."""


_LOOP_THREAD = "agenteval-async"
"""The thread the event loop (and so every item) runs in."""


_ITEM_LOOPS: dict[int, asyncio.AbstractEventLoop] = {}
"""The items' loops that run now, by the thread that runs each."""


def _forked_from_an_item() -> None:
    """In a copy of the process that an item forked without exec (``os.fork()`` in its
    loop's thread): the copy ends as soon as the item's code gives the loop back, before
    the loop could run other items' code a second time (their model calls, their files).
    One that returns without awaiting ends at the item's end (``aexecute_item``)."""
    loop = _ITEM_LOOPS.get(threading.get_ident())
    _ITEM_LOOPS.clear()
    ready = getattr(loop, "_ready", None)  # (asyncio's own loops; not uvloop's)
    if loop is not None and isinstance(ready, collections.deque):
        ready.clear()
        ready.appendleft(asyncio.Handle(end_forked_copy, (), loop))


if hasattr(os, "register_at_fork"):  # (once: hooks cannot be taken back)
    os.register_at_fork(after_in_child=_forked_from_an_item)


class AsyncExecutor(Executor):
    """Up to ``concurrency`` items at once on one event loop."""

    name = "async"

    def run(self, tasks: TaskSource, on_result: OnResult, stop: StopState) -> None:
        """Run the tasks on a fresh event loop in its own thread; supervise from this one."""
        self._children = Children()
        with (
            guarding_exit((threading.current_thread().name, _LOOP_THREAD)),
            self._children.tracking(),
        ):
            self._run(tasks, on_result, stop)

    def _run(self, tasks: TaskSource, on_result: OnResult, stop: StopState) -> None:
        # we cancel what is left when the grace period ends: time to record it first
        stop.backstop = max(stop.backstop, _BACKSTOP)
        self._items = self._new_items()
        self._given_up = 0
        running: dict[int, Pulled] = {}  # submitted and not yet recorded
        wait: float | None = None
        try:
            wait = self._supervise(tasks, on_result, stop, running)
        except HardStop:
            # stop at once, but record every item cut off, as the grace period's end does
            wait = _HARD_STOP_WAIT
            items = self._items
            self._unstarted(items, running)
            cut_off = self._cut_off(items, running, stop.cut_off)  # (before they are cancelled)
            for key in running:
                items.cancel(key)
            on_result(*self._collect(items, running, 0.0))  # results already in are kept
            on_result(*(cut_off[key] for key in list(running)))
            running.clear()
            raise
        finally:
            limit = _CLOSE_LIMIT if wait is None else wait
            self._items.close(limit)
            if self._items.closing_held():
                # blocking code in a task an item left (a time.sleep in its finally, say),
                # or in an item cut off (cancelled, it has not given the loop back yet)
                after, whose = (
                    ("the last item", "a task an item left running")
                    if wait is None
                    else ("the items in flight were cancelled", "an item or a task it left")
                )
                self.notices.append(
                    f"the event loop was still busy {limit:g} s after {after} (blocking code "
                    f"in {whose}): the run ended without it"
                )
                self._items.abandon()
            if self._items.stalls is not None:
                self.notices.extend(self._items.stalls.notices())
            self.notices.extend(self._items.exits)

    @staticmethod
    def _cut_off(
        items: _ItemLoop, running: dict[int, Pulled], message: str = CANCELLED
    ) -> dict[int, ItemResult]:
        """The records of the items still running, cut off now: what they spent, and what
        ``run`` returned if it had (read before they are cancelled, which forgets it)."""
        now = time.perf_counter()
        return {
            key: items.with_output(
                cancelled_record(task, now - items.started.get(key, now), message), key
            )
            for key, (_, task) in running.items()
        }

    def _new_items(self) -> _ItemLoop:
        options = self.options
        return _ItemLoop(
            options.concurrency, options.timeout, options.max_output_bytes, self._children
        )

    def _supervise(
        self,
        tasks: TaskSource,
        on_result: OnResult,
        stop: StopState,
        running: dict[int, Pulled],
    ) -> float | None:
        """Submit, collect and cancel items; how long to wait for the loop's cleanup."""
        items = self._items
        # the first N start before anything else; then a queue as long again as the workers
        # are many, so that none waits for this thread
        ahead = self.options.concurrency
        keys = itertools.count()
        exhausted = False
        stop_deadline: float | None = None
        finished: list[ItemResult] = []
        while True:
            submitted = 0
            try:
                while not exhausted and not stop.requested and len(running) < ahead:
                    pulled = next(tasks, None)  # (may run the next evaluator's set_up)
                    if pulled is None:
                        exhausted = True
                        break
                    key = next(keys)
                    running[key] = pulled
                    items.submit(key, *pulled)
                    submitted += 1
                    if pulled[1].last is not False:  # the next pull may set up the next
                        items.wake()  # evaluator: these start first, not after its set_up
                        submitted = 0
            except BaseException:  # stopped at once meanwhile: what finished is kept
                on_result(*finished)
                raise
            if submitted:
                items.wake()
            ahead = 2 * self.options.concurrency
            topped_up = exhausted or len(running) >= ahead
            on_result(*finished)
            if stop.requested and stop_deadline is None:
                stop_deadline = time.monotonic() + stop.grace
                self._unstarted(items, running)
            if not running:
                return None
            wait = _POLL if topped_up else _TOP_UP
            if stop_deadline is not None:
                wait = max(0.0, min(wait, stop_deadline - time.monotonic()))
            finished = self._collect(items, running, wait)
            if stop_deadline is not None and time.monotonic() >= stop_deadline:
                on_result(*finished)
                cut_off = self._cut_off(items, running)  # (before they are cancelled)
                for key in running:
                    items.cancel(key)
                on_result(*cut_off.values())
                running.clear()
                return _CANCEL_WAIT
            stuck = items.stuck() if self._given_up < _MOST_GIVEN_UP else None
            if stuck is not None:
                on_result(*finished)
                finished = []
                items = self._give_up(*stuck, running, on_result)

    def _give_up(
        self, key: int, held: float, running: dict[int, Pulled], on_result: OnResult
    ) -> _ItemLoop:
        """An item has held the loop for good: it is ``timeout``, and the items in flight
        with it run again on a fresh loop (the old one is left to its thread)."""
        items = self._items
        on_result(*self._collect(items, running, 0.0))  # what finished before is kept
        if key not in running:  # it gave the loop back after all
            return items
        _, task = running.pop(key)
        again = list(running.items())
        cut = sum(1 for k, _ in again if k in items.started)
        items.abandon()
        assert items.stalls is not None and self.options.timeout is not None
        items.stalls.forget(key)
        self.notices.extend(items.stalls.notices())
        self._given_up += 1
        self.notices.append(
            f"item {task.id!r} of {task.evaluator_id} blocked the event loop for good "
            f"({held:.1f} s, past its --timeout {self.options.timeout:g}s): the "
            f"{cut} item{'' if cut == 1 else 's'} in flight with it ran again on a fresh "
            f"event loop — use --executor fork for items that may block"
        )
        error = ErrorInfo(
            stage="executor",
            type="Timeout",
            message=(
                f"item exceeded --timeout {self.options.timeout:g}s: it blocked the event "
                f"loop for {held:.1f} s and did not give it back"
            ),
        )
        started = items.started.get(key, time.perf_counter())
        on_result(fault_record(task, error, time.perf_counter() - started, "timeout"))
        self._items = fresh = self._new_items()
        for k, pulled in again:
            fresh.submit(k, *pulled)
        fresh.wake()
        return fresh

    @staticmethod
    def _unstarted(items: _ItemLoop, running: dict[int, Pulled]) -> None:
        """Stop the workers taking items; those never started are dropped, unrecorded, so
        that ``--resume`` runs them like the items that were never pulled."""
        for key in items.hold():
            del running[key]

    def _collect(
        self, items: _ItemLoop, running: dict[int, Pulled], wait: float
    ) -> list[ItemResult]:
        """The records of items that finished, waiting up to ``wait`` seconds for the first."""
        finished: list[ItemResult] = []
        try:
            key, record = items.done.get(timeout=wait) if wait > 0 else items.done.get_nowait()
        except queue.Empty:
            if wait > 0 and not items.alive():
                raise RuntimeError("the async executor's event loop stopped unexpectedly") from None
            return finished
        while True:
            # an item recorded as cancelled may still finish: its late record is dropped
            if running.pop(key, None) is not None:
                finished.append(record)
            try:
                key, record = items.done.get_nowait()
            except queue.Empty:
                return finished


class _ItemLoop:
    """An event loop in a thread of its own, running the items and nothing else.

    The main thread talks to it through ``submit``, ``wake``, ``hold``, ``cancel``,
    ``stuck`` and ``close``, reads finished records from ``done`` and start times from
    ``started``, and the notices of ``stalls`` once the loop is closed; every other
    attribute belongs to the loop's thread.
    """

    def __init__(
        self,
        workers: int,
        timeout: float | None,
        max_output_bytes: int | None,
        children: Children,
    ) -> None:
        self.workers = workers
        self.timeout = timeout
        self.max_output_bytes = max_output_bytes
        self.done: queue.SimpleQueue[tuple[int, ItemResult]] = queue.SimpleQueue()
        self.started: dict[int, float] = {}
        self._queue: collections.deque[tuple[int, BaseEvaluator, ItemTask]] = collections.deque()
        self._lock = threading.Lock()  # the queue and the hold: taking an item is atomic
        self._holding = False
        self._running: set[asyncio.Task[None]] = set()  # the workers
        self._current: dict[int, asyncio.Task[None]] = {}  # item key -> its worker
        self._ours: set[int] = set()  # items we cancelled ourselves
        self._closing = False
        self._gone = False  # given up: what it does after ends nothing shared
        self._shutdown_wait = _SHUTDOWN_WAIT  # (close() shortens it to fit its own wait)
        # --timeout: the items' timers, and who held the loop up
        self._timers: dict[int, asyncio.Handle] = {}
        self._timed_out: dict[int, int] = {}  # item key -> cancellations sent
        self._tasks: dict[int, ItemTask] = {}  # the items running
        self._returned: dict[int, list[Any]] = {}  # what their run returned
        self._spent: dict[int, ItemUsage] = {}  # their usage so far (read by the main thread)
        self._abandoned: set[asyncio.Task[None]] = set()  # workers left to a stubborn item
        self._settling: set[int] = set()  # deadlines looked at again once the loop caught up
        self.stalls = Stalls() if timeout is not None else None
        self._children = children  # the processes the items start
        # the tasks items create, and whose they are: one that ends the process (sys.exit,
        # os._exit) is its item's fault, as it would be in a process of the item's own
        self._owners: weakref.WeakKeyDictionary[asyncio.Future[Any], tuple[int, ItemTask]] = (
            weakref.WeakKeyDictionary()
        )
        self._fatal: dict[int, BaseException] = {}  # item key -> what a task of it raised
        self.exits: list[str] = []  # notices of those that came too late for their item
        self.loop = _new_loop()
        self._thread = threading.Thread(target=self._main, name=_LOOP_THREAD, daemon=True)
        self._thread.start()

    # -- called from the main thread --------------------------------------------------------
    def submit(self, key: int, evaluator: BaseEvaluator, task: ItemTask) -> None:
        """Queue the item; its record arrives in ``done`` under ``key``. Then ``wake``."""
        with self._lock:
            self._queue.append((key, evaluator, task))

    def wake(self) -> None:
        """Start workers for the items just submitted, up to the limit."""
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            self.loop.call_soon_threadsafe(self._spawn)

    def hold(self) -> list[int]:
        """Let no worker take another item; the keys of the items never started."""
        with self._lock:
            self._holding = True
            keys = [key for key, _, _ in self._queue]
            self._queue.clear()
        return keys

    def cancel(self, key: int) -> None:
        """Cancel the item (a no-op once it finished); it then records nothing of its own."""
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._cancel, key)

    def alive(self) -> bool:
        """False once the loop's thread has ended."""
        return self._thread.is_alive()

    def close(self, wait: float | None) -> None:
        """Stop the loop, cancelling what still runs, and wait up to ``wait`` s (None: all).

        Tasks that catch their cancellation get the part of ``wait`` that leaves time for
        the rest of the loop's closing, so that only code blocking the loop outlasts it."""
        if wait is not None:
            self._shutdown_wait = max(0.0, min(_SHUTDOWN_WAIT, wait - _CLOSE_MARGIN))
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._close)
        self._thread.join(wait)

    def stuck(self) -> tuple[int, float] | None:
        """The item whose code has held the loop for longer than its timeout allows, and
        how long: the key, the seconds."""
        if self.stalls is None or self.timeout is None:
            return None
        return self.stalls.holding(self.timeout + _GIVE_UP)

    def closing_held(self) -> bool:
        """Whether the loop's thread still runs after ``close``."""
        return self._thread.is_alive()

    def abandon(self) -> None:
        """Give the loop up: no worker takes another item, the loop closes should its
        thread ever be free again, and nothing it does after is read."""
        _daemonic(self._thread, True)  # (the exit must not wait for it)
        self._gone = True
        self.hold()
        self.close(0)
        ident = self._thread.ident if self._thread.is_alive() else None
        raise_in = getattr(getattr(ctypes, "pythonapi", None), "PyThreadState_SetAsyncExc", None)
        if ident is not None and raise_in is not None:
            raise_in(ctypes.c_ulong(ident), ctypes.py_object(_Abandoned))

    # -- the loop's thread ------------------------------------------------------------------
    def _main(self) -> None:
        # a daemon, so that a loop given up never holds the exit; but the threads items
        # start inherit that, and the exit would kill them unnamed instead of waiting for
        # them as it does for a sequential item's: they are started as no daemons
        _daemonic(threading.current_thread(), False)
        _ITEM_LOOPS[threading.get_ident()] = self.loop
        asyncio.set_event_loop(self.loop)
        # asyncio.to_thread and run_in_executor(None, ...): a call still running when its
        # item timed out must not hold the run's end, nor the process's exit
        self.loop.set_default_executor(DaemonPool(_THREADS, "agenteval-to-thread"))
        self.loop.set_task_factory(self._new_task)
        if self.stalls is not None:
            self.stalls.beat_at = time.monotonic()
            time_loop(self.loop, self.stalls)
            self.loop.call_soon(self._beat)
        try:
            while not self._closing:
                # a task the user started may raise these through the loop: not theirs
                # to end the run, and the items still in flight must still be recorded
                try:
                    self.loop.run_forever()
                except (SystemExit, KeyboardInterrupt) as exc:
                    self._exited(exc)
            self._shutdown()
        except _Abandoned:  # given up: nobody reads what it would do
            for task in asyncio.all_tasks(self.loop):  # closed with the loop, quietly
                task._log_destroy_pending = False  # type: ignore[attr-defined]
        finally:
            _ITEM_LOOPS.pop(threading.get_ident(), None)
            _daemonic(threading.current_thread(), True)
            asyncio.set_event_loop(None)
            self.loop.close()

    def _shutdown(self) -> None:
        """What ``asyncio.run`` does at the end: cancel every task, then close async gens."""
        self._ours.update(self._current)
        pending = asyncio.all_tasks(self.loop)
        for t in pending:
            t.cancel()
        with contextlib.suppress(SystemExit, KeyboardInterrupt):
            if pending:
                _, left = self.loop.run_until_complete(
                    asyncio.wait(pending, timeout=self._shutdown_wait)
                )
                for t in left:  # it caught every cancellation: closed with the loop, quietly
                    t._log_destroy_pending = False  # type: ignore[attr-defined]
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            if not self._gone and self._children.end_all():  # (what tasks left started: killed
                # while the loop
                # can still hear of their end, not after: "Loop ... is closed" warnings)
                self.loop.run_until_complete(asyncio.sleep(_HEAR_ENDS))
        with contextlib.suppress(SystemExit, KeyboardInterrupt):
            # after the generators: their cleanup may still call a model
            self.loop.run_until_complete(_loops.release())
            self.loop.run_until_complete(self.loop.shutdown_default_executor())

    def _new_task(self, loop: Any, coro: Any, **options: Any) -> asyncio.Task[Any]:
        """The loop's task factory: a task as usual, noted as its item's."""
        task: asyncio.Task[Any] = asyncio.Task(coro, loop=loop, **options)
        key = ITEM.get(None)
        if key is not None and (item := self._tasks.get(key)) is not None:
            self._owners[task] = (key, item)
        return task

    def _exited(self, exc: BaseException) -> None:
        """A task an item created ended the process's way (``sys.exit``, ``os._exit``,
        ``KeyboardInterrupt``): its item is ``crashed`` or ``error``, as under the other
        executors, if it still runs; else the run says so."""
        owner = None
        for task, (key, item) in list(self._owners.items()):
            if task.done() and not task.cancelled() and task.exception() is exc:
                owner = (key, item)  # (exception() also marks it as seen: no log at exit)
                break
        if owner is not None and owner[0] in self._current:
            self._fatal[owner[0]] = exc
            self._current[owner[0]].cancel()
            return
        whose = f"item {owner[1].id!r} of {owner[1].evaluator_id}" if owner else "an item"
        self.exits.append(
            f"a task that {whose} left running raised {described(exc)} after the item "
            f"ended: it ended nothing"
        )

    def _close(self) -> None:
        if not self._closing:  # (once closing, stopping the loop would cut the shutdown short)
            self._closing = True
            self.loop.stop()

    def _beat(self) -> None:
        assert self.stalls is not None
        self.stalls.account(beat=True)
        self.loop.call_later(BEAT, self._beat)

    def _overran(self, key: int, record: ItemResult) -> ItemResult:
        """The record of an item that finished, a timeout if it ran past its --timeout all
        the same: it caught the cancellation and went on, or it held the loop, where it
        could not be cancelled. Never passed for running too long."""
        assert self.stalls is not None and self.timeout is not None
        blocked = self.stalls.overran_by(key, self.timeout)
        if key in self._timed_out:
            how = ": it caught the cancellation and went on"
        elif blocked:
            how = (
                f": it blocked the event loop for {blocked:.1f} s, where it could not be cancelled"
            )
        else:
            return record
        return record.model_copy(update={"status": "timeout", "error": self._timeout(how)})

    def with_spent(self, key: int, record: ItemResult) -> ItemResult:
        """The record of an item stopped before it made its own (timed out, cancelled),
        with what its model calls cost so far."""
        spent = self._spent.get(key)
        return record if spent is None else record.model_copy(update={"usage": spent})

    def with_output(self, record: ItemResult, key: int) -> ItemResult:
        """A timeout's (or a cancelled item's) record, with what the item's model calls cost
        so far, and the output
        if ``run`` had returned: the item stopped in ``evaluate`` (a stuck judge, not a
        stuck agent), as a child's record says too."""
        record = self.with_spent(key, record)
        returned = self._returned.get(key)
        if not returned or record.error is None:
            return record
        try:
            output, truncated, size, _ = recorded_output(returned[0], self.max_output_bytes)
        except Exception:  # an output the record cannot hold: the timeout is what matters
            return record
        error = record.error.model_copy(update={"stage": "evaluate"})
        kept = {"output": output, "truncated": truncated, "original_size": size, "error": error}
        return record.model_copy(update=kept)

    def _timeout(self, how: str) -> ErrorInfo:
        return ErrorInfo(
            stage="executor",
            type="Timeout",
            message=f"item exceeded --timeout {self.timeout:g}s{how}",
        )

    def _expire(self, key: int) -> None:
        """The item's time is up: cancel it, unless other items' code kept it waiting or
        held the loop meanwhile (then it gets that time back)."""
        self._timers.pop(key, None)
        worker = self._current.get(key)
        if worker is None or self.stalls is None:
            return
        if key not in self._settling and self.stalls.just_ended():
            # the timers that fell due meanwhile run in this same step, after this one:
            # look again once they have, and have told how long they waited
            self._settling.add(key)
            self._timers[key] = self.loop.call_soon(self._expire, key)
            return
        self._settling.discard(key)
        due = 0.0 if key in self._timed_out else self.stalls.give_back(key)
        if due > 0:
            self._timers[key] = self.loop.call_later(due, self._expire, key)
            return
        sent = self._timed_out.get(key, 0)
        if sent >= 2:
            self._abandon(key, worker)
            return
        self._timed_out[key] = sent + 1
        worker.cancel()
        # should the item catch it and go on, it is cancelled again, as a child process
        # that ignores SIGTERM gets SIGKILL, and then left to run on unrecorded
        self._timers[key] = self.loop.call_later(_RECANCEL, self._expire, key)

    def _abandon(self, key: int, worker: asyncio.Task[None]) -> None:
        """The item caught every cancellation and goes on: it is ``timeout`` now, and its
        worker is left to it (nothing it does is recorded) while a fresh one takes its
        slot. Only the loop's closing stops it, as far as anything can."""
        item = self._tasks[key]
        how = ": it caught every cancellation and went on, and was left running unrecorded"
        record = fault_record(
            item, self._timeout(how), time.perf_counter() - self.started[key], "timeout"
        )
        self.done.put((key, self.with_output(record, key)))
        if not self._gone:
            self._children.end(key)
        # it still runs, and is still this item's (its hold-ups of the loop, its state):
        # the worker tidies up after it, should it ever end
        self._abandoned.add(worker)
        self._running.discard(worker)
        self._spawn()

    def _spawn(self) -> None:
        for _ in range(min(self.workers - len(self._running), len(self._queue))):
            worker = self.loop.create_task(self._worker())
            self._running.add(worker)
            worker.add_done_callback(self._running.discard)  # also when cancelled

    def _cancel(self, key: int) -> None:
        worker = self._current.get(key)
        if worker is not None:
            self._ours.add(key)
            worker.cancel()

    def _take(self) -> tuple[int, BaseEvaluator, ItemTask] | None:
        with self._lock:
            if self._holding or not self._queue:
                return None
            key, evaluator, task = self._queue.popleft()
            self.started[key] = time.perf_counter()
        return key, evaluator, task

    async def _worker(self) -> None:
        """Run queued items one after another, until the queue is empty or held.

        Items run in the worker's context, so a context variable an item leaves set would
        be seen by the next: such a worker hands over to a fresh one.
        """
        me = asyncio.current_task()
        assert me is not None
        fresh = contextvars.copy_context()
        while (taken := self._take()) is not None:
            key, evaluator, task = taken
            self._current[key], self._tasks[key] = me, task
            try:
                record = await self._one(key, evaluator, task)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # no record could be built: the item's error
                if closed_with_loop(exc):
                    raise
                duration = time.perf_counter() - self.started[key]
                record = fault_record(task, error_info("run", exc), duration)
            finally:
                del self._tasks[key], self._current[key]
            if me in self._abandoned:  # it was recorded when it was left to its item
                self._abandoned.discard(me)
                del self.started[key]
                return
            self.done.put((key, record))
            del self.started[key]
            if _changed(fresh):  # hand over to a worker in a copy of the clean context
                self._running.discard(me)
                self.loop.call_soon(self._spawn, context=fresh)
                return
        # leave the set now, not when the task's callbacks run: a wake-up scheduled before
        # them must see the free slot
        self._running.discard(me)

    async def _one(self, key: int, evaluator: BaseEvaluator, task: ItemTask) -> ItemResult:
        started = self.started[key]
        if self.stalls is not None and self.timeout is not None:
            self.stalls.start(key, task)
            self._timers[key] = self.loop.call_later(self.timeout, self._expire, key)
        token = ITEM.set(key)  # tasks the item creates are its, too
        returned: list[Any] = []  # what run returned, once it has
        self._returned[key] = returned

        def spent(usage: ItemUsage) -> None:
            self._spent[key] = usage

        try:
            if self.stalls is not None:
                # its code starts in a step of its own, timed as its (this one, begun for
                # the worker, is no item's)
                await asyncio.sleep(0)
            record = await aexecute_item(
                evaluator,
                task,
                max_output_bytes=self.max_output_bytes,
                ran=returned.append,
                spent=spent,
            )
            return self._overran(key, record) if self.stalls is not None else record
        except asyncio.CancelledError as exc:
            fatal = self._fatal.pop(key, None)
            if fatal is not None:  # a task of the item's ended the process's way
                status: ItemStatus = "crashed" if isinstance(fatal, ProcessExit) else "error"
                record = fault_record(
                    task, error_info("run", fatal), time.perf_counter() - started, status
                )
                return self.with_output(record, key)
            if key in self._ours:
                raise
            if key in self._timed_out:
                error = self._timeout(" and was cancelled")
                record = fault_record(task, error, time.perf_counter() - started, "timeout")
                return self.with_output(record, key)
            # not a cancellation of ours: the item's own code raised it, and
            # aexecute_item lets every CancelledError through
            return fault_record(
                task, _raised_by_item(evaluator, exc), time.perf_counter() - started
            )
        finally:
            if not self._gone:  # (a loop given up: its keys are the fresh loop's items' now)
                self._children.end(key)
            self._returned.pop(key, None)
            self._spent.pop(key, None)
            with contextlib.suppress(ValueError):  # closed by the garbage collector elsewhere
                ITEM.reset(token)
            me = asyncio.current_task()
            if me is not None and sys.version_info >= (3, 11) and key not in self._ours:
                while me.cancelling():  # a timeout's, or one the item's code asked for
                    me.uncancel()  # handled: the worker goes on to the next item
            if self.stalls is not None:
                timer = self._timers.pop(key, None)
                if timer is not None:
                    timer.cancel()
                self._timed_out.pop(key, None)
                self._settling.discard(key)
                self.stalls.finish(key)


def _new_loop() -> asyncio.AbstractEventLoop:
    """The items' loop: one whose timers fire on time (see ``_timers``), unless the user
    chose a loop of their own through the policy (uvloop, say), or on Windows."""
    policy = asyncio.get_event_loop_policy()
    if sys.platform == "win32" or type(policy) is not asyncio.DefaultEventLoopPolicy:
        return _loops.own(asyncio.new_event_loop())
    return _loops.own(asyncio.SelectorEventLoop(PromptSelector()))


def _daemonic(thread: threading.Thread, daemon: bool) -> None:
    """What threads started from ``thread`` inherit (``Thread.daemon`` is read from the
    thread that makes one); the running thread itself stays what it was started as."""
    thread._daemonic = daemon  # type: ignore[attr-defined]


def _changed(fresh: contextvars.Context) -> bool:
    """Whether a context variable differs from ``fresh``, the worker's context at its start."""
    now = contextvars.copy_context()
    if len(now) != len(fresh):
        return True
    return any(now.get(var, fresh) is not value for var, value in fresh.items())


def _raised_by_item(evaluator: BaseEvaluator, exc: asyncio.CancelledError) -> ErrorInfo:
    """A CancelledError the item's own ``run`` or ``evaluate`` raised, as its error."""
    if not _passed_through(exc, aexecute_item.__code__) and isinstance(
        exc.__context__, asyncio.CancelledError
    ):
        # Python 3.10's wait_for raises a fresh CancelledError; the item's is its context
        exc = exc.__context__
    evaluate = getattr(type(evaluator).evaluate, "__code__", None)
    stage: Stage = "evaluate" if evaluate is not None and _passed_through(exc, evaluate) else "run"
    return error_info(stage, exc)


def _passed_through(exc: BaseException, code: CodeType) -> bool:
    """Whether ``exc`` was raised in or through a call of the function with ``code``."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is code:
            return True
        tb = tb.tb_next
    return False
