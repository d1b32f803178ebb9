"""The fork supervisor (``--concurrency N``): a process per item, or reused workers.

The parent runs each evaluator's ``set_up`` before it forks any child for that evaluator's
items; it forks one child per item, keeps at most N alive, and reads one JSON record per
child from a pipe. Faults stay with their item:

* a child that exits without a record, or is killed by a signal → ``crashed``;
* a child past ``--timeout`` → SIGTERM, then SIGKILL after a short grace → ``timeout``;
* after the first Ctrl-C/SIGTERM no new child starts; children still running when the
  grace period ends are killed → ``cancelled``.

Each child leads its own process group, with stdin on /dev/null: a Ctrl-C or a SIGTERM sent
to the CLI's whole group (a terminal, ``timeout``, a CI runner) reaches only the parent,
which then applies the grace period, and every signal the parent sends to an item — and the
final sweep once it has exited — reaches the subprocesses the item started too, unless one
left the item's process group (``start_new_session=True``, a daemon).

With ``--isolation worker`` a child is a *worker* that runs items one after another. The
parent pulls tasks ahead and numbers them; a worker is forked holding every task pulled
so far (shared copy-on-write, nothing is copied or pickled), and the parent grants it one
task at a time by number on a control pipe, whenever it finished the one before; it
answers with one JSON line per item. So items go to whichever worker is free, as from a
shared queue, and a worker forked late simply runs fewer. A worker ends when no task it
holds is left to grant; a new one, forked then, holds the tasks pulled since. Items of
one worker see what earlier items of that worker changed; a fault still costs only the
item it hit: the worker is gone and its item gets the fault's status.

Why not ``multiprocessing``: a killed Pool worker hangs the parent, and in
``ProcessPoolExecutor`` one dead worker or one unpicklable exception fails every pending
item. Here nothing but plain JSON crosses the process boundary.
"""

from __future__ import annotations

# the C functions behind ``signal``'s wrappers: in a child, each enum those wrappers build
# touches pages of the parent's memory, and every page a child touches is copied
import _signal  # type: ignore[import-not-found]
import contextlib
import ctypes
import errno
import faulthandler
import gc
import itertools
import json
import os
import selectors
import signal
import struct
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

import pydantic_core

from .. import _lessons
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
    recorded_output,
    scrub,
    stuck_at,
)
from .._redact import RedactingStream, handed
from .._results import ErrorInfo, ItemResult, ItemStatus, ItemUsage
from ._base import GRACE_TIMER, LIVE_THREAD, Executor, OnResult, StopState, TaskSource
from ._hugepages import HeapCollapse
from ._sweeper import Sweeper

KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL for a timed-out child."""

CAPTURE_LIMIT = 64 * 1024
"""Bytes of a child's stdout and of its stderr kept in its record."""

_POLL = 0.05

_AHEAD = 32
"""Tasks pulled ahead per slot under ``--isolation worker``: about how many items a worker
runs before the tasks it holds run out and a new worker takes over."""

_GRANT = struct.Struct("<Q")
_END = 2**64 - 1
"""Granted instead of a task number: no more tasks, exit. (Closing the pipe says the same,
but only once no other process holds it open, and a subprocess of the parent may.)"""

_ACK = b"+"
"""The line a worker sends when it starts a granted task."""

_RAN = b"~"
"""Starts the line a child sends when ``run`` returned: the output as it will be recorded."""

_LEARNED = b"!"
"""Starts the line a child sends when it learned something later items should know
(``_lessons``): the parent takes it in, and forks the next children knowing it."""

_SPENT = b"$"
"""Starts the line a child sends after each model call: the item's usage so far, which its
record keeps should the child die before sending one."""

_BACKSTOP = KILL_GRACE
"""Seconds beyond the grace period before the signal handler stops the run at once: time
for this executor to kill the remaining children and record them as ``cancelled``."""

# as plain ints, worked out here: a child that converted the enums would touch (and so
# copy) their pages of the parent's memory
_SIGINT, _SIGTERM = int(signal.SIGINT), int(signal.SIGTERM)
_SIGNALS = (_SIGINT, _SIGTERM)
_SIG_IGN, _SIG_DFL, _SIG_UNBLOCK = int(signal.SIG_IGN), int(signal.SIG_DFL), int(signal.SIG_UNBLOCK)

_COLLAPSE_AFTER = 64
"""Forks after which the parent's memory is backed by huge pages (see _hugepages): by then
the forks have cost about what collapsing costs, whatever the parent's size."""


