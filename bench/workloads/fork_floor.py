"""The most a process per item can reach on this machine: a bare fork-per-item loop.

Usage: ``python fork_floor.py N CONCURRENCY bare|agenteval``. Forks one child per item,
at most CONCURRENCY alive. Each child sleeps 0.1 s, writes one JSON line to its pipe and
exits with ``os._exit``; the parent waits on the pipes with ``select``, parses each line
and reaps the child. That is all: no records, journal, timeouts, capture or signals, so
it is the floor of what a supervisor costs. ``agenteval`` first imports what
``agenteval run`` has loaded when it forks (the parent every child is a copy of);
``bare`` imports nothing more than this file needs. Prints one JSON line: ``loop_s``,
the seconds from the first fork to the last reap.
"""

from __future__ import annotations

import gc
import json
import os
import select
import sys
import time

SLEEP = 0.1


def child(number: int, wfd: int) -> None:
    time.sleep(SLEEP)
    os.write(wfd, json.dumps({"id": number, "status": "passed"}).encode() + b"\n")
    os._exit(0)


def main() -> None:
    n, concurrency, parent = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    if parent == "agenteval":
        import agenteval._cli
        import agenteval._executors._fork
        import agenteval._runner
        import agenteval.assertions
        import agenteval.outputs  # noqa: F401
    gc.freeze()  # as the fork executor's children do: no collection walks the parent's heap
    started = time.perf_counter()
    forked = done = 0
    alive: dict[int, int] = {}  # read end -> child pid
    while done < n:
        while forked < n and len(alive) < concurrency:
            rfd, wfd = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(rfd)
                child(forked, wfd)
            os.close(wfd)
            alive[rfd] = pid
            forked += 1
        ready, _, _ = select.select(list(alive), [], [])
        for rfd in ready:
            data = os.read(rfd, 65536)
            if data:
                json.loads(data)
                continue
            os.close(rfd)
            os.waitpid(alive.pop(rfd), 0)
            done += 1
    print(json.dumps({"loop_s": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
