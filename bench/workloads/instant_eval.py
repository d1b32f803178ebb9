"""Items whose ``run`` returns the input at once, checked by 3 deterministic assertions.

Used by ``throughput.py`` (sequential) and ``parallel.py`` (per-item overhead of the fork
executor). Environment: ``BENCH_N`` items (default 20,000); ``BENCH_BALLAST_MB`` makes
``set_up`` allocate and touch that much memory in the parent before any item is forked,
as a ``bytearray`` or, with ``BENCH_BALLAST_KIND=objects``, as a list of small ``str``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains, StringLengthBetween, StringStartsWith
from agenteval.datasets import ArrayDataset


def make_items(n: int) -> list[dict[str, Any]]:
    """The benchmark's items (the pydantic-evals workload builds the same ones)."""
    return [
        {
            "id": i,
            "input": f"Hello, I need help with my order #{i}",
            "reference": "order",
            "prefix": "Hello",
        }
        for i in range(n)
    ]


def make_ballast(mb: int, kind: str) -> object:
    """``mb`` MiB of memory, every page written, so the parent really holds it."""
    if kind == "objects":
        # millions of small str objects: what a loaded corpus or index looks like to the GC
        each = sys.getsizeof("0" * 92) + 8  # the object plus its slot in the list
        return [f"{i:092d}" for i in range(mb * 1024 * 1024 // each)]
    return bytearray(b"\x01") * (mb * 1024 * 1024)


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


class InstantItems(BaseEvaluator):
    """``run`` echoes the input; contains / starts-with / length assertions pass."""

    def set_up(self) -> None:
        mb = int(os.environ.get("BENCH_BALLAST_MB", "0"))
        kind = os.environ.get("BENCH_BALLAST_KIND", "bytes")
        self.ballast = make_ballast(mb, kind) if mb else None
        self.started = _items_phase_start()

    def tear_down(self) -> None:
        _items_phase_end(self.started)

    def get_dataset(self) -> ArrayDataset:
        return ArrayDataset(make_items(int(os.environ.get("BENCH_N", "20000"))))

    def run(self, item: dict[str, Any]) -> str:
        return str(item["input"])

    def evaluate(self, output: str, item: dict[str, Any]) -> None:
        self.assert_that(StringContains(item["reference"]), output)
        self.assert_that(StringStartsWith(item["prefix"]), output)
        self.assert_that(StringLengthBetween(1, 200), output)
