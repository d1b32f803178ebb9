"""What an item started must not outlive a supervisor that was killed.

Each item's process leads a process group of its own, and whatever it starts (a browser,
a local model server, ``sleep 300``) joins that group. The supervisor kills a group once
its item is over, and Linux kills the item's own process when the supervisor dies
(``PR_SET_PDEATHSIG``). But when the supervisor is killed outright (the OOM killer, a CI
runner's hard kill, ``kill -9``), nobody kills the rest of the group: it would go on
running, and spending tokens, with no parent.

So the fork executor starts one small *sweeper* process per run. The supervisor tells it,
over a pipe, each group it creates and each group it has swept itself, and that the run is
over. When the supervisor is gone instead (the sweeper has been handed to another parent,
or the pipe reached its end), the sweeper kills every group still on its list, within
half a second, and exits. It sits in a process group of its own and ignores SIGINT and
SIGTERM, so the signals meant for the run (a terminal's Ctrl-C, ``timeout``) do not take
it down before it has done its job.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import struct

_MESSAGE = struct.Struct("<q")
"""A group id: positive when it was created, negative once it was swept; 0: the run is
over."""

_POLL = 0.5
"""Seconds between two looks at whether the supervisor is still there."""

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class Sweeper:
    """The supervisor's end of the sweeper (best effort: without it, a run still works)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.fd: int | None = None
        """The write end of the pipe: every other process forked must close it, or the
        sweeper would not see the pipe end while that process (or what it started) runs."""

    def start(self) -> None:
        """Fork the sweeper; call before the first item's process is forked."""
        try:
            rfd, wfd = os.pipe()
        except OSError:
            return
        supervisor = os.getpid()
        # blocked across the fork: the sweeper sets its own dispositions before any runs
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            pid = os.fork()
        except OSError:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(rfd)
            os.close(wfd)
            return
        if pid == 0:  # pragma: no cover - the sweeper process
            code = 0
            try:
                os.close(wfd)
                _sweep(rfd, supervisor)
            except BaseException:
                code = 70
            finally:
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(rfd)
        self.pid, self.fd = pid, wfd

    def created(self, pgid: int) -> None:
        """A group was created (an item's process, which leads it, was forked)."""
        self._send(pgid)

    def swept(self, pgid: int) -> None:
        """The supervisor swept the group itself: the sweeper must forget it."""
        self._send(-pgid)

    def stop(self) -> None:
        """The run is over: the sweeper sweeps what is left (nothing: the supervisor swept
        every group itself) and exits; wait for it, so that no process of the run outlives
        it. (Processes forked by user code may hold the pipe open: it is not closed for
        that.)"""
        self._send(0)
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
        if self.pid is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = None

    def _send(self, value: int) -> None:
        if self.fd is None:
            return
        try:
            os.write(self.fd, _MESSAGE.pack(value))
        except OSError:  # the sweeper is gone: the run goes on without it
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def _sweep(rfd: int, supervisor: int) -> None:  # pragma: no cover - the sweeper process
    """Keep the list of live groups until the run is over or the supervisor is gone, then
    kill what is on it."""
    gc.freeze()  # touch none of the supervisor's memory it shares
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    groups: set[int] = set()
    pending = b""
    over = False
    while not over:
        if not select.select([rfd], [], [], _POLL)[0]:
            over = os.getppid() != supervisor  # handed to another parent: it died
            continue
        chunk = os.read(rfd, 4096)
        over = not chunk  # no process holds the pipe open any more
        pending += chunk
        whole = len(pending) - len(pending) % _MESSAGE.size
        for (value,) in _MESSAGE.iter_unpack(pending[:whole]):
            if value > 0:
                groups.add(value)
            elif value < 0:
                groups.discard(-value)
            else:
                over = True
        pending = pending[whole:]
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
