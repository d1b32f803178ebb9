"""A second Ctrl-C stops the run at once, and the items it cut off are recorded ``cancelled``
by every executor that runs items concurrently (fork and async), in the journal and the
report alike, so that ``--resume`` knows to run them again."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

SLEEPER = """
import asyncio
import os
import time
from pathlib import Path

from agenteval import BaseEvaluator


class Sleeper(BaseEvaluator):
    def get_dataset(self):
        return [{"id": f"item-{n}"} for n in range(4)]

    RUN

    def evaluate(self, output, item):
        assert output == "done"
"""

SYNC_RUN = """def run(self, item):
        Path("started").mkdir(exist_ok=True)
        Path("started", item["id"]).write_text(str(os.getpid()))
        time.sleep(30)
        return "done"
"""

ASYNC_RUN = """async def run(self, item):
        Path("started").mkdir(exist_ok=True)
        Path("started", item["id"]).write_text(str(os.getpid()))
        await asyncio.sleep(30)
        return "done"
"""

EXECUTORS = {"fork": SYNC_RUN, "async": ASYNC_RUN, "fork-workers": SYNC_RUN}
ARGS = {
    "fork": ("--executor", "fork"),
    "async": ("--executor", "async"),
    "fork-workers": ("--executor", "fork", "--isolation", "worker"),
}
CANCELLED = "a second interrupt stopped the run before the item finished"


def hard_stop(cli: Any, executor: str) -> dict[str, Any]:
    cli.write("sleeper.py", SLEEPER.replace("RUN", EXECUTORS[executor]))
    started = time.monotonic()
    proc = cli.start(
        "sleeper.py",
        *ARGS[executor],
        "-c",
        "2",
        "--no-progress",
        "--output-json",
        "report.json",
    )
    folder = cli.root / "started"
    assert cli.wait_until(lambda: len(cli.pids_in(folder)) == 2, 20)
    os.kill(proc.pid, signal.SIGINT)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGINT)
    result = cli.finish(proc, started)
    return {"cli": cli, "result": result, "in_flight": sorted(cli.pids_in(folder))}


@pytest.fixture(scope="module")
def hard_stops(cli_factory: Any) -> dict[str, Any]:
    """Every executor side by side (their items only sleep)."""
    with ThreadPoolExecutor(len(EXECUTORS)) as pool:
        return {name: pool.submit(hard_stop, cli_factory(name), name) for name in EXECUTORS}


@pytest.mark.parametrize("executor", list(EXECUTORS))
def test_hard_stop_records_in_flight_items_cancelled(
    hard_stops: dict[str, Any], executor: str
) -> None:
    got = hard_stops[executor].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 130, result.stdout + result.stderr
    assert result.elapsed < 8  # far less than the 10 s default grace plus 30 s items
    assert "Traceback" not in result.stderr
    expected = dict.fromkeys(got["in_flight"], "cancelled")
    assert len(expected) == 2
    records = cli.records()
    assert {r["id"]: r["status"] for r in records} == expected
    assert {(r["error"]["stage"], r["error"]["type"], r["error"]["message"]) for r in records} == {
        ("executor", "Cancelled", CANCELLED)
    }
    report = cli.json("report.json")
    assert cli.statuses(report) == expected
    assert (report["run"]["interrupted"], report["run"]["exit_code"]) == ("SIGINT", 130)
    assert "2 cancelled" in result.stdout
    assert cli.wait_until(lambda: cli.own_processes() == [], 2)


TWELVE = """
import time
from agenteval import BaseEvaluator


class Twelve(BaseEvaluator):
    def get_dataset(self):
        return [{"id": f"f{n}"} for n in range(12)]

    def run(self, item):
        time.sleep(0.4)
        return "done"

    def evaluate(self, output, item):
        assert output == "done"
"""

# the second Ctrl-C at the worst moment: just after the supervisor read an item's record
# off its pipe, before it took the record in
SECOND_SIGNAL_AFTER_A_READ = """
import os, signal, threading, time

real_read, state = os.read, {"first": False, "sent": False}


def read(fd, n):
    data = real_read(fd, n)
    if state["first"] and not state["sent"] and b'"evaluator"' in data and os.getpid() == PARENT:
        state["sent"] = True
        os.kill(PARENT, signal.SIGINT)  # its handler runs at the next bytecode
    return data


def first():
    time.sleep(0.6)
    state["first"] = True
    os.kill(PARENT, signal.SIGINT)


PARENT = os.getpid()
os.read = read
threading.Thread(target=first, daemon=True).start()
"""


@pytest.mark.parametrize("isolation", ["item", "worker"])
def test_a_second_interrupt_just_after_a_record_was_read_keeps_that_record(
    cli: Any, isolation: str
) -> None:
    # it was lost, and the item that had passed recorded as crashed ("exited with code 0
    # before reporting a result"), which a resume then kept
    cli.write("twelve.py", TWELVE)
    cli.write("inject.py", SECOND_SIGNAL_AFTER_A_READ)
    args = ("twelve.py", "-c", "3", "--isolation", isolation, "--no-progress")
    result = cli.run(*args, "--bootstrap", "inject.py", "--output-json", "report.json")
    assert result.returncode == 130, result.stdout + result.stderr
    statuses = set(cli.statuses(cli.json("report.json")).values())
    assert statuses <= {"passed", "cancelled"} and "passed" in statuses, statuses
    resumed = cli.run(*args, "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "PASSED: 12 items, 12 passed" in resumed.stdout
