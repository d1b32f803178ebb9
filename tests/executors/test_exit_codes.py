"""The exit-code contract CI relies on, checked against the real CLI.

0 all passed (or success rate >= --min-success-rate); 1 assertion failures; 2 item errors,
timeouts or crashes beyond --max-errors, a driver failure, or a usage/config/dataset error;
130/143 interrupted (see test_interrupts.py).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

EVALUATOR = """
import json
import os
from pathlib import Path

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Verdict(BaseEvaluator):
    def get_dataset(self):
        return json.loads(Path("cases.json").read_text())

    def run(self, item):
        if item["kind"] == "error":
            raise RuntimeError("agent unreachable")
        if item["kind"] == "crash":
            os._exit(1)
        return item["kind"]

    def evaluate(self, output, item):
        self.assert_that(StringContains("pass"), output)
"""

FAILING_DRIVER_CONFIG = """
from agenteval.outputs import ConsoleOutput, JsonOutput, OutputDriver


class Broken(OutputDriver):
    def item_finished(self, result):
        raise KeyboardInterrupt("raised by a library")  # not a Ctrl-C: the run goes on

    def output(self, summary):
        raise OSError("disk full")


output = [ConsoleOutput(progress=False), Broken(), JsonOutput("report.json")]
"""

# name: (item kinds, extra CLI arguments, expected exit code)
CASES: dict[str, tuple[list[str], tuple[str, ...], int]] = {
    "all-passed": (["pass", "pass", "pass", "pass"], (), 0),
    "assertion-failed": (["pass", "fail", "pass", "pass"], (), 1),
    "failures-within-min-success-rate": (
        ["pass", "fail", "pass", "pass"],
        ("--min-success-rate", "0.75"),
        0,
    ),
    "failures-below-min-success-rate": (
        ["pass", "fail", "fail", "pass"],
        ("--min-success-rate", "0.75"),
        1,
    ),
    "error": (["pass", "error", "pass", "pass"], (), 2),
    "crash-in-parallel": (["pass", "crash", "pass", "pass"], ("-c", "2"), 2),
    # tolerated errors still count against the success rate (default 1.0) ...
    "error-within-max-errors": (["pass", "error", "pass", "pass"], ("--max-errors", "1"), 1),
    # ... so they exit 0 only when the rate allows them
    "error-within-max-errors-and-rate": (
        ["pass", "error", "pass", "pass"],
        ("--max-errors", "1", "--min-success-rate", "0.75"),
        0,
    ),
    "errors-beyond-max-errors": (
        ["pass", "error", "crash", "pass"],
        ("--max-errors", "1", "--min-success-rate", "0", "-c", "2"),
        2,
    ),
    "failure-and-error": (["fail", "error", "pass", "pass"], (), 2),
}


def run_case(cli: Any, kinds: list[str], args: tuple[str, ...]) -> Any:
    cli.write("verdict.py", EVALUATOR)
    cases = [{"id": f"item-{n}", "kind": kind} for n, kind in enumerate(kinds)]
    (cli.root / "cases.json").write_text(json.dumps(cases))
    return cli.run("verdict.py", "--no-progress", *args)


def run_usage(cli: Any, *args: str) -> Any:
    cli.write("verdict.py", EVALUATOR)
    (cli.root / "cases.json").write_text(json.dumps([{"id": "x", "kind": "pass"}]))
    return cli.run(*args)


def run_duplicate_ids(cli: Any) -> Any:
    cli.write("verdict.py", EVALUATOR)
    cases = [{"id": "same", "kind": "pass"}, {"id": "same", "kind": "pass"}]
    (cli.root / "cases.json").write_text(json.dumps(cases))
    return cli.run("verdict.py", "--no-progress")


def run_driver_failure(cli: Any) -> Any:
    cli.write("evaluation.py", FAILING_DRIVER_CONFIG)
    result = run_case(cli, ["pass", "pass"], ())
    result.report = cli.json("report.json")
    return result


@pytest.fixture(scope="module")
def outcomes(cli_factory: Any) -> dict[str, Any]:
    """Every case side by side: independent short CLI runs."""
    jobs: dict[str, Any] = {
        name: (run_case, kinds, args) for name, (kinds, args, _) in CASES.items()
    }
    jobs["unknown-executor"] = (run_usage, "verdict.py", "--executor", "threads")
    jobs["missing-path"] = (run_usage, "nowhere.py")
    jobs["nan-timeout"] = (run_usage, "verdict.py", "--timeout", "nan")
    jobs["nan-grace"] = (run_usage, "verdict.py", "--grace", "nan")
    jobs["inf-grace"] = (run_usage, "verdict.py", "--grace", "inf")
    jobs["nan-rate"] = (run_usage, "verdict.py", "--min-success-rate", "nan")
    jobs["duplicate-ids"] = (run_duplicate_ids,)
    jobs["driver-failure"] = (run_driver_failure,)
    with ThreadPoolExecutor(6) as pool:
        return {
            name: pool.submit(fn, cli_factory(name), *args) for name, (fn, *args) in jobs.items()
        }


@pytest.mark.parametrize("case", list(CASES))
def test_exit_code_contract(outcomes: dict[str, Any], case: str) -> None:
    result = outcomes[case].result()
    assert result.returncode == CASES[case][2], result.stdout + result.stderr


def test_exit_code_2_for_unknown_executor(outcomes: dict[str, Any]) -> None:
    result = outcomes["unknown-executor"].result()
    assert result.returncode == 2
    assert result.stderr == (
        "agenteval: error: --executor must be one of auto, inline, fork, async; got 'threads'\n"
    )


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("nan-timeout", "--timeout must be positive, got nan"),  # not: no timeout at all
        ("nan-grace", "--grace must be 0 or more seconds, got nan"),
        ("inf-grace", "--grace must be 0 or more seconds, got inf"),
        ("nan-rate", "--min-success-rate must be between 0 and 1, got nan"),
    ],
)
def test_exit_code_2_for_a_number_that_is_not_one(
    outcomes: dict[str, Any], case: str, message: str
) -> None:
    result = outcomes[case].result()
    assert (result.returncode, result.stderr) == (2, f"agenteval: error: {message}\n")


def test_exit_code_2_for_missing_path(outcomes: dict[str, Any]) -> None:
    result = outcomes["missing-path"].result()
    assert result.returncode == 2
    assert result.stderr.startswith("agenteval: error: ")
    assert "nowhere.py" in result.stderr
    assert result.stderr.count("\n") == 1


def test_exit_code_2_for_dataset_error(outcomes: dict[str, Any]) -> None:
    result = outcomes["duplicate-ids"].result()
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "  ERROR in get_dataset: DatasetError: item #1: duplicate item id 'same': ids must be "
        "unique within a dataset\n"
    ) in result.stdout


def test_exit_code_2_for_driver_failure_keeps_other_outputs(outcomes: dict[str, Any]) -> None:
    result = outcomes["driver-failure"].result()
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == (
        "agenteval: output driver failed: Broken.item_finished() raised KeyboardInterrupt: "
        "raised by a library (2 times)\n"
        "agenteval: output driver failed: Broken.output() raised OSError: disk full\n"
    )
    assert "ERROR: 2 items, 2 passed, 0 failed, 0 errors" in result.stdout
    assert result.report["run"]["totals"]["passed"] == 2  # the drivers after it still ran


LEFT_THREAD_EVALUATOR = """
import atexit
import threading
import time

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains

