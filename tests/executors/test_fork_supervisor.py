"""The fork supervisor driven directly, for faults the CLI cannot provoke on demand."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from typing import Any

import pytest

from agenteval import BaseEvaluator
from agenteval._executors._base import GRACE_TIMER, ExecutorOptions, Isolation, StopState
from agenteval._executors._fork import ForkExecutor
from agenteval._executors._sweeper import Sweeper
from agenteval._item import HardStop, ItemTask
from agenteval._results import ItemResult


class Echo(BaseEvaluator):
    def get_dataset(self) -> list[dict[str, Any]]:
        return []

    def run(self, item: Any) -> Any:
        return item

    def evaluate(self, output: Any, item: Any) -> None:
        pass


@pytest.fixture
def no_sweeper(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that count the forks count only the items' (the sweeper is forked first)."""
    monkeypatch.setattr(Sweeper, "start", lambda self: None)


def run_items(
    count: int,
    isolation: Isolation = "item",
    concurrency: int = 2,
    notices: list[str] | None = None,
) -> list[ItemResult]:
    evaluator = Echo()
    tasks = iter(
        [
            (evaluator, ItemTask("echo.py::Echo", n, n, {"n": n}, last=n == count - 1))
            for n in range(count)
        ]
    )
    results: list[ItemResult] = []
    executor = ForkExecutor(ExecutorOptions(concurrency=concurrency, isolation=isolation))
    executor.run(tasks, lambda *records: results.extend(records), StopState())
    if notices is not None:
        notices.extend(executor.notices)
    return sorted(results, key=lambda r: r.index)


def test_fork_supervisor_runs_items_in_children() -> None:
    results = run_items(3)
    assert [(r.id, r.status, r.output) for r in results] == [
        (0, "passed", {"n": 0}),
        (1, "passed", {"n": 1}),
        (2, "passed", {"n": 2}),
    ]


def test_fork_supervisor_does_not_count_the_grace_timer_as_a_thread() -> None:
    # after a first Ctrl-C the runner's timer for the grace period waits in a thread of its
    # own (and holds no lock): forking then must not warn about threads in the parent
    timer = threading.Timer(60, lambda: None)
    timer.name = GRACE_TIMER
    timer.start()
    try:
        notices: list[str] = []
        assert [r.status for r in run_items(2, notices=notices)] == ["passed", "passed"]
        assert notices == []
    finally:
        timer.cancel()


