"""Sequential, in-process execution: items in dataset order, state shared across items."""

from __future__ import annotations

from .._item import close_loop, execute_item
from ._base import Executor, OnResult, StopState, TaskSource


class InlineExecutor(Executor):
    """The default (``--concurrency 1``): debuggers, breakpoints and coverage just work."""

    name = "inline"

    def run(self, tasks: TaskSource, on_result: OnResult, stop: StopState) -> None:
        """Run each task in turn until done or interrupted."""
        limit = self.options.max_output_bytes
        try:
            while not stop.requested:
                pulled = next(tasks, None)
                if pulled is None:
                    break
                evaluator, task = pulled
                on_result(execute_item(evaluator, task, max_output_bytes=limit))
        finally:
            close_loop()