atexit.register(lambda: open("atexit.ran", "w").close())  # an SDK flushing at exit


class LeftThread(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "starts-a-thread"}, {"id": "fails"}]

    def run(self, item):
        if item["id"] == "starts-a-thread":  # a background worker that never ends
            threading.Thread(target=time.sleep, args=(3600,), name="poller").start()
        return item["id"]

    def evaluate(self, output, item):
        self.assert_that(StringContains("thread"), output)
"""


def test_threads_left_running_by_a_sequential_run_do_not_hold_the_exit_code(cli: Any) -> None:
    cli.write("left_thread.py", LEFT_THREAD_EVALUATOR)
    result = cli.run("left_thread.py", "--no-progress", timeout=30)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith("FAILED: 2 items, 1 passed, 1 failed")
    assert result.stderr == (
        "agenteval: not waiting for 1 thread the evaluators left running (poller); exiting with 1\n"
    )
    assert (cli.root / "atexit.ran").exists()
    assert result.elapsed < 15


SLOW_FLUSH_EVALUATOR = """
import atexit
import threading
import time

from agenteval import BaseEvaluator


def flush():  # an SDK flushing its buffers at exit, slowly
    with open("flushes.log", "a") as fh:
        fh.write(threading.current_thread().name + "\\n")
    time.sleep(3)


atexit.register(flush)


class ShortThread(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "a"}]

    def run(self, item):
        threading.Thread(target=time.sleep, args=(1,)).start()  # ends soon enough
        return "a"

    def evaluate(self, output, item):
        pass
"""


def test_threads_that_end_in_time_leave_the_exit_as_python_makes_it(cli: Any) -> None:
    cli.write("short_thread.py", SLOW_FLUSH_EVALUATOR)
    result = cli.run("short_thread.py", "--no-progress", timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    # the exit handler ran once, in the main thread, to its end (no early exit cut it off)
    assert (cli.root / "flushes.log").read_text() == "MainThread\n"
    assert result.elapsed > 3