@dataclass
class _Child:
    pid: int
    task: ItemTask | None  # the task it runs now; None once it may only exit
    number: int  # the current task's number
    horizon: int  # a worker holds the tasks numbered below this
    fd: int
    ctl: int | None  # a worker's control pipe: each task number sent there is granted
    out: IO[bytes]
    err: IO[bytes]
    started: float  # when its current task started
    deadline: float | None
    buffer: bytearray = field(default_factory=bytearray)  # an incomplete record line
    scanned: int = 0  # how much of ``buffer`` holds no line end
    acked: bool = True  # False while a granted task awaits the worker's acknowledgement
    ran: bytes | None = None  # the current task's output, once its run returned
    spent: bytes | None = None  # the current task's usage so far, if it called a model
    ended_at: float | None = None  # told to exit
    eof: bool = False
    status: int | None = None
    terminated_at: float | None = None
    killed: bool = False
    timed_out: bool = False
    cancelled: bool = False
    stopped: bool = False  # by a second interrupt
    lost: bool = False  # reaped by someone else: exit status unknown
    trimmed: list[int] = field(default_factory=lambda: [0, 0])  # captures given back up to


_Pending = dict[int, tuple[BaseEvaluator, ItemTask]]
"""Tasks by number, in order."""


class _Source:
    """The tasks still to come, numbered in order as they are pulled.

    Pulling past an evaluator's last task runs the next evaluator's ``set_up`` (in the
    runner's generator), which must not happen before the children for the tasks already
    pulled are forked: its side effects would reach them. So after a task that is, or may
    be, the last of its evaluator, the next one is pulled only once none is pending.
    """

    def __init__(self, tasks: TaskSource, held: _Pending) -> None:
        self.tasks = tasks
        self.held = held  # every task pulled and not yet recorded
        self.numbers = itertools.count()
        self.exhausted = False
        self.boundary = False  # the next pull may set up another evaluator

    def pull(self, pending: _Pending, up_to: int = 1) -> bool:
        """Pull tasks into ``pending`` until it holds ``up_to`` (or an evaluator's last
        task); False once it is empty and no task is left to pull."""
        while not self.exhausted and len(pending) < up_to and not (pending and self.boundary):
            try:
                pulled = next(self.tasks)
            except StopIteration:
                self.exhausted = True
            else:
                number = next(self.numbers)
                pending[number] = self.held[number] = pulled
                self.boundary = pulled[1].last is not False
        return bool(pending)


@dataclass
class _Kit:
    """What one child is forked with: both ends of its pipes, and then its first task."""

    rfd: int
    wfd: int
    ctl_r: int | None
    ctl_w: int | None
    out: IO[bytes]
    err: IO[bytes]
    number: int = -1
    task: tuple[BaseEvaluator, ItemTask] | None = None


_prctl: Any = None


def _load_libc() -> None:
    """Look ``prctl`` (and ``fallocate``) up once, in the parent: loading libc in every
    child costs faults."""
    global _prctl, _fallocate
    if _prctl is None and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _prctl = libc.prctl
        except (OSError, AttributeError):
            _prctl = False
            return
        fallocate = getattr(libc, "fallocate", None)
        if fallocate is not None:
            fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
        _fallocate = fallocate or False


_fallocate: Any = None
"""libc's ``fallocate``, once looked up (False: not there)."""

_TRIM_EVERY = 0.5
"""Seconds between two looks at the size of the running items' capture files."""

_TRIM_PAST = CAPTURE_LIMIT + 4 * 1024 * 1024
"""A capture file larger than this gives its memory back past CAPTURE_LIMIT."""


def _trim_captures(children: Iterable[_Child]) -> None:
    """Give back the memory of what running items printed past CAPTURE_LIMIT, which no
    record keeps: a capture file lives in memory, and an agent logging hundreds of MB at
    ``-c 50`` would otherwise hold them all until its item ends. The bytes past the limit
    become a hole (the size stays, so the record still says how many were not kept)."""
    if not _fallocate:
        return
    for child in children:
        for n, capture in enumerate((child.out, child.err)):
            with contextlib.suppress(OSError, ValueError):
                size = os.fstat(capture.fileno()).st_size
                done = child.trimmed[n] if child.trimmed[n] <= size else 0  # (emptied since)
                start = max(CAPTURE_LIMIT, done)
                if size - start > _TRIM_PAST - CAPTURE_LIMIT:  # (3: PUNCH_HOLE | KEEP_SIZE)
                    _fallocate(capture.fileno(), 3, start, size - start)
                    child.trimmed[n] = size


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
        try:
            return open(memfd_create("agenteval-capture", os.MFD_CLOEXEC), "w+b")
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                raise  # a file on disk would need a descriptor too
    import tempfile

    return tempfile.TemporaryFile(prefix="agenteval-capture-")


_GIVEN: dict[int, tuple[int, int]] = {}
"""In a child: each descriptor agenteval gave it (its pipes, its capture files), by number,
as (device, inode)."""


