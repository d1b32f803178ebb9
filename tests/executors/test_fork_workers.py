"""``--isolation worker``: forked workers run several items each, granted one at a time.

Every property of the fork executor still holds per item (each runs once, at most N at
once, faults stay with their item, output is captured per item, interrupts and resume),
except that items of one worker see what earlier items of that worker changed.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from test_concurrency import intervals_of, max_overlap, read_spans, write_spans_evaluator

from agenteval import BaseEvaluator
from agenteval._executors._base import ExecutorOptions, StopState
from agenteval._executors._fork import ForkExecutor
from agenteval._item import ItemTask
from agenteval._results import ItemResult

WORKERS_EVALUATOR = """
import os
import signal
import sys
import time
from pathlib import Path

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Workers(BaseEvaluator):
    def set_up(self):
        self.seen = 0

    def get_dataset(self):
        return [{"id": f"item-{n}", "fault": FAULTS.get(n, "")} for n in range(ITEMS)]

    def run(self, item):
        self.seen += 1  # shared by the items of one worker, never by the whole run
        fd = os.open("starts.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{item['id']} {os.getpid()}\\n".encode())
        os.close(fd)
        print(f"out of {item['id']}")
        print(f"err of {item['id']}", file=sys.stderr)
        if item["fault"] == "exit":
            os._exit(3)
        if item["fault"] == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if item["fault"] == "hang":
            time.sleep(60)
        if item["fault"] == "raise":
            raise RuntimeError("broke")
        time.sleep(SLEEP)
        return {"answer": "ok", "seen": self.seen, "pid": os.getpid()}

    def evaluate(self, output, item):
        self.assert_that(StringContains("ok"), output["answer"])
