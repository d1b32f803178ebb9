"""The fork executor's semantics: every item sees the evaluator as set_up left it, results
keep dataset order, and the report equals a sequential run's apart from timings."""

from __future__ import annotations

from typing import Any

import pytest

COUNTER_EVALUATOR = """
import os
import time
from pathlib import Path

from agenteval import BaseEvaluator
{equals}

class Counter(BaseEvaluator):
    def set_up(self):
        self.count = 0
        self.seen = []
        with open("set_up.log", "a") as fh:
            fh.write("set_up\\n")

    def get_dataset(self):
        return [{{"id": f"item-{{n}}", "n": n}} for n in range(8)]

    def run(self, item):
        # later items finish first: completion order is the reverse of dataset order
        time.sleep(0.05 * (8 - item["n"]))
        self.count += 1
        self.seen.append(item["id"])
        return {{"count": self.count, "seen": self.seen, "pid": os.getpid()}}

    def evaluate(self, output, item):
        self.assert_that(Equals(1), output["count"])
        self.assert_that(Equals([item["id"]]), output["seen"])

    def tear_down(self):
        Path("tear_down.log").write_text(f"count={{self.count}} seen={{self.seen}}")
"""


@pytest.fixture(scope="module")
def counter(cli_factory: Any) -> Any:
    cli = cli_factory("counter")
    cli.write("counter.py", COUNTER_EVALUATOR.format(equals=cli.EQUALS))
    cli.result = cli.run("counter.py", "-c", "8", "--no-progress", "--output-json", "report.json")
    return cli


def test_fork_each_item_sees_state_as_set_up_left_it(counter: Any) -> None:
    cli = counter
    assert cli.result.returncode == 0, cli.result.stdout + cli.result.stderr
    items = cli.items_of(cli.json("report.json"))
    assert [(i["output"]["count"], i["status"]) for i in items] == [(1, "passed")] * 8
    assert len({i["output"]["pid"] for i in items}) == 8  # one child per item
    # set_up ran once, in the parent, whose state no item changed
    assert (cli.root / "set_up.log").read_text() == "set_up\n"
    assert (cli.root / "tear_down.log").read_text() == "count=0 seen=[]"


def test_fork_results_keep_dataset_order(counter: Any) -> None:
    cli = counter
    items = cli.items_of(cli.json("report.json"))
    assert [i["id"] for i in items] == [f"item-{n}" for n in range(8)]
    # the journal is written in completion order, which here is the reverse
    journal = [r["id"] for r in cli.records()]
    assert journal != [i["id"] for i in items]
    assert sorted(journal) == sorted(i["id"] for i in items)


MIXED_EVALUATORS = """
import time

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains

KINDS = ["pass", "fail", "error", "soft", "pass", "fail", "exit", "pass", "soft", "pass"]


class Mixed(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n, "kind": kind} for n, kind in enumerate(KINDS)]

    def run(self, item):
        time.sleep(0.02 * ((len(KINDS) - item["id"]) % 4))  # shuffle completion order
        if item["kind"] == "error":
            raise ValueError(f"item {item['id']} broke")
        if item["kind"] == "exit":
            raise SystemExit(5)
        return f"answer {item['id']} {item['kind']}"

    def evaluate(self, output, item):
        self.assert_that(StringContains("answer"), output)
        if item["kind"] == "fail":
            self.assert_that(StringContains("refund"), output)
        if item["kind"] == "soft":
            self.assert_that(StringContains("refund"), output, soft=True)


class Second(BaseEvaluator):
    def get_dataset(self):
        return [{"id": f"s{n}", "text": "x" * n} for n in range(5)]

    def run(self, item):
        return item["text"]

    def evaluate(self, output, item):
        self.assert_that(StringContains("xxx"), output)
"""


@pytest.fixture(scope="module")
def mixed(cli_factory: Any) -> Any:
    cli = cli_factory("mixed")
    cli.write("mixed.py", MIXED_EVALUATORS)
    parallel = cli.start(
        "mixed.py",
        "-c",
        "4",
        "--no-progress",
        "--output-json",
        "fork.json",
        "--runs-dir",
        "runs-fork",
    )
    cli.sequential = cli.run(
        "mixed.py", "--no-progress", "--output-json", "inline.json", "--runs-dir", "runs-inline"
    )
    parallel.communicate(timeout=60)
    cli.parallel = parallel
    return cli


def test_fork_report_equals_sequential_report(mixed: Any) -> None:
    cli = mixed
    assert (cli.parallel.returncode, cli.sequential.returncode) == (2, 2)
    fork, inline = cli.json("fork.json"), cli.json("inline.json")
    assert fork["run"]["totals"] == {
        "total": 15,
        "passed": 8,
        "failed": 5,
        "errored": 2,
        "cancelled": 0,
        "success_rate": 8 / 15,
    }
    assert cli.comparable(fork) == cli.comparable(inline)


def test_fork_exception_becomes_plain_error_record(mixed: Any) -> None:
    cli = mixed
    (item,) = [i for i in cli.items_of(cli.json("fork.json")) if i["id"] == 2]
    assert item["error"]["type"] == "ValueError"
    assert item["error"]["message"] == "item 2 broke"
    assert "raise ValueError(f\"item {item['id']} broke\")" in item["error"]["traceback"]
    (record,) = [
        r
        for r in cli.records(cli.root / "runs-fork" / cli.json("fork.json")["run"]["id"])
        if r["id"] == 2
    ]
    assert record == item


TWO_SET_UPS = """
import os

from agenteval import BaseEvaluator
{equals}

class First(BaseEvaluator):
    def set_up(self):
        os.environ["LAST_SET_UP"] = "First"

    def get_dataset(self):
        return [{{"id": n}} for n in range(3)]

    def run(self, item):
        return os.environ["LAST_SET_UP"]

    def evaluate(self, output, item):
        self.assert_that(Equals("First"), output)


class Second(First):
    def set_up(self):
        os.environ["LAST_SET_UP"] = "Second"

    def evaluate(self, output, item):
        self.assert_that(Equals("Second"), output)
"""


@pytest.mark.parametrize("isolation", ["item", "worker"])
def test_fork_forks_an_evaluators_items_before_the_next_one_is_set_up(
    cli: Any, isolation: str
) -> None:
    # tasks are pulled ahead, but never past the next evaluator's set_up: its side effects
    # must not reach the processes of the one before
    cli.write("two.py", TWO_SET_UPS.format(equals=cli.EQUALS))
    args = ("-c", "8", "--isolation", isolation, "--no-progress", "--output-json", "report.json")
    result = cli.run("two.py", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    items = cli.items_of(cli.json("report.json"))
    assert [(i["evaluator"].split("::")[1], i["output"]) for i in items] == [
        *(("First", "First"),) * 3,
        *(("Second", "Second"),) * 3,
    ]