def _given(fd: int) -> os.stat_result:
    """``fd``'s status, once it is sure to be the file agenteval gave the child and not one
    of the item's own, which took its number after the item closed it (``os.closerange``):
    written to or emptied, that file would be lost to the item, and its record too."""
    status = os.fstat(fd)
    if _GIVEN.get(fd, (status.st_dev, status.st_ino)) != (status.st_dev, status.st_ino):
        raise OSError(
            errno.EBADF,
            f"descriptor {fd} was agenteval's; the item closed it, and a file of its own "
            f"reused the number",
        )
    return status


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


HARNESS_FAILED = 71
"""The exit code of a child whose own machinery (not the item's code) failed; it wrote why,
after ``_HARNESS_SAYS``, to the item's stderr capture."""
_HARNESS_SAYS = "agenteval: the item's process failed outside the item's code:"


def _child_main(
    first: tuple[BaseEvaluator, ItemTask],
    held: _Pending,
    wfd: int,
    ctl: int | None,
    out: IO[bytes],
    err: IO[bytes],
    parent: int,
    max_output_bytes: int | None,
    threaded: bool,
) -> None:
    """Runs in the forked child; never returns. Runs its first task, then, as a worker,
    each task of ``held`` the parent grants, writing one JSON line per item. ``threaded``:
    other threads ran in the parent at the fork."""
    code = 0
    captured = False
    try:
        # the parent's objects are the parent's: a collection that walked them would copy
        # every page of the heap (copy-on-write), stalling a worker for many milliseconds
        gc.freeze()
        # SIGINT/SIGTERM are blocked since before the fork: set our own dispositions, leave
        # the CLI's process group, then let signals in
        _signal.signal(_SIGINT, _SIG_IGN)  # (a terminal's Ctrl-C pending is the parent's)
        _signal.signal(_SIGTERM, _SIG_DFL)
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        # out of the terminal's group: SIGINT as in a sequential run (and for what the item
        # starts, which would inherit an ignored one: a server stopped with SIGINT, say)
        _signal.signal(_SIGINT, _signal.default_int_handler)
        _signal.pthread_sigmask(_SIG_UNBLOCK, _SIGNALS)
        _set_parent_death_signal()
        if os.getppid() != parent:
            os._exit(70)
        _GIVEN.clear()  # (a run nested in an item of another: its child's are not these)
        for fd in (wfd, ctl, out.fileno(), err.fileno()):
            if fd is not None:
                status = os.fstat(fd)
                _GIVEN[fd] = (status.st_dev, status.st_ino)
        if not sys.platform.startswith("linux"):
            _watch_parent(parent)
        _standard_fds(out, err)
        captured = True
        # stopped for its timeout, it writes where it was (all its threads' stacks) to its
        # stderr on its way out: the record says where a hung item hung
        faulthandler.register(_SIGTERM, file=2, all_threads=True, chain=True)
        if faulthandler.is_enabled():
            faulthandler.enable(file=2)  # a crash dump is the item's stderr
        if threaded:  # one may have held a stream's lock (new streams cost 0.3 ms)
            _fresh_streams()
        if (live := sys.modules.get("agenteval.outputs._live")) is not None:
            # a handler made in set_up may hold the live display's stand-in for a stream,
            # whose lines no thread of this process would ever draw
            live.pass_through({1: sys.__stdout__, 2: sys.__stderr__})
        _lessons.tell = lambda kind, value: _send_lesson(wfd, kind, value)
        evaluator, task = first
        streams = {name: getattr(sys, name) for name in _STREAMS}
        while True:
            _run_one(evaluator, task, wfd, out, err, max_output_bytes)
            grant = _read_grant(ctl) if ctl is not None else None
            if grant is None:
                break  # no more items for this process
            evaluator, task = held[grant]
            _standard_fds(out, err)  # the item before may have put others in their place
            _streams_back(streams)  # ... or closed them
            _write_line(wfd, _ACK, masked=False)
    except BaseException:
        import traceback

        code = HARNESS_FAILED
        # the item is recorded crashed, with what it printed: say why there
        with contextlib.suppress(BaseException):
            os.write(
                2 if captured else err.fileno(),
                f"{_HARNESS_SAYS}\n{traceback.format_exc()}".encode(errors="replace"),
            )
    finally:
        os._exit(code)


