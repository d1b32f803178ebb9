"""Many ``async def run`` items in flight in one process (``--executor async``).

For concurrency in the hundreds, where a process per item would be wasteful. Items share
the process, so isolation is weaker than with the fork executor: an item that blocks the
event loop delays the others, and ``--timeout`` can only cancel at an ``await``.
"""

from __future__ import annotations

import asyncio
import time

from .._evaluator import BaseEvaluator
from .._item import CANCELLED, ItemTask, aexecute_item, fault_record
from .._results import ErrorInfo, ItemResult
from ._base import Executor, OnResult, StopState, TaskSource

_BACKSTOP = 2.0
"""Seconds beyond the grace period before the signal handler stops the run at once."""


class AsyncExecutor(Executor):
    """Up to ``concurrency`` items at once on one event loop."""

    name = "async"

    def run(self, tasks: TaskSource, on_result: OnResult, stop: StopState) -> None:
        """Run the tasks on a fresh event loop."""
        # we cancel what is left when the grace period ends: time to record it first
        stop.backstop = max(stop.backstop, _BACKSTOP)
        asyncio.run(self._run(tasks, on_result, stop))

    async def _one(self, evaluator: BaseEvaluator, task: ItemTask) -> ItemResult:
        started = time.perf_counter()
        coro = aexecute_item(evaluator, task, max_output_bytes=self.options.max_output_bytes)
        timeout = self.options.timeout
        if timeout is None:
            return await coro
        try:
            return await asyncio.wait_for(coro, timeout)
        except asyncio.TimeoutError:
            return fault_record(
                task,
                ErrorInfo(
                    stage="executor",
                    type="Timeout",
                    message=f"item exceeded --timeout {timeout:g}s and was cancelled",
                ),
                time.perf_counter() - started,
                "timeout",
            )

    async def _run(self, tasks: TaskSource, on_result: OnResult, stop: StopState) -> None:
        limit = self.options.concurrency
        running: dict[asyncio.Task[ItemResult], ItemTask] = {}
        exhausted = False
        stop_deadline: float | None = None
        while True:
            while not exhausted and not stop.requested and len(running) < limit:
                try:
                    evaluator, task = next(tasks)
                except StopIteration:
                    exhausted = True
                    break
                running[asyncio.ensure_future(self._one(evaluator, task))] = task
            if not running:
                return
            if stop.requested and stop_deadline is None:
                stop_deadline = time.monotonic() + stop.grace
            wait = 0.1
            if stop_deadline is not None:
                wait = max(0.0, min(wait, stop_deadline - time.monotonic()))
            done, _ = await asyncio.wait(running, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            for fut in done:
                running.pop(fut)
                on_result(fut.result())
            if stop_deadline is not None and time.monotonic() >= stop_deadline:
                for fut, task in running.items():
                    fut.cancel()
                    on_result(
                        fault_record(
                            task,
                            ErrorInfo(stage="executor", type="Cancelled", message=CANCELLED),
                            stop.grace,
                            "cancelled",
                        )
                    )
                await asyncio.gather(*running, return_exceptions=True)
                return
