"""A bare ``multiprocessing.Pool(C)`` doing N sleeps of 0.1 s: the floor for a process pool.

Usage: ``python pool_sleep.py N CONCURRENCY``. Prints one JSON line: ``pool_s`` (pool
start-up, map and shutdown) and ``map_s`` (the map alone, workers already started).
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import time

SLEEP = 0.1


def work(i: int) -> int:
    time.sleep(SLEEP)
    return i


def main() -> None:
    n, concurrency = int(sys.argv[1]), int(sys.argv[2])
    t0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(concurrency) as pool:
        t1 = time.perf_counter()
        done = pool.map(work, range(n), chunksize=1)
        t2 = time.perf_counter()
    t3 = time.perf_counter()
    assert len(done) == n
    print(json.dumps({"pool_s": t3 - t0, "map_s": t2 - t1}))


if __name__ == "__main__":
    main()