def _standard_fds(out: IO[bytes], err: IO[bytes]) -> None:
    """stdin from /dev/null (out of the terminal's foreground group, a read from it would
    stop the child), stdout and stderr into the item's capture files."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    for stream, standard in ((out, 1), (err, 2)):
        _given(stream.fileno())
        os.dup2(stream.fileno(), standard)


_STREAMS = ("stdin", "stdout", "stderr")


def _streams_back(streams: dict[str, Any]) -> None:
    """``sys.stdin``, ``sys.stdout`` and ``sys.stderr`` as the worker's first item found
    them: the item before may have replaced or closed one (a closed one is opened anew)."""
    for fd, name in enumerate(_STREAMS):
        stream = streams[name]
        if stream is None:
            continue
        if getattr(stream, "closed", False):
            stream = streams[name] = _reopened(fd, stream)
        setattr(sys, name, stream)


def _reopened(fd: int, like: Any) -> IO[str]:
    """A text stream on ``fd``, set up as ``like`` was (it lives as long as the process)."""
    fresh = open(  # noqa: SIM115 - it lives as long as the process
        fd,
        "r" if fd == 0 else "w",
        buffering=1 if getattr(like, "line_buffering", False) else -1,
        encoding=getattr(like, "encoding", None),
        errors=getattr(like, "errors", None),
        closefd=False,
    )
    if fd:
        fresh.reconfigure(write_through=getattr(like, "write_through", False))
    return fresh


def _fresh_streams() -> None:
    """Give the child ``sys.stdout`` and ``sys.stderr`` of its own, on its capture files.

    The inherited ones may be locked for good: another thread of the parent (the live
    progress display's refresh, say) may have been writing at the moment of the fork, and
    the child would wait forever on that lock. While the live display runs they are its
    stand-ins (``HeldLines``), too, whose lines no thread of the child would print.
    Streams the user's own code put in their place are left alone.
    """
    held = sys.modules.get("agenteval.outputs._live")
    ours = (RedactingStream, held.HeldLines) if held is not None else (RedactingStream,)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        stream, original = getattr(sys, name), getattr(sys, f"__{name}__")
        while isinstance(stream, ours):  # (the child's output is masked in its record)
            stream = stream.proxied
        if original is None or stream is not original:
            continue
        fresh = _reopened(fd, original)
        setattr(sys, name, fresh)
        setattr(sys, f"__{name}__", fresh)


def _read_grant(ctl: int) -> int | None:
    """The number of the task granted next, or None: no more (``_END`` or a closed pipe)."""
    data = b""
    _given(ctl)
    while len(data) < _GRANT.size:
        chunk = os.read(ctl, _GRANT.size - len(data))
        if not chunk:
            return None
        data += chunk
    number: int = _GRANT.unpack(data)[0]
    return None if number == _END else number


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
        record = execute_item(
            evaluator,
            task,
            max_output_bytes=max_output_bytes,
            ran=lambda output: _send_output(wfd, output, max_output_bytes),
            spent=lambda usage: _send_usage(wfd, usage),
        )
    except BaseException as exc:  # HardStop cannot reach a child; be total anyway
        record = fault_record(task, error_info("run", exc), 0.0)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    _given(out.fileno())
    _given(err.fileno())
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
    _write_line(wfd, payload)


def _send_output(wfd: int, raw: Any, max_output_bytes: int | None) -> None:
    """Tell the parent what ``run`` returned, before ``evaluate`` starts: should the item
    then hang or crash, its record still shows the output, and that ``evaluate`` was where
    it stopped. Never fails the item (the record is sent anyway)."""
    with contextlib.suppress(Exception):
        output, truncated, size, _ = recorded_output(raw, max_output_bytes)
        kept = {"output": output, "truncated": truncated, "original_size": size}
        # the serializer the record is written with, too: the json module's Python code
        # would be one more thing each child touches, and so copies
        try:
            line = pydantic_core.to_json(kept)
        except ValueError:  # text UTF-8 cannot hold (a lone surrogate): as in the record
            line = pydantic_core.to_json(scrub(kept))
        _write_line(wfd, _RAN + line)


def _send_lesson(wfd: int, kind: str, value: Any) -> None:
    with contextlib.suppress(Exception):  # never the item's failure
        # as it is, never masked: the parent must learn what the child learned (a secret
        # among it, so that the parent masks it too)
        _write_line(wfd, _LEARNED + json.dumps([kind, value]).encode(), masked=False)


def _send_usage(wfd: int, usage: ItemUsage) -> None:
    with contextlib.suppress(Exception):  # never the item's failure
        _write_line(wfd, _SPENT + _USAGE_SERIALIZER.to_json(usage))


_USAGE_SERIALIZER = ItemUsage.__pydantic_serializer__


def _write_line(wfd: int, payload: bytes, *, masked: bool = True) -> None:
    if masked and handed:  # secrets handed to agenteval in code, even in this child alone
        payload = handed.json(payload.decode()).encode()
    view = memoryview(payload + b"\n")
    _given(wfd)
    while view:
        written = os.write(wfd, view)
        view = view[written:]


def _close_kit(kit: _Kit) -> None:
    """Close what a child that was never forked would have been given."""
    for fd in (kit.rfd, kit.wfd, kit.ctl_r, kit.ctl_w):
        if fd is not None:
            os.close(fd)
    kit.out.close()
    kit.err.close()


def _any_exited() -> bool:
    """Whether some child of this process has exited (one system call, reaping none): if
    not, no child needs a look. Also true where that cannot be asked."""
    if not hasattr(os, "waitid"):
        return True
    try:
        return os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # no children at all (or SIGCHLD is ignored): look anyway
        return True


def _describe_exit(status: int, stderr: str = "") -> tuple[str, str]:
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
    harness = code == HARNESS_FAILED and _HARNESS_SAYS in stderr
    why = " (agenteval's own part of it failed: see its stderr)" if harness else ""
    return (
        "ChildExited",
        f"the item's process exited with code {code} before reporting a result{why}",
    )


_Line = tuple[ItemTask, bytes, float]
"""A record line a child sent: its task, the JSON, and how long the item took."""


def _parse(lines: list[_Line]) -> list[ItemResult]:
    """The records in the lines children sent (a garbled one is its item's error)."""
    records = []
    for task, line, duration in lines:
        try:
            record = ItemResult.model_validate_json(line)
            problem = None
            if (record.evaluator, record.index, record.repeat) != (
                task.evaluator_id,
                task.index,
                task.repeat,
            ):
                problem = "the item's process sent the record of another item (did the item "
                problem += "fork without exec?)"
        except ValueError as exc:
            problem = f"the item's process sent a record that could not be read: {exc}"
        if problem is None:
            records.append(record)
        else:
            error = ErrorInfo(stage="executor", type="BadRecord", message=problem)
            records.append(fault_record(task, error, duration, "crashed"))
    return records


def _put_back(pending: _Pending, number: int, task: tuple[BaseEvaluator, ItemTask]) -> None:
    """Return a task that never started to the front of ``pending`` (numbers stay in order)."""
    rest = list(pending.items())
    pending.clear()
    pending[number] = task
    pending.update(rest)


class _Wait:
    """What ``_spawn`` returns when a fork failed while children are alive: try again once
    one has exited."""


_WAIT = _Wait()


def _other_threads() -> list[threading.Thread]:
    """Threads besides this one that could hold a lock at fork time.

    The live display's thread is left out: it only draws the parent's console, and
    children get streams of their own (``_fresh_streams``); counting it would warn on
    every run in a terminal. So is the timer of the grace period after an interrupt.
    """
    current = threading.current_thread()
    return [
        t for t in threading.enumerate() if t is not current and t.name not in _HARMLESS_THREADS
    ]


_HARMLESS_THREADS = (GRACE_TIMER, LIVE_THREAD)


class ForkExecutor(Executor):
    """Forked children, at most ``concurrency`` at once; see the module docs."""

    name = "fork"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._warned_threads = False
        self._workers = self.options.isolation == "worker"
        # every task pulled and not yet recorded: what a worker forked now holds (a task
        # given back by a worker that died before starting it is among them, too)
        self._held: _Pending = {}
        self._forks = 0
        # a worker is forked once per slot, not per item: no forks to make cheaper
        self._collapse = HeapCollapse()
        self._collapse.done |= self._workers
        self._sweeper = Sweeper()

    def run(self, tasks: TaskSource, on_result: OnResult, stop: StopState) -> None:
        """Fork, supervise and collect until every task is done or the run is stopped."""
        limit = self.options.concurrency
        stop.backstop = max(stop.backstop, _BACKSTOP)
        _load_libc()
        self._sweeper.start()
        sel = selectors.DefaultSelector()
        children: dict[int, _Child] = {}
        pending: _Pending = {}
        source = _Source(tasks, self._held)
        stop_deadline: float | None = None
        trim_at = time.monotonic() + _TRIM_EVERY
        try:
            while True:
                now = time.monotonic()
                if now >= trim_at:
                    trim_at = now + _TRIM_EVERY
                    _trim_captures(children.values())
                if stop.requested and stop_deadline is None:
                    stop_deadline = now + stop.grace
                    for child in children.values():  # workers start nothing more
                        self._end(child)
                while not stop.requested and len(children) < limit:
                    # a worker is forked holding every task pulled ahead; the children of
                    # a process per item are forked for all free slots together
                    free = limit - len(children)
                    if not source.pull(pending, limit * _AHEAD if self._workers else free):
                        break
                    failed = self._spawn(pending, children, sel, stop, 1 if self._workers else free)
                    if isinstance(failed, _Wait):
                        break  # try forking again once a child has exited
                    if failed is not None:
                        on_result(failed)
                if self._forks >= _COLLAPSE_AFTER and not (self._collapse.done or stop.requested):
                    self._collapse.step()  # a slice: supervision goes on meanwhile
                # once stopping, tasks no child started stay unrecorded: resume runs them
                if not children and (stop.requested or (source.exhausted and not pending)):
                    return
                lines: list[_Line] = []
                finished: list[ItemResult] = []
                try:
                    self._collect(children, sel, pending, stop, stop_deadline, lines, finished)
                    records = [*_parse(lines), *finished]
                except HardStop:  # what was already taken in is recorded first
                    on_result(*_parse(lines), *finished)
                    raise
                if records:
                    on_result(*records)
        except HardStop:
            self._cancel_all(children, sel, on_result, expired=stop.expired)
            raise
        finally:  # normal end: nothing left; HardStop or a bug: leave no child behind
            for child in children.values():
                if child.status is None:
                    _signal_item(child.pid, signal.SIGKILL)
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(child.pid, 0)
                self._close(child)
            sel.close()
            self._sweeper.stop()

    def _collect(
        self,
        children: dict[int, _Child],
        sel: selectors.BaseSelector,
        pending: _Pending,
        stop: StopState,
        stop_deadline: float | None,
        lines: list[_Line],
        finished: list[ItemResult],
    ) -> None:
        """Read what children sent (granting the next tasks at once) while more is ready,
        then supervise them: timeouts, the grace period, exits. Appends to ``lines`` and
        ``finished``, so that a second interrupt meanwhile loses none of it."""
        wait: float = _POLL
        while ready := sel.select(wait):
            wait = 0
            for key, _ in ready:
                child = key.data
                with stop.held():  # a record read off the pipe is kept, whatever comes
                    try:
                        chunk = os.read(child.fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if chunk:
                        lines.extend(self._received(child, chunk, pending, stop))
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
                self._drain(child, sel, stop, lines)  # nothing more for the dead
            if child.status is not None and child.eof:
                del children[child.pid]
                finished.extend(self._finish(child, pending, stop))

    def _cancel_all(
        self,
        children: dict[int, _Child],
        sel: selectors.BaseSelector,
        on_result: OnResult,
        expired: bool,
    ) -> None:
        """A stop at once (a second interrupt, or the grace period ran out while the run
        was held up in a hook): kill every child and record each item it cut off.

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
            lines: list[_Line] = []
            self._drain(child, sel, stop, lines)  # the records it sent are kept
            # exited by itself before the kill: its fault is its own, else it was cut off
            if child.task is not None and (child.lost or not os.WIFEXITED(child.status)):
                child.killed = True
                child.cancelled = not child.timed_out
                child.stopped = not expired
            del children[child.pid]
            on_result(*_parse(lines), *self._finish(child, {}, stop))

    def _spawn(
        self,
        pending: _Pending,
        children: dict[int, _Child],
        sel: selectors.BaseSelector,
        stop: StopState,
        count: int,
    ) -> ItemResult | _Wait | None:
        """Fork up to ``count`` children back to back, each for the first pending task (a
        worker holds all pending ones), then register them.
        When a fork fails: that task's record, or ``_WAIT`` while children are alive."""
        others = [] if self._warned_threads else _other_threads()
        if others:
            self._warned_threads = True
            self.notices.append(
                f"{len(others)} other thread(s) were running in the parent "
                f"when items were forked; fork with threads can deadlock — start threads and "
                f"clients in run(), or use --concurrency 1"
            )
        kits: list[_Kit] = []
        count = min(count, len(pending))
        try:
            while len(kits) < count:
                kits.append(self._kit())
        except OSError as exc:  # out of file descriptors: fork as many as could be opened
            if not kits:
                if children:  # theirs come back as they exit: try again then
                    return _WAIT
                number = next(iter(pending))
                return self._fork_failed(number, pending.pop(number), exc, pending, children)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        forked: list[tuple[_Kit, int, float]] = []
        failure: OSError | None = None
        # Signals stay blocked until the children are registered: no handler may run in a
        # child before it has set its own dispositions. A signal another thread takes can
        # still run the handler here (a second Ctrl-C raises HardStop): every child forked
        # so far is registered all the same, so the cleanup knows it.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())  # unchanged: what to restore
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
            failure = self._fork_all(kits, pending, children, stop, forked)
        finally:
            self._forks += len(forked)
            for kit, pid, started in forked:
                assert kit.task is not None
                horizon = next(reversed(self._held)) + 1  # what a worker holds; numbers grow
                child = _Child(
                    pid, None, kit.number, horizon, kit.rfd, kit.ctl_w, kit.out, kit.err, 0.0, None
                )
                children[pid] = child
                self._sweeper.created(pid)
                self._start(child, kit.number, kit.task[1], started)
                sel.register(kit.rfd, selectors.EVENT_READ, child)
                with contextlib.suppress(OSError):  # also here: the child may not have run yet
                    os.setpgid(pid, pid)
            for kit in kits[len(forked) :]:
                _close_kit(kit)  # its fork failed, no task was left, or the run is stopping
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if failure is None:
            return None
        failed = kits[len(forked)]
        assert failed.task is not None
        return self._fork_failed(failed.number, failed.task, failure, pending, children)

    def _kit(self) -> _Kit:
        """Open the pipes (and capture files) a child will be forked with; all or none."""
        with contextlib.ExitStack() as opened:  # closes what was opened if one fails
            rfd, wfd = os.pipe()
            opened.callback(os.close, rfd)
            opened.callback(os.close, wfd)
            ctl_r, ctl_w = None, None
            if self._workers:
                ctl_r, ctl_w = os.pipe()
                opened.callback(os.close, ctl_r)
                opened.callback(os.close, ctl_w)
            out = opened.enter_context(_capture_file())
            err = opened.enter_context(_capture_file())
            os.set_blocking(rfd, False)
            opened.pop_all()
        return _Kit(rfd, wfd, ctl_r, ctl_w, out, err)

    def _fork_all(
        self,
        kits: list[_Kit],
        pending: _Pending,
        children: dict[int, _Child],
        stop: StopState,
        forked: list[tuple[_Kit, int, float]],
    ) -> OSError | None:
        """Fork the kits' children in a tight loop, one per pending task (there are as
        many), appending each to ``forked``, until the kits run out, the run is stopped, or
        a fork fails (returned). Never pulls a task: the next evaluator's ``set_up`` runs
        in ``run``, with signals unblocked.

        After each fork the parent's memory is shared with the new child, so every page
        the parent writes before the next fork is copied: the less it does in between,
        the cheaper each child (registering them waits until all are forked).
        """
        parent = os.getpid()
        threaded = threading.active_count() > 1
        # what no child keeps open: a child's pipe ends only once no process holds its
        # write end, and a worker's grants once no process holds its control pipe. Listed
        # here once, a child touches (and so copies) less of the parent's memory
        controls = (*(k.ctl_w for k in kits), *(c.ctl for c in children.values()))
        inherited = [fd for fd in (self._sweeper.fd, *controls) if fd is not None]
        ends = [[fd for fd in (k.wfd, k.ctl_r) if fd is not None] for k in kits]
        for i, kit in enumerate(kits):
            if stop.requested:  # after an interrupt no item starts
                return None
            kit.number = next(iter(pending))
            kit.task = pending.pop(kit.number)
            try:
                pid = os.fork()
            except OSError as exc:  # out of processes or memory: this item cannot start
                return exc
            if pid == 0:  # pragma: no cover - runs in the child, reported via the pipe
                os.close(kit.rfd)
                for fd in inherited:  # plain loops: a child copies less of the parent
                    os.close(fd)
                for j in range(i + 1, len(ends)):  # the kits of the children forked later
                    for fd in ends[j]:
                        os.close(fd)
                _child_main(
                    kit.task,
                    self._held,
                    kit.wfd,
                    kit.ctl_r,
                    kit.out,
                    kit.err,
                    parent,
                    self.options.max_output_bytes,
                    threaded,
                )
            os.close(kit.wfd)  # before the next fork: no later child may hold it
            if kit.ctl_r is not None:
                os.close(kit.ctl_r)
            forked.append((kit, pid, time.monotonic()))
        return None

    def _fork_failed(
        self,
        number: int,
        task: tuple[BaseEvaluator, ItemTask],
        exc: OSError,
        pending: _Pending,
        children: dict[int, _Child],
    ) -> ItemResult | _Wait:
        """No process could be started for ``task``: back to ``pending`` while children
        are alive (out of processes or memory, a fork may succeed once one exits; a worker
        may take it), else its record."""
        if children:
            _put_back(pending, number, task)
            return _WAIT
        del self._held[number]
        message = f"could not start the item's process: {exc}"
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            message += " (raise the limit with `ulimit -n`, or lower --concurrency)"
        error = ErrorInfo(stage="executor", type="ForkFailed", message=message)
        return fault_record(task[1], error, 0.0, "crashed")

    def _start(
        self, child: _Child, number: int, task: ItemTask, started: float | None = None
    ) -> None:
        """The child's current task is now ``task``: its clock starts (at ``started``,
        when it was forked for it, or now)."""
        child.task, child.number = task, number
        child.acked = True
        child.started = time.monotonic() if started is None else started
        timeout = self.options.timeout
        child.deadline = child.started + timeout if timeout else None

    def _next(self, child: _Child, pending: _Pending, stop: StopState) -> None:
        """The child sent its record: grant a worker the next task it holds, or end it."""
        child.task, child.ran, child.spent = None, None, None
        if child.ctl is not None and pending and not stop.requested:
            number = next(iter(pending))  # the lowest: if the worker lacks it, all others
            if number < child.horizon:
                _, task = pending.pop(number)
                self._start(child, number, task)
                child.acked = False  # until the worker acknowledges it
                with contextlib.suppress(OSError):  # the worker is gone; its exit says how
                    os.write(child.ctl, _GRANT.pack(number))
                return
        self._end(child)

    def _end(self, child: _Child) -> None:
        """No more tasks for this child: a worker is told to exit."""
        if child.ctl is not None:
            with contextlib.suppress(OSError):
                os.write(child.ctl, _GRANT.pack(_END))
            with contextlib.suppress(OSError):
                os.close(child.ctl)
            child.ctl = None
            child.ended_at = time.monotonic()

    def _received(
        self, child: _Child, chunk: bytes, pending: _Pending, stop: StopState
    ) -> list[_Line]:
        """Take the complete record lines out of what the child sent, granting its next
        task at once: the records are read afterwards, when every child has its next."""
        child.buffer += chunk
        lines: list[_Line] = []
        while child.task is not None:
            end = child.buffer.find(b"\n", child.scanned)  # not again over what was not one
            if end < 0:
                child.scanned = len(child.buffer)
                break
            child.scanned = 0
            line = bytes(child.buffer[:end])
            del child.buffer[: end + 1]
            if line == _ACK:
                child.acked = True
                continue
            if line.startswith(_LEARNED):  # (also from an item given up on: a secret, say)
                with contextlib.suppress(Exception):  # a lesson is a saving, never a must
                    _lessons.take(*json.loads(line[len(_LEARNED) :]))
                continue
            if child.timed_out or child.cancelled:
                continue  # too late: the item was already given up on
            if line.startswith(_RAN):
                child.ran = line[len(_RAN) :]
                continue
            if line.startswith(_SPENT):
                child.spent = line[len(_SPENT) :]
                continue
            lines.append((child.task, line, time.monotonic() - child.started))
            del self._held[child.number]
            self._next(child, pending, stop)
        return lines

    def _supervise(self, child: _Child, now: float, stop_deadline: float | None) -> None:
        if child.status is not None:
            return
        if child.task is None:  # told to exit: nothing of an item is lost by a kill now
            lingers = child.ended_at is not None and now - child.ended_at >= KILL_GRACE
            if lingers and not child.killed:
                child.killed = True
                _signal_item(child.pid, signal.SIGKILL)
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

    def _drain(
        self, child: _Child, sel: selectors.BaseSelector, stop: StopState, lines: list[_Line]
    ) -> None:
        """The child is gone: take the records it wrote into ``lines`` before the pipe is
        closed (also those taken in when a second interrupt ends this)."""
        while True:
            with stop.held():
                try:
                    chunk = os.read(child.fd, 1 << 16)
                except (BlockingIOError, OSError):
                    break
                if not chunk:
                    break
                lines.extend(self._received(child, chunk, {}, stop))
        child.eof = True
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(child.fd)

    def _close(self, child: _Child) -> None:
        """The child was reaped and its group swept: nothing of it is left."""
        self._sweeper.swept(child.pid)
        self._end(child)
        with contextlib.suppress(OSError):
            os.close(child.fd)
        for fh in (child.out, child.err):
            with contextlib.suppress(Exception):
                fh.close()

    def _finish(self, child: _Child, pending: _Pending, stop: StopState) -> list[ItemResult]:
        """The child exited: a record for the task it was running, if it sent none. A task
        granted to a worker that died before starting it goes back to the others."""
        try:
            if child.task is None:
                return []
            if not child.acked and not (child.timed_out or child.cancelled):
                if not stop.requested:  # once stopping, it stays unrecorded like the rest
                    _put_back(pending, child.number, self._held[child.number])
                return []
            del self._held[child.number]
            return [self._fault(child, child.task)]
        finally:
            self._close(child)

    def _fault(self, child: _Child, task: ItemTask) -> ItemResult:
        """The record of the task a child was running when it died or was stopped."""
        assert child.status is not None
        stdout, stderr = _read_capture(child.out.fileno()), _read_capture(child.err.fileno())
        if child.timed_out:
            how = "SIGKILL" if child.killed else "SIGTERM"
            error = ErrorInfo(
                stage="executor",
                type="Timeout",
                message=f"item exceeded --timeout {self.options.timeout:g}s and was stopped with {how}",
            )
            error = stuck_at(error, stderr)  # (where it was: the stack it wrote as it went)
            status: ItemStatus = "timeout"
        elif child.cancelled:
            error = ErrorInfo(
                stage="executor",
                type="Cancelled",
                message=STOPPED if child.stopped else CANCELLED,
            )
            status = "cancelled"
        else:
            kind, message = _describe_exit(child.status, stderr)
            if child.lost:
                message = (
                    "the item's process exited before reporting a result (its exit "
                    "status was collected elsewhere: is SIGCHLD ignored?)"
                )
            error = ErrorInfo(stage="executor", type=kind, message=message)
            status = "crashed"
        update: dict[str, Any] = {}
        if child.ran is not None:  # it stopped in evaluate: the agent's output is known
            with contextlib.suppress(ValueError):
                update = json.loads(child.ran)
                error = error.model_copy(update={"stage": "evaluate"})
        if child.spent is not None:  # what its model calls cost is spent all the same
            with contextlib.suppress(ValueError):
                update["usage"] = ItemUsage.model_validate_json(child.spent)
        record = fault_record(task, error, time.monotonic() - child.started, status)
        if stdout or stderr:
            update.update(stdout=stdout, stderr=stderr)
        return record.model_copy(update=update) if update else record
