"""Start-up time: ``agenteval --help`` and ``import agenteval``, medians of 7 whole processes.

For context it also times a bare ``python -c pass``, importing what an evaluator file
imports, a whole ``agenteval run`` of one instant item (the fixed cost of every run), and — when ``bench/.env-pydantic-evals`` exists (``throughput.py`` or
``parallel.py`` create it) — ``import pydantic_evals`` in that env. Commands run
round-robin after one unmeasured warm-up each, so noise spreads evenly.

Goal (issue #2): ``agenteval --help`` under 0.35 s.

    python bench/startup.py           # 7 runs of each
    python bench/startup.py --quick   # 3 runs of each
"""

from __future__ import annotations

import argparse
import sys
import tempfile

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

GOAL_HELP_S = 0.35


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 runs of each command")
    parser.add_argument("--runs", type=int, default=None, help="runs of each command [7]")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 7)

    py = sys.executable
    commands: dict[str, list[str]] = {
        "python -c pass": [py, "-c", "pass"],
        "python -c 'import agenteval'": [py, "-c", "import agenteval"],
        "agenteval --help": [agenteval_cli(), "--help"],
        "agenteval --version": [agenteval_cli(), "--version"],
        "import an evaluator's needs (context)": [
            py,
            "-c",
            "from agenteval import BaseEvaluator; "
            "from agenteval.assertions import StringContains; "
            "from agenteval.datasets import JsonDataset",
        ],
        "agenteval run, 1 instant item (context)": [
            agenteval_cli(),
            "run",
            str(WORKLOADS / "instant_eval.py"),
            "--no-progress",
        ],
    }
    competitor = ensure_pydantic_evals(create=False)
    if competitor is not None:
        commands["pydantic-evals env: python -c pass"] = [str(competitor), "-c", "pass"]
        commands["pydantic-evals env: import pydantic_evals"] = [
            str(competitor),
            "-c",
            "import pydantic_evals",
        ]

    print(f"machine: {machine()}")
    print(f"agenteval {package_version(py, 'agenteval')}", end="")
    if competitor is not None:
        print(f", pydantic-evals {package_version(competitor, 'pydantic-evals')}", end="")
    print(f"; {runs} round-robin runs of each after a warm-up, medians shown\n")

    times: dict[str, list[float]] = {name: [] for name in commands}
    rss: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(prefix="agenteval-bench-") as cwd:
        env = {"BENCH_N": "1"}
        for cmd in commands.values():  # warm-up: bytecode compiled, files in the page cache
            measure(cmd, cwd=cwd, env=env)
        for _ in range(runs):
            for name, cmd in commands.items():
                m = measure(cmd, cwd=cwd, env=env)
                times[name].append(m.wall_s)
                rss[name].append(m.peak_rss_mb)

    rows = [
        [name, median(times[name]), min(times[name]), max(times[name]), median(rss[name])]
        for name in commands
    ]
    print(table(["command", "median s", "min s", "max s", "peak RSS MB"], rows))
    help_s = median(times["agenteval --help"])
    print(
        f"\ngoal `agenteval --help` < {GOAL_HELP_S} s: {help_s:.3f} s -> "
        f"{verdict(help_s < GOAL_HELP_S)}"
    )
    if args.quick:
        print("(quick run: 3 runs each; not the figures to quote)")


if __name__ == "__main__":
    main()
