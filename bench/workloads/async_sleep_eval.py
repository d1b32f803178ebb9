"""Latency-bound async items: ``run`` awaits ``asyncio.sleep(BENCH_SLEEP)`` (default 0.1).

Used by ``parallel.py`` with ``--executor async``. ``BENCH_N`` items (default 2,000).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains, StringLengthBetween, StringStartsWith
from agenteval.datasets import ArrayDataset


def make_items(n: int) -> list[dict[str, Any]]:
    """The same items as ``instant_eval.py`` (kept apart: each evaluator file stands alone)."""
    return [
        {
            "id": i,
            "input": f"Hello, I need help with my order #{i}",
            "reference": "order",
            "prefix": "Hello",
        }
        for i in range(n)
    ]


def _items_phase_start() -> float:
    return time.perf_counter()


def _items_phase_end(started: float) -> None:
    """Write the seconds from the end of ``set_up`` to ``tear_down`` to BENCH_TIMING_FILE.

    That span holds every item (forks included) and excludes start-up and ``set_up``'s
    own allocations, so ``parallel.py`` can isolate the per-item cost.
    """
    path = os.environ.get("BENCH_TIMING_FILE")
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(repr(time.perf_counter() - started))


class AsyncSleepingItems(BaseEvaluator):
    """``async def run`` awaits a sleep, then echoes the input."""

    def set_up(self) -> None:
        self.started = _items_phase_start()

    def tear_down(self) -> None:
        _items_phase_end(self.started)

    def get_dataset(self) -> ArrayDataset:
        return ArrayDataset(make_items(int(os.environ.get("BENCH_N", "2000"))))

    async def run(self, item: dict[str, Any]) -> str:
        await asyncio.sleep(float(os.environ.get("BENCH_SLEEP", "0.1")))
        return str(item["input"])

    def evaluate(self, output: str, item: dict[str, Any]) -> None:
        self.assert_that(StringContains(item["reference"]), output)
        self.assert_that(StringStartsWith(item["prefix"]), output)
        self.assert_that(StringLengthBetween(1, 200), output)
