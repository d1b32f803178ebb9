"""The executor interface: run item tasks, report each record as it completes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

from .._evaluator import BaseEvaluator
from .._item import CANCELLED, STOPPED, HardStop, ItemTask, fault_record
from .._results import ErrorInfo, ItemResult

TaskSource = Iterator[tuple[BaseEvaluator, ItemTask]]
"""Tasks in plan order; pulling the next one may run the next evaluator's ``set_up``."""


class OnResult(Protocol):
    """Takes the records of items that reached a terminal status, one or several at a
    time (records that finished together are journalled in one write)."""

    def __call__(self, *results: ItemResult) -> None: ...


def cancelled_record(task: ItemTask, duration: float, message: str = CANCELLED) -> ItemResult:
    """The record of an item the executor stopped because the run was interrupted.

    Every item an executor cut off, at the end of the grace period or on a second
    interrupt, gets one, so the report counts it and ``--resume`` runs it again.
    """
    error = ErrorInfo(stage="executor", type="Cancelled", message=message)
    return fault_record(task, error, duration, "cancelled")


GRACE_TIMER = "agenteval-grace-period"
"""The name of the thread that ends the grace period: it only waits, holding no lock."""

LIVE_THREAD = "agenteval-live"
"""The name of the thread that draws the progress bars (``outputs._live``)."""


@dataclass
class StopState:
    """Set by the signal handler: ``requested`` names the first signal; ``grace`` is how
    long in-flight items may still take before they are cancelled.

    ``backstop`` is how much longer than ``grace`` the signal handler waits before it
    stops the run at once (as a second signal would). Executors that cancel their own
    items when the grace period ends set it, so that they get to record those items as
    ``cancelled`` first; for in-process items, which cannot be killed, it stays 0.
    """

    requested: str | None = None
    grace: float = 10.0
    backstop: float = 0.0
    expired: bool = False  # the stop at once came from the grace period's end, not a signal
    hard: bool = False  # the stop at once was raised (an item's code may have caught it)
    holding: int = 0  # inside ``held``: a stop at once waits for its end
    held_stop: str | None = None  # the signal of a stop at once that waits
    in_item: bool = False  # an item's code runs in this process's main thread now

    def held(self) -> _Held:
        """A stop at once that comes meanwhile is raised at the end, not inside: what is
        taken in there (a record read off a pipe) is then kept, not lost half-way."""
        return _Held(self)

    @property
    def cut_off(self) -> str:
        """Why an item stopped at once was cut off: the grace period ran out, or a second
        interrupt came."""
        return CANCELLED if self.expired else STOPPED


class _Held:
    """``StopState.held``: a class, not a generator, as it wraps every read of a pipe."""

    __slots__ = ("stop",)

    def __init__(self, stop: StopState) -> None:
        self.stop = stop

    def __enter__(self) -> None:
        self.stop.holding += 1

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        stop = self.stop
        stop.holding -= 1
        if kind is None and not stop.holding and stop.held_stop is not None:
            name, stop.held_stop = stop.held_stop, None
            raise HardStop(name)


Isolation = Literal["item", "worker"]


@dataclass(frozen=True)
class ExecutorOptions:
    """Per-run settings every executor honours where it can."""

    concurrency: int = 1
    timeout: float | None = None
    max_output_bytes: int | None = None
    isolation: Isolation = "item"
    """The fork executor's: a process per item, or workers that run several in turn."""


class Executor:
    """Runs tasks and hands ``on_result`` the record of each task that reached a terminal
    status, exactly once (several records in one call when they finished together).

    Executors never decide outcomes themselves except for faults only they can see
    (``timeout``, ``crashed``, ``cancelled``); everything else comes from
    :func:`agenteval._item.execute_item`.
    """

    name = "base"

    def __init__(self, options: ExecutorOptions) -> None:
        self.options = options
        self.notices: list[str] = []

    def run(self, tasks: TaskSource, on_result: OnResult, stop: StopState) -> None:
        """Run every task (stop pulling new ones once ``stop.requested`` is set)."""
        raise NotImplementedError
