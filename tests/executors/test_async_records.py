"""The async executor records every item, even when its record cannot be built."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agenteval import BaseEvaluator
from agenteval._executors import _async
from agenteval._executors._base import ExecutorOptions, StopState
from agenteval._item import ItemTask
from agenteval._results import ItemResult


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no str")


class Echo(BaseEvaluator):
    def get_dataset(self) -> list[Any]:
        return []

    async def run(self, item: Any) -> Any:
        await asyncio.sleep(0)
        return {Unprintable(): 1} if item == 1 else "ok"

    def evaluate(self, output: Any, item: Any) -> None:
        pass


def run_items(n: int, concurrency: int = 2) -> list[ItemResult]:
    evaluator = Echo()
    tasks = iter([(evaluator, ItemTask("e.py::Echo", i, i, i)) for i in range(n)])
    results: list[ItemResult] = []
    executor = _async.AsyncExecutor(ExecutorOptions(concurrency=concurrency))
    executor.run(tasks, lambda *records: results.extend(records), StopState())
    return sorted(results, key=lambda r: r.index)


def test_an_output_key_whose_str_raises_is_shown_by_its_repr() -> None:
    results = run_items(3)
    assert [r.status for r in results] == ["passed", "passed", "passed"]
    (key,) = results[1].output
    assert key.startswith("<") and "Unprintable object at" in key


def test_an_item_whose_record_cannot_be_built_is_an_error_not_a_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = _async.aexecute_item

    async def breaks_on_two(evaluator: Any, task: ItemTask, **kwargs: Any) -> ItemResult:
        if task.index == 2:
            raise RuntimeError("could not build the record")
        return await real(evaluator, task, **kwargs)

    monkeypatch.setattr(_async, "aexecute_item", breaks_on_two)
    results = run_items(5, concurrency=1)
    assert [r.status for r in results] == ["passed", "passed", "error", "passed", "passed"]
    error = results[2].error
    assert error is not None
    assert (error.type, error.message) == ("RuntimeError", "could not build the record")