def second_fork_fails(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make the second ``os.fork`` fail as when out of processes; returns the calls made."""
    real_fork = os.fork
    calls: list[int] = []

    def flaky_fork() -> int:
        calls.append(len(calls))
        if len(calls) == 2:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        return real_fork()

    monkeypatch.setattr(os, "fork", flaky_fork)
    return calls


def test_fork_supervisor_marks_item_crashed_when_fork_fails(
    monkeypatch: pytest.MonkeyPatch, no_sweeper: None
) -> None:
    # one at a time, no child is alive when the fork fails: none will free what it lacks
    second_fork_fails(monkeypatch)
    results = run_items(3, concurrency=1)
    assert [(r.id, r.status) for r in results] == [(0, "passed"), (1, "crashed"), (2, "passed")]
    error = results[1].error
    assert error is not None
    assert (error.type, error.message) == (
        "ForkFailed",
        "could not start the item's process: [Errno 11] Resource temporarily unavailable",
    )


def test_fork_failure_in_a_batch_waits_for_a_child_to_exit(
    monkeypatch: pytest.MonkeyPatch, no_sweeper: None
) -> None:
    """Four free slots are forked back to back; the second fork fails (out of processes)
    while the first child is alive: no item crashes, the fork is tried again later."""
    calls = second_fork_fails(monkeypatch)
    results = run_items(6, concurrency=4)
    assert [(r.id, r.status) for r in results] == [(n, "passed") for n in range(6)]
    assert len(calls) == 7


def test_forks_failing_while_children_run_cost_no_item(
    monkeypatch: pytest.MonkeyPatch, no_sweeper: None
) -> None:
    """Out of processes beyond two children (``ulimit -u``): every fork past them fails
    until one exits, and every item still runs."""
    real_fork = os.fork
    alive: set[int] = set()

    def limited_fork() -> int:
        for pid in list(alive):
            with contextlib.suppress(ChildProcessError):
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                    continue
            alive.discard(pid)
        if len(alive) >= 2:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        pid = real_fork()
        alive.add(pid)
        return pid

    monkeypatch.setattr(os, "fork", limited_fork)
    results = run_items(12, concurrency=6)
    assert [(r.id, r.status) for r in results] == [(n, "passed") for n in range(12)]


def write_pipes() -> int:
    """How many pipes this process can write to, besides stdin, stdout and stderr."""
    count = 0
    for fd in (int(name) for name in os.listdir("/proc/self/fd")):
        try:
            is_pipe = fd > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
            writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
        except OSError:  # the listing's own descriptor, closed by now
            continue
        count += is_pipe and writable
    return count


class WritePipes(Echo):
    def run(self, item: Any) -> Any:
        return write_pipes()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_children_forked_together_hold_only_their_own_record_pipe() -> None:
    # a child holding another's write end would keep that pipe open past its exit
    evaluator = WritePipes()
    tasks = iter([(evaluator, ItemTask("pipes.py::WritePipes", n, n, n)) for n in range(4)])
    results: list[ItemResult] = []
    ForkExecutor(ExecutorOptions(concurrency=4)).run(
        tasks, lambda *records: results.extend(records), StopState()
    )
    inherited = write_pipes()  # the test runner's own
    assert sorted((r.id, r.status, r.output) for r in results) == [
        (n, "passed", inherited + 1) for n in range(4)
    ]


class Sleeper(Echo):
    def run(self, item: Any) -> Any:
        time.sleep(30)
        return item


def test_a_hard_stop_between_forks_leaves_no_child_behind(
    monkeypatch: pytest.MonkeyPatch,
    no_sweeper: None,
) -> None:
    """A second Ctrl-C can reach the main thread between two forks of a batch (another
    thread took the signal): every child forked so far is still killed and recorded."""
    real_fork = os.fork
    pids: list[int] = []

    def fork_then_stop() -> int:
        if len(pids) == 3:
            raise HardStop("second interrupt")
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork_then_stop)
    evaluator = Sleeper()
    tasks = iter([(evaluator, ItemTask("s.py::Sleeper", n, n, n)) for n in range(6)])
    results: list[ItemResult] = []
    with pytest.raises(HardStop):
        ForkExecutor(ExecutorOptions(concurrency=4)).run(
            tasks, lambda *records: results.extend(records), StopState()
        )
    assert sorted((r.id, r.status) for r in results) == [(n, "cancelled") for n in range(3)]
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped already, not left running


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_running_out_of_file_descriptors_slows_the_run_down_instead_of_failing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When no pipe can be opened for another child, the next one waits for a running
    child to exit; with none running, the item gets a record saying what to change."""
    real_pipe = os.pipe
    limit = {"fds": 0}

    def scarce_pipe() -> tuple[int, int]:
        if open_fds() >= limit["fds"]:
            raise OSError(errno.EMFILE, "Too many open files")
        return real_pipe()

    monkeypatch.setattr(os, "pipe", scarce_pipe)
    limit["fds"] = open_fds() + 6  # room for the pipes and captures of about two children
    results = run_items(6, concurrency=4)
    assert [(r.id, r.status) for r in results] == [(n, "passed") for n in range(6)]

    limit["fds"] = 0  # room for none
    (result,) = run_items(1, concurrency=4)
    assert result.status == "crashed"
    assert result.error is not None and result.error.message == (
        "could not start the item's process: [Errno 24] Too many open files (raise the "
        "limit with `ulimit -n`, or lower --concurrency)"
    )


def test_fork_failure_leaves_the_items_to_the_workers_alive(
    monkeypatch: pytest.MonkeyPatch,
    no_sweeper: None,
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
