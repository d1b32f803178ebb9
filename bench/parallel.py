"""Parallel executors: latency-bound efficiency and per-item overhead, side by side.

(a) fork executor, latency-bound: 1,000 items whose ``run`` sleeps 0.1 s, ``-c 50``, with a
    process per item and with ``--isolation worker``, against a bare
    ``multiprocessing.Pool(50)`` doing the same sleeps and pydantic-evals' ``evaluate`` with
    ``max_concurrency=50`` on a sync task. Goal: efficiency >= 0.90. For context, the same
    sleeps in a bare fork-per-item loop (``workloads/fork_floor.py``), in a parent that
    imported what ``agenteval run`` has loaded and in a bare interpreter: what any process
    per item can reach on this machine.
(b) async executor: 2,000 items of ``asyncio.sleep(0.1)``, ``-c 200``, against
    pydantic-evals on an async task at ``max_concurrency=200``. Goal: efficiency >= 0.95.
(c) fork executor, per-item overhead: 2,000 items that return at once, ``-c 8``: items/s,
    (also with ``--isolation worker``), without and with 200 MB held by the parent (``set_up`` allocates and touches it; as
    one ``bytearray`` and as ~1.4 million small ``str`` objects), against pydantic-evals at
    ``max_concurrency=8``.
(d) context: what one fork() + child exit + waitpid costs on this machine, for a bare
    interpreter, one that imported agenteval, and one holding 200 MB more.
(e) LLM-judged items: 200 items whose ``evaluate`` asks ``CorrectnessJudge`` over the
    ``openai`` SDK, ``-c 50``, against a fake provider in its own process that answers in
    0.5 s (``workloads/judge_server.py``): a process per item, workers and the async
    executor, against pydantic-evals grading the same items with ``LLMJudge``. No goal.

Efficiency = ideal / actual wall time, ideal = ceil(items / concurrency) x 0.1 s. Each figure
is given twice: for the whole process (start-up, imports, discovery, report included) and
for the run's own span (agenteval: ``run.duration_s`` of its JSON report, from the start of
the run to its end, ``set_up`` included; Pool: pool start-up + map + shutdown; pydantic-evals:
``evaluate_sync``). Runs are interleaved and repeated; tables show medians.

    python bench/parallel.py           # full run, 3 repeats
    python bench/parallel.py --quick   # smoke run: smaller workloads, 1 repeat
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _common import (
    WORKLOADS,
    agenteval_cli,
    ensure_pydantic_evals,
    machine,
    measure,
    median,
    package_version,
    table,
    verdict,
)

SLEEP = 0.1
JUDGE_DELAY = 0.5  # the fake provider's latency in (e)
GOAL_FORK = 0.90
GOAL_ASYNC = 0.95
WORKERS = ("--isolation", "worker")


@dataclass(frozen=True)
class Sample:
    """One whole-process measurement and the spans it reported about itself."""

    process_s: float
    run_s: float
    items_s: float | None = None  # agenteval: end of set_up -> tear_down (items only)
    peak_rss_mb: float = 0.0
    cpu_s: float = 0.0  # user + system, the process and all its children
    faults: int = 0  # page faults (minor), the process and all its children


Runner = Callable[[str], Sample]


class Bench:
    """Runs the workloads in a scratch folder; every call is one fresh whole process."""

    def __init__(self, work: Path, competitor: Path | None) -> None:
        self.work = work
        self.cli = agenteval_cli()
        self.competitor = competitor
        self.servers: list[subprocess.Popen[str]] = []

    def agenteval(
        self,
        workload: str,
        n: int,
        concurrency: int,
        executor: str,
        tag: str,
        env: dict[str, str] | None = None,
        extra: tuple[str, ...] = (),
    ) -> Sample:
        cwd = self.work / f"agenteval-{tag}"
        cwd.mkdir()
        report, timing = cwd / "report.json", cwd / "items-phase.txt"
        m = measure(
            [
                self.cli,
                "run",
                str(WORKLOADS / workload),
                "--output-json",
                str(report),
                "--no-progress",
                "-c",
                str(concurrency),
                "--executor",
                executor,
                *extra,
            ],
            cwd=cwd,
            env={"BENCH_N": str(n), "BENCH_TIMING_FILE": str(timing), **(env or {})},
        )
        doc = json.loads(report.read_text(encoding="utf-8"))
        totals = doc["run"]["totals"]
        if totals["passed"] != n:
            raise RuntimeError(f"agenteval {workload}: {totals['passed']} of {n} passed: {totals}")
        items = float(timing.read_text(encoding="utf-8")) if timing.exists() else None
        shutil.rmtree(cwd)
        run_s = float(doc["run"]["duration_s"])
        return Sample(m.wall_s, run_s, items, m.peak_rss_mb, m.cpu_s, m.faults)

    def judge_server(self, delay: float) -> str:
        """Start ``workloads/judge_server.py`` (stopped by :meth:`close`); its base URL."""
        server = subprocess.Popen(
            [sys.executable, str(WORKLOADS / "judge_server.py"), str(delay)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.servers.append(server)
        assert server.stdout is not None
        return server.stdout.readline().strip()

    def close(self) -> None:
        for server in self.servers:
            server.terminate()
            server.wait()

    def pool(self, n: int, concurrency: int) -> Sample:
        m = measure(
            [sys.executable, str(WORKLOADS / "pool_sleep.py"), str(n), str(concurrency)],
            cwd=self.work,
        )
        info = m.json_line()
        pool_s, map_s = float(info["pool_s"]), float(info["map_s"])
        return Sample(m.wall_s, pool_s, map_s, m.peak_rss_mb, m.cpu_s, m.faults)

    def fork_floor(self, n: int, concurrency: int, parent: str) -> Sample:
        m = measure(
            [sys.executable, str(WORKLOADS / "fork_floor.py"), str(n), str(concurrency), parent],
            cwd=self.work,
        )
        loop_s = float(m.json_line()["loop_s"])
        return Sample(m.wall_s, loop_s, loop_s, m.peak_rss_mb, m.cpu_s, m.faults)

    def pydantic(
        self, mode: str, n: int, concurrency: int, tag: str, env: dict[str, str] | None = None
    ) -> Sample:
        assert self.competitor is not None
        report = self.work / f"pydantic-{tag}.json"
        m = measure(
            [
                str(self.competitor),
                str(WORKLOADS / "pydantic_evals_workload.py"),
                mode,
                str(n),
                str(concurrency),
                str(report),
            ],
            cwd=self.work,
            env=env,
        )
        info = m.json_line()
        if info["cases"] != n or info["failed"] or info["errors"]:
            raise RuntimeError(f"pydantic-evals {mode}: not all {n} cases passed: {info}")
        report.unlink()
        evaluate_s = float(info["evaluate_s"])
        return Sample(m.wall_s, evaluate_s, None, m.peak_rss_mb, m.cpu_s, m.faults)


def interleaved(runners: dict[str, Runner], repeats: int) -> dict[str, list[Sample]]:
    """Run each runner ``repeats`` times, rotating the order every round."""
    samples: dict[str, list[Sample]] = {name: [] for name in runners}
    names = list(runners)
    for r in range(repeats):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(runners[name](f"{name}-{r}".replace(" ", "_")))
    return samples


def efficiency_table(
    samples: dict[str, list[Sample]], ideal: float, items_label: str, n: int
) -> tuple[str, dict[str, tuple[float, float]]]:
    """Rows of efficiency (process and run span) per tool, and those two medians by tool;
    ``n`` items (for the page faults per item)."""
    rows = []
    effs: dict[str, tuple[float, float]] = {}
    for name, ss in samples.items():
        proc = median([s.process_s for s in ss])
        run = median([s.run_s for s in ss])
        items = [s.items_s for s in ss if s.items_s is not None]
        effs[name] = (ideal / proc, ideal / run)
        rows.append(
            [
                name,
                proc,
                ideal / proc,
                run,
                ideal / run,
                median(items) if items else "-",
                median([s.cpu_s for s in ss]),
                median([s.faults for s in ss]) / n,
                median([s.peak_rss_mb for s in ss]),
            ]
        )
    text = table(
        [
            "tool",
            "process s",
            "eff (process)",
            "run s",
            "eff (run)",
            items_label,
            "CPU s",
            "faults/item",
            "peak RSS MB",
        ],
        rows,
    )
    return text, effs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads, 1 repeat")
    parser.add_argument("--repeats", type=int, default=None, help="runs of each [3]")
    parser.add_argument("--no-competitor", action="store_true", help="skip pydantic-evals")
    parser.add_argument(
        "--only", choices=["a", "b", "c", "d", "e"], action="append", help="run only these parts"
    )
    args = parser.parse_args()
    quick = args.quick
    repeats = args.repeats or (1 if quick else 3)
    parts = set(args.only or ["a", "b", "c", "d", "e"])
    n_fork, c_fork = (200, 50) if quick else (1000, 50)
    n_async, c_async = (400, 200) if quick else (2000, 200)
    n_inst, c_inst = (400, 8) if quick else (2000, 8)
    ballast_mb = 50 if quick else 200
    n_forks, mb_forks = (20, "50") if quick else (100, "200")
    n_judged, c_judged = (100, 50) if quick else (200, 50)

    competitor = None if args.no_competitor else ensure_pydantic_evals()
    print(f"machine: {machine()}")
    print(f"agenteval {package_version(sys.executable, 'agenteval')}", end="")
    if competitor is not None:
        print(f", pydantic-evals {package_version(competitor, 'pydantic-evals')}", end="")
    print(f"; {repeats} interleaved repeat(s), medians shown")

    work = Path(tempfile.mkdtemp(prefix="agenteval-bench-"))
    bench = Bench(work, competitor)
    verdicts: list[str] = []
    try:
        # warm-up: bytecode compiled, files in the page cache; not measured
        bench.agenteval("sleep_eval.py", 4, 4, "fork", "warm-a", {"BENCH_SLEEP": "0"})
        bench.agenteval("async_sleep_eval.py", 4, 4, "async", "warm-b", {"BENCH_SLEEP": "0"})
        if competitor is not None:
            bench.pydantic("instant", 4, 4, "warm")

        if "a" in parts:
            ideal = math.ceil(n_fork / c_fork) * SLEEP
            runners: dict[str, Runner] = {
                "agenteval fork": lambda tag: bench.agenteval(
                    "sleep_eval.py", n_fork, c_fork, "fork", tag
                ),
                "agenteval fork --isolation worker": lambda tag: bench.agenteval(
                    "sleep_eval.py", n_fork, c_fork, "fork", tag, extra=WORKERS
                ),
                f"multiprocessing.Pool({c_fork})": lambda tag: bench.pool(n_fork, c_fork),
                "bare fork loop, agenteval's imports": lambda tag: bench.fork_floor(
                    n_fork, c_fork, "agenteval"
                ),
                "bare fork loop, bare interpreter": lambda tag: bench.fork_floor(
                    n_fork, c_fork, "bare"
                ),
                "bare fork loop + supervision, bare interpreter": lambda tag: bench.fork_floor(
                    n_fork, c_fork, "supervised"
                ),
            }
            if competitor is not None:
                runners["pydantic-evals (sync task)"] = lambda tag: bench.pydantic(
                    "sleep", n_fork, c_fork, tag
                )
            text, effs = efficiency_table(
                interleaved(runners, repeats), ideal, "items-only s", n_fork
            )
            print(
                f"\n(a) {n_fork:,} items sleeping {SLEEP} s, concurrency {c_fork}: "
                f"ideal {ideal:.1f} s"
            )
            print(text)
            print(
                "items-only s: agenteval = end of set_up to tear_down; Pool = the map alone; "
                "fork loop = first fork to last reap.\nfaults/item = page faults of the whole "
                "process, children included, / items (start-up's included)."
            )
            for label, row in (
                ("", "agenteval fork"),
                (" --isolation worker", "agenteval fork --isolation worker"),
            ):
                proc, run = effs[row]
                verdicts.append(
                    f"(a) fork{label} efficiency >= {GOAL_FORK}: run {run:.3f} -> "
                    f"{verdict(run >= GOAL_FORK)}; whole process {proc:.3f} -> "
                    f"{verdict(proc >= GOAL_FORK)}"
                )
            floor = effs["bare fork loop, agenteval's imports"][1]
            lean = effs["bare fork loop + supervision, bare interpreter"][1]
            verdicts.append(
                f"    (a process per item here reaches at most {floor:.3f}: a bare fork loop "
                f"in a parent with agenteval's imports; {lean:.3f} in a parent without them, "
                "with the supervision the fault guarantees take)"
            )

        if "b" in parts:
            ideal = math.ceil(n_async / c_async) * SLEEP
            runners = {
                "agenteval async": lambda tag: bench.agenteval(
                    "async_sleep_eval.py", n_async, c_async, "async", tag
                ),
            }
            if competitor is not None:
                runners["pydantic-evals (async task)"] = lambda tag: bench.pydantic(
                    "asleep", n_async, c_async, tag
                )
            text, effs = efficiency_table(
                interleaved(runners, repeats), ideal, "items-only s", n_async
            )
            print(
                f"\n(b) {n_async:,} items awaiting asyncio.sleep({SLEEP}), concurrency "
                f"{c_async}: ideal {ideal:.1f} s"
            )
            print(text)
            proc, run = effs["agenteval async"]
            verdicts.append(
                f"(b) async efficiency >= {GOAL_ASYNC}: run {run:.3f} -> "
                f"{verdict(run >= GOAL_ASYNC)}; whole process {proc:.3f} -> "
                f"{verdict(proc >= GOAL_ASYNC)}"
            )

        if "c" in parts:
            mb = str(ballast_mb)
            runners = {
                "agenteval fork": lambda tag: bench.agenteval(
                    "instant_eval.py", n_inst, c_inst, "fork", tag
                ),
                "agenteval fork --isolation worker": lambda tag: bench.agenteval(
                    "instant_eval.py", n_inst, c_inst, "fork", tag, extra=WORKERS
                ),
                f"agenteval fork + {mb} MB bytearray": lambda tag: bench.agenteval(
                    "instant_eval.py",
                    n_inst,
                    c_inst,
                    "fork",
                    tag,
                    {"BENCH_BALLAST_MB": mb, "BENCH_BALLAST_KIND": "bytes"},
                ),
                f"agenteval fork + {mb} MB of str objects": lambda tag: bench.agenteval(
                    "instant_eval.py",
                    n_inst,
                    c_inst,
                    "fork",
                    tag,
                    {"BENCH_BALLAST_MB": mb, "BENCH_BALLAST_KIND": "objects"},
                ),
                "agenteval inline (-c 1, no fork)": lambda tag: bench.agenteval(
                    "instant_eval.py", n_inst, 1, "inline", tag
                ),
            }
            if competitor is not None:
                runners["pydantic-evals (sync task)"] = lambda tag: bench.pydantic(
                    "instant", n_inst, c_inst, tag
                )
            samples = interleaved(runners, repeats)
            print(f"\n(c) {n_inst:,} items that return at once, concurrency {c_inst}")
            rows = []
            base_ms = None
            for name, ss in samples.items():
                proc = median([s.process_s for s in ss])
                run = median([s.run_s for s in ss])
                items = [s.items_s for s in ss if s.items_s is not None]
                items_s = median(items) if items else None
                per_item_ms = 1000 * (items_s if items_s is not None else run) / n_inst
                if name == "agenteval fork":
                    base_ms = per_item_ms
                extra = (
                    f"{per_item_ms - base_ms:+.3f}"
                    if base_ms is not None and name.startswith("agenteval fork +")
                    else "-"
                )
                rows.append(
                    [
                        name,
                        n_inst / proc,
                        n_inst / run,
                        n_inst / items_s if items_s else "-",
                        per_item_ms,
                        extra,
                        1000 * median([s.cpu_s for s in ss]) / n_inst,
                        median([s.peak_rss_mb for s in ss]),
                    ]
                )
            print(
                table(
                    [
                        "tool",
                        "items/s (process)",
                        "items/s (run)",
                        "items/s (items only)",
                        "ms/item",
                        "ms/item vs fork",
                        "CPU ms/item",
                        "peak RSS MB",
                    ],
                    rows,
                )
            )
            print(
                "ms/item = items-only span / items (pydantic-evals: evaluate_sync / items).\n"
                "The ballast rows' run span also holds set_up's allocation; the items-only "
                "span does not.\nCPU ms/item = user+system CPU of the whole process, children "
                "included, / items.\nPeak RSS counts shared copy-on-write pages in each child."
            )

        if "d" in parts:
            m = measure(
                [sys.executable, str(WORKLOADS / "fork_cost.py"), str(n_forks), mb_forks],
                cwd=work,
            )
            print(f"\n(d) this machine: one fork() + child os._exit + waitpid, {n_forks} in a row")
            print(
                table(
                    ["parent", "RSS MB", "fork() ms", "cycle ms", "CPU ms/cycle"],
                    [
                        [name, v["rss_mb"], v["fork_ms"], v["cycle_ms"], v["cpu_ms"]]
                        for name, v in m.json_line().items()
                    ],
                )
            )
        if "e" in parts:
            ideal = math.ceil(n_judged / c_judged) * JUDGE_DELAY
            judge_env = {"BENCH_JUDGE_URL": bench.judge_server(JUDGE_DELAY)}
            judged = ("--no-cache",)
            runners = {
                "agenteval fork": lambda tag: bench.agenteval(
                    "judge_eval.py", n_judged, c_judged, "fork", tag, judge_env, judged
                ),
                "agenteval fork --isolation worker": lambda tag: bench.agenteval(
                    "judge_eval.py",
                    n_judged,
                    c_judged,
                    "fork",
                    tag,
                    judge_env,
                    judged + WORKERS,
                ),
                "agenteval async (async evaluator)": lambda tag: bench.agenteval(
                    "judge_eval.py",
                    n_judged,
                    c_judged,
                    "async",
                    tag,
                    {**judge_env, "BENCH_ASYNC": "1"},
                    judged,
                ),
            }
            if competitor is not None:
                runners["pydantic-evals (LLMJudge, async task)"] = lambda tag: bench.pydantic(
                    "judge", n_judged, c_judged, tag, judge_env
                )
                bench.pydantic("judge", 4, 4, "warm-e", judge_env)
            bench.agenteval("judge_eval.py", 4, 4, "fork", "warm-e", judge_env, judged)
            text, _ = efficiency_table(
                interleaved(runners, repeats), ideal, "items-only s", n_judged
            )
            print(
                f"\n(e) {n_judged:,} items judged by an LLM (the openai SDK, a fake provider "
                f"answering in {JUDGE_DELAY} s), concurrency {c_judged}: ideal {ideal:.1f} s"
            )
            print(text)
    finally:
        bench.close()
        shutil.rmtree(work, ignore_errors=True)

    print("\ngoals (agenteval):")
    for line in verdicts:
        print(f"  {line}")
    if quick:
        print("(quick run: smaller workloads, 1 repeat; not the figures to quote)")


if __name__ == "__main__":
    main()
