"""Backing the fork executor's parent with huge pages: which memory, and that it happens."""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import time
from typing import Any

import pytest

from agenteval import BaseEvaluator
from agenteval._executors import _fork, _hugepages
from agenteval._executors._base import ExecutorOptions, StopState
from agenteval._executors._fork import ForkExecutor
from agenteval._executors._hugepages import HUGE_PAGE, HeapCollapse, dense_ranges
from agenteval._item import ItemTask
from agenteval._results import ItemResult

MB = 1024 * 1024

SMAPS = """\
00400000-00a00000 rw-p 00000000 00:00 0
Size:               6144 kB
Anonymous:          6000 kB
AnonHugePages:         0 kB
VmFlags: rd wr mr mw me ac
00a00000-00e00000 rw-p 00000000 00:00 0                                  [heap]
Anonymous:          1024 kB
AnonHugePages:         0 kB
VmFlags: rd wr mr mw me ac
01000000-01400000 rw-p 00000000 00:00 0
Anonymous:          4096 kB
AnonHugePages:      4096 kB
VmFlags: rd wr mr mw me ac
01400000-01800000 rw-p 00000000 00:00 0
Anonymous:          4096 kB
AnonHugePages:         0 kB
VmFlags: rd wr mr mw me ac nh
01900000-01e00000 rw-p 00000000 00:00 0                                  [heap]
Anonymous:          5120 kB
AnonHugePages:         0 kB
VmFlags: rd wr mr mw me ac
02000000-02400000 r--p 00000000 08:01 123                                /usr/lib/libx.so
Anonymous:          4096 kB
AnonHugePages:         0 kB
VmFlags: rd mr mw me
02400000-02800000 rw-s 00000000 00:01 9                                  /dev/zero (deleted)
Anonymous:          4096 kB
AnonHugePages:         0 kB
VmFlags: rd wr sh mr mw me ms
02800000-02900000 rw-p 00000000 00:00 0
Anonymous:          1024 kB
AnonHugePages:         0 kB
VmFlags: rd wr mr mw me ac
"""


def test_only_dense_private_anonymous_ranges_outside_huge_pages_are_chosen() -> None:
    assert dense_ranges(SMAPS) == [
        (0x400000, 0xA00000),  # 6 MiB, full: aligned to 2 MiB at both ends already
        (0x1A00000, 0x1E00000),  # the heap's aligned 4 MiB (its first MiB is left out)
    ]
    # left out: a sparse heap, memory already huge, nh (no huge pages asked), a file, a
    # shared mapping, and one smaller than a huge page


def _anon_huge_bytes() -> int:
    with open("/proc/self/smaps_rollup", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1]) * 1024
    return 0


def test_a_dense_buffer_ends_up_in_huge_pages_a_slice_at_a_time() -> None:
    collapse = HeapCollapse()
    if collapse.done:
        pytest.skip("no transparent huge pages here")
    ballast = bytearray(b"\x01") * (40 * MB)
    before = _anon_huge_bytes()
    steps = 0
    while not collapse.done:
        collapse.step(budget=8 * MB)
        steps += 1
    if collapse.collapsed == 0:
        pytest.skip("this kernel does not collapse on request (Linux < 6.1)")
    assert steps >= 4  # 40 MiB in slices of 8
    assert collapse.collapsed >= 32 * MB and _anon_huge_bytes() >= before + 32 * MB
    assert ballast.count(1) == len(ballast)  # the contents are untouched


def test_a_huge_page_that_cannot_be_collapsed_leaves_the_others_to_be() -> None:
    collapse = HeapCollapse()
    if collapse.done:
        pytest.skip("no transparent huge pages here")
    buffer = mmap.mmap(-1, 12 * MB, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    start = -(-base // HUGE_PAGE) * HUGE_PAGE  # 4 whole huge pages inside the buffer
    first = start - base
    buffer[first + HUGE_PAGE : first + 4 * HUGE_PAGE] = b"\x05" * (3 * HUGE_PAGE)
    collapse.todo = [(start, start + 4 * HUGE_PAGE)]  # the first one was never touched
    collapse.step()
    assert collapse.done and collapse.collapsed in (0, 3 * HUGE_PAGE)
    if collapse.collapsed == 0:
        pytest.skip("this kernel does not collapse on request")
    assert buffer[first : first + HUGE_PAGE].count(0) == HUGE_PAGE
    assert buffer[first + HUGE_PAGE : first + 4 * HUGE_PAGE].count(5) == 3 * HUGE_PAGE


def test_what_may_still_be_allocated_is_never_more_than_the_machine_has() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("Linux only")
    with open("/proc/meminfo", encoding="ascii") as fh:
        (line,) = [line for line in fh if line.startswith("MemAvailable:")]
    assert 0 < _hugepages._available() <= int(line.split()[1]) * 1024


class Holding(BaseEvaluator):
    def set_up(self) -> None:
        self.ballast = bytearray(b"\x07") * (16 * MB)

    def get_dataset(self) -> list[dict[str, Any]]:
        return []

    def run(self, item: Any) -> Any:
        if item.get("fault") == "exit":
            os._exit(3)
        if item.get("fault") == "hang":
            time.sleep(30)
        return {"n": item["n"], "ballast": self.ballast.count(7) == len(self.ballast)}

    def evaluate(self, output: Any, item: Any) -> None:
        pass


def test_the_executor_collapses_after_enough_forks_and_items_see_the_same_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_fork, "_COLLAPSE_AFTER", 4)
    steps: list[int] = []
    real_step = HeapCollapse.step

    def counted(self: HeapCollapse, budget: int = 16 * MB) -> None:
        steps.append(budget)
        real_step(self, budget)

    monkeypatch.setattr(HeapCollapse, "step", counted)
    evaluator = Holding()
    evaluator.set_up()
    tasks = iter([(evaluator, ItemTask("h.py::Holding", n, n, {"n": n})) for n in range(24)])
    results: list[ItemResult] = []
    executor = ForkExecutor(ExecutorOptions(concurrency=2))
    executor.run(tasks, lambda *records: results.extend(records), StopState())
    assert sorted(r.output["n"] for r in results) == list(range(24))
    assert all(r.status == "passed" and r.output["ballast"] for r in results)
    if not sys.platform.startswith("linux") or HeapCollapse().done:
        assert steps == []
    else:
        assert steps  # asked once 4 children were forked, not before
        assert executor._forks == 24


def test_faults_while_collapsing_still_cost_only_their_item(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_fork, "_COLLAPSE_AFTER", 1)
    evaluator = Holding()
    evaluator.set_up()
    faults = {3: "exit", 5: "hang"}
    tasks = iter(
        [
            (evaluator, ItemTask("h.py::Holding", n, n, {"n": n, "fault": faults.get(n)}))
            for n in range(12)
        ]
    )
    results: list[ItemResult] = []
    ForkExecutor(ExecutorOptions(concurrency=3, timeout=1.0)).run(
        tasks, lambda *records: results.extend(records), StopState()
    )
    statuses = {r.index: r.status for r in results}
    assert statuses == {n: {3: "crashed", 5: "timeout"}.get(n, "passed") for n in range(12)}


def test_workers_are_forked_too_rarely_to_pay_for_it() -> None:
    assert ForkExecutor(ExecutorOptions(concurrency=2, isolation="worker"))._collapse.done
