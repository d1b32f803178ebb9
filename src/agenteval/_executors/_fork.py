"""The fork-per-item supervisor (``--concurrency N``).

The parent has already run ``set_up``; it forks one child per item, keeps at most N alive,
and reads one JSON record per child from a pipe. Faults stay with their item:

* a child that exits without a record, or is killed by a signal → ``crashed``;
* a child past ``--timeout`` → SIGTERM, then SIGKILL after a short grace → ``timeout``;
* after the first Ctrl-C/SIGTERM no new child starts; children still running when the
  grace period ends are killed → ``cancelled``.

Each child leads its own process group, with stdin on /dev/null: a Ctrl-C or a SIGTERM sent
to the CLI's whole group (a terminal, ``timeout``, a CI runner) reaches only the parent,
which then applies the grace period, and every signal the parent sends to an item — and the
final sweep once it has exited — reaches the subprocesses the item started too.

Why not ``multiprocessing``: a killed Pool worker hangs the parent, and in
``ProcessPoolExecutor`` one dead worker or one unpicklable exception fails every pending
item. Here nothing but plain JSON crosses the process boundary.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from .._evaluator import BaseEvaluator
from .._item import (
    CANCELLED,
    STOPPED,
    HardStop,
    ItemTask,
    error_info,
    execute_item,
    fault_record,
    record_json,
)
from .._results import ErrorInfo, ItemResult, ItemStatus
from ._base import Executor, OnResult, StopState, TaskSource

KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL for a timed-out child."""

CAPTURE_LIMIT = 64 * 1024
"""Bytes of a child's stdout and of its stderr kept in its record."""

_POLL = 0.05

_BACKSTOP = KILL_GRACE
"""Seconds beyond the grace period before the signal handler stops the run at once: time
for this executor to kill the remaining children and record them as ``cancelled``."""

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@dataclass
class _Child:
    pid: int
    task: ItemTask
    fd: int
    out: IO[bytes]
    err: IO[bytes]
    started: float
    deadline: float | None
    buffer: list[bytes] = field(default_factory=list)
    eof: bool = False
    status: int | None = None
    terminated_at: float | None = None
    killed: bool = False
    timed_out: bool = False
    cancelled: bool = False
    stopped: bool = False  # by a second interrupt
    lost: bool = False  # reaped by someone else: exit status unknown


