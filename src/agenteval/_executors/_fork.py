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

With ``--isolation worker`` a child is a *worker*: it is forked with a batch of tasks and
runs them one after another, each only when the parent grants it (one byte on a control
pipe), sending one JSON line per item. Items of one worker see what earlier items of that
worker changed; a fault still costs only the item it hit: the worker is gone, its current
item gets the fault's status, and the tasks it had not started go to a fresh worker. That
forks about one process per ``_BATCH`` items (or per N-th of the run) instead of one per
item. When the tasks run
out and slots are free, the parent takes the untouched tail of a busy worker's batch and
gives it to a new worker, so the workers forked last do not finish last.

Why not ``multiprocessing``: a killed Pool worker hangs the parent, and in
``ProcessPoolExecutor`` one dead worker or one unpicklable exception fails every pending
item. Here nothing but plain JSON crosses the process boundary.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import gc
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

_BATCH = 32
"""The most tasks a worker is forked with under ``--isolation worker``."""

_GO = b"g"

_BACKSTOP = KILL_GRACE
"""Seconds beyond the grace period before the signal handler stops the run at once: time
for this executor to kill the remaining children and record them as ``cancelled``."""

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@dataclass
class _Child:
    pid: int
    tasks: list[tuple[BaseEvaluator, ItemTask]]  # its batch; one task unless a worker
    fd: int
    ctl: int | None  # a worker's control pipe: one byte grants its next task
    out: IO[bytes]
    err: IO[bytes]
    started: float  # when its current task started
    deadline: float | None
    current: int | None = 0  # index of the running task; None once it may only exit
    buffer: bytearray = field(default_factory=bytearray)  # an incomplete record line
    eof: bool = False
    status: int | None = None
    terminated_at: float | None = None
    killed: bool = False
    timed_out: bool = False
    cancelled: bool = False
    stopped: bool = False  # by a second interrupt
    lost: bool = False  # reaped by someone else: exit status unknown

    @property
    def task(self) -> ItemTask:
        """The task running now (or the last one that ran)."""
        return self.tasks[self.current or 0][1]

    def untouched(self) -> int:
        """How many tasks of its batch it has not started."""
        return 0 if self.current is None else len(self.tasks) - self.current - 1


_prctl: Any = None


def _load_prctl() -> None:
    """Look ``prctl`` up once, in the parent: loading libc in every child costs faults."""
    global _prctl
    if _prctl is None and sys.platform.startswith("linux"):
        try:
            _prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            _prctl = False


def _set_parent_death_signal() -> None:
    """Ask Linux to SIGKILL this child when its parent dies (no orphans spending tokens)."""
    if _prctl:
        _prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


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


def _read_capture(fd: int, *, clear: bool = False) -> str:
    """What was written to one capture file, capped at CAPTURE_LIMIT bytes; ``clear``
    empties it for the next item (the child's stdout shares its file offset)."""
    size = os.fstat(fd).st_size
    if not size:
        return ""
    text = os.pread(fd, min(size, CAPTURE_LIMIT), 0).decode("utf-8", "replace")
    if size > CAPTURE_LIMIT:
        text += f"\n… [{size - CAPTURE_LIMIT} more bytes not kept]"
    if clear:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
    return text


def _child_main(
    tasks: list[tuple[BaseEvaluator, ItemTask]],
    wfd: int,
    ctl: int | None,
    out: IO[bytes],
    err: IO[bytes],
    parent: int,
    max_output_bytes: int | None,
) -> None:
    """Runs in the forked child; never returns. Runs its one task, or, as a worker, each
    task the parent grants, writing one JSON line per item."""
    code = 0
    try:
        # the parent's objects are the parent's: a collection that walked them would copy
        # every page of the heap (copy-on-write), stalling a worker for many milliseconds
        gc.freeze()
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
        for evaluator, task in tasks:
            if ctl is not None and os.read(ctl, 1) != _GO:
                break  # the parent closed the pipe: no more items for this worker
            _run_one(evaluator, task, wfd, out, err, max_output_bytes)
    except BaseException:
        code = 71
    finally:
        os._exit(code)


def _run_one(
    evaluator: BaseEvaluator,
    task: ItemTask,
    wfd: int,
    out: IO[bytes],
    err: IO[bytes],
    max_output_bytes: int | None,
) -> None:
    """Run one item in the child and send its record, with what it printed, as a line."""
    try:
        record = execute_item(evaluator, task, max_output_bytes=max_output_bytes)
    except BaseException as exc:  # HardStop cannot reach a child; be total anyway
        record = fault_record(task, error_info("run", exc), 0.0)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    stdout, stderr = (
        _read_capture(out.fileno(), clear=True),
        _read_capture(err.fileno(), clear=True),
    )
    if stdout or stderr:
        record = record.model_copy(update={"stdout": stdout, "stderr": stderr})
    try:
        payload = record_json(record).encode()
    except BaseException as exc:
        payload = (
            fault_record(task, error_info("evaluate", exc), record.duration_s)
            .model_dump_json()
            .encode()
        )
    view = memoryview(payload + b"\n")
    while view:
        written = os.write(wfd, view)
        view = view[written:]


