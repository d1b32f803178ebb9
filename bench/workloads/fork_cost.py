"""What one ``fork()`` costs on this machine, as the parent's resident memory grows.

Usage: ``python fork_cost.py FORKS MB``. Forks FORKS children (each ``os._exit(0)`` at
once) from a bare interpreter, then after importing what ``agenteval run`` imports, then
holding MB more MiB (a touched ``bytearray``). Prints one JSON line: per stage the RSS and
the milliseconds of ``fork()`` alone, of fork + child exit + ``waitpid``, and the CPU
milliseconds (parent and child, user + system) of one such cycle.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from typing import Any


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def cpu_s() -> float:
    """User + system CPU of this process and of its reaped children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def cost(forks: int) -> dict[str, Any]:
    in_fork = 0.0
    cpu = cpu_s()
    start = time.perf_counter()
    for _ in range(forks):
        t = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        in_fork += time.perf_counter() - t
        os.waitpid(pid, 0)
    total = time.perf_counter() - start
    cpu = cpu_s() - cpu
    return {
        "rss_mb": rss_mb(),
        "fork_ms": 1000 * in_fork / forks,
        "cycle_ms": 1000 * total / forks,
        "cpu_ms": 1000 * cpu / forks,
    }


def main() -> None:
    forks, mb = int(sys.argv[1]), int(sys.argv[2])
    stages = {"bare interpreter": cost(forks)}
    import agenteval._executors._fork
    import agenteval._runner
    import agenteval.assertions
    import agenteval.outputs  # noqa: F401  (what a run has loaded when it forks)

    stages["agenteval imported"] = cost(forks)
    ballast = bytearray(b"\x01") * (mb * 2**20)
    stages[f"+ {mb} MB bytearray"] = cost(forks)
    del ballast
    print(json.dumps(stages))


if __name__ == "__main__":
    main()