"""

FAULTS = {3: "exit", 9: "sigkill", 14: "hang", 20: "raise"}


def write(cli: Any, items: int, sleep: float, faults: dict[int, str]) -> None:
    cli.write(
        "workers.py",
        WORKERS_EVALUATOR.replace("ITEMS", str(items))
        .replace("SLEEP", repr(sleep))
        .replace("FAULTS", repr(faults)),
    )


def starts(cli: Any) -> list[tuple[str, int]]:
    log = cli.root / "starts.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [(name, int(pid)) for name, pid in (line.split() for line in lines)]


def faulty(cli: Any) -> dict[str, Any]:
    write(cli, 24, 0.05, FAULTS)
    started = time.monotonic()
    result = cli.run(
        "workers.py",
        "-c",
        "3",
        "--isolation",
        "worker",
        "--timeout",
        "1",
        "--no-progress",
        "--output-json",
        "report.json",
    )
    return {"cli": cli, "result": result, "elapsed": time.monotonic() - started}


def interrupted(cli: Any) -> dict[str, Any]:
    write(cli, 16, 1.0, {})
    args = ("workers.py", "-c", "4", "--isolation", "worker", "--no-progress", "--output-json")
    proc = cli.start(*args, "first.json")
    assert cli.wait_until(lambda: len(starts(cli)) >= 4, 20)
    os.kill(proc.pid, signal.SIGINT)
    first = cli.finish(proc, time.monotonic())
    first_starts = starts(cli)
    (run_dir,) = cli.run_dirs()
    first_records = cli.records(run_dir)
    second = cli.run(*args, "final.json", "--resume")
    return {
        "cli": cli,
        "first": first,
        "first_starts": first_starts,
        "first_records": first_records,
        "second": second,
        "run_dir": run_dir,
    }


@pytest.fixture(scope="module")
def runs(cli_factory: Any) -> dict[str, Any]:
    scenarios = {"faulty": faulty, "interrupted": interrupted}
    with ThreadPoolExecutor(len(scenarios)) as pool:
        return {name: pool.submit(fn, cli_factory(name)) for name, fn in scenarios.items()}


def test_workers_run_several_items_each_and_share_state_within_a_worker(
    runs: dict[str, Any],
) -> None:
    got = runs["faulty"].result()
    cli = got["cli"]
    started_in: dict[int, int] = {}
    for _, pid in starts(cli):
        started_in[pid] = started_in.get(pid, 0) + 1
    assert len(started_in) < 24 and max(started_in.values()) > 1  # processes were reused
    seen: dict[int, list[int]] = {}
    for item in cli.items_of(cli.json("report.json")):
        if item["output"]:
            seen.setdefault(item["output"]["pid"], []).append(item["output"]["seen"])
    # an item sees the items before it in its worker, never those of other workers
    for pid, counts in seen.items():
        assert len(set(counts)) == len(counts) and max(counts) <= started_in[pid], counts


def test_workers_keep_each_fault_with_its_item(runs: dict[str, Any]) -> None:
    got = runs["faulty"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert got["elapsed"] < 20
    expected = {f"item-{n}": "passed" for n in range(24)} | {
        "item-3": "crashed",
        "item-9": "crashed",
        "item-14": "timeout",
        "item-20": "error",
    }
    report = cli.json("report.json")
    assert cli.statuses(report) == expected
    errors = {i["id"]: i["error"] for i in cli.items_of(report) if i["error"]}
    assert errors["item-3"]["message"] == (
        "the item's process exited with code 3 before reporting a result"
    )
    assert "SIGKILL" in errors["item-9"]["message"]
    assert errors["item-14"]["message"].startswith("item exceeded --timeout 1s")
    # every item ran exactly once, also those queued behind a fault in a dead worker
    names = [name for name, _ in starts(cli)]
    assert sorted(names) == sorted(expected)
    assert sorted(r["id"] for r in cli.records()) == sorted(expected)
    assert cli.own_processes() == []


def test_workers_capture_what_each_item_printed(runs: dict[str, Any]) -> None:
    cli = runs["faulty"].result()["cli"]
    for item in cli.items_of(cli.json("report.json")):
        # stderr is line-buffered; stdout is lost with the process when an item dies
        assert item["stderr"].startswith(f"err of {item['id']}\n"), item
        if item["status"] in ("passed", "error"):
            assert item["stdout"] == f"out of {item['id']}\n", item
        else:
            assert item["stdout"] in ("", f"out of {item['id']}\n"), item


def test_workers_interrupt_then_resume_runs_each_item_once(runs: dict[str, Any]) -> None:
    got = runs["interrupted"].result()
    cli, first, second = got["cli"], got["first"], got["second"]
    assert first.returncode == 130, first.stdout + first.stderr
    # the items that started finished within the grace period; no other item started
    started = sorted(name for name, _ in got["first_starts"])
    assert sorted(r["id"] for r in got["first_records"]) == started
    assert {r["status"] for r in got["first_records"]} == {"passed"}
    assert 4 <= len(started) < 16
    assert second.returncode == 0, second.stdout + second.stderr
    assert sorted(name for name, _ in starts(cli)) == sorted(f"item-{n}" for n in range(16))
    assert cli.statuses(cli.json("final.json")) == {f"item-{n}": "passed" for n in range(16)}


def test_workers_run_at_most_n_items_at_once(cli: Any) -> None:
    write_spans_evaluator(cli, {"Spans": (24, 0.2)})
    result = cli.run("spans.py", "-c", "3", "--isolation", "worker", "--no-progress")
    assert result.returncode == 0, result.stdout + result.stderr
    spans = read_spans(cli.root / "spans")
    assert sorted(spans) == sorted(f"Spans-{n}" for n in range(24))
    assert {name: [kind for kind, _, _ in lines] for name, lines in spans.items()} == {
        name: ["start", "end"] for name in spans
    }
    assert len({lines[0][2] for lines in spans.values()}) < 24
    assert max_overlap(intervals_of(spans)) == 3


@pytest.mark.parametrize(
    "args",
    [
        ("--isolation", "worker", "--executor", "async"),
        ("--isolation", "worker", "--executor", "inline"),
    ],
)
def test_worker_isolation_needs_the_fork_executor(cli: Any, args: tuple[str, ...]) -> None:
    write(cli, 2, 0.0, {})
    result = cli.run("workers.py", *args)
    assert result.returncode == 2
    assert result.stderr.startswith("agenteval: error: --isolation worker is for the fork executor")


def test_worker_isolation_alone_runs_the_items_in_one_child_process(cli: Any) -> None:
    write(cli, 4, 0.0, {})
    result = cli.run("workers.py", "--isolation", "worker", "--no-progress")
    assert result.returncode == 0, result.stderr
    assert "concurrency 1 (fork, worker isolation)" in result.stdout
    pids = {pid for _, pid in starts(cli)}
    assert len(starts(cli)) == 4 and len(pids) == 1


def test_isolation_must_be_item_or_worker(cli: Any) -> None:
    write(cli, 2, 0.0, {})
    result = cli.run("workers.py", "-c", "2", "--isolation", "thread")
    assert result.returncode == 2
    assert result.stderr == "agenteval: error: --isolation must be item or worker; got 'thread'\n"


HELPER_EVALUATOR = """
import multiprocessing
import os
import time

