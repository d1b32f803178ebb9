"""Many ``async def run`` items in flight in one process (``--executor async``).

For concurrency in the hundreds, where a process per item would be wasteful. Items share
the process, so isolation is weaker than with the fork executor: an item that blocks the
event loop delays the others, and ``--timeout`` can only cancel at an ``await``.

The items run on an event loop in a thread of its own, and only the items do. Everything
else stays in the main thread, as with the other executors: pulling tasks (which runs the
evaluators' ``set_up``, ``get_dataset`` and ``tear_down``), recording results, and the
signal handler. So those hooks may call ``asyncio.run()``, an item that blocks the loop
cannot hold up the grace period, and a second interrupt is raised in the main thread,
never inside an item's code.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import queue
import threading
import time
from types import CodeType
from typing import Any

from .._evaluator import BaseEvaluator
from .._item import STOPPED, HardStop, ItemTask, aexecute_item, error_info, fault_record
from .._results import ErrorInfo, ItemResult, Stage
from ._base import Executor, OnResult, StopState, TaskSource, cancelled_record

_BACKSTOP = 2.0
"""Seconds beyond the grace period before the signal handler stops the run at once."""

_POLL = 0.1

_CANCEL_WAIT = 1.0
"""Seconds cancelled items get to run their ``finally`` blocks before the run ends anyway
(an item blocking the loop would hold it up for good); less than the backstop."""

_HARD_STOP_WAIT = 0.5
"""The same after a second interrupt."""


class AsyncExecutor(Executor):
    """Up to ``concurrency`` items at once on one event loop."""

    name = "async"

    def run(self, tasks: TaskSource, on_result: OnResult, stop: StopState) -> None:
        """Run the tasks on a fresh event loop in its own thread; supervise from this one."""
        # we cancel what is left when the grace period ends: time to record it first
        stop.backstop = max(stop.backstop, _BACKSTOP)
        items = _ItemLoop(self.options.timeout, self.options.max_output_bytes)
        running: dict[int, tuple[ItemTask, float]] = {}
        wait: float | None = None
        try:
            wait = self._supervise(tasks, on_result, stop, items, running)
        except HardStop:
            # stop at once, but record every item cut off, as the grace period's end does
            wait = _HARD_STOP_WAIT
            for key in running:
                items.cancel(key)
            for record in self._collect(items, running, 0.0):  # results already in are kept
                on_result(record)
            while running:
                key = next(iter(running))
                task, started = running.pop(key)
                on_result(cancelled_record(task, time.perf_counter() - started, STOPPED))
            raise
        finally:
            items.close(wait)

    def _supervise(
        self,
        tasks: TaskSource,
        on_result: OnResult,
        stop: StopState,
        items: _ItemLoop,
        running: dict[int, tuple[ItemTask, float]],
    ) -> float | None:
        """Start, collect and cancel items; how long to wait for the loop's cleanup."""
        limit = self.options.concurrency
        keys = itertools.count()
        exhausted = False
        stop_deadline: float | None = None
        finished: list[ItemResult] = []
        while True:
            while not exhausted and not stop.requested and len(running) < limit:
                pulled = next(tasks, None)
                if pulled is None:
                    exhausted = True
                    break
                evaluator, task = pulled
                key = next(keys)
                running[key] = (task, time.perf_counter())
                items.start(key, evaluator, task)
            # replacements are started first: recording costs time the free slots would idle
            for record in finished:
                on_result(record)
            if not running:
                return None
            if stop.requested and stop_deadline is None:
                stop_deadline = time.monotonic() + stop.grace
            wait = _POLL
            if stop_deadline is not None:
                wait = max(0.0, min(wait, stop_deadline - time.monotonic()))
            finished = self._collect(items, running, wait)
            if stop_deadline is not None and time.monotonic() >= stop_deadline:
                for record in finished:
                    on_result(record)
                for key in running:
                    items.cancel(key)
                while running:
                    key = next(iter(running))
                    task, _ = running.pop(key)
                    on_result(cancelled_record(task, stop.grace))
                return _CANCEL_WAIT

    def _collect(
        self, items: _ItemLoop, running: dict[int, tuple[ItemTask, float]], wait: float
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

    The main thread talks to it through ``start``, ``cancel`` and ``close`` and reads
    finished records from ``done``; every other attribute belongs to the loop's thread.
    """

    def __init__(self, timeout: float | None, max_output_bytes: int | None) -> None:
        self.timeout = timeout
        self.max_output_bytes = max_output_bytes
        self.done: queue.SimpleQueue[tuple[int, ItemResult]] = queue.SimpleQueue()
        self.loop = asyncio.new_event_loop()
        self._tasks: dict[int, asyncio.Task[ItemResult]] = {}
        self._ours: set[asyncio.Task[Any]] = set()  # the tasks we cancelled ourselves
        self._closing = False
        self._thread = threading.Thread(target=self._main, name="agenteval-async", daemon=True)
        self._thread.start()

    # -- called from the main thread --------------------------------------------------------
    def start(self, key: int, evaluator: BaseEvaluator, task: ItemTask) -> None:
        """Start the item on the loop; its record arrives in ``done`` under ``key``."""
        self.loop.call_soon_threadsafe(self._start, key, evaluator, task, time.perf_counter())

    def cancel(self, key: int) -> None:
        """Cancel the item (a no-op once it finished); it then records nothing of its own."""
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            self.loop.call_soon_threadsafe(self._cancel, key)

    def alive(self) -> bool:
        """False once the loop's thread has ended."""
        return self._thread.is_alive()

    def close(self, wait: float | None) -> None:
        """Stop the loop, cancelling what still runs, and wait up to ``wait`` s (None: all)."""
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._close)
        self._thread.join(wait)

    # -- the loop's thread ------------------------------------------------------------------
    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            while not self._closing:
                # a task the user started may raise these through the loop: not theirs
                # to end the run, and the items still in flight must still be recorded
                with contextlib.suppress(SystemExit, KeyboardInterrupt):
                    self.loop.run_forever()
            self._shutdown()
        finally:
            asyncio.set_event_loop(None)
            self.loop.close()

    def _shutdown(self) -> None:
        """What ``asyncio.run`` does at the end: cancel every task, then close async gens."""
        pending = asyncio.all_tasks(self.loop)
        for t in pending:
            self._ours.add(t)
            t.cancel()
        with contextlib.suppress(SystemExit, KeyboardInterrupt):
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.run_until_complete(self.loop.shutdown_default_executor())

    def _close(self) -> None:
        self._closing = True
        self.loop.stop()

    def _start(self, key: int, evaluator: BaseEvaluator, task: ItemTask, started: float) -> None:
        running = self.loop.create_task(self._one(evaluator, task))
        self._tasks[key] = running
        running.add_done_callback(functools.partial(self._finished, key, task, started))

    def _cancel(self, key: int) -> None:
        running = self._tasks.get(key)
        if running is not None:
            self._ours.add(running)
            running.cancel()

    def _finished(
        self, key: int, task: ItemTask, started: float, running: asyncio.Task[ItemResult]
    ) -> None:
        del self._tasks[key]
        self._ours.discard(running)
        duration = time.perf_counter() - started
        if running.cancelled():  # by us: the main thread has recorded it already
            record = cancelled_record(task, duration)
        elif (exc := running.exception()) is not None:  # _one lets nothing else through
            record = fault_record(task, error_info("run", exc), duration)
        else:
            record = running.result()
        self.done.put((key, record))

    async def _one(self, evaluator: BaseEvaluator, task: ItemTask) -> ItemResult:
        started = time.perf_counter()
        coro = aexecute_item(evaluator, task, max_output_bytes=self.max_output_bytes)
        try:
            if self.timeout is None:
                return await coro
            try:
                return await asyncio.wait_for(coro, self.timeout)
            except asyncio.TimeoutError:
                return fault_record(
                    task,
                    ErrorInfo(
                        stage="executor",
                        type="Timeout",
                        message=f"item exceeded --timeout {self.timeout:g}s and was cancelled",
                    ),
                    time.perf_counter() - started,
                    "timeout",
                )
        except asyncio.CancelledError as exc:
            if asyncio.current_task() in self._ours:
                raise
            # not a cancellation of ours (a timeout arrives as TimeoutError): the item's
            # own code raised it, and aexecute_item lets every CancelledError through
            return fault_record(
                task, _raised_by_item(evaluator, exc), time.perf_counter() - started
            )


def _raised_by_item(evaluator: BaseEvaluator, exc: asyncio.CancelledError) -> ErrorInfo:
    """A CancelledError the item's own ``run`` or ``evaluate`` raised, as its error."""
    if not _passed_through(exc, aexecute_item.__code__) and isinstance(
        exc.__context__, asyncio.CancelledError
    ):
        # Python 3.10's wait_for raises a fresh CancelledError; the item's is its context
        exc = exc.__context__
    evaluate = getattr(type(evaluator).evaluate, "__code__", None)
    stage: Stage = "evaluate" if evaluate is not None and _passed_through(exc, evaluate) else "run"
    return error_info(stage, exc).model_copy(update={"type": "CancelledError"})


def _passed_through(exc: BaseException, code: CodeType) -> bool:
    """Whether ``exc`` was raised in or through a call of the function with ``code``."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is code:
            return True
        tb = tb.tb_next
    return False
