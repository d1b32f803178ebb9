"""The fork supervisor driven directly, for faults the CLI cannot provoke on demand."""

from __future__ import annotations

import errno
import os
from typing import Any

import pytest

from agenteval import BaseEvaluator
from agenteval._executors._base import ExecutorOptions, Isolation, StopState
from agenteval._executors._fork import ForkExecutor
from agenteval._item import ItemTask
from agenteval._results import ItemResult


class Echo(BaseEvaluator):
    def get_dataset(self) -> list[dict[str, Any]]:
        return []

    def run(self, item: Any) -> Any:
        return item

    def evaluate(self, output: Any, item: Any) -> None:
        pass


def run_items(count: int, isolation: Isolation = "item") -> list[ItemResult]:
    evaluator = Echo()
    tasks = iter([(evaluator, ItemTask("echo.py::Echo", n, n, {"n": n})) for n in range(count)])
    results: list[ItemResult] = []
    ForkExecutor(ExecutorOptions(concurrency=2, isolation=isolation)).run(
        tasks, lambda *records: results.extend(records), StopState()
    )
    return sorted(results, key=lambda r: r.index)


def test_fork_supervisor_runs_items_in_children() -> None:
    results = run_items(3)
    assert [(r.id, r.status, r.output) for r in results] == [
        (0, "passed", {"n": 0}),
        (1, "passed", {"n": 1}),
        (2, "passed", {"n": 2}),
    ]


def test_fork_supervisor_marks_item_crashed_when_fork_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_fork = os.fork
    calls: list[int] = []

    def flaky_fork() -> int:
        calls.append(len(calls))
        if len(calls) == 2:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        return real_fork()

    monkeypatch.setattr(os, "fork", flaky_fork)
    results = run_items(3)
    assert [(r.id, r.status) for r in results] == [(0, "passed"), (1, "crashed"), (2, "passed")]
    error = results[1].error
    assert error is not None
    assert (error.type, error.message) == (
        "ForkFailed",
        "could not start the item's process: [Errno 11] Resource temporarily unavailable",
    )


def test_fork_failure_leaves_the_items_to_the_workers_alive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With --isolation worker, a fork that fails while a worker is alive costs no item:
    the worker takes them (and the fork is tried again when a slot frees up)."""
    real_fork = os.fork
    calls: list[int] = []

    def fails_after_first() -> int:
        calls.append(len(calls))
        if len(calls) > 1:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        return real_fork()

    monkeypatch.setattr(os, "fork", fails_after_first)
    results = run_items(6, isolation="worker")
    assert [(r.id, r.status) for r in results] == [(n, "passed") for n in range(6)]


def test_fork_supervisor_sets_a_backstop_beyond_the_grace_period() -> None:
    stop = StopState(grace=1.0)
    ForkExecutor(ExecutorOptions(concurrency=2)).run(iter([]), lambda *records: None, stop)
    assert stop.backstop == 2.0