from agenteval import BaseEvaluator


def helper():
    time.sleep(30)


class First(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n} for n in range(20)]

    def run(self, item):
        if item["id"] == 0 and os.fork() == 0:
            time.sleep(0.2)  # forked without exec: comes back into agenteval's code
            return "from the forked copy"
        time.sleep(0.01)
        return "ok"

    def evaluate(self, output, item):
        assert output == "ok"


class Second(BaseEvaluator):
    def set_up(self):  # runs in the parent while First's workers are alive
        self.helper = multiprocessing.get_context("fork").Process(target=helper, daemon=True)
        self.helper.start()

    def get_dataset(self):
        return [{"id": n} for n in range(5)]

    def run(self, item):
        return "ok"

    def evaluate(self, output, item):
        assert output == "ok"
"""


def test_workers_end_even_when_other_processes_hold_their_pipes(cli: Any) -> None:
    """A process forked in the parent (Second's helper) inherits the workers' control
    pipes and agenteval's signal handlers; an item that forks without exec runs
    agenteval's code in a copy. None of it may stall the run or add a record."""
    cli.write("helpers.py", HELPER_EVALUATOR)
    result = cli.run(
        "helpers.py", "-c", "4", "--isolation", "worker", "--no-progress", "--output-json", "r.json"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.elapsed < 8  # the helper sleeps 30 s; it is stopped when the CLI exits
    assert "no new items start" not in result.stdout + result.stderr  # not our signal
    report = cli.json("r.json")
    assert [e["summary"]["passed"] for e in report["evaluators"]] == [20, 5]
    assert len(cli.records()) == 25


class DiesBetweenItems(BaseEvaluator):
    """Item 0 leaves a thread behind that kills its worker once the item has reported."""

    def get_dataset(self) -> list[Any]:
        return []

    def run(self, item: dict[str, Any]) -> str:
        with open(item["log"], "a", encoding="utf-8") as fh:
            fh.write(f"{item['n']}\n")
        if item["n"] == 0:

            def die() -> None:
                time.sleep(0.05)
                os.kill(os.getpid(), signal.SIGKILL)

            threading.Thread(target=die, daemon=True).start()
        return "ok"

    def evaluate(self, output: str, item: dict[str, Any]) -> None:
        pass


def test_a_worker_that_dies_between_items_costs_no_item(tmp_path: Path) -> None:
    """The task granted to a worker that died before starting it goes to another worker
    instead of being recorded as crashed."""
    log = tmp_path / "starts.log"
    evaluator = DiesBetweenItems()
    tasks = iter(
        [(evaluator, ItemTask("e.py::E", n, n, {"n": n, "log": str(log)})) for n in range(6)]
    )
    records: list[ItemResult] = []

    def on_result(*finished: ItemResult) -> None:
        records.extend(finished)
        if len(records) == 1:
            time.sleep(0.4)  # the parent is busy while the worker dies idle

    options = ExecutorOptions(concurrency=2, isolation="worker")
    ForkExecutor(options).run(tasks, on_result, StopState())
    assert sorted((r.index, r.status) for r in records) == [(n, "passed") for n in range(6)]
    assert sorted(int(n) for n in log.read_text().split()) == list(range(6))


MOVES_EVALUATOR = """
import os
import tempfile

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Moves(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n} for n in range(4)]

    def run(self, item):
        here = os.path.basename(os.getcwd())
        os.chdir(tempfile.mkdtemp())  # an agent working in a scratch folder
        return here

    def evaluate(self, output, item):
        self.assert_that(StringContains(os.environ["RUN_FOLDER"]), output)
"""


def test_each_item_of_a_worker_starts_in_the_run_folder(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli.write("moves.py", MOVES_EVALUATOR)
    monkeypatch.setenv("RUN_FOLDER", cli.root.name)
    result = cli.run("moves.py", "--executor", "fork", "-c", "1", "--isolation", "worker")
    assert result.returncode == 0, result.stdout + result.stderr


SILENCES_EVALUATOR = """
import os
import sys

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Silences(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n} for n in range(6)]

    def run(self, item):
        print(f"hello {item['id']}", flush=True)
        print(f"oops {item['id']}", file=sys.stderr, flush=True)
        quiet = os.open(os.devnull, os.O_WRONLY)  # a library that silences the process
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        os.close(quiet)
        return "ok"

    def evaluate(self, output, item):
        self.assert_that(StringContains("ok"), output)
"""


def test_each_item_of_a_worker_prints_into_its_own_capture(cli: Any) -> None:
    # an item that pointed fd 1 and 2 elsewhere must not silence the worker's next items
    cli.write("silences.py", SILENCES_EVALUATOR)
    args = ("-c", "2", "--isolation", "worker", "--no-progress", "--output-json", "r.json")
    result = cli.run("silences.py", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    items = cli.items_of(cli.json("r.json"))
    assert [(i["stdout"], i["stderr"]) for i in items] == [
        (f"hello {n}\n", f"oops {n}\n") for n in range(6)
    ]


STREAMS_AND_SIGNALS = """
import io
import signal
import subprocess
import sys

from agenteval import BaseEvaluator


class Streams(BaseEvaluator):
    def get_dataset(self):
        return [{"id": name} for name in ("swaps", "closes", "after-1", "after-2")]

    def run(self, item):
        print("hello from", item["id"])
        if item["id"] == "swaps":
            sys.stdout = io.StringIO()
        if item["id"] == "closes":
            sys.stderr.close()
        inherited = subprocess.run(
            [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
            capture_output=True,
            text=True,
        ).stdout
        return [str(signal.getsignal(signal.SIGINT)), inherited.strip()]

    def evaluate(self, output, item):
        print("evaluated", item["id"], file=sys.stderr)
"""


@pytest.mark.parametrize("isolation", ["item", "worker"])
def test_an_item_sees_streams_and_sigint_as_in_a_sequential_run(cli: Any, isolation: str) -> None:
    # a worker's next items inherited a replaced or closed sys.stdout/sys.stderr, and every
    # forked item (and what it started) ignored SIGINT: a server stopped with it never was
    cli.write("streams.py", STREAMS_AND_SIGNALS)
    args = ("--executor", "fork", "--isolation", isolation, "--no-progress")
    result = cli.run("streams.py", *args, "--output-json", "report.json")
    assert result.returncode == 2, result.stdout + result.stderr
    items = {i["id"]: i for i in cli.items_of(cli.json("report.json"))}
    assert {name: i["status"] for name, i in items.items()} == {
        "swaps": "passed",
        "closes": "error",  # (its own evaluate printed to the stderr it closed)
        "after-1": "passed",
        "after-2": "passed",
    }
    for name in ("after-1", "after-2"):
        assert (items[name]["stdout"], items[name]["stderr"]) == (
            f"hello from {name}\n",
            f"evaluated {name}\n",
        )
    default = str(signal.default_int_handler)
    assert items["after-2"]["output"] == [default, default]