def _set_parent_death_signal() -> None:
    """Ask Linux to SIGKILL this child when its parent dies (no orphans spending tokens)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return


def _watch_parent(parent: int) -> None:
    """Fallback for platforms without PR_SET_PDEATHSIG: exit when re-parented."""

    def loop() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(70)
            time.sleep(0.5)

    threading.Thread(target=loop, daemon=True).start()


def _signal_item(pid: int, sig: int, *, group_only: bool = False) -> None:
    """Send ``sig`` to an item's process group (the child and what it started).

    Falls back to the child alone when it has no group of its own, unless ``group_only``:
    once the child may have been reaped, its pid alone could name another process.
    """
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        if not group_only:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
    except PermissionError:  # pragma: no cover - the group id was reused by another user
        return


def _capture_file() -> IO[bytes]:
    """An anonymous file the child's stdout or stderr goes to; readable after it died.

    memfd (Linux) costs a few microseconds; a temporary file on disk costs a millisecond.
    """
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None:
        with contextlib.suppress(OSError):
            return open(memfd_create("agenteval-capture", os.MFD_CLOEXEC), "w+b")
    import tempfile

    return tempfile.TemporaryFile(prefix="agenteval-capture-")


def _read_capture(fh: IO[bytes]) -> str:
    """What the child wrote to one stream, capped at CAPTURE_LIMIT bytes."""
    size = fh.seek(0, os.SEEK_END)
    fh.seek(0)
    text = fh.read(CAPTURE_LIMIT).decode("utf-8", "replace")
    if size > CAPTURE_LIMIT:
        text += f"\n… [{size - CAPTURE_LIMIT} more bytes not kept]"
    return text


def _child_main(
    evaluator: BaseEvaluator,
    task: ItemTask,
    wfd: int,
    out: IO[bytes],
    err: IO[bytes],
    parent: int,
    max_output_bytes: int | None,
) -> None:
    """Runs in the forked child; never returns."""
    code = 0
    try:
        # SIGINT/SIGTERM are blocked since before the fork: set our own dispositions, leave
        # the CLI's process group, then let signals in
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        _set_parent_death_signal()
        if os.getppid() != parent:
            os._exit(70)
        if not sys.platform.startswith("linux"):
            _watch_parent(parent)
        # out of the terminal's foreground group, a read from it would stop the child
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            record = execute_item(evaluator, task, max_output_bytes=max_output_bytes)
        except BaseException as exc:  # HardStop cannot reach a child; be total anyway
            record = fault_record(task, error_info("run", exc), 0.0)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        try:
            payload = record_json(record).encode()
        except BaseException as exc:
            payload = (
                fault_record(task, error_info("evaluate", exc), record.duration_s)
                .model_dump_json()
                .encode()
            )
        view = memoryview(payload)
        while view:
            written = os.write(wfd, view)
            view = view[written:]
    except BaseException:
        code = 71
    finally:
        os._exit(code)


def _describe_exit(status: int) -> tuple[str, str]:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        hint = (
            " (SIGKILL often means the system ran out of memory)" if sig == signal.SIGKILL else ""
        )
        return "ChildKilled", f"the item's process was killed by {name}{hint}"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return "ChildExited", f"the item's process exited with code {code} before reporting a result"


def _other_threads() -> list[threading.Thread]:
    """Threads besides this one that could hold a lock at fork time.

    rich's progress refresh thread is left out: it only repaints the parent's console,
    which children never use, and counting it would warn on every run in a terminal.
    """
    current = threading.current_thread()
    return [
        t
        for t in threading.enumerate()
        if t is not current and not type(t).__module__.startswith("rich.")
    ]


class ForkExecutor(Executor):
    """One forked child per item, at most ``concurrency`` at once; see the module docs."""

    name = "fork"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._warned_threads = False

    def run(self, tasks: TaskSource, on_result: OnResult, stop: StopState) -> None:
        """Fork, supervise and collect until every task is done or the run is stopped."""
        limit = self.options.concurrency
        stop.backstop = max(stop.backstop, _BACKSTOP)
        sel = selectors.DefaultSelector()
        children: dict[int, _Child] = {}
        exhausted = False
        stop_deadline: float | None = None
        try:
            while True:
                now = time.monotonic()
                if stop.requested and stop_deadline is None:
                    stop_deadline = now + stop.grace
                while not exhausted and not stop.requested and len(children) < limit:
                    try:
                        evaluator, task = next(tasks)
                    except StopIteration:
                        exhausted = True
                        break
                    failed = self._spawn(evaluator, task, children, sel)
                    if failed is not None:
                        on_result(failed)
                if not children and (exhausted or stop.requested):
                    return
                for key, _ in sel.select(_POLL):
                    child = key.data
                    try:
                        chunk = os.read(child.fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if chunk:
                        child.buffer.append(chunk)
                    else:
                        child.eof = True
                        sel.unregister(child.fd)
                now = time.monotonic()
                finished: list[ItemResult] = []
                for child in list(children.values()):
                    self._supervise(child, now, stop_deadline)
                    if child.status is None:
                        self._reap(child)
                    if child.status is not None and not child.eof:
                        self._drain(child, sel)
                    if child.status is not None and child.eof:
                        del children[child.pid]
                        finished.append(self._finish(child))
                if finished:
                    on_result(*finished)
        except HardStop:
            self._cancel_all(children, sel, on_result)
            raise
        finally:  # normal end: nothing left; HardStop or a bug: leave no child behind
            for child in children.values():
                if child.status is None:
                    _signal_item(child.pid, signal.SIGKILL)
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(child.pid, 0)
                self._close(child)
            sel.close()

    def _cancel_all(
        self, children: dict[int, _Child], sel: selectors.BaseSelector, on_result: OnResult
    ) -> None:
        """A second interrupt: kill every child at once and record each item it cut off.

        A child that had already exited on its own keeps the record it wrote.
        """
        for child in children.values():
            if child.status is None:
                _signal_item(child.pid, signal.SIGKILL)
        for child in list(children.values()):
            if child.status is None:
                try:
                    _, child.status = os.waitpid(child.pid, 0)
                except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored)
                    child.status, child.lost = 0, True
                # exited by itself before the kill: its record is whole, else cut off
                if child.lost or not os.WIFEXITED(child.status):
                    child.killed = True
                    child.cancelled = not child.timed_out
                    child.stopped = True
            self._drain(child, sel)
            del children[child.pid]
            on_result(self._finish(child))

    def _spawn(
        self,
        evaluator: BaseEvaluator,
        task: ItemTask,
        children: dict[int, _Child],
        sel: selectors.BaseSelector,
    ) -> ItemResult | None:
        """Fork the item's child and register it; a record only when the fork failed."""
        others = [] if self._warned_threads else _other_threads()
        if others:
            self._warned_threads = True
            self.notices.append(
                f"{len(others)} other thread(s) were running in the parent "
                f"when items were forked; fork with threads can deadlock — start threads and "
                f"clients in run(), or use --concurrency 1"
            )
        rfd, wfd = os.pipe()
        os.set_blocking(rfd, False)
        out, err = _capture_file(), _capture_file()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        parent = os.getpid()
        # Signals stay blocked until the child is registered: no handler may run in the
        # child before it has set its own dispositions, and a second Ctrl-C (HardStop) must
        # not leave a child the cleanup does not know about.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            try:
                pid = os.fork()
            except OSError as exc:  # out of processes or memory: this item cannot start
                for fd in (rfd, wfd):
                    os.close(fd)
                out.close()
                err.close()
                return fault_record(
                    task,
                    ErrorInfo(
                        stage="executor",
                        type="ForkFailed",
                        message=f"could not start the item's process: {exc}",
                    ),
                    0.0,
                    "crashed",
                )
            if pid == 0:  # pragma: no cover - runs in the child, reported via the pipe
                os.close(rfd)
                _child_main(evaluator, task, wfd, out, err, parent, self.options.max_output_bytes)
            os.close(wfd)
            with contextlib.suppress(OSError):  # also here: the child may not have run yet
                os.setpgid(pid, pid)
            now = time.monotonic()
            timeout = self.options.timeout
            child = _Child(pid, task, rfd, out, err, now, now + timeout if timeout else None)
            children[pid] = child
            sel.register(rfd, selectors.EVENT_READ, child)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return None

    def _supervise(self, child: _Child, now: float, stop_deadline: float | None) -> None:
        if child.status is not None:
            return
        if child.terminated_at is None:
            if child.deadline is not None and now >= child.deadline:
                child.timed_out = True
                child.terminated_at = now
                _signal_item(child.pid, signal.SIGTERM)
            elif stop_deadline is not None and now >= stop_deadline:
                child.cancelled = True
                child.terminated_at = now
                child.killed = True
                _signal_item(child.pid, signal.SIGKILL)
        elif not child.killed and now - child.terminated_at >= KILL_GRACE:
            child.killed = True
            _signal_item(child.pid, signal.SIGKILL)

    def _reap(self, child: _Child) -> None:
        """Collect the exit status of a child that has exited, sweeping its group first."""
        try:
            if hasattr(os, "waitid"):
                # peek without reaping: while the zombie holds its pid, the group id cannot
                # be reused, so killing the group hits only what the item left running
                flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
                if os.waitid(os.P_PID, child.pid, flags) is None:
                    return
                _signal_item(child.pid, signal.SIGKILL, group_only=True)
            pid, status = os.waitpid(child.pid, os.WNOHANG)
        except ChildProcessError:  # already reaped elsewhere (SIGCHLD ignored): it is gone
            child.status, child.lost = 0, True
            _signal_item(child.pid, signal.SIGKILL, group_only=True)
            return
        if pid:
            child.status = status
            if not hasattr(os, "waitid"):  # pragma: no cover - no peeking: sweep afterwards
                _signal_item(child.pid, signal.SIGKILL, group_only=True)

    def _drain(self, child: _Child, sel: selectors.BaseSelector) -> None:
        """The child is gone: read whatever it wrote before the pipe is closed."""
        while True:
            try:
                chunk = os.read(child.fd, 1 << 16)
            except (BlockingIOError, OSError):
                break
            if not chunk:
                break
            child.buffer.append(chunk)
        child.eof = True
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(child.fd)

    def _close(self, child: _Child) -> None:
        with contextlib.suppress(OSError):
            os.close(child.fd)
        for fh in (child.out, child.err):
            with contextlib.suppress(Exception):
                fh.close()

    def _finish(self, child: _Child) -> ItemResult:
        duration = time.monotonic() - child.started
        try:
            stdout, stderr = _read_capture(child.out), _read_capture(child.err)
        finally:
            self._close(child)
        payload = b"".join(child.buffer)
        record: ItemResult | None = None
        if payload and not (child.timed_out or child.cancelled):
            try:
                record = ItemResult.model_validate_json(payload)
            except ValueError:
                record = None
        if record is None:
            assert child.status is not None
            if child.timed_out:
                how = "SIGKILL" if child.killed else "SIGTERM"
                error = ErrorInfo(
                    stage="executor",
                    type="Timeout",
                    message=f"item exceeded --timeout {self.options.timeout:g}s and was stopped with {how}",
                )
                status: ItemStatus = "timeout"
            elif child.cancelled:
                error = ErrorInfo(
                    stage="executor",
                    type="Cancelled",
                    message=STOPPED if child.stopped else CANCELLED,
                )
                status = "cancelled"
            else:
                kind, message = _describe_exit(child.status)
                if child.lost:
                    message = (
                        "the item's process exited before reporting a result (its exit "
                        "status was collected elsewhere: is SIGCHLD ignored?)"
                    )
                error = ErrorInfo(stage="executor", type=kind, message=message)
                status = "crashed"
            record = fault_record(child.task, error, duration, status)
        if stdout or stderr:
            record = record.model_copy(update={"stdout": stdout, "stderr": stderr})
        return record
