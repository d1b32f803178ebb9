"""Sequential, in-process execution: items in dataset order, state shared across items."""

from __future__ import annotations

import time

from .._item import HardStop, close_loop, execute_item, guarding_exit, return_to
from ._base import Executor, OnResult, StopState, TaskSource, cancelled_record


class InlineExecutor(Executor):
    """The default (``--concurrency 1``): debuggers, breakpoints and coverage just work.

    An in-process item cannot be killed: when the grace period after the first interrupt
    runs out, the runner's second signal stops the item where it is and it is recorded
    ``cancelled``.
    """

    name = "inline"

    def run(self, tasks: TaskSource, on_result: OnResult, stop: StopState) -> None:
        """Run each task in turn until done or interrupted."""
        limit = self.options.max_output_bytes
        with guarding_exit():
            try:
                while not stop.requested:
                    pulled = next(tasks, None)
                    if pulled is None:
                        break
                    evaluator, task = pulled
                    started = time.perf_counter()
                    try:
                        stop.in_item = True
                        try:
                            record = execute_item(evaluator, task, max_output_bytes=limit)
                        finally:
                            stop.in_item = False
                        if stop.hard:  # the item's code caught the stop (except BaseException)
                            raise HardStop(stop.requested)
                    except HardStop:
                        duration = time.perf_counter() - started
                        on_result(cancelled_record(task, duration, stop.cut_off))
                        raise
                    finally:  # (a streamed dataset's next item is read from there)
                        if task.cwd:
                            return_to(task.cwd)
                    on_result(record)
            finally:
                close_loop()
