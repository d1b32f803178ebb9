"""Sequential throughput: agenteval vs pydantic-evals, whole processes, side by side.

20,000 items whose ``run`` returns the input at once, three deterministic assertions each,
one item at a time, the JSON report written. Each tool runs as a whole process, start-up
included: ``agenteval run bench/workloads/instant_eval.py --output-json ... --no-progress``
against ``bench/workloads/pydantic_evals_workload.py`` in ``bench/.env-pydantic-evals``
(created on first use). Runs are interleaved and repeated; the table shows medians.

Goals (issue #2): at least 3x pydantic-evals' items/second, and a peak RSS under 150 MB.

    python bench/throughput.py            # full run: 20,000 items x 3 repeats
    python bench/throughput.py --quick    # smoke run: 2,000 items x 1
    python bench/throughput.py --profile  # also cProfile one agenteval run, print top costs
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from _common import (
    WORKLOADS,
    Measured,
    agenteval_cli,
    ensure_pydantic_evals,
    machine,
    measure,
    median,
    package_version,
    table,
    verdict,
)

GOAL_RATIO = 3.0
GOAL_RSS_MB = 150.0


def run_agenteval(cli: str, n: int, work: Path, tag: str) -> tuple[Measured, float]:
    """One whole ``agenteval run``; returns the measurement and the run's own duration_s."""
    cwd = work / f"agenteval-{tag}"
    cwd.mkdir()
    report = cwd / "report.json"
    m = measure(
        [
            cli,
            "run",
            str(WORKLOADS / "instant_eval.py"),
            "--output-json",
            str(report),
            "--no-progress",
            "-c",
            "1",
            "--executor",
            "inline",
        ],
        cwd=cwd,
        env={"BENCH_N": str(n)},
    )
    doc = json.loads(report.read_text(encoding="utf-8"))
    totals = doc["run"]["totals"]
    if totals["passed"] != n:
        raise RuntimeError(f"agenteval passed {totals['passed']} of {n} items: {totals}")
    shutil.rmtree(cwd)
    return m, float(doc["run"]["duration_s"])


def run_pydantic(python: Path, mode: str, n: int, work: Path, tag: str) -> tuple[Measured, float]:
    """One whole pydantic-evals process; returns the measurement and evaluate+report time."""
    report = work / f"pydantic-{mode}-{tag}.json"
    m = measure(
        [
            str(python),
            str(WORKLOADS / "pydantic_evals_workload.py"),
            mode,
            str(n),
            "1",
            str(report),
        ],
        cwd=work,
    )
    info = m.json_line()
    if info["cases"] != n or info["failed"] or info["errors"]:
        raise RuntimeError(f"pydantic-evals did not pass all {n} cases: {info}")
    report.unlink()
    return m, float(info["evaluate_s"] + info["report_s"])


def profile(cli: str, n: int, work: Path, top: int = 30) -> None:
    """cProfile one agenteval run in-process and print where the time goes."""
    import pstats

    cwd = work / "profile"
    cwd.mkdir()
    out = cwd / "agenteval.prof"
    measure(
        [
            sys.executable,
            "-m",
            "cProfile",
            "-o",
            str(out),
            cli,
            "run",
            str(WORKLOADS / "instant_eval.py"),
            "--output-json",
            str(cwd / "report.json"),
            "--no-progress",
            "-c",
            "1",
            "--executor",
            "inline",
        ],
        cwd=cwd,
        env={"BENCH_N": str(n)},
    )
    stats = pstats.Stats(str(out), stream=sys.stdout)
    stats.strip_dirs()
    print(f"\ncProfile of `agenteval run` on {n:,} items (profiler overhead inflates times)")
    print("\n== by own time (tottime) ==")
    stats.sort_stats("tottime").print_stats(top)
    print("== by cumulative time ==")
    stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 items, 1 repeat")
    parser.add_argument("--items", type=int, default=None, help="items per run [20,000]")
    parser.add_argument("--repeats", type=int, default=None, help="runs of each tool [3]")
    parser.add_argument("--no-competitor", action="store_true", help="skip pydantic-evals")
    parser.add_argument("--profile", action="store_true", help="cProfile an agenteval run")
    args = parser.parse_args()
    n = args.items or (2_000 if args.quick else 20_000)
    repeats = args.repeats or (1 if args.quick else 3)

    cli = agenteval_cli()
    python = None if args.no_competitor else ensure_pydantic_evals()
    print(f"machine: {machine()}")
    print(f"agenteval {package_version(sys.executable, 'agenteval')}", end="")
    if python is not None:
        print(f", pydantic-evals {package_version(python, 'pydantic-evals')}", end="")
    print(f"; {n:,} items, {repeats} interleaved repeat(s), medians shown\n")

    work = Path(tempfile.mkdtemp(prefix="agenteval-bench-"))
    try:
        # warm-up: compile bytecode, fill the page cache; not measured
        run_agenteval(cli, 200, work, "warm")
        modes = ["instant", "instant-async"]
        if python is not None:
            for mode in modes:
                run_pydantic(python, mode, 200, work, "warm")

        runs: dict[str, list[tuple[Measured, float]]] = {"agenteval": []}
        runs.update({f"pydantic-evals ({m})": [] for m in modes} if python else {})
        for r in range(repeats):
            order = list(runs)
            order = order[r % len(order) :] + order[: r % len(order)]
            for name in order:
                if name == "agenteval":
                    runs[name].append(run_agenteval(cli, n, work, str(r)))
                else:
                    assert python is not None
                    mode = name.split("(")[1].rstrip(")")
                    runs[name].append(run_pydantic(python, mode, n, work, str(r)))
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise

    rates = {name: median([n / m.wall_s for m, _ in rs]) for name, rs in runs.items()}
    rows = []
    for name, rs in runs.items():
        rows.append(
            [
                name,
                rates[name],
                median([m.wall_s for m, _ in rs]),
                median([n / d for _, d in rs]),
                median([m.cpu_s for m, _ in rs]),
                median([m.peak_rss_mb for m, _ in rs]),
                rates["agenteval"] / rates[name],
            ]
        )
    print(
        table(
            [
                "tool (sync task unless noted)",
                "items/s (process)",
                "wall s",
                "items/s (in-run)",
                "CPU s",
                "peak RSS MB",
                "agenteval x",
            ],
            rows,
        )
    )
    print(
        "\nitems/s (process) = items / whole-process wall time, start-up included (the goal's "
        "figure);\nitems/s (in-run) = items / the tool's own run time (agenteval: run.duration_s; "
        "pydantic-evals: evaluate_sync + report dump);\nCPU s = user+system CPU of the whole process."
    )
    rss = median([m.peak_rss_mb for m, _ in runs["agenteval"]])
    print(f"\ngoal peak RSS < {GOAL_RSS_MB:.0f} MB: {rss:.0f} MB -> {verdict(rss < GOAL_RSS_MB)}")
    competitors = [name for name in runs if name != "agenteval"]
    if competitors:
        best = max(competitors, key=lambda k: rates[k])
        ratio = rates["agenteval"] / rates[best]
        print(
            f"goal >= {GOAL_RATIO:g}x pydantic-evals items/s (vs its faster variant, {best}): "
            f"{ratio:.2f}x -> {verdict(ratio >= GOAL_RATIO)}"
        )
    if args.quick:
        print("(quick run: smaller workload, 1 repeat; not the figures to quote)")
    try:
        if args.profile:
            profile(cli, n, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
