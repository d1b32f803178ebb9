"""What crosses the pipe: unserialisable outputs, truncated outputs, captured stdout/stderr."""

from __future__ import annotations

from typing import Any

import pytest

from agenteval._serialize import json_size

OUTPUT_EVALUATOR = """
import os
import socket
import sys

from agenteval import BaseEvaluator
from agenteval.assertions import Assertion, AssertionResult, StringStartsWith


class Callable_(Assertion):
    def evaluate(self, actual):
        return AssertionResult.pass_() if callable(actual) else AssertionResult.fail()


class IsSocket(Assertion):
    def evaluate(self, actual):
        ok = isinstance(actual, socket.socket)
        return AssertionResult.pass_() if ok else AssertionResult.fail()


class Huge(Assertion):
    def evaluate(self, actual):
        return AssertionResult.pass_() if actual > 10**4000 else AssertionResult.fail()


KINDS = ("lambda", "socket", "big", "big-dict", "small", "chatty", "noisy", "huge-int")


class Output(BaseEvaluator):
    def get_dataset(self):
        return [{"id": kind} for kind in KINDS]

    def run(self, item):
        kind = item["id"]
        if kind == "lambda":
            return lambda: 42
        if kind == "socket":
            return socket.socket()
        if kind == "big":
            return "é" * 3000
        if kind == "big-dict":
            return {"answer": "é" * 3000, "sources": ["a.md", "b.md"]}
        if kind == "chatty":
            print("printed by chatty")
            sys.stderr.write("warned by chatty\\n")
            os.write(1, b"fd-level write by chatty\\n")
        if kind == "noisy":
            sys.stdout.write("n" * 200_000)
        if kind == "huge-int":
            return 10**5000  # more digits than JSON readers take
        return kind

    def evaluate(self, output, item):
        kind = item["id"]
        if kind == "lambda":
            self.assert_that(Callable_(), output)
        elif kind == "socket":
            self.assert_that(IsSocket(), output)
            output.close()
        elif kind == "big":
            self.assert_that(StringStartsWith("é"), output)
        elif kind == "big-dict":
            self.assert_that(StringStartsWith("é"), output["answer"])
        elif kind == "huge-int":
            self.assert_that(Huge(), output)
        else:
            self.assert_that(StringStartsWith(kind), output)
"""


@pytest.fixture(scope="module")
def output_run(cli_factory: Any) -> Any:
    cli = cli_factory("output")
    cli.write("output.py", OUTPUT_EVALUATOR)
    cli.result = cli.run(
        "output.py",
        "-c",
        "3",
        "--max-output-bytes",
        "1000",
        "--no-progress",
        "--output-json",
        "report.json",
    )
    cli.items = {i["id"]: i for i in cli.items_of(cli.json("report.json"))}
    return cli


def test_fork_output_run_passes(output_run: Any) -> None:
    assert output_run.result.returncode == 0, output_run.result.stdout
    assert {k: i["status"] for k, i in output_run.items.items()} == dict.fromkeys(
        ("lambda", "socket", "big", "big-dict", "small", "chatty", "noisy", "huge-int"), "passed"
    )
    # (the report parsed: json refuses numbers of over 4,300 digits)
    assert output_run.items["huge-int"]["output"] == {
        "unserializable": "builtins.int",
        "repr": "<an int of 16,610 bits>",
    }


@pytest.mark.parametrize(
    ("kind", "type_name", "assertion"),
    [("lambda", "builtins.function", "Callable_"), ("socket", "socket.socket", "IsSocket")],
)
def test_fork_unserializable_output_keeps_assertions(
    output_run: Any, kind: str, type_name: str, assertion: str
) -> None:
    item = output_run.items[kind]
    assert item["output"]["unserializable"] == type_name
    assert set(item["output"]) == {"unserializable", "repr"}
    assert [(a["name"], a["passed"]) for a in item["assertions"]] == [(assertion, True)]


def test_fork_output_above_limit_is_truncated(output_run: Any) -> None:
    big, small = output_run.items["big"], output_run.items["small"]
    assert (big["truncated"], big["original_size"]) == (True, 6002)
    assert big["output"] == "é" * 499  # 998 bytes of 2-byte characters, and 2 quotes
    assert (small["output"], small["truncated"], small["original_size"]) == (
        "small",
        False,
        None,
    )


def test_fork_output_above_limit_keeps_its_shape(output_run: Any) -> None:
    item = output_run.items["big-dict"]
    whole = {"answer": "é" * 3000, "sources": ["a.md", "b.md"]}
    assert (item["truncated"], item["original_size"]) == (True, json_size(whole))
    # an object is still an object: its first key, cut to what fits in 1,000 bytes
    assert list(item["output"]) == ["answer"]
    assert item["output"]["answer"] == "é" * 493  # {"answer":"…"} is 13 bytes more


def test_fork_child_output_is_captured_per_item(output_run: Any) -> None:
    chatty = output_run.items["chatty"]
    assert sorted(chatty["stdout"].splitlines()) == [
        "fd-level write by chatty",
        "printed by chatty",
    ]
    assert chatty["stderr"] == "warned by chatty\n"
    assert output_run.items["small"]["stdout"] == ""
    (record,) = [r for r in output_run.records() if r["id"] == "chatty"]
    assert (record["stdout"], record["stderr"]) == (chatty["stdout"], chatty["stderr"])


def test_fork_child_output_stays_off_the_console(output_run: Any) -> None:
    console = output_run.result.stdout + output_run.result.stderr
    assert "by chatty" not in console
    assert "nnnn" not in console


def test_fork_captured_output_is_capped(output_run: Any) -> None:
    noisy = output_run.items["noisy"]["stdout"]
    assert noisy == "n" * 65536 + "\n… [134464 more bytes not kept]"


FLOODS = """
import os
import time

from agenteval import BaseEvaluator


class Floods(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "floods"}]

    def run(self, item):
        line = b"log line " * 1000 + b"\\n"
        for _ in range(64 * 1024 * 1024 // len(line)):  # 64 MB of logging
            os.write(1, line)
        held = os.fstat(1).st_blocks * 512
        for _ in range(100):  # the parent looks every half second
            if held < 8 * 1024 * 1024:
                break
            time.sleep(0.1)
            held = os.fstat(1).st_blocks * 512
        return held

    def evaluate(self, output, item):
        pass
"""


def test_fork_what_an_item_prints_past_the_cap_is_not_held_in_memory(cli: Any) -> None:
    # the capture file is in memory: 64 MB printed held 64 MB of RAM until the item ended
    cli.write("floods.py", FLOODS)
    result = cli.run("floods.py", "-c", "2", "--no-progress", "--output-json", "report.json")
    assert result.returncode == 0, result.stdout + result.stderr
    (item,) = cli.items_of(cli.json("report.json"))
    assert item["output"] < 8 * 1024 * 1024
    assert item["stdout"].endswith(
        f"… [{64 * 1024 * 1024 // 9001 * 9001 - 65536} more bytes not kept]"
    )
