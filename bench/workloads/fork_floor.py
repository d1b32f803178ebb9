"""The most a process per item can reach on this machine: a bare fork-per-item loop.

Usage: ``python fork_floor.py N CONCURRENCY bare|agenteval|supervised``. Forks one child
per item, at most CONCURRENCY alive. Each child sleeps 0.1 s, writes one JSON line to its
pipe and exits with ``os._exit``; the parent waits on the pipes with ``select``, parses
each line and reaps the child. That is all: no records, journal, timeouts, capture or
signals, so it is the floor of what a supervisor costs. ``agenteval`` first imports what
``agenteval run`` has loaded when it forks (the parent every child is a copy of);
``bare`` imports nothing more than this file needs. ``supervised`` is ``bare`` plus the
per-item work the fault guarantees take, as agenteval's supervisor does it: two capture
files (memfd) for the child's stdout and stderr, read back at its end; a parent-death
signal and a process group of its own in the child; at the end a peek at the exit, a kill
of the child's group and the reap. Prints one JSON line: ``loop_s``, the seconds from the
first fork to the last reap.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import select
import signal
import sys
import time
from typing import Any

SLEEP = 0.1


def child(number: int, wfd: int, capture: tuple[int, int] | None, prctl: Any) -> None:
    if capture is not None:
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        os.setpgid(0, 0)
        os.dup2(capture[0], 1)
        os.dup2(capture[1], 2)
    time.sleep(SLEEP)
    os.write(wfd, json.dumps({"id": number, "status": "passed"}).encode() + b"\n")
    os._exit(0)


def reap(pid: int, capture: tuple[int, int] | None) -> None:
    if capture is not None:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # its group id stays its own
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # what the item left running
    os.waitpid(pid, 0)
    for fd in capture or ():
        os.lseek(fd, 0, os.SEEK_SET)
        os.read(fd, 65536)
        os.close(fd)


def main() -> None:
    n, concurrency, parent = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    if parent == "agenteval":
        import agenteval._cli
        import agenteval._executors._fork
        import agenteval._runner
        import agenteval.assertions
        import agenteval.outputs  # noqa: F401
    supervised = parent == "supervised"
    prctl = ctypes.CDLL(None, use_errno=True).prctl if supervised else None
    gc.freeze()  # as the fork executor's children do: no collection walks the parent's heap
    started = time.perf_counter()
    forked = done = 0
    alive: dict[int, tuple[int, tuple[int, int] | None]] = {}  # read end -> pid, captures
    while done < n:
        while forked < n and len(alive) < concurrency:
            rfd, wfd = os.pipe()
            capture = (os.memfd_create("out"), os.memfd_create("err")) if supervised else None
            pid = os.fork()
            if pid == 0:
                os.close(rfd)
                child(forked, wfd, capture, prctl)
            os.close(wfd)
            if supervised:
                os.setpgid(pid, pid)
            alive[rfd] = (pid, capture)
            forked += 1
        ready, _, _ = select.select(list(alive), [], [])
        for rfd in ready:
            data = os.read(rfd, 65536)
            if data:
                json.loads(data)
                continue
            os.close(rfd)
            reap(*alive.pop(rfd))
            done += 1
    print(json.dumps({"loop_s": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