def _any_exited() -> bool:
    """Whether some child of this process has exited (one system call, reaping none): if
    not, no child needs a look. Also true where that cannot be asked."""
    if not hasattr(os, "waitid"):
        return True
    try:
        return os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # no children at all (or SIGCHLD is ignored): look anyway
        return True


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


_Line = tuple[ItemTask, bytes, float]
"""A record line a child sent: its task, the JSON, and how long the item took."""


def _parse(lines: list[_Line]) -> list[ItemResult]:
    """The records in the lines children sent (a garbled one is its item's error)."""
    records = []
    for task, line, duration in lines:
        try:
            records.append(ItemResult.model_validate_json(line))
        except ValueError as exc:
            error = ErrorInfo(
                stage="executor",
                type="BadRecord",
                message=f"the item's process sent a record that could not be read: {exc}",
            )
            records.append(fault_record(task, error, duration, "crashed"))
    return records


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
    """Forked children, at most ``concurrency`` at once; see the module docs."""

    name = "fork"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._warned_threads = False
        self._batch = _BATCH if self.options.isolation == "worker" else 1

    def run(self, tasks: TaskSource, on_result: OnResult, stop: StopState) -> None:
        """Fork, supervise and collect until every task is done or the run is stopped."""
        limit = self.options.concurrency
        stop.backstop = max(stop.backstop, _BACKSTOP)
        _load_prctl()
        sel = selectors.DefaultSelector()
        children: dict[int, _Child] = {}
        ready: collections.deque[tuple[BaseEvaluator, ItemTask]] = collections.deque()
        exhausted = False
        stop_deadline: float | None = None
        try:
            while True:
                now = time.monotonic()
                if stop.requested and stop_deadline is None:
                    stop_deadline = now + stop.grace
                    for child in children.values():  # workers start nothing more
                        self._end_batch(child)
                while not stop.requested and len(children) < limit:
                    batch, exhausted = self._next_batch(tasks, ready, exhausted, children)
                    if not batch:
                        break
                    failed = self._spawn(batch, children, sel)
                    if failed:
                        on_result(*failed)
                # once stopping, tasks no child started stay unrecorded: resume runs them
                if not children and (stop.requested or (exhausted and not ready)):
                    return
                lines: list[_Line] = []
                finished: list[ItemResult] = []
                for key, _ in sel.select(_POLL):
                    child = key.data
                    try:
                        chunk = os.read(child.fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if chunk:
                        lines.extend(self._received(child, chunk, stop))
                    else:
                        child.eof = True
                        sel.unregister(child.fd)
                now = time.monotonic()
                exited = _any_exited()
                for child in list(children.values()):
                    self._supervise(child, now, stop_deadline)
                    if child.status is None and (exited or child.eof or child.killed):
                        self._reap(child)
                    if child.status is not None and not child.eof:
                        lines.extend(self._drain(child, sel, stop))
                    if child.status is not None and child.eof:
                        del children[child.pid]
                        finished.extend(self._finish(child, ready, stop))
                if lines or finished:
                    on_result(*_parse(lines), *finished)
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

    def _next_batch(
        self,
        tasks: TaskSource,
        ready: collections.deque[tuple[BaseEvaluator, ItemTask]],
        exhausted: bool,
        children: dict[int, _Child],
    ) -> tuple[list[tuple[BaseEvaluator, ItemTask]], bool]:
        """The tasks for the next child, and whether the task source is exhausted.

        ``ready`` holds tasks pulled ahead and those a dead worker never started. Workers
        get an even share of what is pulled ahead, up to ``_BATCH`` each; once no task is
        left, a free slot takes the untouched back half (at least one) of the biggest batch
        still running, so the last items do not wait in one worker.
        """
        ahead = self.options.concurrency * self._batch if self._batch > 1 else 1
        while not exhausted and len(ready) < ahead:
            try:
                ready.append(next(tasks))
            except StopIteration:
                exhausted = True
        free = self.options.concurrency - len(children)
        size = min(self._batch, -(-len(ready) // max(free, 1)))
        batch = [ready.popleft() for _ in range(size)]
        if not batch and exhausted and self._batch > 1:
            busiest = max(children.values(), key=_Child.untouched, default=None)
            if busiest is not None and busiest.untouched():
                keep = len(busiest.tasks) - max(1, busiest.untouched() // 2)
                batch = busiest.tasks[keep:]
                del busiest.tasks[keep:]
        return batch, exhausted

    def _cancel_all(
        self, children: dict[int, _Child], sel: selectors.BaseSelector, on_result: OnResult
    ) -> None:
        """A second interrupt: kill every child at once and record each item it cut off.

        A child that had already exited on its own keeps the records it wrote.
        """
        for child in children.values():
            if child.status is None:
                _signal_item(child.pid, signal.SIGKILL)
        stop = StopState(requested="hard stop")
        for child in list(children.values()):
            if child.status is None:
                try:
                    _, child.status = os.waitpid(child.pid, 0)
                except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored)
                    child.status, child.lost = 0, True
                # exited by itself before the kill: its records are whole, else cut off
                if child.lost or not os.WIFEXITED(child.status):
                    child.killed = True
                    child.cancelled = not child.timed_out
                    child.stopped = True
            lines = self._drain(child, sel, stop)
            del children[child.pid]
            on_result(*_parse(lines), *self._finish(child, collections.deque(), stop))

    def _spawn(
        self,
        batch: list[tuple[BaseEvaluator, ItemTask]],
        children: dict[int, _Child],
        sel: selectors.BaseSelector,
    ) -> list[ItemResult]:
        """Fork a child for the batch and register it; records only when the fork failed."""
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
        ctl_r, ctl_w = os.pipe() if self._batch > 1 else (None, None)
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
            except OSError as exc:  # out of processes or memory: these items cannot start
                for fd in (rfd, wfd, ctl_r, ctl_w):
                    if fd is not None:
                        os.close(fd)
                out.close()
                err.close()
                error = ErrorInfo(
                    stage="executor",
                    type="ForkFailed",
                    message=f"could not start the item's process: {exc}",
                )
                return [fault_record(task, error, 0.0, "crashed") for _, task in batch]
            if pid == 0:  # pragma: no cover - runs in the child, reported via the pipe
                os.close(rfd)
                if ctl_w is not None:
                    os.close(ctl_w)
                _child_main(batch, wfd, ctl_r, out, err, parent, self.options.max_output_bytes)
            os.close(wfd)
            if ctl_r is not None:
                os.close(ctl_r)
            with contextlib.suppress(OSError):  # also here: the child may not have run yet
                os.setpgid(pid, pid)
            child = _Child(pid, batch, rfd, ctl_w, out, err, 0.0, None)
            self._grant(child)
            children[pid] = child
            sel.register(rfd, selectors.EVENT_READ, child)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return []

    def _grant(self, child: _Child) -> None:
        """Start the child's current task: its clock, and for a worker, the go-ahead."""
        child.started = time.monotonic()
        timeout = self.options.timeout
        child.deadline = child.started + timeout if timeout else None
        if child.ctl is not None:
            with contextlib.suppress(OSError):  # the worker is gone; its exit says how
                os.write(child.ctl, _GO)

    def _end_batch(self, child: _Child) -> None:
        """No more tasks for this worker: closing its control pipe lets it exit when idle."""
        if child.ctl is not None:
            with contextlib.suppress(OSError):
                os.close(child.ctl)
            child.ctl = None

    def _received(self, child: _Child, chunk: bytes, stop: StopState) -> list[_Line]:
        """Take the complete record lines out of what the child sent, granting its next
        task at once: the records are read afterwards, when every child has its next."""
        child.buffer += chunk
        lines: list[_Line] = []
        while child.current is not None and (end := child.buffer.find(b"\n")) >= 0:
            line = bytes(child.buffer[:end])
            del child.buffer[: end + 1]
            if child.timed_out or child.cancelled:
                continue  # too late: the item was already given up on
            lines.append((child.task, line, time.monotonic() - child.started))
            if child.ctl is not None and not stop.requested and child.untouched():
                child.current += 1
                self._grant(child)
            else:
                child.current = None
                self._end_batch(child)
        return lines

    def _supervise(self, child: _Child, now: float, stop_deadline: float | None) -> None:
        if child.status is not None or child.current is None:
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

    def _drain(self, child: _Child, sel: selectors.BaseSelector, stop: StopState) -> list[_Line]:
        """The child is gone: take the records it wrote before the pipe is closed."""
        records: list[_Line] = []
        while True:
            try:
                chunk = os.read(child.fd, 1 << 16)
            except (BlockingIOError, OSError):
                break
            if not chunk:
                break
            records.extend(self._received(child, chunk, stop))
        child.eof = True
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(child.fd)
        return records

    def _close(self, child: _Child) -> None:
        self._end_batch(child)
        with contextlib.suppress(OSError):
            os.close(child.fd)
        for fh in (child.out, child.err):
            with contextlib.suppress(Exception):
                fh.close()

    def _finish(
        self,
        child: _Child,
        ready: collections.deque[tuple[BaseEvaluator, ItemTask]],
        stop: StopState,
    ) -> list[ItemResult]:
        """The child exited: a record for the task it was running, if it sent none; the
        tasks of its batch it never started go to another worker (none once stopping)."""
        try:
            if child.current is None:
                return []
            if not stop.requested:
                ready.extend(child.tasks[child.current + 1 :])
            return [self._fault(child)]
        finally:
            self._close(child)

    def _fault(self, child: _Child) -> ItemResult:
        """The record of the task a child was running when it died or was stopped."""
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
        record = fault_record(child.task, error, time.monotonic() - child.started, status)
        stdout, stderr = _read_capture(child.out.fileno()), _read_capture(child.err.fileno())
        if stdout or stderr:
            record = record.model_copy(update={"stdout": stdout, "stderr": stderr})
        return record
