"""The async executor's default executor: what ``asyncio.to_thread`` and
``loop.run_in_executor(None, ...)`` run their calls in.

asyncio's own is a ``ThreadPoolExecutor``, whose threads the loop's shutdown and the
interpreter's exit both wait for. An item that timed out while its call was still running
in a thread (a socket read without a timeout, say) would then keep the run from ending,
and the process from exiting, for as long as the call lasts. This pool's threads are
daemon threads, and its ``shutdown`` waits for them a short while only: a call that never
returns holds up nothing once the items are done.

Each call runs in a copy of the context it was submitted from, as ``asyncio.to_thread``'s
do: what ``run_in_executor(None, ...)`` runs is the item's too (its model calls count
for it).
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

SHUTDOWN_WAIT = 1.0
"""Seconds ``shutdown(wait=True)`` waits for calls still running, in all."""

_Job = tuple[Future[Any], contextvars.Context, Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonPool(ThreadPoolExecutor):
    """Up to ``most`` daemon threads, started as calls need them and kept for the next.

    A ``ThreadPoolExecutor`` only in name (asyncio takes no other as a loop's default),
    with none of its threads: ``submit`` and ``shutdown`` are this class's own.
    """

    def __init__(self, most: int, name: str) -> None:
        super().__init__(most, name)
        self._most = most
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._idle = 0  # threads waiting for a job
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            future: Future[Any] = Future()
            self._jobs.put((future, contextvars.copy_context(), fn, args, kwargs))
            if self._idle:
                self._idle -= 1
            elif len(self._workers) < self._most:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}_{len(self._workers)}", daemon=True
                )
                thread.start()
                self._workers.append(thread)
            return future

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, context, fn, args, kwargs = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(context.run(fn, *args, **kwargs))
                except BaseException as exc:  # the caller's to see, as ThreadPoolExecutor does
                    future.set_exception(exc)
            del job, future, context, fn, args, kwargs  # nothing of it kept while idle
            with self._lock:
                self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            threads = list(self._workers)
        if cancel_futures:
            while True:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job[0].cancel()
        for _ in threads:
            self._jobs.put(None)
        if wait:
            deadline = time.monotonic() + SHUTDOWN_WAIT
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
